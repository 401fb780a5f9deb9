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

// TestCrashDuringModelRequest kills axlrd (worker and embedded server, with
// SIGKILL) while the third model request of a turn is in flight, starts it
// again on the same state dir, and checks that the execution completes
// without repeating the first two requests or the tool calls between them,
// while axlr-tui --exec waits through the restart.
func TestCrashDuringModelRequest(t *testing.T) {
	third := make(chan struct{})
	var mu sync.Mutex
	seen := map[int]int{} // tool results in the request -> arrivals
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		n := toolResults(req)
		mu.Lock()
		seen[n]++
		arrival := seen[n]
		mu.Unlock()
		usage := &agenttest.Usage{PromptTokens: 100, CompletionTokens: 10}
		switch n {
		case 0:
			return agenttest.Reply{Usage: usage, ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write", Arguments: `{"path":"a.txt","content":"one\n","mode":"create"}`}}}
		case 1:
			return agenttest.Reply{Usage: usage, ToolCalls: []agenttest.ToolCall{{ID: "r1", Name: "local_read", Arguments: `{"path":"a.txt"}`}}}
		default:
			if arrival == 1 {
				close(third)
				// Slow: the daemon dies while this request waits.
				return agenttest.Reply{Delay: 10 * time.Minute, Text: "too late"}
			}
			return agenttest.Reply{Usage: usage, Text: "a.txt holds one line."}
		}
	})
	e := newEnv(t, model.URL)
	e.writeSettings(`{"model": "test-model"}`)
	d := e.spawn()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan cliResult, 1)
	go func() { done <- e.tui(ctx, "--exec", "write a.txt and read it back", "--approve", "local", "--json") }()

	select {
	case <-third:
	case r := <-done:
		t.Fatalf("exec ended before the third request: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no third request; axlrd stderr:\n%s", d.stderr)
	}
	d.kill()
	restarted := time.Now()
	d2 := e.spawn()
	t.Logf("axlrd ready again %s after the kill", time.Since(restarted).Round(time.Millisecond))

	var r cliResult
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("no result after the restart; axlrd stderr:\n%s", d2.stderr)
	}
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\naxlrd:\n%s", r.code, r.stdout, r.stderr, d2.stderr)
	}
	_, res := lines(t, r.stdout)
	if res.Status != contract.Completed || res.Answer != "a.txt holds one line." {
		t.Fatalf("result %+v", res)
	}
	captureHistory(t, e, res.SessionID, "session_crash")
	mu.Lock()
	defer mu.Unlock()
	if seen[0] != 1 || seen[1] != 1 || seen[2] != 2 {
		t.Fatalf("requests by position: %v; want the first two once and the third twice", seen)
	}
	for _, c := range res.ToolCalls {
		if c.Status != contract.CallCompleted {
			t.Fatalf("tool call %+v", c)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.workspace, "a.txt")); err != nil || string(b) != "one\n" {
		t.Fatalf("a.txt: %q %v", b, err)
	}
	if !strings.Contains(r.stderr, "waiting for it to come back") {
		t.Logf("the watcher did not notice the restart (stderr %q)", r.stderr)
	}
}
