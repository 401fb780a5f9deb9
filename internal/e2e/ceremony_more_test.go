package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/made"
)

// runCeremony runs --exec in a mode, approves the first check command and
// returns the final result.
func runCeremony(t *testing.T, e *env, mode, prompt string) *contract.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := startCeremony(ctx, t, e, mode, prompt)
	for res.Status == contract.NeedsDecision {
		dec := e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json")
		_, res = lines(t, dec.stdout)
	}
	return res
}

// startCeremony starts a ceremony with --approve local and returns the
// result it ends with: needs_decision, the first check waiting.
func startCeremony(ctx context.Context, t *testing.T, e *env, mode, prompt string) *contract.Result {
	t.Helper()
	r := e.tui(ctx, "--exec", "--mode", mode, prompt, "--approve", "local", "--json")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (the first check waits)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, res := lines(t, r.stdout)
	return res
}

func stepNames(c *contract.CeremonyOutcome) string {
	var out []string
	for _, s := range c.Steps {
		out = append(out, s.Step)
	}
	return strings.Join(out, ",")
}

// TestDeliveryCeremony runs /delivery to COMPLETED: the brief's baseline
// fails, the build writes the file, the rerun passes.
func TestDeliveryCeremony(t *testing.T) {
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		r, isReply := lastReply(req)
		last := req.Messages[len(req.Messages)-1]
		switch {
		case !isReply && last.Role == "user":
			return stepDone("b1", `{"criteria": "CHANGELOG.md has a 1.2 entry", "scope": "CHANGELOG.md", "check_command": {"program": "grep", "args": ["-q", "## 1.2", "CHANGELOG.md"]}}`)
		case isReply && r.NextStep == "build":
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write", Arguments: `{"path": "CHANGELOG.md", "content": "## 1.2\n- entry\n", "mode": "create"}`}}}
		case !isReply && last.Role == "tool":
			return stepDone("u1", `{"summary": "wrote the entry"}`)
		case isReply && r.NextStep == "integrate":
			return stepDone("i1", `{"report": "added the entry; grep finds it", "summary_en": "Added the 1.2 entry."}`)
		case isReply && r.Ceremony != "":
			return agenttest.Reply{Text: "Delivered: " + r.Ceremony}
		}
		return agenttest.Reply{Text: "unexpected state"}
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	e.start()
	res := runCeremony(t, e, "delivery", "add a CHANGELOG entry for 1.2")
	c := res.Ceremony
	if res.Status != contract.Completed || c == nil || c.State != "COMPLETED" || stepNames(c) != "brief,build,integrate" {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	if !c.Steps[0].Check.Failed() || c.Steps[0].Output["ready"] != true || !c.Steps[1].Check.Passed() || c.Steps[1].Output["verified"] != true {
		t.Fatalf("records %+v", c.Steps)
	}
}

// TestDebugBlockedAfterThreeRepairs: three repairs whose rerun still fails
// end the ceremony BLOCKED through repair_exhausted.
func TestDebugBlockedAfterThreeRepairs(t *testing.T) {
	script := &debugScript{fixWorks: false}
	model := agenttest.NewServer(t, script.reply)
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	d := e.start()
	res := runCeremony(t, e, "debug", "TestParse fails on empty input")
	c := res.Ceremony
	if c == nil || c.State != "BLOCKED" || !c.Ended || stepNames(c) != "reproduce,diagnose,repair,repair,repair" || res.Answer != "The ceremony ended BLOCKED." {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	for i, s := range c.Steps[2:] {
		if s.Iteration != i+1 || s.Output["repaired"] != false {
			t.Fatalf("repair record %d: %+v", i, s)
		}
	}
	d.stop()
	inst := madeInstance(t, e, c.InstanceID)
	repair, _ := inst.Step("repair")
	if inst.CurrentState != "BLOCKED" || !repair.RepeatExhausted || repair.Iteration != 3 || repair.Attempt != 1 {
		t.Fatalf("MADE: %s, repair %+v", inst.CurrentState, repair)
	}
}

// TestRefusalsAndChangedCommands: a hand-back without its fields is refused
// with MADE untouched; a reproduction command that changes waits for the
// person again, and a denied one is not run; a replacement command in
// repair is ignored and the accepted one reruns.
func TestRefusalsAndChangedCommands(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		r, isReply := lastReply(req)
		last := req.Messages[len(req.Messages)-1]
		if isReply {
			seen = append(seen, r.Step+":"+r.Error+":"+r.Feedback)
		}
		goTest := `"check_command": {"program": "go", "args": ["test", "./..."]}`
		switch {
		case !isReply && last.Role == "user" && strings.Contains(last.Content, "current step: reproduce"):
			// Missing expected and observed.
			return stepDone("r0", `{"check_command": {"program": "true"}}`)
		case isReply && !r.Accepted && strings.Contains(r.Error, "needs check_command, expected, observed"):
			return stepDone("r1", `{"check_command": {"program": "true"}, "expected": "fails", "observed": "?"}`)
		case isReply && r.Accepted && r.Step == "reproduce" && r.NextStep == "reproduce":
			// `true` exits 0: not reproduced. Change the command.
			return stepDone("r2", `{`+goTest+`, "expected": "ok", "observed": "panic"}`)
		case isReply && !r.Accepted && strings.Contains(r.Error, "the person refused the check command"):
			return stepDone("r3", `{`+goTest+`, "expected": "ok", "observed": "panic, really"}`)
		case isReply && r.NextStep == "diagnose":
			return stepDone("d1", `{"root_cause": "s[:1] on empty s", "evidence": "calc.go", "proposed_fix": "check len"}`)
		case isReply && r.NextStep == "repair":
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "e1", Name: "local_edit",
				Arguments: `{"path": "calc.go", "old_text": "\treturn strconv.Atoi(s[:1])", "new_text": "\tif s == \"\" {\n\t\treturn 0, strconv.ErrSyntax\n\t}\n\treturn strconv.Atoi(s[:1])"}`}}}
		case !isReply && last.Role == "tool":
			return stepDone("p1", `{"summary": "fixed", "check_command": {"program": "true"}}`)
		case isReply && r.NextStep == "integrate":
			return stepDone("i1", `{"report": "fixed", "summary_en": "Fixed."}`)
		case isReply && r.Ceremony != "":
			return agenttest.Reply{Text: "done " + r.Ceremony}
		}
		return agenttest.Reply{Text: "unexpected state"}
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The refused hand-back, then `true` waits for the person.
	r := e.tui(ctx, "--exec", "--mode", "debug", "TestParse fails", "--approve", "all", "--json")
	_, res := lines(t, r.stdout)
	if r.code != 3 || string(res.Pending.Arguments) != `{"program":"true","args":[]}` {
		t.Fatalf("first: exit %d pending %+v\n%s", r.code, res.Pending, r.stderr)
	}
	// Approved: `true` exits 0, not reproduced; the changed command waits.
	r = e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json")
	_, res = lines(t, r.stdout)
	if r.code != 3 || !strings.Contains(string(res.Pending.Arguments), `"go"`) {
		t.Fatalf("changed command: exit %d pending %+v", r.code, res.Pending)
	}
	// Denied: not run, MADE untouched; the model proposes it again.
	r = e.tui(ctx, "--session", res.SessionID, "--decide", "deny", "--reason", "not yet", "--json")
	_, res = lines(t, r.stdout)
	if r.code != 3 || res.Ceremony.Step != "reproduce" || len(res.Ceremony.Steps) != 1 {
		t.Fatalf("after deny: exit %d ceremony %+v", r.code, res.Ceremony)
	}
	r = e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json")
	_, res = lines(t, r.stdout)
	if r.code != 0 || res.Ceremony.State != "COMPLETED" {
		t.Fatalf("final: exit %d %+v\n%s", r.code, res.Ceremony, r.stderr)
	}
	repair := res.Ceremony.Steps[3]
	if repair.Step != "repair" || repair.Check.Program != "go" || repair.Output["repaired"] != true {
		t.Fatalf("repair record %+v", repair)
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(seen, "\n")
	for _, want := range []string{
		"reproduce:step reproduce needs check_command, expected, observed",
		"The command exited 0: the failure is not reproduced",
		"the person refused the check command go test ./...: not yet",
		"check_command true ignored: AXLR reruns the accepted command go test ./...",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the model was not told %q:\n%s", want, joined)
		}
	}
	for _, s := range res.ToolCalls {
		if s.Tool == "axlr_check" && s.Decision == "" {
			t.Errorf("check decision missing: %+v", s)
		}
	}
}

// TestStalledStep: a model that ends its turn with the step open is
// reminded once (naming tool-call markup in its text), then the instance
// is stopped, the session returns to normal and the model answers.
func TestStalledStep(t *testing.T) {
	var mu sync.Mutex
	var notes []string
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		notes = append(notes, last.Content)
		if strings.Contains(last.Content, "was stopped") {
			for _, tool := range req.Tools {
				if tool.Name == "axlr_step_done" {
					return agenttest.Reply{Text: "axlr_step_done still offered"}
				}
			}
			return agenttest.Reply{Text: "Sorry, I could not hand the step back."}
		}
		return agenttest.Reply{Text: `I will call <tool_call>{"name": "axlr_step_done"}</tool_call>`}
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	d := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "--mode", "debug", "TestParse fails", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, res := lines(t, r.stdout)
	c := res.Ceremony
	if res.Answer != "Sorry, I could not hand the step back." || c == nil || !c.Ended || !strings.HasPrefix(c.Stopped, "ceremony_stalled") {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	mu.Lock()
	joined := strings.Join(notes, "\n")
	mu.Unlock()
	if !strings.Contains(joined, "[AXLR] Step reproduce is still open") || !strings.Contains(joined, "written as text (<tool_call>)") ||
		!strings.Contains(joined, "tool-call parser is the first suspect") {
		t.Fatalf("notes:\n%s", joined)
	}
	// A later prompt is a normal one.
	next := e.tui(ctx, "--exec", "anything", "--session", res.SessionID, "--json")
	_, res2 := lines(t, next.stdout)
	if res2.Ceremony != nil || res2.Mode != "normal" {
		t.Fatalf("the session is still in a ceremony: %+v, mode %q", res2.Ceremony, res2.Mode)
	}
	d.stop()
	inst := madeInstance(t, e, c.InstanceID)
	if s, _ := inst.Step("reproduce"); s.Status != made.StepCancelled || inst.CurrentState != "CANCELLED" || !inst.Completed {
		t.Fatalf("reproduce is %s in MADE, the instance %s (completed %v): a stalled ceremony ends its instance", s.Status, inst.CurrentState, inst.Completed)
	}
}

// TestCompactBudget: under the compact profile a step has 16 tool calls; a
// note comes at 3 left, a new budget at the limit (twice), then the turn
// pauses for the person; a prompt continues the step.
func TestCompactBudget(t *testing.T) {
	var mu sync.Mutex
	var budgetNotes []string
	var toolsOffered []string
	calls := 0
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if strings.HasPrefix(last.Content, "[AXLR · budget]") {
			budgetNotes = append(budgetNotes, last.Content)
		}
		if toolsOffered == nil {
			for _, tool := range req.Tools {
				toolsOffered = append(toolsOffered, tool.Name)
			}
		}
		calls++
		// A different read each time (the compact profile refuses the same
		// call twice in a row).
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "c", Name: "local_read", Arguments: `{"path": "calc.go", "max_bytes": ` + strconv.Itoa(calls) + `}`}}}
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m", "ceremonies": {"profile": "compact"}}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "--mode", "debug", "TestParse fails", "--json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (paused)\n%s", r.code, r.stderr)
	}
	_, res := lines(t, r.stdout)
	if res.Status != contract.Interrupted || !strings.Contains(res.Error, "step reproduce used its 16 tool calls 3 times") || !strings.Contains(res.Error, "send a message to continue") {
		t.Fatalf("result %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(budgetNotes) != 5 || !strings.Contains(budgetNotes[0], "3 tool calls remain for step reproduce") || !strings.Contains(budgetNotes[1], "new budget of 16 (1 of 2)") {
		t.Fatalf("budget notes %q", budgetNotes)
	}
	if strings.Contains(strings.Join(toolsOffered, ","), "local_write") || !strings.Contains(strings.Join(toolsOffered, ","), "axlr_step_done") {
		t.Fatalf("tools offered in reproduce under compact: %v", toolsOffered)
	}
}
