package ceremonies

import (
	"encoding/json"
	"reflect"
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
			if st.Outcome == "" || len(st.Requires) == 0 {
				t.Errorf("%s %s step %s has no outcome or no required fields", d.Name, d.Version, st.ID)
			}
			for _, set := range st.Requires {
				for _, name := range set {
					if !slices.ContainsFunc(st.Fields, func(f Field) bool { return f.Name == name }) {
						t.Errorf("%s %s step %s requires %s, which is not one of its fields", d.Name, d.Version, st.ID, name)
					}
				}
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
