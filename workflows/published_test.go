package workflows

import (
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/ceremonies"
)

// A prompt names a person's definition only in ceremony mode, never one
// of axlrd's own, and never another while one runs; ceremony mode without
// a name runs the session's chosen one.
func TestValidateChosen(t *testing.T) {
	running := &CeremonyState{Definition: "team_note", Version: "1.0", InstanceID: "i-1", Step: "draft", Published: true, Mode: ceremonies.ModeCeremony}
	for _, tt := range []struct {
		st   SessionState
		req  ExecuteRequest
		want string
	}{
		{SessionState{}, ExecuteRequest{Mode: "ceremony", Ceremony: "team_note"}, ""},
		{SessionState{}, ExecuteRequest{Mode: "ceremony", Ceremony: "team_note@2.0"}, ""},
		{SessionState{}, ExecuteRequest{Mode: "normal"}, ""},
		{SessionState{Chosen: "team_note", HostState: HostState{Mode: "ceremony"}}, ExecuteRequest{Mode: "ceremony"}, ""},
		{SessionState{}, ExecuteRequest{Mode: "ceremony"}, "ceremony mode runs a definition you published: name it"},
		{SessionState{Chosen: "team_note", HostState: HostState{Mode: "normal"}}, ExecuteRequest{Mode: "ceremony"}, "name it"},
		{SessionState{}, ExecuteRequest{Mode: "debug", Ceremony: "team_note"}, `a definition (team_note) runs in ceremony mode, not "debug"`},
		{SessionState{}, ExecuteRequest{Mode: "ceremony", Ceremony: "axlr_debug"}, "--mode debug runs it"},
		{SessionState{HostState: HostState{Ceremony: running}}, ExecuteRequest{Mode: "ceremony", Ceremony: "other_note"}, "runs ceremony team_note 1.0 (instance i-1, step draft): finish or stop it"},
		{SessionState{HostState: HostState{Ceremony: running}}, ExecuteRequest{Mode: "ceremony", Ceremony: "team_note"}, ""},
	} {
		tt.st.TurnState = newTurnState("s-1")
		s := &sessionRun{st: tt.st}
		err := s.validateChosen(tt.req)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v in %+v: %v, want %q", tt.req, tt.st.Chosen, err, tt.want)
		}
	}
}
