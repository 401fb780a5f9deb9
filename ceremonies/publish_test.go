package ceremonies

import (
	"strings"
	"testing"
)

// teamReview is a team's own definition: two model steps and a human
// guard.
const teamReview = `version: "1.0"
name: team_review
description: "Draft a change note, then have a person approve it."
inputs:
  required: [brief, workspace]
states:
  - {id: DRAFT, initial: true}
  - {id: CHECK}
  - {id: APPROVAL}
  - {id: DONE, terminal: true}
transitions:
  - {from: DRAFT, to: CHECK, trigger: drafted, guards: [draft_done]}
  - {from: CHECK, to: APPROVAL, trigger: checked, guards: [check_done]}
  - {from: APPROVAL, to: DONE, trigger: approved, guards: [person_approves]}
steps:
  - {id: draft, state: DRAFT, handler: host_callback, config: {prompt: "Draft the change note."}}
  - {id: check, state: CHECK, handler: host_callback, config: {prompt: "Check the note against the code."}}
guards:
  draft_done: {type: automated, check: "step_status:draft:COMPLETED"}
  check_done: {type: automated, check: "step_status:check:COMPLETED"}
  person_approves: {type: human, check: manual_approval}
roles:
  - {id: AUTHOR, allowed_actions: [draft, check, drafted, checked]}
  - {id: APPROVER, allowed_actions: [approved]}
`

func TestValidateYAML(t *testing.T) {
	def, _, err := ValidateYAML([]byte(teamReview))
	if err != nil || def.Name != "team_review" || def.Version != "1.0" || len(def.Steps) != 2 {
		t.Fatalf("a team's definition: %v %v", def, err)
	}
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"an unquoted colon", strings.Replace(teamReview, `"Draft a change note, then have a person approve it."`, "Review: the change", 1),
			[]string{`line 3: mapping values are not allowed in this context: a value that holds ": " must be quoted, as in description: "Review: the change"`}},
		{"a reserved name", strings.Replace(teamReview, "name: team_review", "name: axlr_debug", 1),
			[]string{"line 2: name axlr_debug: names that begin with axlr_ are axlrd's own definitions; publish yours under another name"}},
		{"two errors", strings.Replace(strings.Replace(teamReview, "to: DONE", "to: FINISHED", 1), "state: CHECK", "state: REVIEW", 1),
			[]string{"team_review 1.0 is not publishable:", "line 14: transition `approved` out of state `APPROVAL`: not found: ceremony_transition.to_state",
				"line 17: step `check`: "}},
	} {
		_, _, err := ValidateYAML([]byte(tt.yaml))
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", tt.name, err, w)
			}
		}
	}
}
