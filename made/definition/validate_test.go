package definition

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidateAXLRDefinitions(t *testing.T) {
	for _, file := range []string{"axlr_debug-2.0.yaml", "axlr_delivery-2.0.yaml"} {
		def, err := Parse(readCeremony(t, file))
		if err != nil {
			t.Fatal(err)
		}
		if f := Validate(def); len(f) != 0 {
			t.Errorf("%s: findings %+v", file, f)
		}
	}
}

// validateBase is clean; each case breaks it.
const validateBase = `version: "1.0"
name: base
inputs: {required: [a], optional: [b]}
outputs: {report: {}}
states:
  - {id: A, initial: true}
  - {id: B}
  - {id: DONE, terminal: true}
transitions:
  - {from: A, to: B, trigger: go, guards: [done]}
  - {from: B, to: DONE, trigger: finish, guards: [approved]}
steps:
  - {id: s, state: A, handler: h, repeat: {max_iterations: 2, until: {output_field: ok, equals: true}}}
  - {id: t, state: B, handler: h}
guards:
  done: {type: automated, check: "step_status:s:COMPLETED"}
  approved: {type: human, check: manual_approval}
roles:
  - {id: R, allowed_actions: [s, t, go, finish]}
`

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name     string
		replace  []string // old, new pairs
		findings string   // severity locus message, one a line
	}{
		{"clean", nil, ""},
		{"duplicates", []string{
			"optional: [b]", "optional: [a]",
			"  - {id: B}\n", "  - {id: B}\n  - {id: B}\n",
			"  - {id: t, state: B, handler: h}\n", "  - {id: t, state: B, handler: h}\n  - {id: t, state: A, handler: h}\n",
			"  - {id: R, allowed_actions: [s, t, go, finish]}\n", "  - {id: R, allowed_actions: [s, t, go, finish]}\n  - {id: R, allowed_actions: [s]}\n",
		}, `error {"kind":"input","input":"a"} already exists: ceremony_input
error {"kind":"state","state":"B"} already exists: ceremony_state
error {"kind":"step","step":"t"} already exists: ceremony_step
error {"kind":"role","role":"R"} already exists: ceremony_role`},
		{"two initial states", []string{"{id: B}", "{id: B, initial: true}"},
			`error {"kind":"definition"} invariant violated: ceremony definition must have exactly one initial state`},
		{"transition graph", []string{
			"  - {from: B, to: DONE, trigger: finish, guards: [approved]}\n",
			"  - {from: B, to: DONE, trigger: finish, guards: [approved]}\n" +
				"  - {from: X, to: DONE, trigger: a}\n  - {from: B, to: X, trigger: b}\n  - {from: DONE, to: B, trigger: c}\n" +
				"  - {from: B, to: A, trigger: finish}\n  - {from: A, to: DONE, trigger: d, guards: [ghost, done]}\n",
		}, `error {"kind":"transition","from":"X","trigger":"a"} not found: ceremony_transition.from_state
error {"kind":"transition","from":"B","trigger":"b"} not found: ceremony_transition.to_state
error {"kind":"transition","from":"DONE","trigger":"c"} invariant violated: terminal ceremony states cannot have outgoing transitions
error {"kind":"transition","from":"B","trigger":"finish"} already exists: ceremony_transition.state_trigger
error {"kind":"transition","from":"A","trigger":"d"} not found: ceremony_transition.guard`},
		{"steps", []string{"{id: t, state: B, handler: h}", "{id: t, state: DONE, handler: h}\n  - {id: u, state: NOWHERE, handler: h}"},
			`error {"kind":"step","step":"t"} invariant violated: terminal ceremony states cannot own executable steps
error {"kind":"step","step":"u"} not found: ceremony_step.state`},
		{"guards", []string{"  approved: {type: human, check: manual_approval}\n", "  approved: {type: human, check: manual_approval}\n" +
			"  g1: {type: automated, check: \"step_status:ghost:FAILED\"}\n" +
			"  g2: {type: automated, check: \"output_field:ghost:ok=true\"}\n" +
			"  g3: {type: automated, check: \"step_repeat_exhausted:t\"}\n" +
			"  g4: {type: automated, check: \"step_repeat_exhausted:ghost\"}\n" +
			"  g5: {type: automated, check: \"state_repeat_exhausted:GHOST\"}\n" +
			"  g6: {type: automated, check: \"state_repeat_exhausted:B\"}\n" +
			"  g7: {type: automated, check: \"step_repeat_exhausted:s\"}\n"},
			`error {"kind":"guard","guard":"g1"} not found: ceremony_guard.step
error {"kind":"guard","guard":"g2"} not found: ceremony_guard.step
error {"kind":"guard","guard":"g3"} invariant violated: step_repeat_exhausted names a step without repeat
error {"kind":"guard","guard":"g4"} not found: ceremony_guard.step
error {"kind":"guard","guard":"g5"} not found: ceremony_guard.state
error {"kind":"guard","guard":"g6"} invariant violated: state_repeat_exhausted names a state without repeat`},
		{"state repeats", []string{
			"{id: B}", "{id: B, repeat: {max_iterations: 2, until: {step: s, output_field: ok, equals: true}}}",
			"{id: DONE, terminal: true}", "{id: DONE, terminal: true, repeat: {max_iterations: 2, until: {step: t, output_field: ok, equals: true}}}\n  - {id: C, repeat: {max_iterations: 2, until: {step: ghost, output_field: ok, equals: 1}}}",
		}, `error {"kind":"state","state":"B"} invariant violated: a state repeat must read a step of its own state
error {"kind":"state","state":"C"} not found: ceremony_state.repeat.step
error {"kind":"state","state":"DONE"} invariant violated: terminal ceremony states cannot repeat
warning {"kind":"state","state":"C"} invariant violated: ceremony state is unreachable from the initial state`},
		{"role actions", []string{"[s, t, go, finish]", "[s, ghost, Ghost-Trigger, finish]"},
			`error {"kind":"role","role":"R"} not found: ceremony_role.step_action
error {"kind":"role","role":"R"} not found: ceremony_role.transition_action`},
		{"no terminal state", []string{"{id: DONE, terminal: true}", "{id: DONE}"},
			`warning {"kind":"definition"} invariant violated: ceremony definition has no terminal state`},
		{"stalls", []string{"  - {id: DONE, terminal: true}\n", "  - {id: DONE, terminal: true}\n  - {id: LOOP}\n  - {id: ISLAND}\n",
			"  - {from: B, to: DONE", "  - {from: A, to: LOOP, trigger: loop}\n  - {from: LOOP, to: A, trigger: x}\n  - {from: B, to: DONE"},
			`warning {"kind":"state","state":"ISLAND"} invariant violated: ceremony state is unreachable from the initial state`},
		{"dead end", []string{"  - {id: DONE, terminal: true}\n", "  - {id: DONE, terminal: true}\n  - {id: SINK}\n",
			"  - {from: B, to: DONE", "  - {from: A, to: SINK, trigger: sink}\n  - {from: B, to: DONE"},
			`warning {"kind":"state","state":"SINK"} invariant violated: no terminal state is reachable from this ceremony state`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.NewReplacer(c.replace...).Replace(validateBase)
			if len(c.replace) > 0 && src == validateBase {
				t.Fatal("the case changes nothing")
			}
			def, err := Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, f := range Validate(def) {
				l, _ := json.Marshal(f.Locus)
				lines = append(lines, string(f.Severity)+" "+string(l)+" "+f.Message)
			}
			if got := strings.Join(lines, "\n"); got != c.findings {
				t.Fatalf("findings:\n%s\nwant:\n%s", got, c.findings)
			}
		})
	}
}

func TestValidateNoStates(t *testing.T) {
	findings := Validate(&Definition{Name: "empty", Version: "1"})
	if len(findings) != 1 || findings[0].Message != "collection `ceremony_definition.states` must contain at least one element" {
		t.Fatalf("findings %+v", findings)
	}
	if f, ok := FirstError(findings); !ok || f != findings[0] {
		t.Fatalf("first error %+v %v", f, ok)
	}
	if _, ok := FirstError([]Finding{{Severity: SeverityWarning}}); ok {
		t.Fatal("a warning is not an error")
	}
}

func TestLocusString(t *testing.T) {
	for _, c := range []struct {
		locus Locus
		want  string
	}{
		{Locus{Kind: "definition"}, "the definition"},
		{Locus{Kind: "input", Input: "a"}, "input `a`"},
		{Locus{Kind: "output", Output: "o"}, "output `o`"},
		{Locus{Kind: "state", State: "A"}, "state `A`"},
		{Locus{Kind: "transition", From: "A", Trigger: "go"}, "transition `go` out of state `A`"},
		{Locus{Kind: "step", Step: "s"}, "step `s`"},
		{Locus{Kind: "guard", Guard: "g"}, "guard `g`"},
		{Locus{Kind: "role", Role: "R"}, "role `R`"},
	} {
		if got := c.locus.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.locus, got, c.want)
		}
	}
}
