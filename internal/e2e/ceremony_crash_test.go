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

// crashCeremony runs /debug on calcRepo with axlrd as a child process,
// kills it (SIGKILL) when crashPoint fires, starts it again on the same
// state dir, and checks that the ceremony completes with every step
// completed once in MADE and none claimed twice.
func crashCeremony(t *testing.T, reproduce string, slowStep string, crashPoint func(e *env) <-chan struct{}) {
	script := &debugScript{fixWorks: true}
	slow := make(chan struct{})
	var mu sync.Mutex
	slowed := false
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		last := req.Messages[len(req.Messages)-1]
		mu.Lock()
		r, ok := lastReply(req)
		first := slowStep != "" && ok && r.NextStep == slowStep && !slowed
		if first {
			slowed = true
			close(slow)
		}
		mu.Unlock()
		if first {
			return agenttest.Reply{Delay: 10 * time.Minute, Text: "too late"}
		}
		if strings.Contains(last.Content, "current step: reproduce") {
			return stepDone("r1", `{"check_command": `+reproduce+`, "expected": "ok", "observed": "panic"}`)
		}
		return script.reply(req)
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	d := e.spawn()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	res := startCeremony(ctx, t, e, "debug", "TestParse fails on empty input")
	done := make(chan cliResult, 1)
	go func() { done <- e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json") }()

	var point <-chan struct{} = slow
	if crashPoint != nil {
		point = crashPoint(e)
	}
	select {
	case <-point:
	case r := <-done:
		t.Fatalf("the ceremony ended before the crash point: exit %d\n%s", r.code, r.stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no crash point; axlrd:\n%s", d.stderr)
	}
	d.kill()
	d2 := e.spawn()
	var r cliResult
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("no result after the restart; axlrd:\n%s", d2.stderr)
	}
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s\naxlrd:\n%s", r.code, r.stdout, r.stderr, d2.stderr)
	}
	_, res = lines(t, r.stdout)
	c := res.Ceremony
	if res.Status != contract.Completed || c == nil || c.State != "COMPLETED" || stepNames(c) != "reproduce,diagnose,repair,integrate" {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	d2.kill()
	completedOnce(t, madeInstance(t, e, c.InstanceID))
}

// TestCrashBetweenClaimAndCompletion kills axlrd while the model works on
// the claimed diagnose step.
func TestCrashBetweenClaimAndCompletion(t *testing.T) {
	crashCeremony(t, `{"program": "go", "args": ["test", "./..."]}`, "diagnose", nil)
}

// TestCrashDuringCheck kills axlrd while the reproduction command runs; the
// check runs again after the restart.
func TestCrashDuringCheck(t *testing.T) {
	reproduce := `{"program": "sh", "args": ["-c", "if [ -e .started ]; then exec go test ./...; fi; touch .started; sleep 60"]}`
	crashCeremony(t, reproduce, "", func(e *env) <-chan struct{} {
		started := make(chan struct{})
		go func() {
			for {
				if _, err := os.Stat(filepath.Join(e.workspace, ".started")); err == nil {
					close(started)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		return started
	})
}
