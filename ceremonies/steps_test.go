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
