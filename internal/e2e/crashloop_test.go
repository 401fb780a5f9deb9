package e2e

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
)

// TestCrashLoopDuringCeremony kills axlrd (SIGKILL) again and again from
// the check's approval until /debug ends: first each time the check
// command starts, four times in a row (its retry policy allows three
// attempts), then every one to four seconds. Lost attempts are not the
// activities' failures: the ceremony completes with every MADE step
// completed once, at attempt 1, and the execution never fails.
func TestCrashLoopDuringCeremony(t *testing.T) {
	// The check writes a line to .runs when it starts, then takes its time.
	reproduce := `{"program": "sh", "args": ["-c", "echo run >> .runs; sleep 3; exec go test ./..."]}`
	script := &debugScript{fixWorks: true}
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		var r agenttest.Reply
		if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "current step: reproduce") {
			r = stepDone("r1", `{"check_command": `+reproduce+`, "expected": "ok", "observed": "panic"}`)
		} else {
			r = script.reply(req)
		}
		// A model that takes its time, so the later kills land in requests
		// as well as in checks.
		r.Delay = time.Second
		return r
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	d := e.spawn()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	res := startCeremony(ctx, t, e, "debug", "TestParse fails on empty input")
	done := make(chan cliResult, 1)
	go func() { done <- e.tui(ctx, "--session", res.SessionID, "--decide", "approve", "--json") }()

	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(e.workspace, ".runs"))
		return strings.Count(string(b), "\n")
	}
	rng := rand.New(rand.NewPCG(6, 1))
	kills := 0
	var r cliResult
	ended := false
	for kills < 12 && !ended {
		var wait <-chan time.Time
		if kills < 4 {
			// Kill the check as soon as its next attempt starts.
			started := runs()
			tick := time.NewTicker(20 * time.Millisecond)
			for runs() == started && !ended {
				select {
				case r = <-done:
					ended = true
				case <-tick.C:
				}
			}
			tick.Stop()
			wait = time.After(0)
		} else {
			wait = time.After(time.Second + time.Duration(rng.Int64N(int64(3*time.Second))))
		}
		if ended {
			break
		}
		select {
		case r = <-done:
			ended = true
			continue
		case <-wait:
		}
		d.kill()
		kills++
		d = e.spawn()
	}
	if !ended {
		select {
		case r = <-done:
		case <-time.After(4 * time.Minute):
			t.Fatalf("no result after %d kills; axlrd:\n%s", kills, d.stderr)
		}
	}
	if r.code != 0 {
		t.Fatalf("exit %d after %d kills\n%s\n%s\naxlrd:\n%s", r.code, kills, r.stdout, r.stderr, d.stderr)
	}
	if kills < 4 {
		t.Fatalf("the ceremony ended after %d kills, before the check was killed four times", kills)
	}
	_, res = lines(t, r.stdout)
	c := res.Ceremony
	if res.Status != contract.Completed || c == nil || c.State != "COMPLETED" || stepNames(c) != "reproduce,diagnose,repair,integrate" {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	if out, err := testCalc(e); err != nil {
		t.Fatalf("go test after the repair: %v\n%s", err, out)
	}
	captureHistory(t, e, res.SessionID, "session_crash_loop")
	h := e.tui(ctx, "history", res.SessionID, "--json")
	var traj client.Trajectory
	if err := json.Unmarshal([]byte(h.stdout), &traj); err != nil {
		t.Fatalf("history: %v\n%s", err, h.stderr)
	}
	var lost []string
	for _, s := range traj.Steps {
		if strings.Contains(s.Error, "worker lost") {
			lost = append(lost, s.Name)
		}
	}
	t.Logf("%d kills, %d check runs; %d attempts failed as worker lost and ran again: %s", kills, runs(), len(lost), strings.Join(lost, ", "))
	d.kill()
	completedOnce(t, madeInstance(t, e, c.InstanceID))
}
