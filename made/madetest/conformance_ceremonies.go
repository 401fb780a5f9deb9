package madetest

import (
	"fmt"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

// axlr drives a step as the AXLR console does: claim with the key
// <instance>:<step>:<iteration>, then complete with the output.
func (h *harness) axlr(id, step string, iteration int, output map[string]any) made.Instance {
	h.t.Helper()
	return h.run(id, step, fmt.Sprintf("%s:%s:%d", id, step, iteration), output)
}

// startDebug publishes the AXLR debug definition and starts an instance
// that has reached REPAIR.
func (h *harness) startDebug(id string) made.Instance {
	h.t.Helper()
	yaml := axlrDefinition(h.t, "axlr_debug-2.0.yaml")
	def, err := definition.Parse([]byte(yaml))
	if err != nil {
		h.t.Fatalf("parse axlr_debug: %v", err)
	}
	if p := h.publish(yaml); p.Outcome != "published" || p.Digest != definition.Digest(def) {
		h.t.Fatalf("publish axlr_debug: %+v, want digest %s", p, definition.Digest(def))
	}
	in := h.start("axlr_debug", "2.0", id, map[string]any{"failure_brief": "parser drops the last line", "workspace": "/work/repo"})
	wantState(h.t, in, "REPRODUCE", false, "reproduce")
	wantEnabled(h.t, in)
	return in
}

func (h *harness) reachRepair(id string) {
	h.t.Helper()
	t := h.t
	in := h.axlr(id, "reproduce", 1, map[string]any{"observed": "tests pass", "reproduced": false, "settled": false})
	s := wantStep(t, in, "reproduce", made.StepPending, 1, 2)
	wantJSON(t, "output kept for the next iteration", s.Output, map[string]any{"observed": "tests pass", "reproduced": false, "settled": false})
	wantState(t, in, "REPRODUCE", false, "reproduce")
	wantEnabled(t, in)

	in = h.axlr(id, "reproduce", 2, map[string]any{
		"check":    map[string]any{"program": "go", "args": []any{"test", "./parser"}, "exit_code": 1},
		"expected": "all lines", "observed": "last line dropped", "reproduced": true, "settled": true,
	})
	wantStep(t, in, "reproduce", made.StepCompleted, 1, 2)
	wantEnabled(t, in, "reproduced")
	in = h.apply(id, "reproduced")
	wantState(t, in, "DIAGNOSE", false, "diagnose")

	h.axlr(id, "diagnose", 1, map[string]any{"root_cause": "off by one", "evidence": "scanner.go:42", "proposed_fix": "<=", "diagnosed": true})
	in = h.apply(id, "diagnosed")
	wantState(t, in, "REPAIR", false, "repair")
}

func testDebugCompleted(h *harness) {
	t := h.t
	h.startDebug("dbg-1")
	h.reachRepair("dbg-1")
	for i := 1; i <= 2; i++ {
		in := h.axlr("dbg-1", "repair", i, map[string]any{"summary": "tried", "repaired": false})
		wantStep(t, in, "repair", made.StepPending, 1, i+1)
		wantEnabled(t, in)
	}
	in := h.axlr("dbg-1", "repair", 3, map[string]any{"summary": "fixed the bound", "repaired": true})
	if s := wantStep(t, in, "repair", made.StepCompleted, 1, 3); s.RepeatExhausted {
		t.Fatal("a repair that passed on its last iteration is marked exhausted")
	}
	wantEnabled(t, in, "repaired")
	in = h.apply("dbg-1", "repaired")
	wantState(t, in, "INTEGRATE", false, "integrate")
	h.axlr("dbg-1", "integrate", 1, map[string]any{"report": "r", "summary_en": "s", "revision": "abc123", "dirty": []any{}, "integrated": true})
	in = h.apply("dbg-1", "integrated")
	wantState(t, in, "COMPLETED", true, "")
	if in.TransitionCount != 4 || in.Bounces != 0 {
		t.Fatalf("%d transitions, %d bounces; want 4 and 0", in.TransitionCount, in.Bounces)
	}
}

func testDebugRepairExhausted(h *harness) {
	t := h.t
	h.startDebug("dbg-1")
	h.reachRepair("dbg-1")
	var in made.Instance
	for i := 1; i <= 3; i++ {
		in = h.axlr("dbg-1", "repair", i, map[string]any{"summary": "tried", "repaired": false})
	}
	s := wantStep(t, in, "repair", made.StepCompleted, 1, 3)
	if !s.RepeatExhausted {
		t.Fatal("three failed repairs did not exhaust the repeat")
	}
	wantJSON(t, "last repair output", s.Output, map[string]any{"summary": "tried", "repaired": false})
	wantEnabled(t, in, "repair_exhausted")
	_, err := h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: "dbg-1", Trigger: "repaired", ActorKind: made.ActorService})
	wantErr(t, err, made.KindGuardsNotSatisfied, "failed to apply ceremony transition: invariant violated: ceremony transition guards are not satisfied")
	_, err = h.e.Claim(h.ctx, h.claimReq("dbg-1", "repair", "dbg-1:repair:4"))
	wantErr(t, err, made.KindLeaseActive, "failed to claim ceremony step: invariant violated: step lease is still active")
	in = h.apply("dbg-1", "repair_exhausted")
	wantState(t, in, "BLOCKED", true, "")
}

func testDebugNotReproducible(h *harness) {
	t := h.t
	h.startDebug("dbg-1")
	in := h.axlr("dbg-1", "reproduce", 1, map[string]any{"reproducible": false, "observed": "passes every time", "settled": true})
	wantStep(t, in, "reproduce", made.StepCompleted, 1, 1)
	wantEnabled(t, in, "not_reproducible")
	in = h.apply("dbg-1", "not_reproducible")
	wantState(t, in, "BLOCKED", true, "")
}

func testDelivery(h *harness) {
	t := h.t
	yaml := axlrDefinition(t, "axlr_delivery-2.0.yaml")
	if p := h.publish(yaml); p.Outcome != "published" {
		t.Fatalf("publish axlr_delivery: %+v", p)
	}
	h.start("axlr_delivery", "2.0", "dlv-1", map[string]any{"task_brief": "add a flag", "workspace": "/work/repo"})
	in := h.axlr("dlv-1", "brief", 1, map[string]any{"criteria": "c", "scope": "s", "ready": true})
	wantEnabled(t, in, "briefed")
	in = h.apply("dlv-1", "briefed")
	wantState(t, in, "BUILD", false, "build")
	in = h.axlr("dlv-1", "build", 1, map[string]any{"summary": "first try", "verified": false})
	wantStep(t, in, "build", made.StepPending, 1, 2)
	in = h.axlr("dlv-1", "build", 2, map[string]any{"summary": "done", "verified": true})
	wantStep(t, in, "build", made.StepCompleted, 1, 2)
	wantEnabled(t, in, "verified")
	h.apply("dlv-1", "verified")
	h.axlr("dlv-1", "integrate", 1, map[string]any{"report": "r", "summary_en": "s", "revision": "abc", "integrated": true})
	in = h.apply("dlv-1", "integrated")
	wantState(t, in, "COMPLETED", true, "")
}

func testTransitionLimit(h *harness) {
	t := h.t
	h.publish(limitsYAML("1.0", 2, 5))
	h.start("limits_check", "1.0", "l-1", nil)
	h.apply("l-1", "forth")
	in := h.apply("l-1", "back")
	if in.TransitionCount != 2 || in.Bounces != 1 {
		t.Fatalf("%d transitions and %d bounces, want 2 and 1", in.TransitionCount, in.Bounces)
	}
	_, err := h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: "l-1", Trigger: "forth", ActorKind: made.ActorService})
	wantErr(t, err, made.KindLimit, "failed to apply ceremony transition: invariant violated: transition limit reached (2)")
	in = h.get("l-1")
	wantState(t, in, "A", false, "work")
	if in.TransitionCount != 2 {
		t.Fatalf("a refused transition was counted: %d", in.TransitionCount)
	}
}

func testBounceLimit(h *harness) {
	t := h.t
	h.publish(limitsYAML("2.0", 10, 1))
	h.start("limits_check", "2.0", "l-1", nil)
	in := h.run("l-1", "work", "k1", map[string]any{"n": 1})
	wantStep(t, in, "work", made.StepCompleted, 1, 1)
	h.apply("l-1", "forth")
	in = h.apply("l-1", "back")
	// Re-entering A starts its step afresh.
	s := wantStep(t, in, "work", made.StepPending, 1, 1)
	wantJSON(t, "output of a re-entered step", s.Output, map[string]any{})
	wantState(t, in, "A", false, "work")
	if in.Bounces != 1 {
		t.Fatalf("bounces %d, want 1", in.Bounces)
	}
	_, err := h.e.Claim(h.ctx, h.claimReq("l-1", "work", "k1"))
	wantErr(t, err, made.KindExists, "failed to claim ceremony step: already exists: ceremony_instance.idempotency_key")
	h.run("l-1", "work", "k2", nil)
	_, err = h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: "l-1", Trigger: "forth", ActorKind: made.ActorService})
	wantErr(t, err, made.KindLimit, "failed to apply ceremony transition: invariant violated: bounce limit reached (1)")
	if in = h.get("l-1"); in.CurrentState != "A" || in.Bounces != 1 || in.TransitionCount != 2 {
		t.Fatalf("after a refused bounce: %s, %d bounces, %d transitions", in.CurrentState, in.Bounces, in.TransitionCount)
	}
}

func testStateRepeat(h *harness) {
	t := h.t
	h.publish(reviewRoundsYAML)
	for _, c := range []struct {
		id       string
		accepted bool
		trigger  string
		final    string
	}{
		{"rounds-exhausted", false, "review_exhausted", "BLOCKED"},
		{"rounds-accepted", true, "reviewed", "DONE"},
	} {
		in := h.start("review_rounds", "1.0", c.id, nil)
		wantJSON(t, "state iterations at start", in.StateIterations, map[string]int{"REVIEW": 1})
		h.axlr(c.id, "revise", 1, map[string]any{"draft": "v1"})
		in = h.axlr(c.id, "review", 1, map[string]any{"accepted": false})
		wantStep(t, in, "revise", made.StepPending, 1, 2)
		s := wantStep(t, in, "review", made.StepPending, 1, 2)
		wantJSON(t, "review output kept", s.Output, map[string]any{"accepted": false})
		wantJSON(t, "state iterations after a round", in.StateIterations, map[string]int{"REVIEW": 2})
		wantState(t, in, "REVIEW", false, "revise")
		wantEnabled(t, in)

		h.axlr(c.id, "revise", 2, map[string]any{"draft": "v2"})
		in = h.axlr(c.id, "review", 2, map[string]any{"accepted": c.accepted})
		wantStep(t, in, "revise", made.StepCompleted, 1, 2)
		wantStep(t, in, "review", made.StepCompleted, 1, 2)
		wantJSON(t, "state iterations at the end", in.StateIterations, map[string]int{"REVIEW": 2})
		wantEnabled(t, in, c.trigger)
		in = h.apply(c.id, c.trigger)
		wantState(t, in, c.final, true, "")
	}
}

func testOutputTyping(h *harness) {
	t := h.t
	h.publish(typedGuardsYAML)
	h.start("typed_guards", "1.0", "typed", nil)
	for i, c := range []struct {
		output  map[string]any
		enabled []string
	}{
		// Strings that read like a boolean or a number are strings.
		{map[string]any{"flag": "true", "verdict": true, "count": "3"}, nil},
		// done is the string "true", not the boolean: the step repeats.
		{map[string]any{"flag": true, "verdict": "approve", "count": 3, "done": "true"}, []string{"as_bool", "as_text", "as_number"}},
		{map[string]any{"flag": false, "count": 3.0}, []string{"as_number"}},
	} {
		in := h.axlr("typed", "inspect", i+1, c.output)
		wantStep(t, in, "inspect", made.StepPending, 1, i+2)
		wantEnabled(t, in, c.enabled...)
	}
	in := h.axlr("typed", "inspect", 4, map[string]any{"verdict": "approve", "done": true})
	wantStep(t, in, "inspect", made.StepCompleted, 1, 4)
	wantEnabled(t, in, "as_text")
	in = h.apply("typed", "as_text")
	wantState(t, in, "TEXT", true, "")
}
