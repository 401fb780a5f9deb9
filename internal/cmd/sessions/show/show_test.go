package show

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

const sid = "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"

// fakeClient is axlrd as show sees it: it answers the record query with
// rec and the turns' read with turns, or refuses them with recErr and
// turnsErr, and keeps what it was asked.
type fakeClient struct {
	rec      workflows.SessionRecord
	recErr   error
	turns    []workflows.TurnRecord
	turnsErr error
	asked    []string
	closed   bool
}

func (c *fakeClient) Close()                            { c.closed = true }
func (c *fakeClient) CheckWorker(context.Context) error { return nil }
func (c *fakeClient) SessionRecord(_ context.Context, id string) (workflows.SessionRecord, error) {
	c.asked = append(c.asked, "record "+id)
	return c.rec, c.recErr
}
func (c *fakeClient) SessionTurns(_ context.Context, id string) ([]workflows.TurnRecord, error) {
	c.asked = append(c.asked, "turns "+id)
	return c.turns, c.turnsErr
}

func TestNewCmdShow(t *testing.T) {
	flags := func(o ShowOptions) ShowOptions { return ShowOptions{SessionID: o.SessionID, JSON: o.JSON} }
	cmdtest.Parse(t, NewCmdShow, flags, []cmdtest.ParseCase[ShowOptions]{
		{Name: "id", Args: []string{sid}, Want: ShowOptions{SessionID: sid}},
		{Name: "json", Args: []string{sid, "--json"}, Want: ShowOptions{SessionID: sid, JSON: true}},
		{Name: "no id", Args: []string{}, Err: Usage},
		{Name: "two ids", Args: []string{sid, sid}, Err: Usage},
		{Name: "not a session id", Args: []string{"axlr-session-x"}, Err: `sessions show: "axlr-session-x" is not a session id (a lowercase UUID`},
		{Name: "an unknown flag", Args: []string{sid, "--turn", "2"}, Err: "flag provided but not defined: -turn"},
	})
}

// record is the record of a closed session of four turns.
var record = workflows.SessionRecord{Instance: "axlr-session-" + sid, Iteration: 4, Turns: 4, Closed: true}

// turns are the session's turn records as they reach the command,
// decoded from JSON: two turns, one interrupted (its end never recorded)
// and the closing one.
func turns(t *testing.T) []workflows.TurnRecord {
	t.Helper()
	var out []workflows.TurnRecord
	err := json.Unmarshal([]byte(`[
		{"instance": "axlr-session-`+sid+`", "iteration": 1, "record": {"turn": 1, "prompt": "fix the parser", "answer": "The parser keeps the version field.\nTests pass.",
			"side_effects": [
				{"tool": "write_file", "what": "parse/parse.go", "why": "keep the version field", "status": "completed", "decision": "approve"},
				{"tool": "local_exec", "what": "go test ./parse", "status": "completed", "decision": "auto_approve", "exit_code": 0, "tail": "ok  \tparse\t0.01s\nPASS"}],
			"decisions": [{"tool": "write_file", "what": "parse/parse.go", "decision": "approve", "outcome": "completed"}],
			"memories": ["ws:`+sid+`:entry:3", "ws:`+sid+`:entry:4"], "reads": 3, "mode": "normal", "model": "m", "about": "repo:o/r",
			"status": "completed", "requests": 4, "cost_usd": "0.012300",
			"share": {"requests": 4, "session_requests": 4, "cost_usd": "0.012300", "session_cost_usd": "0.012300"}}},
		{"instance": "axlr-session-`+sid+`", "iteration": 2, "record": {"turn": 2, "prompt": "and the lexer?", "answer": "",
			"side_effects": [{"tool": "local_exec", "what": "go vet ./...", "status": "failed", "exit_code": 1}],
			"decisions": [], "memories": [], "reads": 0, "mode": "review", "model": "m", "about": "repo:o/r",
			"status": "failed", "requests": 1, "cost_usd": "0.001000"}},
		{"instance": "axlr-session-`+sid+`", "iteration": 3, "record": {"turn": 3, "interrupted": true, "status": "interrupted",
			"summary": "the turn was interrupted before its end was recorded"}},
		{"instance": "axlr-session-`+sid+`", "iteration": 4, "record": {"turn": 4, "prompt": "", "answer": "", "side_effects": [], "decisions": [],
			"memories": [], "reads": 0, "mode": "normal", "model": "m", "status": "completed", "requests": 0, "cost_usd": "0.000000",
			"closing": true, "summary": "3 turns; closed: the person left with /exit; the last answer: The parser keeps the version field."}}
	]`), &out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShowRun: the record, then each turn after a blank line: its header
// with its round, instance and status (interrupted and closing said),
// then its fields indented, a side effect's why and tail under it; an
// empty field is left out.
func TestShowRun(t *testing.T) {
	fake := &fakeClient{rec: record, turns: turns(t)}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](fake), SessionID: sid})
	})
	want := cmdtest.Ran{Stdout: "" +
		"instance: axlr-session-" + sid + "\n" +
		"turns:    4\n" +
		"closed:   yes\n" +
		"\n" +
		"turn 1 (round 1 of axlr-session-" + sid + ") — completed\n" +
		"  prompt:     fix the parser\n" +
		"  answer:     The parser keeps the version field.\n" +
		"              Tests pass.\n" +
		"  effects:    write_file parse/parse.go — completed, approve\n" +
		"                why: keep the version field\n" +
		"              local_exec go test ./parse — completed, auto_approve, exit 0\n" +
		"                tail: ok  \tparse\t0.01s\n" +
		"                      PASS\n" +
		"  decisions:  write_file parse/parse.go — approve, completed\n" +
		"  memories:   ws:" + sid + ":entry:3\n" +
		"              ws:" + sid + ":entry:4\n" +
		"  reads:      3\n" +
		"  mode:       normal\n" +
		"  model:      m\n" +
		"  about:      repo:o/r\n" +
		"  requests:   4 of 4 in the session\n" +
		"  cost:       $0.012300 of $0.012300 in the session\n" +
		"\n" +
		"turn 2 (round 2 of axlr-session-" + sid + ") — failed\n" +
		"  prompt:     and the lexer?\n" +
		"  effects:    local_exec go vet ./... — failed, exit 1\n" +
		"  reads:      0\n" +
		"  mode:       review\n" +
		"  model:      m\n" +
		"  about:      repo:o/r\n" +
		"  requests:   1\n" +
		"  cost:       $0.001000\n" +
		"\n" +
		"turn 3 (round 3 of axlr-session-" + sid + ") — interrupted\n" +
		"  summary:    the turn was interrupted before its end was recorded\n" +
		"\n" +
		"turn 4 (round 4 of axlr-session-" + sid + ") — completed, closing\n" +
		"  reads:      0\n" +
		"  mode:       normal\n" +
		"  model:      m\n" +
		"  requests:   0\n" +
		"  cost:       $0.000000\n" +
		"  summary:    3 turns; closed: the person left with /exit; the last answer: The parser keeps the version field.\n"}
	if got != want {
		t.Fatalf("ran\n%s\n%+v\nwant\n%s", got.Stdout, got, want.Stdout)
	}
	if !slices.Equal(fake.asked, []string{"record " + sid, "turns " + sid}) || !fake.closed {
		t.Errorf("asked %q (closed %v)", fake.asked, fake.closed)
	}
}

// TestPrintTurnHeader: the header says interrupted beside a status that
// does not, and a turn with no number (as axlrd's start writes the turn a
// crash left claimed) is named by its round.
func TestPrintTurnHeader(t *testing.T) {
	for _, tt := range []struct {
		name string
		rec  map[string]any
		want string
	}{
		{"interrupted beside its status", map[string]any{"turn": float64(7), "status": "completed", "interrupted": true}, "turn 7 (round 2 of I) — completed, interrupted\n"},
		{"interrupted and closing", map[string]any{"turn": float64(7), "status": "cancelled", "interrupted": true, "closing": true}, "turn 7 (round 2 of I) — cancelled, interrupted, closing\n"},
		{"no number", map[string]any{"status": "interrupted", "interrupted": true}, "round 2 of I — interrupted\n"},
		{"no status", map[string]any{"turn": float64(7)}, "turn 7 (round 2 of I) — -\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			printTurn(&out, workflows.TurnRecord{Instance: "I", Iteration: 2, Record: tt.rec})
			if out.String() != tt.want {
				t.Errorf("printed %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// TestShowRunJSON: --json prints {record, turns}, indented; it decodes to
// what axlrd answered.
func TestShowRunJSON(t *testing.T) {
	fake := &fakeClient{rec: record, turns: turns(t)}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](fake), SessionID: sid, JSON: true})
	})
	var shown Shown
	if err := json.Unmarshal([]byte(got.Stdout), &shown); err != nil || got.Code != 0 || got.Stderr != "" {
		t.Fatalf("ran %+v: %v", got, err)
	}
	if want := (Shown{Record: record, Turns: turns(t)}); !reflect.DeepEqual(shown, want) {
		t.Errorf("--json decodes to\n%+v\nwant\n%+v", shown, want)
	}
	if !strings.HasPrefix(got.Stdout, "{\n  \"record\": {\n    \"instance\": \"axlr-session-"+sid+"\",") {
		t.Errorf("--json is not the indented {record, turns}:\n%s", got.Stdout)
	}
}

// TestShowRunNoRecord: a session that never had a prompt has no record:
// its turns are not read, and --json says so with an empty record and no
// turns.
func TestShowRunNoRecord(t *testing.T) {
	for _, tt := range []struct {
		json bool
		want string
	}{
		{false, "session " + sid + " has no record: its first prompt opens it\n"},
		{true, "{\n  \"record\": {},\n  \"turns\": []\n}\n"},
	} {
		fake := &fakeClient{}
		got := cmdtest.Run(func(ios *factory.IOStreams) error {
			return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](fake), SessionID: sid, JSON: tt.json})
		})
		if want := (cmdtest.Ran{Stdout: tt.want}); got != want || !slices.Equal(fake.asked, []string{"record " + sid}) {
			t.Errorf("--json=%v: ran %+v, asked %q; want %+v", tt.json, got, fake.asked, want)
		}
	}
}

// TestShowRunRefused: a session axlrd does not know, or whose log it
// does not hold, is refused in axlrd's words and exits 1; axlrd gone
// exits 4.
func TestShowRunRefused(t *testing.T) {
	unreachable := &client.UnreachableError{Address: "127.0.0.1:7233", Err: context.DeadlineExceeded}
	for _, tt := range []struct {
		name string
		fake *fakeClient
		want cmdtest.Ran
	}{
		{"no such session", &fakeClient{recErr: &client.NotFoundError{SessionID: sid}},
			cmdtest.Ran{Code: cmdutil.ExitFailed, Stderr: "axlr-tui: no session " + sid + " in axlrd\n"}},
		{"no log", &fakeClient{rec: record, turnsErr: &client.RefusedError{Message: "session " + sid + " is not in axlrd's store"}},
			cmdtest.Ran{Code: cmdutil.ExitFailed, Stderr: "axlr-tui: session " + sid + " is not in axlrd's store\n"}},
		{"unreachable", &fakeClient{recErr: unreachable},
			cmdtest.Ran{Code: cmdutil.ExitUnreachable, Stderr: "axlr-tui: " + unreachable.Error() + "\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return showRun(context.Background(), &ShowOptions{IO: ios, Client: cmdtest.Dial[Client](tt.fake), SessionID: sid})
			})
			if got != tt.want {
				t.Fatalf("ran %+v, want %+v", got, tt.want)
			}
		})
	}
}
