package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/root"
	"github.com/underpass-ai/axlr/internal/daemon"
)

// touchScript asks to run touch, then answers.
func touchScript(req agenttest.Request) agenttest.Reply {
	if toolResults(req) == 0 {
		return agenttest.Reply{Text: "I will create the file now.", ToolCalls: []agenttest.ToolCall{
			{ID: "read-1", Name: "local_list", Arguments: `{}`},
			{ID: "exec-1", Name: "local_exec", Arguments: `{"program":"touch","args":["notes.md"],"why":"The person asked for it."}`},
		}}
	}
	last := req.Messages[len(req.Messages)-1]
	return agenttest.Reply{Text: "Result: " + last.Content}
}

func TestNeedsDecisionThenDecide(t *testing.T) {
	model := agenttest.NewServer(t, touchScript)
	e := newEnv(t, model.URL)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--exec", "create notes.md", "--model", "test-model", "--json")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs, res := lines(t, r.stdout)
	if res.Status != contract.NeedsDecision || res.Answer != "I will create the file now." {
		t.Fatalf("result %+v", res)
	}
	if res.Pending == nil || res.Pending.CallID != "exec-1" || res.Pending.Tool != "local_exec" {
		t.Fatalf("pending %+v", res.Pending)
	}
	var args map[string]any
	if err := json.Unmarshal(res.Pending.Arguments, &args); err != nil || args["program"] != "touch" || args["why"] != "The person asked for it." {
		t.Fatalf("pending arguments %s: %v", res.Pending.Arguments, err)
	}
	wantCalls := []contract.ToolCallRecord{
		{CallID: "read-1", Tool: "local_list", Decision: contract.AutoApprove, Status: contract.CallCompleted},
		{CallID: "exec-1", Tool: "local_exec", Status: contract.CallPending},
	}
	if len(res.ToolCalls) != 2 || res.ToolCalls[0] != wantCalls[0] || res.ToolCalls[1] != wantCalls[1] {
		t.Fatalf("tool_calls %+v", res.ToolCalls)
	}
	if last := evs[len(evs)-1]; last.Type != contract.EventDecisionRequired || last.CallID != "exec-1" {
		t.Fatalf("last event %+v", last)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "notes.md")); err == nil {
		t.Fatal("notes.md exists before the decision")
	}

	// A prompt while the call waits is refused.
	busy := e.tui(ctx, "--exec", "something else", "--session", res.SessionID)
	if busy.code != 1 || !strings.Contains(busy.stderr, "waiting for a decision") {
		t.Fatalf("prompt while pending: exit %d %q", busy.code, busy.stderr)
	}
	// A decision for another call is refused, and nothing changes.
	wrong := e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--call", "exec-9")
	if wrong.code != 1 || !strings.Contains(wrong.stderr, "no call exec-9 waits for a decision") {
		t.Fatalf("wrong call: exit %d %q", wrong.code, wrong.stderr)
	}

	dec := e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--call", "exec-1", "--json")
	if dec.code != 0 {
		t.Fatalf("decide: exit %d\n%s\n%s", dec.code, dec.stdout, dec.stderr)
	}
	_, res2 := lines(t, dec.stdout)
	if res2.Status != contract.Completed || !strings.HasPrefix(res2.Answer, `Result: {"exit_code":0`) {
		t.Fatalf("result after decision %+v", res2)
	}
	if c := res2.ToolCalls[1]; c.Decision != contract.Approve || c.Status != contract.CallCompleted {
		t.Fatalf("decided call %+v", c)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "notes.md")); err != nil {
		t.Fatalf("notes.md after approval: %v", err)
	}
	stale := e.tui(ctx, "--session", res.SessionID, "--decide", "deny", "--call", "exec-1")
	if stale.code != 1 || !strings.Contains(stale.stderr, "call exec-1 was already decided (approve)") {
		t.Fatalf("stale decision: exit %d %q", stale.code, stale.stderr)
	}

	captureHistory(t, e, res.SessionID, "session_decide")

	// history reads the run back from Temporal.
	h := e.tui(ctx, "history", res.SessionID, "--json")
	if h.code != 0 {
		t.Fatalf("history: exit %d %s", h.code, h.stderr)
	}
	var traj client.Trajectory
	if err := json.Unmarshal([]byte(h.stdout), &traj); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range traj.Steps {
		kinds = append(kinds, s.Kind+" "+s.Name+" "+s.Outcome)
	}
	joined := strings.Join(kinds, "\n")
	for _, want := range []string{
		"update execute accepted",
		"local_activity BeginTurn revision 3",
		"activity ModelRequest 2 call(s): local_list, local_exec",
		"local_activity ToolCall completed",
		"update decide accepted",
		"activity ToolCall completed: exit code 0",
		"local_activity FinishExecution needs_decision",
		"local_activity FinishExecution completed",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("history lacks %q:\n%s", want, joined)
		}
	}
	text := e.tui(ctx, "history", res.SessionID)
	if text.code != 0 || !strings.Contains(text.stdout, "ModelRequest") || !strings.Contains(text.stdout, "local_exec call exec-1 · approve") {
		t.Fatalf("history text: exit %d\n%s", text.code, text.stdout)
	}
}

func TestPlainOutputAndExitCodes(t *testing.T) {
	model := agenttest.NewServer(t, touchScript)
	e := newEnv(t, model.URL)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "--model", "test-model", "create notes.md")
	if r.code != 3 || strings.TrimSpace(r.stdout) != "I will create the file now." {
		t.Fatalf("exit %d stdout %q", r.code, r.stdout)
	}
	if !strings.Contains(r.stderr, "--decide approve|deny --call exec-1") {
		t.Fatalf("stderr does not say how to decide: %q", r.stderr)
	}
}

func TestUnreachable(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "hello", "--model", "m")
	if r.code != cmdutil.ExitUnreachable {
		t.Fatalf("exit %d, want %d", r.code, cmdutil.ExitUnreachable)
	}
	msg := strings.TrimSpace(r.stderr)
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "axlrd not reachable at "+e.address()+`: start it with "go run ./cmd/axlrd"`) {
		t.Fatalf("message %q", msg)
	}
}

func TestSecondDaemonOnStateDirFails(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:1")
	first := e.start()
	e.port = freePort(t)
	var stderr syncBuffer
	code := runDaemonMain(e, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "is in use by another axlrd (pid") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	_ = first
}

// runDaemonMain runs axlrd's Main in this process against the env's state
// dir; it only returns when the daemon cannot start.
func runDaemonMain(e *env, stderr io.Writer) int {
	return daemon.Main([]string{"--state-dir", e.stateDir, "--frontend-port", fmt.Sprint(e.port), "--ui-port", "0",
		"--settings", filepath.Join(e.dir, "absent.json")}, io.Discard, stderr)
}

func TestInterrupt(t *testing.T) {
	arrived := make(chan struct{}, 4)
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		arrived <- struct{}{}
		if strings.Contains(req.Messages[len(req.Messages)-1].Content, "slow") {
			return agenttest.Reply{Delay: time.Minute, Text: "too late"}
		}
		return agenttest.Reply{Text: "fast answer"}
	})
	e := newEnv(t, model.URL)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	interrupts := make(chan os.Signal, 1)
	done := make(chan cliResult, 1)
	go func() {
		var stdout, stderr syncBuffer
		f := e.factory(&stdout, &stderr)
		f.Interrupts = interrupts
		code := root.Main(ctx, f, []string{"--exec", "a slow one", "--model", "m", "--json", "--temporal-address", e.address()})
		done <- cliResult{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}()
	<-arrived
	interrupts <- os.Interrupt
	r := <-done
	if r.code != 1 || !strings.Contains(r.stderr, "interrupting the execution") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs, res := lines(t, r.stdout)
	if res.Status != contract.Interrupted || res.Error != "interrupted from axlr-tui" {
		t.Fatalf("result %+v", res)
	}
	if last := evs[len(evs)-1]; last.Type != contract.EventFailed {
		t.Fatalf("last event %+v", last)
	}
	// The session goes on: a new prompt runs.
	next := e.tui(ctx, "--exec", "quick", "--session", res.SessionID)
	if next.code != 0 || strings.TrimSpace(next.stdout) != "fast answer" {
		t.Fatalf("next prompt: exit %d %q %q", next.code, next.stdout, next.stderr)
	}
}
