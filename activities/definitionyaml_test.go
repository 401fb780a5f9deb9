package activities

import (
	"strings"
	"testing"
)

func TestValidateYAML(t *testing.T) {
	def, _, err := ValidateYAML([]byte(teamNote))
	if err != nil || def.Name != "team_note" || def.Version != "1.0" || len(def.Steps) != 2 {
		t.Fatalf("a team's definition: %v %v", def, err)
	}
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"an unquoted colon", strings.Replace(teamNote, `"Draft a change note, then have a person approve it."`, "Review: the change", 1),
			[]string{`line 3: mapping values are not allowed in this context: a value that holds ": " must be quoted, as in description: "Review: the change"`}},
		{"a reserved name", strings.Replace(teamNote, "name: team_note", "name: axlr_debug", 1),
			[]string{"line 2: name axlr_debug: names that begin with axlr_ are axlrd's own definitions; publish yours under another name"}},
		{"two errors", strings.Replace(strings.Replace(teamNote, "to: DONE", "to: FINISHED", 1), "state: CHECK", "state: REVIEW", 1),
			[]string{"team_note 1.0 is not publishable:", "line 14: transition `approved` out of state `APPROVAL`: not found: ceremony_transition.to_state",
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
