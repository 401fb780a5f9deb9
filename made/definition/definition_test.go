package definition

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/made"
)

func readCeremony(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../ceremonies/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseAXLRDebug(t *testing.T) {
	def, err := Parse(readCeremony(t, "axlr_debug-2.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if def.Name != "axlr_debug" || def.Version != "2.0" || !strings.HasPrefix(def.Description, "Reproduce a failure") {
		t.Fatalf("identity %q %q %q", def.Name, def.Version, def.Description)
	}
	if len(def.States) != 6 || len(def.Transitions) != 7 || len(def.Steps) != 4 || len(def.Guards) != 8 || len(def.Roles) != 1 {
		t.Fatalf("%d states, %d transitions, %d steps, %d guards, %d roles",
			len(def.States), len(def.Transitions), len(def.Steps), len(def.Guards), len(def.Roles))
	}
	if def.StepTimeout != time.Hour || def.Retry != (RetryPolicy{MaxAttempts: 1, Backoff: time.Second}) {
		t.Fatalf("timeout %v, retry %+v", def.StepTimeout, def.Retry)
	}
	if *def.MaxParallel != 1 || *def.MaxTransitions != 20 || *def.MaxBounces != 3 {
		t.Fatalf("limits %d %d %d", *def.MaxParallel, *def.MaxTransitions, *def.MaxBounces)
	}
	repair, ok := def.Step("repair")
	if !ok || repair.State != "REPAIR" || repair.Handler != "host_callback" || repair.NumAgents != 1 || !repair.SeePrior {
		t.Fatalf("repair step %+v", repair)
	}
	if repair.Repeat == nil || *repair.Repeat != (Repeat{MaxIterations: 3, Until: Until{OutputField: "repaired", Equals: true}}) {
		t.Fatalf("repair repeat %+v", repair.Repeat)
	}
	if p, ok := repair.Config["prompt"].(string); !ok || !strings.HasPrefix(p, "Repair the failure") {
		t.Fatalf("repair config %v", repair.Config)
	}
	if s, ok := def.State("REPRODUCE"); !ok || s.Kind != StateInitial {
		t.Fatalf("REPRODUCE %+v", s)
	}
	for name, want := range map[string]GuardCondition{
		"reproduce_completed":       {Kind: GuardStepStatus, Step: "reproduce", Status: "COMPLETED"},
		"declared_not_reproducible": {Kind: GuardOutputField, Step: "reproduce", Field: "reproducible", Value: false},
		"repair_repeat_exhausted":   {Kind: GuardStepRepeatExhausted, Step: "repair"},
	} {
		if g, ok := def.Guard(name); !ok || g.Condition != want {
			t.Errorf("guard %s: %+v, want %+v", name, g.Condition, want)
		}
	}
	if got := def.Roles[0].Actions[0]; got != (RoleAction{Kind: ActionStep, Value: "diagnose"}) {
		t.Fatalf("first action %+v (steps sort first, then by value)", got)
	}
	if _, ok := def.Step("nope"); ok {
		t.Fatal("found an undeclared step")
	}
}

func TestParseDefaults(t *testing.T) {
	def, err := Parse([]byte(`version: "1"
name: minimal
states: [{id: A, initial: true}, {id: B, terminal: true}]
steps: [{id: s, state: A, handler: h}]
transitions: [{from: A, to: B, trigger: go, guards: [z, a, z]}]
roles: [{id: R, allowed_actions: [go, s, s, request_intervention]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	s := def.Steps[0]
	if s.NumAgents != 1 || !s.SeePrior || s.Repeat != nil || len(s.Config) != 0 {
		t.Fatalf("step defaults %+v", s)
	}
	if def.Retry != (RetryPolicy{MaxAttempts: 1}) || def.StepTimeout != 0 || def.MaxTransitions != nil {
		t.Fatalf("definition defaults: retry %+v, timeout %v, max transitions %v", def.Retry, def.StepTimeout, def.MaxTransitions)
	}
	if got := strings.Join(def.Transitions[0].Guards, ","); got != "a,z" {
		t.Fatalf("required guards %s, want sorted and unique", got)
	}
	want := []RoleAction{{ActionStep, "s"}, {ActionTransition, "go"}, {ActionRequestIntervention, ""}}
	if len(def.Roles[0].Actions) != len(want) {
		t.Fatalf("actions %+v, want %+v", def.Roles[0].Actions, want)
	}
	for i := range want {
		if def.Roles[0].Actions[i] != want[i] {
			t.Fatalf("actions %+v, want %+v", def.Roles[0].Actions, want)
		}
	}
}

func TestParseConfigTypes(t *testing.T) {
	def, err := Parse([]byte(`version: "1"
name: cfg
states: [{id: A, initial: true}]
steps:
  - id: s
    state: A
    handler: h
    config:
      text: "x"
      date: 2026-06-06
      int: 42
      big: 18446744073709551615
      float: 1.5
      flag: true
      nothing: ~
      list: [1, "two"]
      nested: {b: 1, a: {c: 2}}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := def.Steps[0].Config
	for key, want := range map[string]any{
		"text": "x", "date": "2026-06-06", "int": int64(42), "big": uint64(18446744073709551615),
		"float": 1.5, "flag": true, "nothing": nil,
	} {
		if c[key] != want {
			t.Errorf("config %s = %#v, want %#v", key, c[key], want)
		}
	}
	if l, ok := c["list"].([]any); !ok || len(l) != 2 || l[0] != int64(1) || l[1] != "two" {
		t.Errorf("config list %#v", c["list"])
	}
	if n, ok := c["nested"].(map[string]any); !ok || n["a"].(map[string]any)["c"] != int64(2) {
		t.Errorf("config nested %#v", c["nested"])
	}
}

const parseBase = `version: "1.0"
name: base
states:
  - {id: A, initial: true}
  - {id: B, terminal: true}
transitions:
  - {from: A, to: B, trigger: go, guards: [done]}
steps:
  - {id: s, state: A, handler: h}
guards:
  done: {type: automated, check: "step_status:s:COMPLETED"}
roles:
  - {id: R, allowed_actions: [s, go]}
`

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"yaml syntax", parseBase, "version: [", "invariant violated: invalid ceremony yaml"},
		{"empty document", parseBase, "", "invariant violated: invalid ceremony yaml: the document is empty"},
		{"two documents", "name: base\n", "name: base\n---\nname: other\n", "invariant violated: invalid ceremony yaml: more than one YAML document"},
		{"not a mapping", parseBase, "- a\n", "invariant violated: invalid ceremony yaml: the definition must be a mapping"},
		{"unquoted version", `version: "1.0"`, "version: 1.0", `invariant violated: invalid ceremony yaml: key "version" in the definition must be a string`},
		{"missing name", "name: base\n", "", `invariant violated: invalid ceremony yaml: missing key "name" in the definition`},
		{"duplicate key", "name: base\n", "name: base\nname: again\n", `invariant violated: invalid ceremony yaml: duplicate key "name" in the definition`},
		{"unknown top-level key", "name: base\n", "name: base\nrepeat: 2\n", `unknown key "repeat" in the definition`},
		{"unknown state key", "{id: A, initial: true}", "{id: A, initial: true, final: false}", `unknown key "final" in state "A"`},
		{"unknown transition key", "trigger: go,", "trigger: go, when: now,", `unknown key "when" in transition "go" from "A"`},
		{"unknown step key", "handler: h}", "handler: h, repeats: 3}", `unknown key "repeats" in step "s"`},
		{"unknown step repeat key", "handler: h}", "handler: h, repeat: {max_iterations: 2, until: {output_field: ok, equals: true}, every: 1}}", `unknown key "every" in step "s" repeat`},
		{"step until names a step", "handler: h}", "handler: h, repeat: {max_iterations: 2, until: {step: s, output_field: ok, equals: true}}}", `unknown key "step" in step "s" repeat.until`},
		{"unknown guard key", "check: \"step_status:s:COMPLETED\"}", "check: \"step_status:s:COMPLETED\", note: x}", `unknown key "note" in guard "done"`},
		{"unknown role key", "{id: R, allowed_actions: [s, go]}", "{id: R, allowed_actions: [s, go], seat: 1}", `unknown key "seat" in role "R"`},
		{"unknown inputs key", "name: base\n", "name: base\ninputs: {required: [a], maybe: [b]}\n", `unknown key "maybe" in inputs`},
		{"named retry policy", "name: base\n", "name: base\nretry_policies: {default: {max_attempts: 1}, slow: {max_attempts: 3}}\n", `unknown key "slow" in retry_policies`},
		{"unknown timeout", "name: base\n", "name: base\ntimeouts: {step_default: 1, claim: 2}\n", `unknown key "claim" in timeouts`},
		{"unknown state repeat key", "{id: A, initial: true}", "{id: A, initial: true, repeat: {max_iterations: 2, until: {step: s, output_field: ok, equals: true, or: 1}}}", `unknown key "or" in state "A" repeat.until`},
		{"state repeat without step", "{id: A, initial: true}", "{id: A, initial: true, repeat: {max_iterations: 2, until: {output_field: ok, equals: true}}}", `invariant violated: invalid ceremony yaml: missing key "step" in state "A" repeat.until`},
		{"repeat without until", "handler: h}", "handler: h, repeat: {max_iterations: 2}}", `invariant violated: invalid ceremony yaml: missing key "until" in step "s" repeat`},
		{"until equals a list", "handler: h}", "handler: h, repeat: {max_iterations: 2, until: {output_field: ok, equals: [true]}}}", `invariant violated: invalid ceremony yaml: key "equals" in step "s" repeat.until must be a boolean, number or string`},
		{"until equals null", "handler: h}", "handler: h, repeat: {max_iterations: 2, until: {output_field: ok, equals: ~}}}", `invariant violated: invalid ceremony yaml: key "equals" in step "s" repeat.until must be a boolean, number or string`},
		{"zero iterations", "handler: h}", "handler: h, repeat: {max_iterations: 0, until: {output_field: ok, equals: true}}}", "value `ceremony_step.repeat.max_iterations` must be non-zero"},
		{"zero state iterations", "{id: A, initial: true}", "{id: A, initial: true, repeat: {max_iterations: 0, until: {step: s, output_field: ok, equals: true}}}", "value `ceremony_state.repeat.max_iterations` must be non-zero"},
		{"negative iterations", "handler: h}", "handler: h, repeat: {max_iterations: -1, until: {output_field: ok, equals: true}}}", `invariant violated: invalid ceremony yaml: key "max_iterations" in step "s" repeat must be a non-negative integer`},
		{"zero agents", "handler: h}", "handler: h, num_agents: 0}", "value `ceremony_step.num_agents` must be non-zero"},
		{"see_prior not a boolean", "handler: h}", "handler: h, see_prior: yes}", `invariant violated: invalid ceremony yaml: key "see_prior" in step "s" must be true or false`},
		{"zero max_parallel", "name: base\n", "name: base\nmax_parallel: 0\n", "value `ceremony_definition.max_parallel` must be non-zero"},
		{"zero max_transitions", "name: base\n", "name: base\nmax_transitions: 0\n", "value `ceremony_definition.max_transitions` must be non-zero"},
		{"negative max_bounces", "name: base\n", "name: base\nmax_bounces: -1\n", `invariant violated: invalid ceremony yaml: key "max_bounces" in the definition must be a non-negative integer`},
		{"zero max_attempts", "name: base\n", "name: base\nretry_policies: {default: {max_attempts: 0}}\n", "value `step_attempt` must be non-zero"},
		{"retry without max_attempts", "name: base\n", "name: base\nretry_policies: {default: {backoff_seconds: 1}}\n", `invariant violated: invalid ceremony yaml: missing key "max_attempts" in retry_policies.default`},
		{"initial and terminal", "{id: B, terminal: true}", "{id: B, terminal: true, initial: true}", "invariant violated: ceremony state cannot be both initial and terminal"},
		{"ceremony name", "name: base", "name: Base", "field `ceremony_name` contains invalid characters"},
		{"long ceremony name", "name: base", "name: " + strings.Repeat("a", 129), "field `ceremony_name` exceeds maximum length: 129 > 128"},
		{"version characters", `version: "1.0"`, `version: "1 0"`, "field `ceremony_version` contains invalid characters"},
		{"blank description", "name: base\n", "name: base\ndescription: \" \"\n", "field `ceremony_description` must not be empty"},
		{"step id", "{id: s, state: A", "{id: S, state: A", "field `step_id` contains invalid characters"},
		{"handler", "handler: h}", "handler: H}", "field `step_handler_kind` contains invalid characters"},
		{"guard name", "guards: [done]", "guards: [Done]", "field `guard_name` contains invalid characters"},
		{"unsupported check", "step_status:s:COMPLETED", "s is done", "invariant violated: unsupported ceremony guard check"},
		{"unknown status", "step_status:s:COMPLETED", "step_status:s:DONE", "invariant violated: unknown ceremony step status"},
		{"output_field without value", "step_status:s:COMPLETED", "output_field:s:ok", "invariant violated: unsupported ceremony guard check"},
		{"output_field bad step", "step_status:s:COMPLETED", "output_field:S:ok=true", "field `step_id` contains invalid characters"},
		{"ambiguous action", "{id: s, state: A, handler: h}", "{id: s, state: A, handler: h}\n  - {id: go, state: A, handler: h}", "invariant violated: ceremony role action is ambiguous"},
		{"capability named like a step", parseBase, strings.NewReplacer("{id: s,", "{id: request_intervention,", "[s, go]", "[request_intervention, go]").Replace(parseBase),
			"invariant violated: ceremony role action is ambiguous"},
		{"no allowed actions", "allowed_actions: [s, go]", "allowed_actions: []", "collection `ceremony_role.allowed_actions` must contain at least one element"},
		{"config key blank", "handler: h}", `handler: h, config: {" ": 1}}`, "field `attributes.key` must not be empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(parseBase, c.old, c.new, 1)
			if c.old == parseBase {
				src = c.new
			}
			if src == parseBase {
				t.Fatalf("the case changes nothing: %q not found", c.old)
			}
			_, err := Parse([]byte(src))
			var e *made.Error
			if !errors.As(err, &e) || e.Kind != made.KindNotPublishable || e.Message != c.want {
				t.Fatalf("got %v, want %s: %q", err, made.KindNotPublishable, c.want)
			}
		})
	}
}

func TestCheckValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		want any
	}{
		{"true", true}, {"false", false}, {"3", int64(3)}, {"-3", int64(-3)}, {"3.5", 3.5},
		{"1e3", 1000.0}, {"99999999999999999999", 1e20}, {"approve", "approve"}, {"True", "True"},
		{"03", "03"}, {"", ""}, {" 3", " 3"},
	} {
		if got := checkValue(c.in); got != c.want {
			t.Errorf("checkValue(%q) = %#v, want %#v", c.in, got, c.want)
		}
	}
}

func TestJSONEqual(t *testing.T) {
	for _, c := range []struct {
		got, want any
		equal     bool
	}{
		{true, true, true}, {"true", true, false}, {true, "true", false},
		{3.0, int64(3), true}, {"3", int64(3), false}, {3.5, 3.5, true}, {int64(3), 3.0, true},
		{"approve", "approve", true}, {nil, "approve", false}, {false, true, false},
		{map[string]any{}, "x", false},
	} {
		if got := jsonEqual(c.got, c.want); got != c.equal {
			t.Errorf("jsonEqual(%#v, %#v) = %v", c.got, c.want, got)
		}
	}
}
