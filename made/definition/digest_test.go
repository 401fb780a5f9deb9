package definition

import (
	"math"
	"strings"
	"testing"
)

// MADE's own publication test definition (crates/made-mcp/tests/
// embedded_stdio.rs, PUBLISHABLE_CEREMONY_YAML).
const madePublishable = `
version: "1.0"
name: "publishable_ceremony"
states:
  - id: OPEN
    initial: true
  - id: DONE
    terminal: true
transitions:
  - from: OPEN
    to: DONE
    trigger: finish
steps:
  - id: work
    state: OPEN
    handler: embedded_noop
roles:
  - id: FACILITATOR
    allowed_actions:
      - work
      - finish
`

// The reference's worked example (§8).
const changeReview = `version: "1.0"
name: "change_review"
description: "Draft a change, review it, release it with human sign-off"
inputs: {required: [change_ref]}
outputs: {review_report: {}}
states:
  - {id: DRAFTING, initial: true}
  - {id: REVIEWING}
  - {id: RELEASED, terminal: true}
  - {id: CANCELLED, terminal: true}
transitions:
  - {from: DRAFTING, to: REVIEWING, trigger: submit, guards: [draft_done]}
  - {from: REVIEWING, to: RELEASED, trigger: release, guards: [review_done, release_approved]}
  - {from: DRAFTING, to: CANCELLED, trigger: cancel}
  - {from: REVIEWING, to: CANCELLED, trigger: cancel}
steps:
  - {id: draft, state: DRAFTING, handler: host_callback}
  - {id: review, state: REVIEWING, handler: host_callback, config: {instructions: "Review the draft"}}
guards:
  draft_done: {type: automated, check: "step_status:draft:COMPLETED"}
  review_done: {type: automated, check: "step_status:review:COMPLETED"}
  release_approved: {type: human, check: manual_approval}
roles:
  - {id: AUTHOR, allowed_actions: [draft, submit, cancel]}
  - {id: REVIEWER, allowed_actions: [review, release]}
timeouts: {step_default: 300}
retry_policies: {default: {max_attempts: 2, backoff_seconds: 1}}
`

func digestOf(t *testing.T, yaml string) string {
	t.Helper()
	def, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return Digest(def)
}

func canonical(t *testing.T, yaml string) string {
	t.Helper()
	def, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	var w canonicalWriter
	w.definition(def)
	return w.b.String()
}

// TestDigestPredictions checks §7's two predicted digests.
func TestDigestPredictions(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"publishable_ceremony", madePublishable, "94869a3c73c3acd5df459153f2851b0b66702c3ee2250f80f2e28c9497baa718"},
		{"change_review", changeReview, "50d223ceb02cf197cf44777a6dfa84c401f1315a7ecf2a0a59561eb61c469477"},
	} {
		if got := digestOf(t, c.yaml); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestDigestCanonicalForm(t *testing.T) {
	want := `{"name":"publishable_ceremony","version":"1.0","description":null,"inputs":{},"outputs":{},` +
		`"states":{"DONE":{"id":"DONE","kind":"terminal"},"OPEN":{"id":"OPEN","kind":"initial"}},` +
		`"transitions":[{"from":"OPEN","to":"DONE","trigger":"finish","required_guards":[]}],` +
		`"steps":{"work":{"id":"work","state_id":"OPEN","handler_kind":"embedded_noop","handler_config":{},` +
		`"retry_policy":{"max_attempts":1,"backoff":0},"timeout":null}},"step_order":["work"],"guards":{},` +
		`"roles":{"FACILITATOR":{"id":"FACILITATOR","allowed_actions":[{"kind":"step","value":"work"},{"kind":"transition","value":"finish"}]}}}`
	if got := canonical(t, madePublishable); got != want {
		t.Fatalf("canonical form\n%s\nwant\n%s", got, want)
	}
}

func TestDigestNewConstructs(t *testing.T) {
	got := canonical(t, `version: "1"
name: newer
states:
  - {id: A, initial: true, repeat: {max_iterations: 2, until: {step: s, output_field: verdict, equals: ok}}}
  - {id: B, terminal: true}
transitions:
  - {from: A, to: B, trigger: go, guards: [g1, g2, g3]}
steps:
  - {id: s, state: A, handler: h, num_agents: 2, see_prior: false, repeat: {max_iterations: 3, until: {output_field: n, equals: 1.5}}}
  - {id: t, state: A, handler: h, num_agents: 1, see_prior: true}
guards:
  g1: {type: automated, check: "output_field:s:n=3"}
  g2: {type: automated, check: "step_repeat_exhausted:s"}
  g3: {type: automated, check: "state_repeat_exhausted:A"}
roles:
  - {id: R, allowed_actions: [s, t, go]}
max_bounces: 0
`)
	for _, part := range []string{
		`"A":{"id":"A","kind":"initial","repeat":{"max_iterations":2,"until":{"step_id":"s","output_field":"verdict","equals":"ok"}}}`,
		`"timeout":null,"num_agents":2,"see_prior":false,"repeat":{"max_iterations":3,"until":{"output_field":"n","equals":1.5}}}`,
		`"t":{"id":"t","state_id":"A","handler_kind":"h","handler_config":{},"retry_policy":{"max_attempts":1,"backoff":0},"timeout":null}`,
		`"g1":{"name":"g1","condition":{"kind":"output_field","step_id":"s","field":"n","value":3}}`,
		`"g2":{"name":"g2","condition":{"kind":"step_repeat_exhausted","step_id":"s"}}`,
		`"g3":{"name":"g3","condition":{"kind":"state_repeat_exhausted","state_id":"A"}}`,
	} {
		if !strings.Contains(got, part) {
			t.Errorf("canonical form lacks %s:\n%s", part, got)
		}
	}
	if limits := `,"limits":{"max_parallel":null,"max_transitions":null,"max_bounces":0}}`; !strings.HasSuffix(got, limits) {
		t.Errorf("canonical form does not end with %s:\n%s", limits, got)
	}
}

func TestDigestInvariance(t *testing.T) {
	base := digestOf(t, changeReview)
	same := map[string]string{
		"comments and layout": "# a comment\n" + strings.ReplaceAll(changeReview, "{id: DRAFTING, initial: true}", "{initial: true,   id: DRAFTING}"),
		"guard order":         strings.Replace(changeReview, "[review_done, release_approved]", "[release_approved, review_done, review_done]", 1),
		"action order":        strings.Replace(changeReview, "[draft, submit, cancel]", "[cancel, draft, submit]", 1),
		"role order": strings.Replace(changeReview,
			"  - {id: AUTHOR, allowed_actions: [draft, submit, cancel]}\n  - {id: REVIEWER, allowed_actions: [review, release]}",
			"  - {id: REVIEWER, allowed_actions: [review, release]}\n  - {id: AUTHOR, allowed_actions: [draft, submit, cancel]}", 1),
		"output values":     strings.Replace(changeReview, "{review_report: {}}", "{review_report: {type: object}}", 1),
		"trimmed ids":       strings.Replace(changeReview, "trigger: submit,", `trigger: " submit ",`, 1),
		"default extension": strings.Replace(changeReview, "handler: host_callback}", "handler: host_callback, num_agents: 1, see_prior: true}", 1),
	}
	for name, yaml := range same {
		if got := digestOf(t, yaml); got != base {
			t.Errorf("%s changed the digest", name)
		}
	}
	differ := map[string]string{
		"transition order": strings.Replace(changeReview,
			"  - {from: DRAFTING, to: CANCELLED, trigger: cancel}\n  - {from: REVIEWING, to: CANCELLED, trigger: cancel}",
			"  - {from: REVIEWING, to: CANCELLED, trigger: cancel}\n  - {from: DRAFTING, to: CANCELLED, trigger: cancel}", 1),
		"config":      strings.Replace(changeReview, `"Review the draft"`, `"Review it"`, 1),
		"config type": strings.Replace(changeReview, `{instructions: "Review the draft"}`, `{instructions: "Review the draft", rounds: 2}`, 1),
		"retry":       strings.Replace(changeReview, "max_attempts: 2", "max_attempts: 3", 1),
		"timeout":     strings.Replace(changeReview, "step_default: 300", "step_default: 301", 1),
		"num_agents":  strings.Replace(changeReview, "handler: host_callback}", "handler: host_callback, num_agents: 2}", 1),
		"see_prior":   strings.Replace(changeReview, "handler: host_callback}", "handler: host_callback, see_prior: false}", 1),
		"a limit":     changeReview + "max_transitions: 10\n",
		"step order": strings.Replace(changeReview,
			"  - {id: draft, state: DRAFTING, handler: host_callback}\n  - {id: review, state: REVIEWING, handler: host_callback, config: {instructions: \"Review the draft\"}}\n",
			"  - {id: review, state: REVIEWING, handler: host_callback, config: {instructions: \"Review the draft\"}}\n  - {id: draft, state: DRAFTING, handler: host_callback}\n", 1),
		"a human type": strings.Replace(changeReview, "draft_done: {type: automated", "draft_done: {type: human", 1),
	}
	for name, yaml := range differ {
		if yaml == changeReview {
			t.Fatalf("%s: the case changes nothing", name)
		}
		if got := digestOf(t, yaml); got == base {
			t.Errorf("%s did not change the digest", name)
		}
	}
}

func TestCanonicalStrings(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`a"b\c`, `"a\"b\\c"`},
		{"tab\tnl\ncr\rbs\bff\f", `"tab\tnl\ncr\rbs\bff\f"`},
		{"\x00\x1f\x7f", `"\u0000\u001f` + "\x7f" + `"`},
		{"<&>", `"<&>"`},
		{"ñ\u2028", "\"ñ\u2028\""},
	} {
		var w canonicalWriter
		w.str(c.in)
		if got := w.b.String(); got != c.want {
			t.Errorf("%q: %s, want %s", c.in, got, c.want)
		}
	}
}

// TestFormatFloat checks serde_json's (ryu's) number forms.
func TestFormatFloat(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {-2, "-2.0"}, {1.5, "1.5"}, {0.1, "0.1"},
		{100, "100.0"}, {1234.5678, "1234.5678"}, {1e15, "1000000000000000.0"}, {1e16, "1e16"},
		{1.5e16, "1.5e16"}, {123456789012345680, "1.2345678901234568e17"}, {0.0001, "0.0001"},
		{0.00001, "0.00001"}, {0.000001, "1e-6"}, {1.5e-7, "1.5e-7"}, {1.7976931348623157e308, "1.7976931348623157e308"},
		{5e-324, "5e-324"}, {math.Inf(1), "null"}, {math.NaN(), "null"},
	} {
		if got := formatFloat(c.in); got != c.want {
			t.Errorf("formatFloat(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestCanonicalValues(t *testing.T) {
	var w canonicalWriter
	w.value(map[string]any{"b": []any{int64(1), uint64(18446744073709551615), 2.0, nil, true}, "a": map[string]any{"z": "x", "y": 1}})
	if got, want := w.b.String(), `{"a":{"y":1,"z":"x"},"b":[1,18446744073709551615,2.0,null,true]}`; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}
