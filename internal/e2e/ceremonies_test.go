package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/workflows"
)

// TestCeremoniesPublish: a person publishes their definition through
// axlr-tui and axlrd; it is listed after axlrd's own, and it survives an
// axlrd restart. The same file again changes nothing; other bytes under
// its version, and an unquoted ": ", are refused with the line and what
// to do.
func TestCeremoniesPublish(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:1/v1")
	p := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	write := func(name, doc string) string {
		path := filepath.Join(e.dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A team's own definition: two model steps and a human guard.
	b, err := os.ReadFile(filepath.Join("..", "..", "ceremonies", "testdata", "team_note.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	teamNoteYAML := string(b)
	file := write("team_note.yaml", teamNoteYAML)
	r := e.tui(ctx, "ceremonies", "publish", file)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "team_note 1.0 published; digest ") {
		t.Fatalf("publish: %d %q %q", r.code, r.stdout, r.stderr)
	}
	digest := strings.TrimSpace(strings.TrimPrefix(r.stdout, "team_note 1.0 published; digest "))
	if r := e.tui(ctx, "ceremonies", "publish", file); r.code != 0 || r.stdout != "team_note 1.0 was published already with these bytes: nothing changed; digest "+digest+"\n" {
		t.Fatalf("publish again: %d %q %q", r.code, r.stdout, r.stderr)
	}
	changed := write("changed.yaml", strings.Replace(teamNoteYAML, "Draft the change note.", "Draft it.", 1))
	if r := e.tui(ctx, "ceremonies", "publish", changed); r.code != 1 || !strings.Contains(r.stderr, "team_note 1.0 is published already with other bytes (digest "+digest) {
		t.Fatalf("other bytes: %d %q %q", r.code, r.stdout, r.stderr)
	}
	colon := write("colon.yaml", strings.Replace(teamNoteYAML, `"Draft a change note, then have a person approve it."`, "Note: drafted", 1))
	if r := e.tui(ctx, "ceremonies", "publish", colon); r.code != 1 || !strings.Contains(r.stderr, `line 3: mapping values are not allowed in this context: a value that holds ": " must be quoted`) {
		t.Fatalf("an unquoted colon: %d %q %q", r.code, r.stdout, r.stderr)
	}

	p.stop()
	e.start()
	r = e.tui(ctx, "ceremonies", "--json")
	var defs []workflows.DefinitionSummary
	if err := json.Unmarshal([]byte(r.stdout), &defs); r.code != 0 || err != nil {
		t.Fatalf("list: %d %q %q %v", r.code, r.stdout, r.stderr, err)
	}
	last := defs[len(defs)-1]
	if len(defs) != 10 || !defs[0].BuiltIn || last.Name != "team_note" || last.Starts != "/ceremony team_note" || last.BuiltIn {
		t.Fatalf("listed %+v", defs)
	}
	r = e.tui(ctx, "ceremonies")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(rows) != 11 || strings.Join(strings.Fields(rows[10]), " ") != "team_note 1.0 /ceremony team_note Draft a change note, then have a person approve it." {
		t.Fatalf("list: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// teamNoteScript plays a model through team_note: it hands each step back
// with its own fields once the step's own prompt reached it, and answers
// the person when the ceremony ended. prompts holds each step's
// instruction as the model read it.
type teamNoteScript struct {
	mu      sync.Mutex
	prompts map[string]string
}

func (s *teamNoteScript) reply(req agenttest.Request) agenttest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := req.Messages[len(req.Messages)-1].Content
	step := openStep(last)
	if r, ok := lastReply(req); ok {
		step = r.NextStep
		last = r.Instr
		if r.Ceremony != "" || step == "" {
			return agenttest.Reply{Text: "team_note: " + r.Feedback}
		}
	}
	if strings.Contains(last, "granted guard") && strings.Contains(last, "ended DONE") {
		return agenttest.Reply{Text: "The change note is approved."}
	}
	s.prompts[step] = last
	switch step {
	case "draft":
		return stepDone("d1", `{"step": "draft", "note": "Parse accepts spaces now.", "files": ["calc/parse.go"]}`)
	case "check":
		return stepDone("c1", `{"checked": true, "differences": 0}`)
	case "review":
		return stepDone("r1", `{"ok": false, "why": "the note names no file"}`)
	}
	return agenttest.Reply{Text: "unexpected: " + last}
}

// TestPublishedCeremony runs a team's own definition, published from its
// file, through --ceremony: each step's config.prompt reaches the model
// with how to hand it back; each step is completed in MADE with exactly
// the fields handed back; the human guard ends the execution waiting,
// survives an axlrd kill, and --decide approve grants it as the
// definition's approver; the instance ends DONE and the session is back
// in normal mode.
func TestPublishedCeremony(t *testing.T) {
	script := &teamNoteScript{prompts: map[string]string{}}
	model := agenttest.NewServer(t, script.reply)
	e := newEnv(t, model.URL)
	e.writeSettings(`{"model": "m"}`)
	p := e.spawn()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	file := filepath.Join("..", "..", "ceremonies", "testdata", "team_note.yaml")
	if r := e.tui(ctx, "ceremonies", "publish", file); r.code != 0 {
		t.Fatalf("publish: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := e.tui(ctx, "--exec", "--ceremony", "no_such_note", "brief"); r.code != 1 || !strings.Contains(r.stderr, "no definition no_such_note is published") || !strings.Contains(r.stderr, "published: team_note") {
		t.Fatalf("an unknown definition: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := e.tui(ctx, "--exec", "--ceremony", "axlr_debug", "brief"); r.code != 2 || !strings.Contains(r.stderr, "--mode debug runs it") {
		t.Fatalf("a built-in one: %d %q %q", r.code, r.stdout, r.stderr)
	}

	r := e.tui(ctx, "--exec", "--ceremony", "team_note", "Write the change note for the parser fix.", "--json")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (the guard waits)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, res := lines(t, r.stdout)
	if res.Pending == nil || res.Pending.Tool != workflows.GrantTool {
		t.Fatalf("pending %+v, want the guard", res.Pending)
	}
	var g workflows.GuardApproval
	if err := json.Unmarshal(res.Pending.Arguments, &g); err != nil || g.Guard != "person_approves" || g.Role != "APPROVER" || g.State != "APPROVAL" || g.Definition != "team_note" || g.Version != "1.0" {
		t.Fatalf("pending guard %+v (%v)", g, err)
	}
	if c := res.Ceremony; c == nil || c.Ended || c.State != "APPROVAL" || !strings.Contains(c.Waiting, "guard person_approves waits for the person's approval") {
		t.Fatalf("ceremony %+v", res.Ceremony)
	}
	for step, prompt := range map[string]string{"draft": "Draft the change note.", "check": "Check the note against the code."} {
		if got := script.prompts[step]; !strings.Contains(got, prompt) || !strings.Contains(got, ceremonies.HandBackPrompt) {
			t.Fatalf("step %s's instruction %q: want its prompt %q and how to hand it back", step, got, prompt)
		}
	}

	p.kill()
	e.spawn()
	d := e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json")
	if d.code != 0 || !strings.Contains(d.stderr, "guard person_approves of instance "+g.InstanceID+", as APPROVER") {
		t.Fatalf("approve: %d\n%s\n%s", d.code, d.stdout, d.stderr)
	}
	_, done := lines(t, d.stdout)
	if c := done.Ceremony; c == nil || !c.Ended || c.State != "DONE" || done.Mode != "normal" || done.Answer != "The change note is approved." {
		t.Fatalf("after the grant: %+v, mode %s, answer %q", done.Ceremony, done.Mode, done.Answer)
	}

	inst := madeInstance(t, e, g.InstanceID)
	if !inst.Completed || inst.CurrentState != "DONE" {
		t.Fatalf("instance %s in %s", inst.CeremonyID, inst.CurrentState)
	}
	want := map[string]string{"draft": `{"files":["calc/parse.go"],"note":"Parse accepts spaces now."}`, "check": `{"checked":true,"differences":0}`}
	for _, st := range inst.Steps {
		out, _ := json.Marshal(st.Output)
		if string(out) != want[st.StepID] || st.Status != made.StepCompleted {
			t.Fatalf("step %s %s with %s, want exactly %s", st.StepID, st.Status, out, want[st.StepID])
		}
	}
	if fmt.Sprint(inst.Context["person_approves"]) != "true" {
		t.Fatalf("guard not granted: %v", inst.Context)
	}

	// The session is normal again: the next prompt starts no ceremony.
	n := e.tui(ctx, "--session", res.SessionID, "--exec", "Thanks.", "--json")
	if _, after := lines(t, n.stdout); n.code != 0 || after.Ceremony != nil || after.Mode != "normal" {
		t.Fatalf("next prompt: %d %+v\n%s", n.code, after, n.stderr)
	}
	h := e.tui(ctx, "history", res.SessionID)
	for _, row := range []string{"team_note 1.0, instance " + g.InstanceID, "granted person_approves as APPROVER", "applied approved from APPROVAL"} {
		if !strings.Contains(h.stdout, row) {
			t.Fatalf("history lacks %q:\n%s", row, h.stdout)
		}
	}
	captureHistory(t, e, res.SessionID, "session_published_ceremony")
}

// TestPublishedCeremonyWaits: when MADE enables two transitions the first
// is applied and the other reported; a state whose guard does not hold and
// that has no step AXLR can claim waits, and the result, the model's
// answer and the next prompt (which reads the instance again) say so.
func TestPublishedCeremonyWaits(t *testing.T) {
	script := &teamNoteScript{prompts: map[string]string{}}
	model := agenttest.NewServer(t, script.reply)
	e := newEnv(t, model.URL)
	e.writeSettings(`{"model": "m"}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if r := e.tui(ctx, "ceremonies", "publish", filepath.Join("testdata", "fork_note.yaml")); r.code != 0 {
		t.Fatalf("publish: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r := e.tui(ctx, "--exec", "--ceremony", "fork_note@1.0", "A note on the fork.", "--json")
	_, res := lines(t, r.stdout)
	c := res.Ceremony
	if r.code != 0 || c == nil || c.Ended || c.State != "SHORT" || c.Step != "" || !strings.Contains(c.Waiting, "SHORT has no enabled transition and no claimable step") {
		t.Fatalf("exit %d, ceremony %+v\n%s", r.code, c, r.stderr)
	}
	if strings.Join(c.Unapplied, "|") != "from DRAFT: applied go_short; also enabled go_long" || !strings.Contains(res.Answer, "waits for something outside AXLR") {
		t.Fatalf("unapplied %q, answer %q", c.Unapplied, res.Answer)
	}
	if text := e.tui(ctx, "result", res.SessionID); !strings.Contains(text.stderr, "waiting: SHORT has no enabled transition") || !strings.Contains(text.stderr, "transition from DRAFT: applied go_short; also enabled go_long") {
		t.Fatalf("result: %q", text.stderr)
	}
	n := e.tui(ctx, "--session", res.SessionID, "--exec", "Is it done?", "--json")
	if _, again := lines(t, n.stdout); n.code != 0 || again.Ceremony == nil || again.Ceremony.State != "SHORT" || again.Ceremony.Ended || again.Mode != "ceremony" {
		t.Fatalf("next prompt: %d %+v\n%s", n.code, again.Ceremony, n.stderr)
	}
	if h := e.tui(ctx, "history", res.SessionID); !strings.Contains(h.stdout, "applied go_short from DRAFT (also enabled, not applied: go_long)") || !strings.Contains(h.stdout, "read "+c.InstanceID+" in SHORT") {
		t.Fatalf("history:\n%s", h.stdout)
	}
}
