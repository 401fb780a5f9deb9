package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
)

// TestCheckUnderPolicy: a /debug under a policy that denies local_exec of
// go refuses the hand-back that proposes go test, with the policy's reason
// for the model, before any card and without running it. The model gives
// up; the stalled ceremony ends its instance.
func TestCheckUnderPolicy(t *testing.T) {
	script := &debugScript{fixWorks: true}
	var mu sync.Mutex
	var refusals []string
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		if r, ok := lastReply(req); ok && !r.Accepted {
			mu.Lock()
			refusals = append(refusals, r.Error)
			mu.Unlock()
			return agenttest.Reply{Text: "The policy forbids the check."}
		}
		if strings.Contains(req.Messages[len(req.Messages)-1].Content, "still open") {
			return agenttest.Reply{Text: "I cannot run it."}
		}
		return script.reply(req)
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	pol := filepath.Join(e.dir, "policy.json")
	if err := os.WriteFile(pol, []byte(`{"tools": {"deny": [{"name": "local_exec", "arguments": {"program": "go"}}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "--mode", "debug", "TestParse fails", "--approve", "all", "--policy", pol, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, res := lines(t, r.stdout)
	mu.Lock()
	defer mu.Unlock()
	if len(refusals) != 1 || !strings.Contains(refusals[0], `check_command go test ./... is forbidden by the execution's policy: local_exec is denied by a rule for local_exec with program="go"`) {
		t.Fatalf("refusals %q", refusals)
	}
	if res.Pending != nil || res.Ceremony == nil || res.Ceremony.State != "CANCELLED" || !strings.HasPrefix(res.Ceremony.Stopped, "ceremony_stalled") {
		t.Fatalf("result %+v ceremony %+v", res, res.Ceremony)
	}
	for _, c := range res.ToolCalls {
		if c.Tool == "axlr_step_done" && c.Status != contract.CallForbidden {
			t.Fatalf("tool call %+v", c)
		}
	}
	h := e.tui(ctx, "history", res.SessionID)
	if strings.Contains(h.stdout, "ceremony.RunCheck") {
		t.Fatalf("a forbidden check ran:\n%s", h.stdout)
	}
	captureHistory(t, e, res.SessionID, "session_check_forbidden")
}
