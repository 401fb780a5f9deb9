// Package madetest holds the conformance suite every made.Engine passes:
// the embedded engine directly, and made-mcp's tools as served by the
// in-test MCP server and read back by the MCP client. It speaks only
// through the made.Engine interface (and made.ClaimOnce; package definition
// names the digests it expects), and checks each outcome's exact message and
// kind.
//
// Persistence is engine-specific and not part of the suite.
package madetest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/made"
)

// Factory returns a fresh, empty engine for one test and the clock it
// reads (the suite advances it to expire leases). It registers whatever
// cleanup the engine needs with t.Cleanup.
type Factory func(t *testing.T) (made.Engine, *Clock)

// Clock is a settable clock for engines under test; safe for concurrent
// use. Give its Now to the engine (embedded.Options.Now).
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Run runs the suite, one subtest per behaviour, each on a fresh engine.
func Run(t *testing.T, newEngine Factory) {
	for _, c := range []struct {
		name string
		run  func(*harness)
	}{
		{"publish", testPublish},
		{"start", testStart},
		{"get_and_list", testGetAndList},
		{"change_review_worked_example", testChangeReview},
		{"failed_step_retry_exhausted", testRetry},
		{"lease_expiry_and_reclaim", testLeaseExpiry},
		{"idempotency_key_reuse", testIdempotencyKey},
		{"complete_without_claim", testCompleteWithoutClaim},
		{"wrong_state", testWrongState},
		{"no_role", testNoRole},
		{"guards_not_satisfied", testGuardsNotSatisfied},
		{"human_guard_approve_and_defer", testHumanGuard},
		{"cancel_and_terminal_refusals", testTerminal},
		{"argument_checks", testArguments},
		{"claim_once", testClaimOnce},
		{"axlr_debug_completed_with_repeats", testDebugCompleted},
		{"axlr_debug_blocked_after_three_repairs", testDebugRepairExhausted},
		{"axlr_debug_not_reproducible", testDebugNotReproducible},
		{"axlr_delivery_completed", testDelivery},
		{"max_transitions", testTransitionLimit},
		{"max_bounces_and_reentry", testBounceLimit},
		{"state_repeat", testStateRepeat},
		{"output_field_typing", testOutputTyping},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, clock := newEngine(t)
			c.run(&harness{t: t, e: e, clock: clock, ctx: t.Context()})
		})
	}
}

// harness drives one engine for one subtest, failing the test on any
// unexpected error.
type harness struct {
	t     *testing.T
	e     made.Engine
	clock *Clock
	ctx   context.Context
}

func (h *harness) publish(yaml string) made.Published {
	h.t.Helper()
	p, err := h.e.Publish(h.ctx, []byte(yaml))
	if err != nil {
		h.t.Fatalf("publish: %v", err)
	}
	return p
}

func (h *harness) start(ceremony, version, id string, context map[string]any) made.Instance {
	h.t.Helper()
	in, err := h.e.StartPublished(h.ctx, made.StartRequest{
		Ceremony: ceremony, Version: version, CeremonyID: id,
		ActorID: "orchestrator", ActorKind: made.ActorService, Context: context,
	})
	if err != nil {
		h.t.Fatalf("start %s %s as %q: %v", ceremony, version, id, err)
	}
	return in
}

func (h *harness) claimReq(id, step, key string) made.ClaimRequest {
	return made.ClaimRequest{CeremonyID: id, StepID: step, ActorKind: made.ActorAgent, LeaseOwnerID: "wf-" + id, IdempotencyKey: key}
}

func (h *harness) claim(id, step, key string) made.Instance {
	h.t.Helper()
	in, err := h.e.Claim(h.ctx, h.claimReq(id, step, key))
	if err != nil {
		h.t.Fatalf("claim %s %s with %q: %v", id, step, key, err)
	}
	return in
}

func (h *harness) finish(req made.CompleteRequest) made.Instance {
	h.t.Helper()
	req.ActorKind = made.ActorAgent
	in, err := h.e.Complete(h.ctx, req)
	if err != nil {
		h.t.Fatalf("complete %s %s as %s: %v", req.CeremonyID, req.StepID, req.Status, err)
	}
	return in
}

func (h *harness) complete(id, step string, output map[string]any) made.Instance {
	h.t.Helper()
	return h.finish(made.CompleteRequest{CeremonyID: id, StepID: step, Status: made.StepCompleted, Output: output})
}

// run claims a step and completes it.
func (h *harness) run(id, step, key string, output map[string]any) made.Instance {
	h.t.Helper()
	h.claim(id, step, key)
	return h.complete(id, step, output)
}

func (h *harness) apply(id, trigger string) made.Instance {
	h.t.Helper()
	in, err := h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: id, Trigger: trigger, ActorKind: made.ActorService})
	if err != nil {
		h.t.Fatalf("apply %s on %s: %v", trigger, id, err)
	}
	return in
}

func (h *harness) get(id string) made.Instance {
	h.t.Helper()
	in, err := h.e.Get(h.ctx, id)
	if err != nil {
		h.t.Fatalf("get %s: %v", id, err)
	}
	return in
}

// wantErr checks an engine failure's kind and exact message.
func wantErr(t *testing.T, err error, kind made.Kind, message string) {
	t.Helper()
	var e *made.Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want %s: %q", err, err, kind, message)
	}
	if e.Kind != kind || e.Message != message {
		t.Fatalf("got %s: %q, want %s: %q", e.Kind, e.Message, kind, message)
	}
	if !errors.Is(err, &made.Error{Kind: kind}) {
		t.Fatalf("errors.Is(%v, %s) is false", err, kind)
	}
}

// step returns an instance's step, failing the test when it is missing.
func step(t *testing.T, in made.Instance, id string) made.Step {
	t.Helper()
	s, ok := in.Step(id)
	if !ok {
		t.Fatalf("instance %s has no step %s", in.CeremonyID, id)
	}
	return s
}

// wantStep checks a step's status, attempt and iteration.
func wantStep(t *testing.T, in made.Instance, id string, status made.StepStatus, attempt, iteration int) made.Step {
	t.Helper()
	s := step(t, in, id)
	if s.Status != status || s.Attempt != attempt || s.Iteration != iteration {
		t.Fatalf("step %s is %s attempt %d iteration %d, want %s attempt %d iteration %d",
			id, s.Status, s.Attempt, s.Iteration, status, attempt, iteration)
	}
	return s
}

// wantState checks the current state, completion and next step ("" for
// none).
func wantState(t *testing.T, in made.Instance, state string, completed bool, next string) {
	t.Helper()
	got := ""
	if in.NextStepID != nil {
		got = *in.NextStepID
	}
	if in.CurrentState != state || in.Completed != completed || got != next {
		t.Fatalf("instance %s is in %s (completed %v, next step %q), want %s (completed %v, next step %q)",
			in.CeremonyID, in.CurrentState, in.Completed, got, state, completed, next)
	}
}

// wantEnabled checks which triggers can fire now, in declaration order.
func wantEnabled(t *testing.T, in made.Instance, triggers ...string) {
	t.Helper()
	var got []string
	for _, tr := range in.EnabledTransitions() {
		got = append(got, tr.Trigger)
	}
	if len(got) != len(triggers) {
		t.Fatalf("enabled transitions %v, want %v", got, triggers)
	}
	for i := range got {
		if got[i] != triggers[i] {
			t.Fatalf("enabled transitions %v, want %v", got, triggers)
		}
	}
}

// wantJSON compares values by their JSON encoding (maps sorted), so an
// int and the float64 a JSON decoder makes of it compare equal.
func wantJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, gerr := json.Marshal(got)
	w, werr := json.Marshal(want)
	if gerr != nil || werr != nil {
		t.Fatalf("%s: encode: %v %v", what, gerr, werr)
	}
	if string(g) != string(w) {
		t.Fatalf("%s is %s, want %s", what, g, w)
	}
}

// axlrDefinition reads one of the repository's AXLR definitions, found
// from this file's place (made/madetest → ceremonies).
func axlrDefinition(t *testing.T, file string) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("locate the ceremonies directory: no caller information")
	}
	path := filepath.Join(filepath.Dir(self), "..", "..", "ceremonies", file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read AXLR definition: %v", err)
	}
	return string(b)
}
