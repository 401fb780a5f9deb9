package plans

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/ceremonies"
)

const validJSON = `{
  "tasks": [
    {"id": "add-max", "goal": "Add Max to calc", "scope": ["calc/calc.go", "calc/calc_test.go"],
     "context": [{"path": "calc/calc.go", "line": 3, "quote": "func Min(a, b int) int {"}],
     "unit_check": {"program": "go", "args": ["test", "./calc"]},
     "depends_on": [], "test_first": true, "protect": ["go.mod"]},
    {"id": "use-max", "goal": "Use Max in main", "scope": ["main.go"],
     "unit_check": {"program": "go", "args": ["build", "./..."]}, "depends_on": ["add-max"]}
  ],
  "e2e_check": {"program": "go", "args": ["test", "./..."]},
  "interfaces": "func Max(a, b int) int",
  "summary_en": "Add Max and use it."
}`

func TestDecodeDecomposition(t *testing.T) {
	got, err := DecodeDecomposition([]byte(validJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := Decomposition{
		Tasks: []ceremonies.PlanTask{
			{
				ID: "add-max", Goal: "Add Max to calc", Scope: []string{"calc/calc.go", "calc/calc_test.go"},
				Context:   []ceremonies.Citation{{Path: "calc/calc.go", Line: 3, Quote: "func Min(a, b int) int {"}},
				UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./calc"}},
				DependsOn: []string{}, TestFirst: true, Protect: []string{"go.mod"},
			},
			{
				ID: "use-max", Goal: "Use Max in main", Scope: []string{"main.go"},
				UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"build", "./..."}}, DependsOn: []string{"add-max"},
			},
		},
		E2ECheck:   ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}},
		Interfaces: "func Max(a, b int) int",
		SummaryEN:  "Add Max and use it.",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n got %+v\nwant %+v", got, want)
	}
}

func TestDecodeDecompositionRefusals(t *testing.T) {
	task := func(fields string) string {
		return `{"tasks": [` + fields + `], "e2e_check": {"program": "go"}, "summary_en": "s"}`
	}
	const unit = `"unit_check": {"program": "go"}`
	tests := []struct {
		name, raw, want string
	}{
		{"not json", `{"tasks": [`, "the plan is not valid JSON; send one object with tasks, e2e_check, interfaces and summary_en"},
		{"too big", `"` + strings.Repeat("x", MaxDecomposition) + `"`, "the plan is 65538 bytes of JSON (at most 65536); propose fewer or smaller tasks"},
		{"array", `[]`, "the plan must be a JSON object, not an array"},
		{"unknown field", `{"tasks": [], "e2e_check": {"program": "go"}, "summary_en": "s", "waves": 2}`,
			`unknown argument "waves" for the plan; it takes tasks, e2e_check, interfaces, summary_en`},
		{"name case", `{"Tasks": [], "e2e_check": {"program": "go"}, "summary_en": "s"}`,
			`unknown argument "Tasks" for the plan; it takes tasks, e2e_check, interfaces, summary_en`},
		{"no summary", `{"tasks": [], "e2e_check": {"program": "go"}}`, "the plan needs argument summary_en"},
		{"null e2e", `{"tasks": [], "e2e_check": null, "summary_en": "s"}`, "the plan needs argument e2e_check"},
		{"e2e string", `{"tasks": [], "e2e_check": "go test ./...", "summary_en": "s"}`, "e2e_check of the plan must be a JSON object, not a string"},
		{"e2e unknown", `{"tasks": [], "e2e_check": {"program": "go", "cwd": "x"}, "summary_en": "s"}`,
			`unknown argument "cwd" for e2e_check of the plan; it takes program, args`},
		{"e2e args string", `{"tasks": [], "e2e_check": {"program": "go", "args": "test"}, "summary_en": "s"}`,
			"argument args of e2e_check of the plan must be an array of strings, not string"},
		{"tasks object", `{"tasks": {}, "e2e_check": {"program": "go"}, "summary_en": "s"}`,
			"tasks of the plan must be an array of task objects, not an object"},
		{"interfaces number", `{"tasks": [], "e2e_check": {"program": "go"}, "summary_en": "s", "interfaces": 3}`,
			"argument interfaces of the plan must be a string, not number"},
		{"task not object", task(`"a"`), "task 1 must be a JSON object, not a string"},
		{"task null", task(`null`), "task 1 must be a JSON object, not null"},
		{"task number", task(`7`), "task 1 must be a JSON object, not a number"},
		{"task array", task(`[]`), "task 1 must be a JSON object, not an array"},
		{"e2e boolean", `{"tasks": [], "e2e_check": true, "summary_en": "s"}`, "e2e_check of the plan must be a JSON object, not a boolean"},
		{"task unknown field", task(`{"id": "a", "goal": "g", "scope": ["a.go"], ` + unit + `, "files": []}`),
			`unknown argument "files" for task a; it takes id, goal, scope, context, unit_check, depends_on, test_first, protect`},
		{"task bad id named by position", task(`{"id": "A B", "goal": "g", "scope": ["a.go"], ` + unit + `, "files": []}`),
			`unknown argument "files" for task 1; it takes id, goal, scope, context, unit_check, depends_on, test_first, protect`},
		{"task no goal", task(`{"id": "a", "scope": ["a.go"], ` + unit + `}`), "task a needs argument goal"},
		{"task no unit check", task(`{"id": "a", "goal": "g", "scope": ["a.go"]}`), "task a needs argument unit_check"},
		{"scope string", task(`{"id": "a", "goal": "g", "scope": "a.go", ` + unit + `}`), "argument scope of task a must be an array of strings, not string"},
		{"test_first string", task(`{"id": "a", "goal": "g", "scope": ["a.go"], "test_first": "yes", ` + unit + `}`),
			"argument test_first of task a must be a boolean, not string"},
		{"unit check unknown", task(`{"id": "a", "goal": "g", "scope": ["a.go"], "unit_check": {"cmd": "go"}}`),
			`unknown argument "cmd" for unit_check of task a; it takes program, args`},
		{"context object", task(`{"id": "a", "goal": "g", "scope": ["a.go"], "context": {}, ` + unit + `}`),
			"context of task a must be an array of citation objects, not an object"},
		{"citation no quote", task(`{"id": "a", "goal": "g", "scope": ["a.go"], "context": [{"path": "a.go", "line": 1}], ` + unit + `}`),
			"citation 1 of task a needs argument quote"},
		{"citation line text", task(`{"id": "a", "goal": "g", "scope": ["a.go"], "context": [{"path": "a.go", "line": "1", "quote": "q"}], ` + unit + `}`),
			"argument line of citation 1 of task a must be an integer, not string"},
		{"citation line fraction", task(`{"id": "a", "goal": "g", "scope": ["a.go"], "context": [{"path": "a.go", "line": 1.5, "quote": "q"}], ` + unit + `}`),
			"argument line of citation 1 of task a must be an integer, not number 1.5"},
		{"second task", task(`{"id": "a", "goal": "g", "scope": ["a.go"], ` + unit + `}, {"id": "b", "goal": "g", "scope": ["b.go"], "unit_check": {}}`),
			"unit_check of task b needs argument program"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeDecomposition([]byte(tt.raw))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T), want a *DecodeError", err, err)
			}
			if de.Error() != tt.want {
				t.Fatalf("refusal\n got %s\nwant %s", de, tt.want)
			}
		})
	}
}

func TestDecodeAbsentObject(t *testing.T) {
	if _, err := decodeCommand("unit_check of task a", nil); err == nil || err.Error() != "unit_check of task a must be a JSON object, not nothing" {
		t.Fatalf("absent: %v", err)
	}
}

func TestDecodeDecompositionOptional(t *testing.T) {
	d, err := DecodeDecomposition([]byte(`{"tasks": [], "e2e_check": {"program": "go", "args": null}, "summary_en": "s", "interfaces": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Tasks != nil || d.E2ECheck.Args != nil || d.Interfaces != "" {
		t.Fatalf("decoded %+v", d)
	}
}

func TestCommands(t *testing.T) {
	d := Decomposition{
		E2ECheck: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}},
		Tasks: []ceremonies.PlanTask{
			{ID: "a", UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./a"}}},
			{ID: "b", UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}},
			{ID: "c", UnitCheck: ceremonies.CheckCommand{Program: " "}},
			{ID: "d", UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./a"}}},
			{ID: "e", UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"vet", "./a"}}},
		},
	}
	got := d.Commands()
	want := []ceremonies.CheckCommand{
		{Program: "go", Args: []string{"test", "./..."}},
		{Program: "go", Args: []string{"test", "./a"}},
		{Program: "go", Args: []string{"vet", "./a"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("commands %v, want %v", got, want)
	}
	if spec, ok := d.Task("b"); !ok || spec.ID != "b" {
		t.Fatalf("task b: %+v %v", spec, ok)
	}
	if _, ok := d.Task("z"); ok {
		t.Fatal("task z found")
	}
}
