package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/workflows"
)

// TestSessionRecord: two --exec prompts in one session and a close. The
// session's record, axlr-session-<id>, holds two turn records (the first
// wrote a file: its side effect with its why and decision; the second
// only answered) and a closing turn with the session's summary, and is
// CLOSED; memory holds the first turn's entry (the second only read) and
// the close's event=closed observation under ws:<id>.
func TestSessionRecord(t *testing.T) {
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(last.Content, "Thanks") {
			return agenttest.Reply{Text: "You are welcome."}
		}
		return changelogScript(req)
	})
	e := newEnv(t, model.URL)
	e.writeSettings(`{"model": "test-model"}`)
	d := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "add a CHANGELOG entry for 1.2", "--approve", "local", "--json")
	if r.code != 0 {
		t.Fatalf("first prompt: exit %d\n%s", r.code, r.stderr)
	}
	_, res := lines(t, r.stdout)
	sid := res.SessionID
	if n := e.tui(ctx, "--session", sid, "--exec", "Thanks.", "--json"); n.code != 0 {
		t.Fatalf("second prompt: exit %d\n%s", n.code, n.stderr)
	}
	c := dialAxlrd(t, e)
	if _, err := c.CloseSession(ctx, sid, "the test leaves"); err != nil {
		t.Fatal(err)
	}
	var rec workflows.SessionRecord
	for {
		var err error
		if rec, err = c.SessionRecord(ctx, sid); err == nil && rec.Closed {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the record never closed: %+v", rec)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if rec.Instance != "axlr-session-"+sid || rec.Turns != 3 || rec.Note != "" {
		t.Fatalf("record %+v", rec)
	}
	turns, err := c.SessionTurns(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 3 {
		t.Fatalf("turn records %+v", turns)
	}
	first, second, closing := turns[0].Record, turns[1].Record, turns[2].Record
	effects, _ := first["side_effects"].([]any)
	if first["prompt"] != "add a CHANGELOG entry for 1.2" || first["answer"] != "Added a CHANGELOG entry for 1.2." || len(effects) != 1 ||
		first["mode"] != "normal" || first["model"] != "test-model" || first["status"] != "completed" || first["requests"] != float64(2) {
		t.Fatalf("first turn %+v", first)
	}
	e1 := effects[0].(map[string]any)
	if e1["tool"] != "local_write" || e1["what"] != "CHANGELOG.md" || e1["why"] != "I will add the entry." || e1["decision"] != "auto_approve" || e1["status"] != "completed" {
		t.Fatalf("first turn's side effect %+v", e1)
	}
	if second["prompt"] != "Thanks." || second["answer"] != "You are welcome." || len(second["side_effects"].([]any)) != 0 ||
		second["requests"] != float64(1) || second["share"].(map[string]any)["session_requests"] != float64(3) {
		t.Fatalf("second turn %+v", second)
	}
	if closing["closing"] != true || closing["requests"] != float64(0) || !strings.HasPrefix(closing["summary"].(string), "2 turns; closed: the test leaves; the last answer: You are welcome.") {
		t.Fatalf("closing turn %+v", closing)
	}
	for i, tr := range turns {
		if tr.Instance != rec.Instance || tr.Iteration != i+1 {
			t.Fatalf("turn %d is round %d of %s", i+1, tr.Iteration, tr.Instance)
		}
	}
	show := e.tui(ctx, "sessions", "show", sid)
	if show.code != 0 || !strings.Contains(show.stdout, "CHANGELOG.md") || !strings.Contains(show.stdout, "You are welcome.") {
		t.Fatalf("sessions show: exit %d\n%s\n%s", show.code, show.stdout, show.stderr)
	}
	captureWorkflow(t, e, workflows.SessionWorkflowID(sid), "session_record")
	d.stop()
	m, err := embedded.Open(filepath.Join(e.stateDir, "made"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := m.Get(ctx, rec.Instance)
	if err != nil || in.CurrentState != "CLOSED" || in.DefinitionName != "axlr_session" || in.Context["session"] != sid {
		t.Fatalf("MADE holds %+v (%v)", in, err)
	}
	mem := openMemory(t, filepath.Join(e.stateDir, "memory"))
	l, err := mem.List(ctx, kmp.ListRequest{About: "ws:" + sid})
	if err != nil || len(l.Entries) != 2 || l.Entries[0].Kind != kmp.KindObservation || l.Entries[1].Kind != kmp.KindTurn ||
		!strings.Contains(l.Entries[1].Metadata["evidence"].(string), "wrote CHANGELOG.md (completed, auto_approve)") {
		t.Fatalf("memory under ws:%s: %+v (%v)", sid, l.Entries, err)
	}
}
