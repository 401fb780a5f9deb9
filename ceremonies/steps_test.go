package ceremonies

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name, def, step, args string
		compact               bool
		err                   string
		command               *CheckCommand
		ignored               []string
		notReproducible       bool
	}{
		{name: "reproduce with a command", def: "axlr_debug", step: "reproduce",
			args:    `{"check_command": {"program": "go", "args": ["test", "./parser"]}, "expected": "ok", "observed": "FAIL"}`,
			command: &CheckCommand{Program: "go", Args: []string{"test", "./parser"}}},
		{name: "declared not reproducible", def: "axlr_debug", step: "reproduce",
			args: `{"reproducible": false, "observed": "passes every time"}`, notReproducible: true},
		{name: "reproducible true still needs a command", def: "axlr_debug", step: "reproduce",
			args: `{"reproducible": true, "observed": "x"}`, err: "step reproduce needs check_command, expected, observed; or reproducible, observed"},
		{name: "missing field", def: "axlr_debug", step: "diagnose",
			args: `{"root_cause": "x", "evidence": "y"}`, err: "step diagnose needs root_cause, evidence, proposed_fix"},
		{name: "empty text", def: "axlr_debug", step: "repair", args: `{"summary": "  "}`, err: "summary: must not be empty"},
		{name: "unknown field refused (standard)", def: "axlr_debug", step: "repair",
			args: `{"summary": "x", "verdict": "ok"}`, err: `step repair takes summary, check_command; "verdict" is not one of its fields`},
		{name: "unknown field dropped (compact)", def: "axlr_debug", step: "repair", compact: true,
			args: `{"summary": "x", "verdict": "ok", "root_cause": "y"}`, ignored: []string{"root_cause", "verdict"}},
		{name: "command as a string refused (standard)", def: "axlr_delivery", step: "brief",
			args: `{"criteria": "c", "scope": "s", "check_command": "go test ./..."}`, err: "must be an object"},
		{name: "command as a string split (compact)", def: "axlr_delivery", step: "brief", compact: true,
			args:    `{"criteria": "c", "scope": "s", "check_command": "go test ./..."}`,
			command: &CheckCommand{Program: "go", Args: []string{"test", "./..."}}},
		{name: "shell syntax refused, no implicit shell (compact)", def: "axlr_delivery", step: "brief", compact: true,
			args: `{"criteria": "c", "scope": "s", "check_command": "go test ./... | grep ok"}`,
			err:  `check_command: holds shell syntax ("|") and AXLR runs no implicit shell: send {"program": "...", "args": ["..."]}, and if the command needs a shell name it: {"program": "/bin/sh", "args": ["-c", "go test ./... | grep ok"]}`},
		{name: "shell syntax in args refused (compact)", def: "axlr_delivery", step: "brief", compact: true,
			args: `{"criteria": "c", "scope": "s", "check_command": {"program": "go", "args": "test ./... && echo ok"}}`,
			err:  `check_command: args holds shell syntax ("&")`},
		{name: "a named shell is a command like any other (compact)", def: "axlr_delivery", step: "brief", compact: true,
			args:    `{"criteria": "c", "scope": "s", "check_command": {"program": "/bin/sh", "args": ["-c", "go test ./... | grep ok"]}}`,
			command: &CheckCommand{Program: "/bin/sh", Args: []string{"-c", "go test ./... | grep ok"}}},
		{name: "args as a string (compact)", def: "axlr_delivery", step: "brief", compact: true,
			args:    `{"criteria": "c", "scope": "s", "check_command": {"program": "go", "args": "test ./..."}}`,
			command: &CheckCommand{Program: "go", Args: []string{"test", "./..."}}},
		{name: "command without program", def: "axlr_debug", step: "reproduce",
			args: `{"check_command": {"args": ["x"]}, "expected": "a", "observed": "b"}`, err: "check_command: program must not be empty"},
		{name: "command with unknown key", def: "axlr_debug", step: "reproduce",
			args: `{"check_command": {"program": "go", "shell": true}, "expected": "a", "observed": "b"}`, err: `unknown field "shell"`},
		{name: "another step named", def: "axlr_debug", step: "repair", args: `{"step": "diagnose", "summary": "x"}`, err: "the open step is repair, not diagnose"},
		{name: "the open step named", def: "axlr_debug", step: "repair", args: `{"step": "repair", "summary": "x"}`},
		{name: "not an object", def: "axlr_debug", step: "repair", args: `["summary"]`, err: "not a JSON object"},
		{name: "replacement command accepted for rerun", def: "axlr_debug", step: "repair",
			args: `{"summary": "x", "check_command": {"program": "true"}}`, command: &CheckCommand{Program: "true", Args: []string{}}},
		{name: "text over the limit", def: "axlr_debug", step: "integrate",
			args: `{"report": "` + strings.Repeat("x", MaxFieldBytes+1) + `", "summary_en": "s"}`, err: "report: is over the 16 KiB limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hb, err := Validate(tt.def, "2.0", tt.step, []byte(tt.args), tt.compact)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(hb.Command, tt.command) || !reflect.DeepEqual(hb.Ignored, tt.ignored) || hb.NotReproducible != tt.notReproducible {
				t.Fatalf("hand-back %+v", hb)
			}
		})
	}
}

func TestStepDoneSchema(t *testing.T) {
	standard, err := StepDoneSchema("axlr_debug", "2.0", "repair", false)
	if err != nil {
		t.Fatal(err)
	}
	compact, err := StepDoneSchema("axlr_debug", "2.0", "repair", true)
	if err != nil {
		t.Fatal(err)
	}
	props := func(b []byte) []string {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range s.Properties {
			out = append(out, k)
		}
		return out
	}
	if got := props(standard); len(got) != 11 {
		t.Fatalf("standard schema has %d fields, want every field of the ceremony and step: %v", len(got), got)
	}
	if got := props(compact); len(got) != 3 {
		t.Fatalf("compact schema fields %v, want step, summary, check_command", got)
	}
}

func TestEveryStepIsKnown(t *testing.T) {
	for _, d := range All() {
		list := stepsOf(d.Name, d.Version)
		if len(list) == 0 {
			t.Errorf("%s %s has no steps", d.Name, d.Version)
		}
		for _, st := range list {
			if st.Console {
				if len(st.Records) == 0 || len(st.Fields) > 0 || len(st.Requires) > 0 || st.Check != CheckNone || st.Outcome != "" || st.Compact != "" {
					t.Errorf("%s %s console step %s: records and nothing the model hands back", d.Name, d.Version, st.ID)
				}
				continue
			}
			if st.Outcome == "" || len(st.Requires) == 0 || len(st.Records) > 0 {
				t.Errorf("%s %s step %s has no outcome or no required fields", d.Name, d.Version, st.ID)
			}
			for _, set := range st.Requires {
				for _, name := range set {
					if !slices.ContainsFunc(st.Fields, func(f Field) bool { return f.Name == name }) {
						t.Errorf("%s %s step %s requires %s, which is not one of its fields", d.Name, d.Version, st.ID, name)
					}
				}
			}
			if d.Standard {
				if st.Compact != "" {
					t.Errorf("%s %s step %s: a definition that runs under the standard profile only has no compact instruction", d.Name, d.Version, st.ID)
				}
				continue
			}
			if len(st.Compact) >= 500 || !strings.HasPrefix(st.Compact, "Example: axlr_step_done(") {
				t.Errorf("%s %s step %s: the compact instruction must be under 500 bytes and lead with an example call", d.Name, d.Version, st.ID)
			}
			// The example must pass the step's own validation.
			example := strings.TrimPrefix(st.Compact, "Example: axlr_step_done(")
			example = example[:strings.Index(example, "}). ")+1]
			if _, err := Validate(d.Name, d.Version, st.ID, []byte(example), true); err != nil {
				t.Errorf("%s %s step %s: the compact example is refused: %v", d.Name, d.Version, st.ID, err)
			}
		}
	}
}

func TestValidateJobs(t *testing.T) {
	tests := []struct {
		name, def, step, args string
		err                   string
		links                 []Link
		notFeasible           bool
		command               *CheckCommand
	}{
		{name: "diagnose without links", def: "axlr_repair", step: "diagnose",
			args: `{"root_cause": "r", "evidence": "e", "proposed_fix": "f"}`},
		{name: "diagnose with links", def: "axlr_repair", step: "diagnose",
			args:  `{"root_cause": "r", "evidence": "e", "proposed_fix": "f", "connect_to": [{"ref": " kmp:entry:1 ", "rel": "supports", "why": "same panic"}, {"ref": "kmp:entry:2", "rel": "depends_on", "why": "w", "evidence": "log line"}]}`,
			links: []Link{{Ref: "kmp:entry:1", Rel: "supports", Why: "same panic"}, {Ref: "kmp:entry:2", Rel: "depends_on", Why: "w", Evidence: "log line"}}},
		{name: "no links", def: "axlr_repair", step: "diagnose",
			args: `{"root_cause": "r", "evidence": "e", "proposed_fix": "f", "connect_to": []}`, links: []Link{}},
		{name: "a link without why", def: "axlr_repair", step: "diagnose",
			args: `{"root_cause": "r", "evidence": "e", "proposed_fix": "f", "connect_to": [{"ref": "a", "rel": "supports", "why": " "}]}`,
			err:  "connect_to: link 1: why must not be empty"},
		{name: "a link with an unknown key", def: "axlr_repair", step: "diagnose",
			args: `{"root_cause": "r", "evidence": "e", "proposed_fix": "f", "connect_to": [{"ref": "a", "rel": "supports", "why": "w", "class": "causal"}]}`,
			err:  `connect_to: link 1 must be {"ref"`},
		{name: "links not a list", def: "axlr_repair", step: "diagnose",
			args: `{"root_cause": "r", "evidence": "e", "proposed_fix": "f", "connect_to": {"ref": "a"}}`, err: "connect_to: must be an array"},
		{name: "too many links", def: "axlr_repair", step: "diagnose",
			args: `{"root_cause": "r", "evidence": "e", "proposed_fix": "f", "connect_to": [` + strings.TrimSuffix(strings.Repeat(`{"ref": "a", "rel": "r", "why": "w"},`, MaxLinks+1), ",") + `]}`,
			err:  "connect_to: holds 9 links; at most 8"},
		{name: "repair needs summary_en", def: "axlr_repair", step: "repair", args: `{"summary": "s"}`, err: "step repair needs summary, summary_en"},
		{name: "repair", def: "axlr_repair", step: "repair", args: `{"summary": "s", "summary_en": "S."}`},
		{name: "reproduce declared not reproducible", def: "axlr_repair", step: "reproduce", args: `{"reproducible": false, "observed": "o"}`},
		{name: "brief", def: "axlr_improve", step: "brief",
			args:    `{"criteria": "c", "scope": "s", "check_command": {"program": "go", "args": ["test", "-run", "TestX", "./p"]}}`,
			command: &CheckCommand{Program: "go", Args: []string{"test", "-run", "TestX", "./p"}}},
		{name: "brief declared not feasible", def: "axlr_improve", step: "brief", args: `{"feasible": false, "observed": "it exists"}`, notFeasible: true},
		{name: "feasible true is no declaration", def: "axlr_improve", step: "brief", args: `{"feasible": true, "observed": "x"}`,
			err: "step brief needs criteria, scope, check_command; or feasible, observed"},
		{name: "build needs summary_en", def: "axlr_improve", step: "build", args: `{"summary": "s"}`, err: "step build needs summary, summary_en"},
		{name: "a console step is not handed back", def: "axlr_repair", step: "watch", args: `{"verdict": "green"}`,
			err: "step watch is AXLR's own: it runs without the model, and nothing is handed back for it"},
		{name: "nor is an improvement's", def: "axlr_improve", step: "merge", args: `{}`, err: "step merge is AXLR's own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hb, err := Validate(tt.def, "1.0", tt.step, []byte(tt.args), false)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if links, _ := hb.Fields["connect_to"].([]Link); !reflect.DeepEqual(links, tt.links) {
				t.Fatalf("links %#v, want %#v", hb.Fields["connect_to"], tt.links)
			}
			if hb.NotFeasible != tt.notFeasible || hb.NotReproducible != (tt.args == `{"reproducible": false, "observed": "o"}`) || !reflect.DeepEqual(hb.Command, tt.command) {
				t.Fatalf("hand-back %+v", hb)
			}
		})
	}
}

// goTest runs go test in a module of two packages: p with TestOne, q
// with no test file. It is the real output NoTestsRun reads.
func goTest(t *testing.T, args ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":      "module m\n\ngo 1.22\n",
		"p/p.go":      "package p\n",
		"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestOne(t *testing.T) {}\n",
		"q/q.go":      "package q\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"test", "-count=1"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("go test %v: %v", args, err)
	}
	return 0, string(out)
}

func TestHolds(t *testing.T) {
	tests := []struct {
		name                  string
		args                  []string
		noTests               bool
		missing, present, rer bool
	}{
		{name: "a run that matches no test", args: []string{"-run", "TestNone", "./p"}, noTests: true, missing: true, rer: true},
		{name: "verbose, matching no test", args: []string{"-v", "-run", "TestNone", "./p"}, noTests: true, missing: true, rer: true},
		{name: "every package, matching no test", args: []string{"-run", "TestNone", "./..."}, noTests: true, missing: true, rer: true},
		{name: "a test that runs", args: []string{"-run", "TestOne", "./p"}, present: true, rer: true},
		{name: "a test that runs among packages without", args: []string{"-run", "TestOne", "./..."}, present: true, rer: true},
		{name: "a package that does not exist", args: []string{"./nothere"}, missing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exit, out := goTest(t, tt.args...)
			if got := NoTestsRun(out); got != tt.noTests {
				t.Fatalf("NoTestsRun %v, want %v, for exit %d:\n%s", got, tt.noTests, exit, out)
			}
			for _, c := range []struct {
				check Check
				want  bool
			}{
				{CheckMissing, tt.missing}, {CheckPresent, tt.present}, {CheckRerun, tt.rer},
				{CheckReproduce, exit != 0}, {CheckBaseline, true}, {CheckRevision, true}, {CheckNone, true},
				{CheckRed, exit != 0}, {CheckGreen, tt.present},
			} {
				if got := c.check.Holds(exit, out); got != c.want {
					t.Errorf("%s holds %v, want %v, for exit %d:\n%s", c.check, got, c.want, exit, out)
				}
			}
		})
	}
}

func TestStepDoneSchemaJobs(t *testing.T) {
	props := func(t *testing.T, def, step string, compact bool) map[string]json.RawMessage {
		t.Helper()
		b, err := StepDoneSchema(def, "1.0", step, compact)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.Properties
	}
	standard := props(t, "axlr_repair", "diagnose", false)
	for _, record := range []string{"verdict", "decision", "merged", "pull_request"} {
		if _, ok := standard[record]; ok {
			t.Errorf("the model's schema offers the console's record %s", record)
		}
	}
	var links struct {
		Type     string `json:"type"`
		MaxItems int    `json:"maxItems"`
		Items    struct {
			Required []string `json:"required"`
		} `json:"items"`
	}
	if err := json.Unmarshal(standard["connect_to"], &links); err != nil {
		t.Fatal(err)
	}
	if links.Type != "array" || links.MaxItems != MaxLinks || !slices.Equal(links.Items.Required, []string{"ref", "rel", "why"}) {
		t.Fatalf("connect_to schema %s", standard["connect_to"])
	}
	if got := props(t, "axlr_improve", "brief", true); len(got) != 6 {
		t.Fatalf("compact brief schema %v, want step, criteria, scope, check_command, feasible, observed", got)
	}
	if _, err := StepDoneSchema("axlr_improve", "1.0", "decide", true); err == nil || !strings.Contains(err.Error(), "AXLR's own") {
		t.Fatalf("schema of a console step: %v", err)
	}
}

// task is a decompose hand-back's task, as JSON, with a key replaced (or,
// with the value "", left out).
func task(replace ...string) string {
	fields := map[string]string{
		"id": `"add-max"`, "goal": `"calc.Max returns the larger int"`, "scope": `["calc/max.go", "calc/max_test.go"]`,
		"context":    `[{"path": "calc/calc.go", "line": 3, "quote": "func Min(a, b int) int {"}]`,
		"unit_check": `{"program": "go", "args": ["test", "./calc"]}`, "depends_on": `[]`, "test_first": `true`, "protect": `["go.mod"]`,
	}
	for i := 0; i+1 < len(replace); i += 2 {
		fields[replace[i]] = replace[i+1]
	}
	var parts []string
	for _, k := range []string{"id", "goal", "scope", "context", "unit_check", "depends_on", "test_first", "protect", "extra"} {
		if v := fields[k]; v != "" {
			parts = append(parts, `"`+k+`": `+v)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// proposal is a decompose hand-back with the tasks given.
func proposal(tasks ...string) string {
	return `{"tasks": [` + strings.Join(tasks, ", ") + `], "e2e_check": {"program": "go", "args": ["test", "./..."]}, "summary_en": "Adds calc.Max."}`
}

func TestValidatePlans(t *testing.T) {
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+", ", n), ", ") + "]"
	}
	tests := []struct {
		name, def, step, args string
		compact               bool
		err                   string
		check                 func(t *testing.T, hb HandBack)
	}{
		{name: "a plan", def: "axlr_plan", step: "decompose", args: proposal(task(), task("id", `" use-max "`, "depends_on", `[" add-max "]`, "context", "", "protect", "", "test_first", "")),
			check: func(t *testing.T, hb HandBack) {
				p, ok := decoded(hb)
				want := []PlanTask{
					{ID: "add-max", Goal: "calc.Max returns the larger int", Scope: []string{"calc/max.go", "calc/max_test.go"},
						Context:   []Citation{{Path: "calc/calc.go", Line: 3, Quote: "func Min(a, b int) int {"}},
						UnitCheck: CheckCommand{Program: "go", Args: []string{"test", "./calc"}}, DependsOn: []string{}, TestFirst: true, Protect: []string{"go.mod"}},
					{ID: "use-max", Goal: "calc.Max returns the larger int", Scope: []string{"calc/max.go", "calc/max_test.go"}, Context: []Citation{},
						UnitCheck: CheckCommand{Program: "go", Args: []string{"test", "./calc"}}, DependsOn: []string{"add-max"}, Protect: []string{}},
				}
				if !ok || !reflect.DeepEqual(p.Tasks, want) || !p.E2ECheck.Equal(CheckCommand{Program: "go", Args: []string{"test", "./..."}}) || p.SummaryEn != "Adds calc.Max." || p.Interfaces != "" {
					t.Fatalf("proposal %+v, %v", p, ok)
				}
				if hb.Command != nil {
					t.Fatalf("e2e_check taken as the step's check_command: %+v", hb.Command)
				}
			}},
		{name: "interfaces", def: "axlr_plan", step: "decompose",
			args: strings.Replace(proposal(task()), `"summary_en"`, `"interfaces": "func Max(a, b int) int", "summary_en"`, 1),
			check: func(t *testing.T, hb HandBack) {
				if p, _ := decoded(hb); p.Interfaces != "func Max(a, b int) int" {
					t.Fatalf("interfaces %q", p.Interfaces)
				}
			}},
		{name: "interfaces left empty are not given", def: "axlr_plan", step: "decompose",
			args: strings.Replace(proposal(task()), `"summary_en"`, `"interfaces": " ", "summary_en"`, 1),
			check: func(t *testing.T, hb HandBack) {
				if _, ok := hb.Fields["interfaces"]; ok {
					t.Fatalf("fields %v", hb.Fields)
				}
			}},
		{name: "a required text left empty is refused", def: "axlr_plan", step: "decompose",
			args: strings.Replace(proposal(task()), `"Adds calc.Max."`, `""`, 1), err: "summary_en: must not be empty"},
		{name: "interfaces over the limit", def: "axlr_plan", step: "decompose",
			args: strings.Replace(proposal(task()), `"summary_en"`, `"interfaces": "`+strings.Repeat("é", MaxInterfacesChars+1)+`", "summary_en"`, 1),
			err:  "interfaces: is 2049 characters; at most 2048"},
		{name: "no e2e_check", def: "axlr_plan", step: "decompose", args: `{"tasks": [` + task() + `], "summary_en": "s"}`,
			err: "step decompose needs tasks, e2e_check, summary_en"},
		{name: "no task", def: "axlr_plan", step: "decompose", args: proposal(), err: "tasks: holds no tasks; give at least one"},
		{name: "thirteen tasks", def: "axlr_plan", step: "decompose", args: proposal(strings.Split(strings.Repeat(task()+"\x00", MaxTasks+1), "\x00")[:MaxTasks+1]...),
			err: "tasks: holds 13 tasks; at most 12"},
		{name: "tasks not a list", def: "axlr_plan", step: "decompose", args: `{"tasks": {"id": "a"}, "e2e_check": {"program": "go"}, "summary_en": "s"}`,
			err: "tasks: must be an array of tasks"},
		{name: "a task without id", def: "axlr_plan", step: "decompose", args: proposal(task("id", `" "`)), err: "tasks: task 1: id must not be empty"},
		{name: "a task without goal", def: "axlr_plan", step: "decompose", args: proposal(task(), task("id", `"b"`, "goal", "")),
			err: "tasks: task 2 (b): goal must not be empty"},
		{name: "an unknown key", def: "axlr_plan", step: "decompose", args: proposal(task("extra", `"x"`)),
			err: `tasks: task 1 (add-max): must be {id, goal, scope, context, unit_check, depends_on, test_first, protect}: json: unknown field "extra"`},
		{name: "no scope", def: "axlr_plan", step: "decompose", args: proposal(task("scope", `[]`)),
			err: "tasks: task 1 (add-max): scope holds no path; give the files the task may change, at least one"},
		{name: "nine scope paths", def: "axlr_plan", step: "decompose", args: proposal(task("scope", many(MaxScope+1, `"a.go"`))),
			err: "tasks: task 1 (add-max): scope lists 9 paths; split the task (at most 8)"},
		{name: "an empty scope path", def: "axlr_plan", step: "decompose", args: proposal(task("scope", `["a.go", " "]`)),
			err: "tasks: task 1 (add-max): scope item 2 must not be empty"},
		{name: "nine citations", def: "axlr_plan", step: "decompose", args: proposal(task("context", many(MaxCitations+1, `{"path": "a.go", "line": 1, "quote": "package main here"}`))),
			err: "tasks: task 1 (add-max): context holds 9 citations; at most 8"},
		{name: "a citation at line 0", def: "axlr_plan", step: "decompose", args: proposal(task("context", `[{"path": "a.go", "line": 0, "quote": "q"}]`)),
			err: "tasks: task 1 (add-max): citation 1 (a.go): line must be a line number, from 1"},
		{name: "a citation's line as a string", def: "axlr_plan", step: "decompose", args: proposal(task("context", `[{"path": "a.go", "line": "3", "quote": "q"}]`)),
			err: "tasks: task 1 (add-max): must be {id, goal, scope, context, unit_check, depends_on, test_first, protect}"},
		{name: "a citation without quote", def: "axlr_plan", step: "decompose", args: proposal(task("context", `[{"path": "a.go", "line": 3, "quote": " "}]`)),
			err: "tasks: task 1 (add-max): citation 1 (a.go:3): quote must not be empty"},
		{name: "no unit_check", def: "axlr_plan", step: "decompose", args: proposal(task("unit_check", "")),
			err: `tasks: task 1 (add-max): unit_check is missing`},
		{name: "unit_check as a string refused (standard)", def: "axlr_plan", step: "decompose", args: proposal(task("unit_check", `"go test ./calc"`)),
			err: "tasks: task 1 (add-max): unit_check: must be an object"},
		{name: "unit_check as a string split (compact)", def: "axlr_plan", step: "decompose", compact: true, args: proposal(task("unit_check", `"go test ./calc"`)),
			check: func(t *testing.T, hb HandBack) {
				if p, _ := decoded(hb); !p.Tasks[0].UnitCheck.Equal(CheckCommand{Program: "go", Args: []string{"test", "./calc"}}) {
					t.Fatalf("unit_check %+v", p.Tasks[0].UnitCheck)
				}
			}},

		{name: "red", def: "axlr_task", step: "red", args: `{"test_files": [" calc/max_test.go "], "expected": "undefined: Max"}`,
			check: func(t *testing.T, hb HandBack) {
				if !reflect.DeepEqual(hb.Fields["test_files"], []string{"calc/max_test.go"}) || hb.NotTestable {
					t.Fatalf("hand-back %+v", hb)
				}
			}},
		{name: "red without test files", def: "axlr_task", step: "red", args: `{"test_files": [], "expected": "e"}`,
			err: "test_files: holds no items; give at least one"},
		{name: "red with five test files", def: "axlr_task", step: "red", args: `{"test_files": ["a", "b", "c", "d", "e"], "expected": "e"}`,
			err: "test_files: holds 5 items; at most 4"},
		{name: "a test file as a string refused (standard)", def: "axlr_task", step: "red", args: `{"test_files": "calc/max_test.go", "expected": "e"}`,
			err: "test_files: must be an array of strings"},
		{name: "a test file as a string taken (compact)", def: "axlr_task", step: "red", compact: true, args: `{"test_files": "calc/max_test.go", "expected": "e"}`,
			check: func(t *testing.T, hb HandBack) {
				if !reflect.DeepEqual(hb.Fields["test_files"], []string{"calc/max_test.go"}) {
					t.Fatalf("test_files %#v", hb.Fields["test_files"])
				}
			}},
		{name: "declared untestable", def: "axlr_task", step: "red", args: `{"testable": false, "observed": "the goal is a doc comment"}`,
			check: func(t *testing.T, hb HandBack) {
				if !hb.NotTestable {
					t.Fatalf("hand-back %+v", hb)
				}
			}},
		{name: "testable true is no declaration", def: "axlr_task", step: "red", args: `{"testable": true, "observed": "x"}`,
			err: "step red needs test_files, expected; or testable, observed"},
		{name: "red takes no command", def: "axlr_task", step: "red", args: `{"test_files": ["a_test.go"], "expected": "e", "check_command": {"program": "true"}}`,
			err: `step red takes test_files, expected, testable, observed; "check_command" is not one of its fields`},

		{name: "green", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S."}`},
		{name: "green with notes and questions", def: "axlr_task", step: "green",
			args: `{"summary": "s", "summary_en": "S.", "notes": [{"to": "all", "text": " calc.Max exists "}, {"to": "use-max", "text": "` + strings.Repeat("é", MaxNoteChars) + `"}], "questions": ["Should Max take floats?"]}`,
			check: func(t *testing.T, hb HandBack) {
				want := []Note{{To: NoteToAll, Text: "calc.Max exists"}, {To: "use-max", Text: strings.Repeat("é", MaxNoteChars)}}
				if !reflect.DeepEqual(hb.Fields["notes"], want) || !reflect.DeepEqual(hb.Fields["questions"], []string{"Should Max take floats?"}) {
					t.Fatalf("notes %#v, questions %#v", hb.Fields["notes"], hb.Fields["questions"])
				}
			}},
		{name: "five notes", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S.", "notes": ` + many(MaxNotes+1, `{"to": "all", "text": "t"}`) + `}`,
			err: "notes: holds 5 notes; at most 4"},
		{name: "a note over 500 characters", def: "axlr_task", step: "green",
			args: `{"summary": "s", "summary_en": "S.", "notes": [{"to": "all", "text": "` + strings.Repeat("x", MaxNoteChars+1) + `"}]}`,
			err:  "notes: note 1: text is 501 characters; at most 500"},
		{name: "a note to no task", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S.", "notes": [{"to": "Use Max", "text": "t"}]}`,
			err: `notes: note 1: to "Use Max" must be a task id of the plan or "all"`},
		{name: "a note without text", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S.", "notes": [{"to": "all", "text": ""}]}`,
			err: "notes: note 1: text must not be empty"},
		{name: "a note with an unknown key", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S.", "notes": [{"to": "all", "text": "t", "from": "x"}]}`,
			err: `notes: note 1 must be {"to": "<task id> or all", "text": "..."}`},
		{name: "notes not a list", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S.", "notes": "t"}`,
			err: "notes: must be an array of"},
		{name: "three questions", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S.", "questions": ["a", "b", "c"]}`,
			err: "questions: holds 3 items; at most 2"},
		{name: "an empty question", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S.", "questions": ["a", " "]}`,
			err: "questions: item 2 must not be empty"},
		{name: "a question over 500 characters", def: "axlr_task", step: "green", args: `{"summary": "s", "summary_en": "S.", "questions": ["` + strings.Repeat("x", MaxNoteChars+1) + `"]}`,
			err: "questions: item 1 is 501 characters; at most 500"},
		{name: "green needs summary_en", def: "axlr_task", step: "green", args: `{"summary": "s"}`, err: "step green needs summary, summary_en"},

		{name: "verify is AXLR's own", def: "axlr_plan", step: "verify", args: `{"verdict": "verified"}`, err: "step verify is AXLR's own"},
		{name: "start is AXLR's own", def: "axlr_task", step: "start", args: `{}`, err: "step start is AXLR's own"},
		{name: "integrate is AXLR's own", def: "axlr_sync", step: "integrate", args: `{}`, err: "step integrate is AXLR's own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hb, err := Validate(tt.def, "1.0", tt.step, []byte(tt.args), tt.compact)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := decoded(hb); ok != (tt.step == "decompose") {
				t.Fatalf("decoded tasks %v for step %s", ok, tt.step)
			}
			if tt.check != nil {
				tt.check(t, hb)
			}
		})
	}
}

func TestNoteLines(t *testing.T) {
	tests := []struct {
		name, answer string
		want         []Note
	}{
		{"none", "I changed calc/max.go.", []Note{}},
		{"to a task and to all", "Fixed it.\nNOTE use-max: Max now takes int64\n  NOTE all:   go test ./... passes  \nnote all: lower case is no note\n", []Note{
			{To: "use-max", Text: "Max now takes int64"}, {To: NoteToAll, Text: "go test ./... passes"}}},
		{"not a task id", "NOTE Use-Max: x\nNOTE use_max: y\nNOTE : z", []Note{}},
		{"no text", "NOTE all:   \n", []Note{}},
		{"the first four", strings.Repeat("NOTE all: t\n", MaxNotes+2), slices.Repeat([]Note{{To: NoteToAll, Text: "t"}}, MaxNotes)},
		{"a long text is cut", "NOTE all: " + strings.Repeat("é", MaxNoteChars+10), []Note{{To: NoteToAll, Text: strings.Repeat("é", MaxNoteChars)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NoteLines(tt.answer); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("NoteLines = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestStepDoneSchemaPlans(t *testing.T) {
	props := func(t *testing.T, def, step string, compact bool) map[string]json.RawMessage {
		t.Helper()
		b, err := StepDoneSchema(def, "1.0", step, compact)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.Properties
	}
	var tasks struct {
		Type     string `json:"type"`
		MinItems int    `json:"minItems"`
		MaxItems int    `json:"maxItems"`
		Items    struct {
			Required   []string `json:"required"`
			Properties struct {
				Scope   struct{ MinItems, MaxItems int } `json:"scope"`
				Context struct {
					MaxItems int `json:"maxItems"`
					Items    struct {
						Required []string `json:"required"`
					} `json:"items"`
				} `json:"context"`
				UnitCheck struct {
					Required []string `json:"required"`
				} `json:"unit_check"`
			} `json:"properties"`
		} `json:"items"`
	}
	plan := props(t, "axlr_plan", "decompose", false)
	if err := json.Unmarshal(plan["tasks"], &tasks); err != nil {
		t.Fatal(err)
	}
	p := tasks.Items.Properties
	if tasks.Type != "array" || tasks.MinItems != 1 || tasks.MaxItems != MaxTasks || !slices.Equal(tasks.Items.Required, []string{"id", "goal", "scope", "unit_check"}) ||
		p.Scope.MinItems != 1 || p.Scope.MaxItems != MaxScope || p.Context.MaxItems != MaxCitations ||
		!slices.Equal(p.Context.Items.Required, []string{"path", "line", "quote"}) || !slices.Equal(p.UnitCheck.Required, []string{"program"}) {
		t.Fatalf("tasks schema %s", plan["tasks"])
	}
	var interfaces struct{ MaxLength int }
	if err := json.Unmarshal(plan["interfaces"], &interfaces); err != nil || interfaces.MaxLength != MaxInterfacesChars {
		t.Fatalf("interfaces schema %s", plan["interfaces"])
	}
	for _, record := range []string{"verdict", "decision", "outcome"} {
		if _, ok := plan[record]; ok {
			t.Errorf("the planner's schema offers the console's record %s", record)
		}
	}
	green := props(t, "axlr_task", "green", true)
	var notes struct {
		MaxItems int `json:"maxItems"`
		Items    struct {
			Required   []string `json:"required"`
			Properties struct {
				Text struct{ MaxLength int } `json:"text"`
			} `json:"properties"`
		} `json:"items"`
	}
	var questions struct {
		MaxItems int
		Items    struct{ MaxLength int }
	}
	if err := json.Unmarshal(green["notes"], &notes); err != nil || notes.MaxItems != MaxNotes || notes.Items.Properties.Text.MaxLength != MaxNoteChars || !slices.Equal(notes.Items.Required, []string{"to", "text"}) {
		t.Fatalf("notes schema %s", green["notes"])
	}
	if err := json.Unmarshal(green["questions"], &questions); err != nil || questions.MaxItems != MaxQuestions || questions.Items.MaxLength != MaxNoteChars {
		t.Fatalf("questions schema %s", green["questions"])
	}
	if len(green) != 5 {
		t.Fatalf("compact green schema %v, want step, summary, summary_en, notes, questions", green)
	}
	var testFiles struct{ MinItems, MaxItems int }
	if err := json.Unmarshal(props(t, "axlr_task", "red", true)["test_files"], &testFiles); err != nil || testFiles.MinItems != 1 || testFiles.MaxItems != MaxTestFiles {
		t.Fatalf("test_files schema: %+v, %v", testFiles, err)
	}
	if _, err := StepDoneSchema("axlr_sync", "1.0", "reconcile", true); err == nil || !strings.Contains(err.Error(), "AXLR's own") {
		t.Fatalf("schema of a console step: %v", err)
	}
}

// decodedPlan is what a decompose hand-back's fields hold, decoded.
type decodedPlan struct {
	Tasks      []PlanTask
	E2ECheck   CheckCommand
	Interfaces string
	SummaryEn  string
}

// decoded reads a decompose hand-back's plan; false for another step's.
func decoded(h HandBack) (decodedPlan, bool) {
	tasks, ok := h.Fields["tasks"].([]PlanTask)
	if !ok {
		return decodedPlan{}, false
	}
	p := decodedPlan{Tasks: tasks}
	p.E2ECheck, _ = h.Fields["e2e_check"].(CheckCommand)
	p.Interfaces, _ = h.Fields["interfaces"].(string)
	p.SummaryEn, _ = h.Fields["summary_en"].(string)
	return p, true
}

func TestCheckCommandString(t *testing.T) {
	tests := []struct {
		c    CheckCommand
		want string
	}{
		{CheckCommand{Program: "go", Args: []string{"test", "./..."}}, "go test ./..."},
		{CheckCommand{Program: "go", Args: []string{"test", "-run", "TestA|TestB", "./calc"}}, "go test -run 'TestA|TestB' ./calc"},
		{CheckCommand{Program: "sh", Args: []string{"-c", "echo it's"}}, `sh -c 'echo it'\''s'`},
		{CheckCommand{Program: "printf", Args: []string{""}}, "printf ''"},
		{CheckCommand{Program: "/usr/bin/make", Args: []string{"CC=gcc", "a,b@c%d+e:f"}}, "/usr/bin/make CC=gcc a,b@c%d+e:f"},
		{CheckCommand{Program: "my prog"}, "'my prog'"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%#v: %s, want %s", tt.c, got, tt.want)
		}
	}
}

// TestJudge pins what a run of each check means for its step: the
// outcome, whether it settles the step, and what the model is told.
func TestJudge(t *testing.T) {
	const noTests = "ok  \tcalc\t0.1s [no tests to run]\n"
	tests := []struct {
		name     string
		check    Check
		exit     int
		output   string
		want     bool
		settles  bool
		feedback string
	}{
		{"reproduced", CheckReproduce, 1, "FAIL", true, true, ""},
		{"not reproduced", CheckReproduce, 0, "ok", false, true, "The command exited 0: the failure is not reproduced. "},
		{"baseline records any exit", CheckBaseline, 3, "", true, false, ""},
		{"rerun passes", CheckRerun, 0, "ok", true, false, ""},
		{"rerun fails", CheckRerun, 2, "FAIL", false, false, "The command exited 2: the step is not done. "},
		{"missing fails", CheckMissing, 1, "FAIL", true, true, ""},
		{"missing runs no test", CheckMissing, 0, noTests, true, true, ""},
		{"missing already passes", CheckMissing, 0, "ok  \tcalc\t0.1s\n", false, true,
			"The command exited 0 and ran tests: the improvement is not missing. Hand back a check that fails until the improvement is built. "},
		{"present passes", CheckPresent, 0, "ok  \tcalc\t0.1s\n", true, false, ""},
		{"present fails", CheckPresent, 1, "FAIL", false, false, "The command exited 1: the step is not done. "},
		{"present runs no test", CheckPresent, 0, noTests, false, false,
			"The command passed but ran no test ([no tests to run]): add the test the brief's check names. "},
		{"red fails as it must", CheckRed, 1, "FAIL", true, false, ""},
		{"green passes", CheckGreen, 0, "ok  \tcalc\t0.1s\n", true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := tt.check.Judge(tt.exit, tt.output)
			if j.Holds != tt.want || j.Settles != tt.settles || j.Feedback != tt.feedback {
				t.Errorf("Judge(%d, %q) = %+v, want holds %v, settles %v, feedback %q", tt.exit, tt.output, j, tt.want, tt.settles, tt.feedback)
			}
		})
	}
}

func TestHosted(t *testing.T) {
	for _, c := range []Check{CheckNone, CheckReproduce, CheckBaseline, CheckRerun, CheckRevision, CheckMissing, CheckPresent, CheckRed, CheckGreen} {
		if got, want := c.Hosted(), c == CheckRed || c == CheckGreen; got != want {
			t.Errorf("%q.Hosted() = %v, want %v", c, got, want)
		}
	}
}

func TestReadRevision(t *testing.T) {
	head, dirty := ReadRevision("0123abcd \n M calc.go\n?? new.go\n")
	if head != "0123abcd" || dirty != " M calc.go\n?? new.go\n" {
		t.Errorf("ReadRevision = %q, %q", head, dirty)
	}
	if head, dirty := ReadRevision(""); head != "" || dirty != "" {
		t.Errorf("ReadRevision of nothing = %q, %q", head, dirty)
	}
}

func TestLookup(t *testing.T) {
	for _, d := range All() {
		got, ok := Lookup(d.Name, d.Version)
		if !ok || got != d {
			t.Errorf("Lookup(%s, %s) = %+v, %v", d.Name, d.Version, got, ok)
		}
	}
	if _, ok := Lookup("axlr_debug", "9.9"); ok {
		t.Error("Lookup found a version that is not pinned")
	}
}
