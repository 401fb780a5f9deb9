package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/workflows"
)

// incidentScript plays an author and a reviewer through /incident on a
// workspace with a log: the reviewer (the request whose system message is
// the review instruction) refuses the first draft and accepts every later
// one; the author writes each draft, revising it after findings or a
// return. reviews holds each reviewer request as it came.
type incidentScript struct {
	mu      sync.Mutex
	drafts  int
	last    string
	reviews []agenttest.Request
	// published is closed when the model hands back publish.
	published chan struct{}
	once      sync.Once
}

const incidentDraft = "docs/incidents/checkout-timeouts.draft.md"

func (s *incidentScript) reply(req agenttest.Request) agenttest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Messages[0].Role == "system" && req.Messages[0].Content == ceremonies.ReviewInstruction {
		s.reviews = append(s.reviews, req)
		if len(s.reviews) == 1 {
			return agenttest.Reply{Text: `{"accepted": false, "findings": ["Say who was paged, and when."]}`}
		}
		return agenttest.Reply{Text: "```json\n{\"accepted\": true, \"findings\": []}\n```"}
	}
	r, isReply := lastReply(req)
	last := req.Messages[len(req.Messages)-1]
	next := r.NextStep
	if !isReply && last.Role == "user" {
		next = openStep(last.Content)
		if strings.Contains(last.Content, "returned") && strings.Contains(last.Content, "hand revise back") {
			next = "revise"
		}
	}
	switch {
	case isReply && r.Ceremony != "":
		return agenttest.Reply{Text: "The postmortem ended " + r.Ceremony + "."}
	case next == "triage":
		return stepDone("t1", `{"summary": "Checkout timed out for 20 minutes.", "impact": "12% of checkouts failed", "severity": "sev2", "detection": "the latency alert", "service": "checkout", "slug": "checkout-timeouts"}`)
	case next == "timeline":
		return stepDone("l1", `{"timeline": [{"at": "2026-11-30T14:05:00Z", "event": "the pool filled", "evidence": "logs/app.log:2"}, {"at": "2026-11-30T14:25:00Z", "event": "the pool was raised", "evidence": "logs/app.log:3"}]}`)
	case next == "analysis":
		return stepDone("a1", `{"root_cause": "the connection pool was too small", "contributing_factors": ["no pool alert"], "went_well": ["the alert fired"], "went_badly": ["the runbook was stale"], "actions": [{"title": "alert on pool use", "kind": "preventive", "owner": "checkout team", "due": "2099-01-31", "verification": "the alert fires in the load test"}]}`)
	case next == "revise" || (isReply && r.Step == "revise" && r.Error != ""):
		s.drafts++
		content := "# Checkout timeouts\n\nDraft " + string(rune('0'+s.drafts)) + ": the pool filled at 14:05Z.\n"
		write := map[string]string{"path": incidentDraft, "content": content, "mode": "create"}
		if s.last != "" {
			sum := sha256.Sum256([]byte(s.last))
			write["mode"], write["expected_sha256"] = "replace", hex.EncodeToString(sum[:])
		}
		s.last = content
		args, _ := json.Marshal(write)
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w" + string(rune('0'+s.drafts)), Name: "local_write", Arguments: string(args)}}}
	case !isReply && last.Role == "tool":
		return stepDone("v"+string(rune('0'+s.drafts)), `{"draft_path": "`+incidentDraft+`"}`)
	case next == "publish":
		s.once.Do(func() {
			if s.published != nil {
				close(s.published)
			}
		})
		return stepDone("p1", `{"report": "The pool filled; an alert on its use is due.", "summary_en": "Checkout timed out because its pool was too small."}`)
	case isReply && r.Accepted:
		return agenttest.Reply{Text: "The draft is with the reviewer."}
	}
	return agenttest.Reply{Text: "unexpected state"}
}

// incidentRepo is a workspace with the incident's log.
func incidentRepo(t *testing.T, e *env) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(e.workspace, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.workspace, "logs/app.log", "14:00 ok\n14:05 pool exhausted\n14:25 pool raised to 64\n")
}

// pendingDraft reads the draft a needs_decision result waits on.
func pendingDraft(t *testing.T, res *contract.Result) workflows.DraftPending {
	t.Helper()
	var d workflows.DraftPending
	if res.Status != contract.NeedsDecision || res.Pending == nil || res.Pending.Tool != workflows.ApproveTool {
		t.Fatalf("result %s, pending %+v: want the draft waiting", res.Status, res.Pending)
	}
	if err := json.Unmarshal(res.Pending.Arguments, &d); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(d.Content))
	if d.Path != incidentDraft || hex.EncodeToString(sum[:]) != d.Digest || d.Bytes != len(d.Content) {
		t.Fatalf("pending draft %+v does not hold its own bytes", d)
	}
	return d
}

// TestIncidentCeremony runs /incident end to end: the reviewer's findings
// send the first draft back, the second is accepted and waits for the
// person, who returns it once; the third is accepted, approved by its
// digest and published unchanged. The reviewer never sees the author's
// transcript, and every step is in the result and in history.
func TestIncidentCeremony(t *testing.T) {
	script := &incidentScript{}
	model := agenttest.NewServer(t, script.reply)
	e := newEnv(t, model.URL)
	incidentRepo(t, e)
	e.writeSettings(`{"model": "m", "reviewer_model": "reviewer-m"}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--exec", "--mode", "incident", "Checkout timed out on 30 November; write the postmortem.", "--approve", "local", "--json")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (the draft waits)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, res := lines(t, r.stdout)
	first := pendingDraft(t, res)
	if !strings.Contains(first.Content, "Draft 2") || res.Ceremony == nil || res.Ceremony.State != "APPROVAL" {
		t.Fatalf("waiting draft %+v, ceremony %+v", first, res.Ceremony)
	}

	// An approval of another digest is refused, naming the one that waits.
	c0, err := client.Dial(ctx, client.Options{Address: e.address(), Getenv: e.getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	ex, err := c0.Decide(ctx, res.SessionID, workflows.DecideRequest{CallID: res.Pending.CallID, Decision: contract.Approve, Digest: strings.Repeat("0", 64)})
	if err == nil || !strings.Contains(err.Error(), "waits with sha256 "+first.Digest) {
		t.Fatalf("approval of another digest: %+v, %v", ex, err)
	}

	ret := e.tui(ctx, "--session", res.SessionID, "--decide", "deny", "--reason", "Name the on-call engineer's team.", "--json")
	if ret.code != 3 {
		t.Fatalf("return: exit %d\n%s\n%s", ret.code, ret.stdout, ret.stderr)
	}
	_, res = lines(t, ret.stdout)
	second := pendingDraft(t, res)
	if second.Digest == first.Digest {
		t.Fatalf("the returned draft came back unchanged: %s", second.Digest)
	}

	ok := e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json")
	if ok.code != 0 {
		t.Fatalf("approve: exit %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
	}
	_, res = lines(t, ok.stdout)
	c := res.Ceremony
	if c == nil || c.State != "COMPLETED" || !c.Ended || res.Mode != "normal" {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	if got := stepNames(c); got != "triage,timeline,analysis,revise,review,revise,review,present,revise,review,present,publish" {
		t.Fatalf("steps %s", got)
	}
	pub := c.Steps[len(c.Steps)-1].Output
	path, _ := pub["path"].(string)
	if !strings.HasPrefix(path, "docs/incidents/") || !strings.HasSuffix(path, "-checkout-timeouts.md") || pub["draft_digest"] != second.Digest {
		t.Fatalf("publish record %+v", pub)
	}
	data, err := os.ReadFile(filepath.Join(e.workspace, path))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != second.Digest || string(data) != second.Content {
		t.Fatalf("published bytes %q differ from the approved %q", data, second.Content)
	}
	review := c.Steps[4].Output
	if review["review_mode"] != "independent_context" || review["reviewer_model"] != "reviewer-m" || review["accepted"] != false {
		t.Fatalf("review record %+v", review)
	}

	script.mu.Lock()
	reviews := script.reviews
	script.mu.Unlock()
	if len(reviews) != 3 {
		t.Fatalf("%d reviewer requests, want 3", len(reviews))
	}
	for i, req := range reviews {
		if len(req.Messages) != 2 || req.Messages[1].Role != "user" || len(req.Tools) != 0 || req.Model != "reviewer-m" {
			t.Fatalf("reviewer request %d: %d messages, %d tools, model %s", i, len(req.Messages), len(req.Tools), req.Model)
		}
		if strings.Contains(req.Messages[1].Content, "local_write") || strings.Contains(req.Messages[1].Content, "axlr_step_done") || !strings.Contains(req.Messages[1].Content, "## The draft, "+incidentDraft) {
			t.Fatalf("reviewer request %d holds the author's transcript:\n%s", i, req.Messages[1].Content)
		}
	}

	captureHistory(t, e, res.SessionID, "session_incident")
	h := e.tui(ctx, "history", res.SessionID)
	for _, want := range []string{"activity ceremony.IncidentReview", "activity ceremony.IncidentCheck", "update decide", "granted person_approves as HUMAN_APPROVER", "applied published from PUBLISH"} {
		if !strings.Contains(h.stdout, want) {
			t.Errorf("history lacks %q:\n%s", want, h.stdout)
		}
	}
	out := e.tui(ctx, "result", res.SessionID)
	if !strings.Contains(out.stdout, path) {
		t.Errorf("result does not print the published path %s:\n%s", path, out.stdout)
	}
}

// TestIncidentThroughKills kills axlrd (SIGKILL) while the approval waits
// and again as the publication runs: the approval survives the restart,
// and the postmortem is written once, whole.
func TestIncidentThroughKills(t *testing.T) {
	script := &incidentScript{published: make(chan struct{})}
	model := agenttest.NewServer(t, script.reply)
	e := newEnv(t, model.URL)
	incidentRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	d := e.spawn()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--exec", "--mode", "incident", "Checkout timed out on 30 November.", "--approve", "local", "--json")
	if r.code != 3 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, res := lines(t, r.stdout)
	waiting := pendingDraft(t, res)
	d.kill()
	d = e.spawn()

	done := make(chan cliResult, 1)
	go func() { done <- e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json") }()
	select {
	case <-script.published:
	case r := <-done:
		t.Fatalf("ended before the publication: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no publication; axlrd:\n%s", d.stderr)
	}
	d.kill()
	d = e.spawn()
	var fin cliResult
	select {
	case fin = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("no result after the restart; axlrd:\n%s", d.stderr)
	}
	if fin.code != 0 {
		// The watch may have lost its execution to the kill: read the
		// session's result.
		fin = e.tui(ctx, "result", res.SessionID, "--json")
	}
	_, res = lines(t, fin.stdout)
	if res.Status != contract.Completed || res.Ceremony == nil || res.Ceremony.State != "COMPLETED" {
		t.Fatalf("result %+v ceremony %+v\n%s", res, res.Ceremony, fin.stderr)
	}
	entries, err := os.ReadDir(filepath.Join(e.workspace, "docs/incidents"))
	if err != nil {
		t.Fatal(err)
	}
	var published []string
	for _, en := range entries {
		published = append(published, en.Name())
	}
	if len(published) != 2 {
		t.Fatalf("docs/incidents holds %v: want the draft and one postmortem", published)
	}
	path := res.Ceremony.Steps[len(res.Ceremony.Steps)-1].Output["path"].(string)
	data, err := os.ReadFile(filepath.Join(e.workspace, path))
	if err != nil || string(data) != waiting.Content {
		t.Fatalf("published %q (%v), approved %q", data, err, waiting.Content)
	}
	d.kill()
	inst := madeInstance(t, e, res.Ceremony.InstanceID)
	if st, _ := inst.Step("publish"); st.Status != "completed" || st.Attempt != 1 {
		t.Fatalf("publish in MADE: %+v", st)
	}
}
