package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/workflows"
)

// TestStopCeremony: the person stops a /debug whose check waits for
// approval. The step is cancelled and the instance ends CANCELLED in MADE
// (the 2.1 cancel trigger), the session is back in normal mode, history
// shows the cancel, and the next prompt carries the stop note once.
func TestStopCeremony(t *testing.T) {
	script := &debugScript{fixWorks: true}
	var mu sync.Mutex
	var prompts []agenttest.Request
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(last.Content, workflows.StoppedNote) || strings.HasPrefix(last.Content, "and now") {
			mu.Lock()
			prompts = append(prompts, req)
			mu.Unlock()
			return agenttest.Reply{Text: "I will not resume it."}
		}
		return script.reply(req)
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	d := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	res := startCeremony(ctx, t, e, "debug", "TestParse fails on empty input")
	c := res.Ceremony
	if c == nil || c.Version != "2.1" || res.Pending == nil || res.Pending.Tool != workflows.CheckTool {
		t.Fatalf("result %+v ceremony %+v", res, c)
	}
	stop := e.tui(ctx, "--session", res.SessionID, "--stop-ceremony", "--reason", "wrong approach", "--json")
	if stop.code != 0 {
		t.Fatalf("stop: exit %d\n%s\n%s", stop.code, stop.stdout, stop.stderr)
	}
	if !strings.Contains(stop.stderr, "axlr-tui: stopping ceremony "+c.InstanceID+" (axlr_debug 2.1, state REPRODUCE)") {
		t.Fatalf("stderr %q", stop.stderr)
	}
	evs, stopped := lines(t, stop.stdout)
	sc := stopped.Ceremony
	if stopped.Status != contract.Completed || sc == nil || !sc.Ended || sc.State != "CANCELLED" ||
		sc.Stopped != "stopped_by_person: the person stopped the ceremony: wrong approach" {
		t.Fatalf("stop result %+v ceremony %+v", stopped, sc)
	}
	var kinds []string
	for _, ev := range evs {
		if ev.Type == contract.EventTransition || ev.Type == contract.EventStepCompleted {
			kinds = append(kinds, string(ev.Type)+" "+ev.Step+ev.Trigger+" "+string(ev.Status)+ev.State)
		}
	}
	if strings.Join(kinds, "; ") != "step.completed reproduce cancelled; transition cancel CANCELLED" {
		t.Fatalf("events %v", kinds)
	}
	again := e.tui(ctx, "--session", res.SessionID, "--stop-ceremony")
	if again.code != 1 || !strings.Contains(again.stderr, "runs no ceremony") {
		t.Fatalf("second stop: exit %d %q", again.code, again.stderr)
	}

	for i, prompt := range []string{"and now?", "and now, again?"} {
		r := e.tui(ctx, "--exec", prompt, "--session", res.SessionID, "--json")
		if r.code != 0 {
			t.Fatalf("prompt %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	mu.Lock()
	if len(prompts) != 2 {
		t.Fatalf("%d prompts reached the model", len(prompts))
	}
	for i, req := range prompts {
		notes := 0
		for _, m := range req.Messages {
			notes += strings.Count(m.Content, workflows.StoppedNote)
		}
		if notes != 1 {
			t.Errorf("request %d holds the stop note %d times", i, notes)
		}
		for _, tool := range req.Tools {
			if tool.Name == workflows.StepDoneTool {
				t.Errorf("request %d offers %s", i, tool.Name)
			}
		}
	}
	mu.Unlock()

	h := e.tui(ctx, "history", res.SessionID)
	for _, want := range []string{"update stop-ceremony", "cancelled reproduce (iteration 1)", "applied cancel from REPRODUCE", "state CANCELLED",
		"ceremony " + c.InstanceID + " in CANCELLED, stopped: stopped_by_person"} {
		if !strings.Contains(h.stdout, want) {
			t.Errorf("history lacks %q:\n%s", want, h.stdout)
		}
	}
	captureHistory(t, e, res.SessionID, "session_stop_ceremony")
	d.stop()
	inst := madeInstance(t, e, c.InstanceID)
	if s, _ := inst.Step("reproduce"); s.Status != made.StepCancelled || inst.CurrentState != "CANCELLED" || !inst.Completed {
		t.Fatalf("MADE: reproduce %s, instance %s completed %v", s.Status, inst.CurrentState, inst.Completed)
	}
}
