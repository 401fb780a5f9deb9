package plans

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/ceremonies"
)

func TestVerify(t *testing.T) {
	d := calcPlan()
	d.Tasks[0].Scope[0] = "./calc//calc.go"
	d.Tasks[1].Scope = []string{" main.go "}
	d.Tasks[0].Context[0].Path = "calc/./calc.go"
	d.E2ECheck.Program = " go "
	v := Verify("add-max-to-a1b2c3", d, workspace())
	if !v.Verified() {
		t.Fatalf("defects %q", v.Defects.Messages())
	}
	if want := [][]string{{"add-max"}, {"use-max"}}; !reflect.DeepEqual(v.Waves, want) {
		t.Fatalf("waves %v, want %v", v.Waves, want)
	}
	clean := v.Decomposition
	if clean.Tasks[0].Scope[0] != "calc/calc.go" || clean.Tasks[1].Scope[0] != "main.go" || clean.Tasks[0].Context[0].Path != "calc/calc.go" ||
		clean.E2ECheck.Program != "go" || clean.Tasks[0].Goal != "Add Max to calc, beside Min." {
		t.Fatalf("not normalized: %+v", clean)
	}
	// The caller's decomposition is left as it was.
	if d.Tasks[0].Scope[0] != "./calc//calc.go" || d.Tasks[0].Context[0].Path != "calc/./calc.go" {
		t.Fatalf("the caller's decomposition changed: %+v", d)
	}
	if len(v.Packs) != 2 {
		t.Fatalf("packs %q", v.Packs)
	}
	for i, task := range clean.Tasks {
		want, err := Pack("add-max-to-a1b2c3", d, task.ID, workspace())
		if err != nil || v.Packs[i] != want {
			t.Fatalf("pack %d\n got %q\nwant %q (%v)", i, v.Packs[i], want, err)
		}
	}
}

func TestVerifyStructure(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *Decomposition)
		want   []string
	}{
		{"no tasks", func(d *Decomposition) { d.Tasks = nil },
			[]string{"plan: tasks is empty; propose 1 to 12 tasks"}},
		{"too many tasks", func(d *Decomposition) {
			for i := range 11 {
				d.Tasks = append(d.Tasks, ceremonies.PlanTask{ID: fmt.Sprintf("t%d", i), Goal: "g", Scope: []string{fmt.Sprintf("t%d.go", i)}, UnitCheck: ceremonies.CheckCommand{Program: "true"}})
			}
		}, []string{"plan: 13 tasks; propose at most 12 and make a second plan for the rest"}},
		{"interfaces too long", func(d *Decomposition) { d.Interfaces = strings.Repeat("x", MaxInterfaces+1) },
			[]string{"plan: interfaces is 2049 bytes (at most 2048); keep only the signatures the tasks share"}},
		{"interfaces at the limit", func(d *Decomposition) { d.Interfaces = strings.Repeat("x", MaxInterfaces) }, nil},
		{"no summary", func(d *Decomposition) { d.SummaryEN = " \n" },
			[]string{"plan: summary_en is empty; summarize the plan in English"}},
		{"summary too long", func(d *Decomposition) { d.SummaryEN = strings.Repeat("x", MaxSummary+1) },
			[]string{"plan: summary_en is 2049 bytes (at most 2048)"}},
		{"no e2e program", func(d *Decomposition) { d.E2ECheck = ceremonies.CheckCommand{Program: " ", Args: []string{"test"}} },
			[]string{"plan: e2e_check has no program; give the program and its args separately"}},
		{"id not a slug", func(d *Decomposition) { d.Tasks[1].ID = "Use Max" },
			[]string{`task #2: id "Use Max" must be a slug: lowercase letters, digits and dashes, starting with a letter or a digit, at most 40 characters`}},
		{"ids not unique", func(d *Decomposition) { d.Tasks[1].ID, d.Tasks[1].DependsOn = "add-max", nil },
			[]string{"task add-max: 2 tasks have this id; give each task its own"}},
		{"no goal", func(d *Decomposition) { d.Tasks[0].Goal = "\t" },
			[]string{"task add-max: goal is empty; say what the task achieves"}},
		{"no scope", func(d *Decomposition) { d.Tasks[1].Scope = nil },
			[]string{"task use-max: scope is empty; list the 1 to 8 files the task changes"}},
		{"scope too wide", func(d *Decomposition) {
			d.Tasks[1].Scope = nil
			for i := range 9 {
				d.Tasks[1].Scope = append(d.Tasks[1].Scope, fmt.Sprintf("f%d.go", i))
			}
		}, []string{"task use-max: scope lists 9 files; split the task (at most 8)"}},
		{"scope outside", func(d *Decomposition) { d.Tasks[1].Scope = []string{"../main.go", "/tmp/x", "a/../main.go"} }, []string{
			`task use-max: scope path "../main.go" is not inside the workspace; give a path relative to its root, without ".."`,
			`task use-max: scope path "/tmp/x" is not inside the workspace; give a path relative to its root, without ".."`,
			`task use-max: scope path "a/../main.go" is not inside the workspace; give a path relative to its root, without ".."`,
		}},
		{"scope names a file twice", func(d *Decomposition) { d.Tasks[1].Scope = []string{"main.go", "./main.go", "main.go"} },
			[]string{"task use-max: scope lists main.go more than once"}},
		{"too much protected", func(d *Decomposition) {
			for i := range 9 {
				d.Tasks[1].Protect = append(d.Tasks[1].Protect, fmt.Sprintf("p%d.go", i))
			}
		}, []string{"task use-max: protect lists 9 files (at most 8)"}},
		{"protected outside", func(d *Decomposition) { d.Tasks[1].Protect = []string{"../go.mod"} },
			[]string{`task use-max: protect path "../go.mod" is not inside the workspace; give a path relative to its root, without ".."`}},
		{"protects its scope", func(d *Decomposition) { d.Tasks[1].Protect = []string{"./main.go"} },
			[]string{"task use-max: main.go is both in its scope and protected; a task may not protect a file it changes"}},
		{"too many citations", func(d *Decomposition) {
			for range 9 {
				d.Tasks[1].Context = append(d.Tasks[1].Context, ceremonies.Citation{Path: "main.go", Line: 3, Quote: "func main() {}"})
			}
		}, []string{"task use-max: context cites 9 places (at most 8); cite the few the task needs"}},
		{"citation outside", func(d *Decomposition) {
			d.Tasks[1].Context = []ceremonies.Citation{{Path: "/etc/passwd", Line: 1, Quote: "root:x:0:0:root"}}
		},
			[]string{`task use-max: citation 1: path "/etc/passwd" is not inside the workspace; give a path relative to its root, without ".."`}},
		{"citation line zero", func(d *Decomposition) {
			d.Tasks[1].Context = []ceremonies.Citation{{Path: "main.go", Line: 0, Quote: "func main() {}"}}
		},
			[]string{"task use-max: citation 1: line 0 of main.go; lines count from 1"}},
		{"no unit check", func(d *Decomposition) { d.Tasks[1].UnitCheck = ceremonies.CheckCommand{} },
			[]string{"task use-max: unit_check has no program; give the program and its args separately"}},
		{"dependency twice", func(d *Decomposition) { d.Tasks[1].DependsOn = []string{"add-max", "add-max", "add-max"} },
			[]string{"task use-max: depends on add-max more than once; name it once"}},
		{"unknown dependency", func(d *Decomposition) { d.Tasks[1].DependsOn = []string{"add-min"} },
			[]string{`task use-max: depends on unknown task "add-min"; depend only on ids of this plan`}},
		{"cycle", func(d *Decomposition) { d.Tasks[0].DependsOn = []string{"use-max"} },
			[]string{"tasks add-max and use-max: their dependencies form a cycle: add-max depends on use-max, use-max on add-max; remove one of these dependencies"}},
		{"same file in one wave", func(d *Decomposition) {
			d.Tasks[1].DependsOn = nil
			d.Tasks[1].Scope = []string{"main.go", "./calc/calc.go"}
		}, []string{"tasks add-max and use-max: both change calc/calc.go in wave 1; give it to one of them or order them with depends_on"}},
		{"same file in two waves", func(d *Decomposition) { d.Tasks[1].Scope = []string{"main.go", "calc/calc.go"} }, nil},
		{"test first with only tests", func(d *Decomposition) { d.Tasks[0].Scope = []string{"calc/calc_test.go"} },
			[]string{"task add-max: test_first needs a file in its scope that is not a test, to make the failing test pass in; add it or set test_first to false"}},
		{"test first with no test", func(d *Decomposition) { d.Tasks[0].Scope = []string{"calc/calc.go", "calc/latest.go"} },
			[]string{"task add-max: test_first needs a test file in its scope to write the failing test in (Go x_test.go, Python test_x.py, JS/TS x.test.ts, Java XTest.java, Ruby x_spec.rb, a file under test/, tests/ or __tests__/, or a Rust source); add one or set test_first to false"}},
		{"test first in one Rust source", func(d *Decomposition) {
			d.Tasks[0].Scope, d.Tasks[0].Context = []string{"src/lib.rs"}, nil
		}, nil},
		{"test first with an empty scope", func(d *Decomposition) { d.Tasks[0].Scope = nil }, []string{
			"task add-max: scope is empty; list the 1 to 8 files the task changes",
			"task add-max: test_first needs a test file in its scope to write the failing test in (Go x_test.go, Python test_x.py, JS/TS x.test.ts, Java XTest.java, Ruby x_spec.rb, a file under test/, tests/ or __tests__/, or a Rust source); add one or set test_first to false",
		}},
		{"several, in task order", func(d *Decomposition) {
			d.SummaryEN = ""
			d.Tasks[0].Goal = ""
			d.Tasks[1].UnitCheck.Program = ""
		}, []string{
			"plan: summary_en is empty; summarize the plan in English",
			"task add-max: goal is empty; say what the task achieves",
			"task use-max: unit_check has no program; give the program and its args separately",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := calcPlan()
			tt.change(&d)
			v := Verify("p", d, workspace())
			if got := v.Defects.Messages(); !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && tt.want == nil) {
				t.Fatalf("defects\n got %q\nwant %q", got, tt.want)
			}
			if (v.Waves == nil) != (tt.want != nil) || (v.Packs == nil) != (tt.want != nil) {
				t.Fatalf("waves %v and %d packs with defects %q", v.Waves, len(v.Packs), v.Defects.Messages())
			}
		})
	}
}

// TestVerifyPhases: citations and packs are checked only when the
// structure holds, and every task's citations are then checked.
func TestVerifyPhases(t *testing.T) {
	d := calcPlan()
	d.Tasks[0].Context[0].Quote = "not on that line at all"
	d.Tasks[1].Goal = ""
	v := Verify("p", d, workspace())
	if got := v.Defects.Messages(); !reflect.DeepEqual(got, []string{"task use-max: goal is empty; say what the task achieves"}) {
		t.Fatalf("structure first: %q", got)
	}

	d.Tasks[1].Goal = "Print it."
	d.Tasks[1].Context = []ceremonies.Citation{{Path: "main.go", Line: 9, Quote: "func main() {}"}}
	v = Verify("p", d, workspace())
	want := []string{
		`task add-max: calc/calc.go:4 does not contain the quote (at least 12 characters); the line reads "func Min(a, b int) int {"`,
		"task use-max: citation 1: main.go has 3 lines; line 9 is past its end",
	}
	if got := v.Defects.Messages(); !reflect.DeepEqual(got, want) {
		t.Fatalf("citations\n got %q\nwant %q", got, want)
	}
	if v.Packs != nil || v.Waves == nil {
		t.Fatalf("packs %q, waves %v", v.Packs, v.Waves)
	}
}

func TestVerifyShowsTwelve(t *testing.T) {
	d := calcPlan()
	d.Tasks = nil
	for i := range 12 {
		d.Tasks = append(d.Tasks, ceremonies.PlanTask{ID: fmt.Sprintf("t%d", i+1), Scope: []string{fmt.Sprintf("t%d.go", i+1)}, UnitCheck: ceremonies.CheckCommand{Program: "true"}})
	}
	d.SummaryEN = ""
	got := Verify("p", d, workspace()).Defects.Messages()
	if len(got) != 13 || got[0] != "plan: summary_en is empty; summarize the plan in English" ||
		got[11] != "task t11: goal is empty; say what the task achieves" || got[12] != "and 1 more defect" {
		t.Fatalf("messages %q", got)
	}
}
