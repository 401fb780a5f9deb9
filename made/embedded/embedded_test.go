package made

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func openTest(t *testing.T, dir string, clock *testClock) *Embedded {
	t.Helper()
	e, err := OpenEmbedded(dir, EmbeddedOptions{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantKind(t *testing.T, err error, kind Kind, message string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != kind || e.Message != message {
		t.Fatalf("got %v, want %s: %q", err, kind, message)
	}
}

// drive takes a change_review instance to REVIEWING with review in
// progress and a deferral recorded.
func drive(t *testing.T, e *Embedded, id string) Instance {
	t.Helper()
	ctx := t.Context()
	steps := []func() (Instance, error){
		func() (Instance, error) {
			return e.StartPublished(ctx, StartRequest{Ceremony: "change_review", Version: "1.0", CeremonyID: id, ActorID: "o", ActorKind: ActorService, Context: map[string]any{"change_ref": "PR-1"}})
		},
		func() (Instance, error) {
			return e.Claim(ctx, ClaimRequest{CeremonyID: id, StepID: "draft", ActorKind: ActorAgent, IdempotencyKey: id + "/draft"})
		},
		func() (Instance, error) {
			return e.Complete(ctx, CompleteRequest{CeremonyID: id, StepID: "draft", ActorKind: ActorAgent, Status: StepCompleted, Output: map[string]any{"n": 1}})
		},
		func() (Instance, error) {
			return e.ApplyTransition(ctx, TransitionRequest{CeremonyID: id, Trigger: "submit", ActorKind: ActorService})
		},
		func() (Instance, error) {
			return e.DeferGuard(ctx, DeferRequest{CeremonyID: id, GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: ActorHuman,
				Statement: "later", Reason: "notes missing", ReconsiderWhen: []string{"notes"}})
		},
		func() (Instance, error) {
			return e.Claim(ctx, ClaimRequest{CeremonyID: id, StepID: "review", ActorKind: ActorAgent, IdempotencyKey: id + "/review", LeaseTTL: time.Hour})
		},
	}
	var in Instance
	for i, step := range steps {
		var err error
		if in, err = step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return in
}

func TestEmbeddedPersistence(t *testing.T) {
	for _, closeFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("closed_%v", closeFirst), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "made")
			clock := &testClock{now: time.Date(2026, 6, 6, 12, 0, 0, 0, time.UTC)}
			first := openTest(t, dir, clock)
			if _, err := first.Publish(t.Context(), []byte(changeReview)); err != nil {
				t.Fatal(err)
			}
			before := drive(t, first, "cr-1")
			if closeFirst {
				if err := first.Close(); err != nil {
					t.Fatal(err)
				}
			} // else the engine is "killed": the next one reads what is on disk.

			second := openTest(t, dir, clock)
			defer second.Close()
			after, err := second.Get(t.Context(), "cr-1")
			if err != nil {
				t.Fatal(err)
			}
			if mustJSON(t, after) != mustJSON(t, before) {
				t.Fatalf("after reopening:\n%s\nbefore:\n%s", mustJSON(t, after), mustJSON(t, before))
			}
			p, err := second.Publish(t.Context(), []byte(changeReview))
			if err != nil || p.Outcome != "already_published" {
				t.Fatalf("republish after reopening: %+v, %v", p, err)
			}
			// The lease and the idempotency keys survived.
			_, err = second.Claim(t.Context(), ClaimRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: ActorAgent, IdempotencyKey: "other"})
			wantKind(t, err, KindLeaseActive, "failed to claim ceremony step: invariant violated: step lease is still active")
			if _, err := second.Complete(t.Context(), CompleteRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: ActorAgent, Status: StepFailed, Error: "x"}); err != nil {
				t.Fatal(err)
			}
			_, err = second.Claim(t.Context(), ClaimRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: ActorAgent, IdempotencyKey: "cr-1/review"})
			wantKind(t, err, KindExists, "failed to claim ceremony step: already exists: ceremony_instance.idempotency_key")
		})
	}
}

func TestEmbeddedStoreLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made")
	e := openTest(t, dir, &testClock{now: time.Unix(0, 0)})
	defer e.Close()
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("store directory: %v, %v", info, err)
	}
	if _, err := e.Publish(t.Context(), []byte(changeReview)); err != nil {
		t.Fatal(err)
	}
	drive(t, e, "cr-1")
	for _, sub := range []string{definitionsDir, instancesDir} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil || len(entries) != 1 {
			t.Fatalf("%s holds %v (%v), want one file", sub, entries, err)
		}
		info, err := entries[0].Info()
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("%s/%s mode %v (%v), want 0600", sub, entries[0].Name(), info.Mode(), err)
		}
	}
}

func TestEmbeddedInterruptedWrite(t *testing.T) {
	dir := t.TempDir()
	clock := &testClock{now: time.Unix(0, 0)}
	e := openTest(t, dir, clock)
	if _, err := e.Publish(t.Context(), []byte(changeReview)); err != nil {
		t.Fatal(err)
	}
	drive(t, e, "cr-1")
	leftover := filepath.Join(dir, instancesDir, tempPrefix+"123")
	if err := os.WriteFile(leftover, []byte(`{"ceremony_id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	again := openTest(t, dir, clock)
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the interrupted write is still there: %v", err)
	}
	if _, err := again.Get(t.Context(), "cr-1"); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedCorruptStore(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, &testClock{now: time.Unix(0, 0)})
	if _, err := e.Publish(t.Context(), []byte(changeReview)); err != nil {
		t.Fatal(err)
	}
	drive(t, e, "cr-1")
	path := e.store.instancePath("cr-1")
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenEmbedded(dir, EmbeddedOptions{})
	want := fmt.Sprintf("open embedded ceremony engine: read instance %s: not a ceremony instance of this store", path)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// TestEmbeddedDigestMismatch reads a store whose definition no longer has
// the digest it was published under (a store written by another digest
// scheme).
func TestEmbeddedDigestMismatch(t *testing.T) {
	dir := t.TempDir()
	clock := &testClock{now: time.Unix(0, 0)}
	e := openTest(t, dir, clock)
	if _, err := e.Publish(t.Context(), []byte(changeReview)); err != nil {
		t.Fatal(err)
	}
	drive(t, e, "cr-1")
	path := e.store.definitionPath("change_review", "1.0")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d storedDefinition
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	d.YAML += "max_bounces: 1\n"
	if err := e.store.writeDefinition(d); err != nil {
		t.Fatal(err)
	}

	again := openTest(t, dir, clock)
	const mismatch = "invariant violated: the published definition no longer matches the digest this instance ran"
	_, err = again.Get(t.Context(), "cr-1")
	wantKind(t, err, KindConflict, "failed to load ceremony definition: "+mismatch)
	_, err = again.Claim(t.Context(), ClaimRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: ActorAgent})
	wantKind(t, err, KindConflict, "failed to load ceremony definition: "+mismatch)
	_, err = again.StartPublished(t.Context(), StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "o", ActorKind: ActorService})
	wantKind(t, err, KindConflict, "failed to start published ceremony: "+mismatch)
	list, err := again.List(t.Context())
	if err != nil || len(list) != 1 || list[0].Instance != nil || list[0].CeremonyID != "cr-1" ||
		list[0].Reason != "failed to load ceremony definition: "+mismatch {
		t.Fatalf("list %+v, %v", list, err)
	}
}

func TestEmbeddedClosed(t *testing.T) {
	e := openTest(t, t.TempDir(), &testClock{now: time.Unix(0, 0)})
	if _, err := e.Publish(t.Context(), []byte(changeReview)); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for name, call := range map[string]func() error{
		"publish": func() error { _, err := e.Publish(ctx, []byte(changeReview)); return err },
		"start": func() error {
			_, err := e.StartPublished(ctx, StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "o", ActorKind: ActorService})
			return err
		},
		"get":  func() error { _, err := e.Get(ctx, "x"); return err },
		"list": func() error { _, err := e.List(ctx); return err },
		"claim": func() error {
			_, err := e.Claim(ctx, ClaimRequest{CeremonyID: "x", StepID: "draft", ActorKind: ActorAgent})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { wantKind(t, call(), KindUnavailable, "embedded engine is closed") })
	}
}

func TestEmbeddedCancelledContext(t *testing.T) {
	e := openTest(t, t.TempDir(), &testClock{now: time.Unix(0, 0)})
	defer e.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.Publish(ctx, []byte(changeReview)); !errors.Is(err, context.Canceled) {
		t.Fatalf("publish under a cancelled context: %v", err)
	}
	if _, err := e.Get(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("get under a cancelled context: %v", err)
	}
}

func TestEmbeddedDefaultIDs(t *testing.T) {
	e, err := OpenEmbedded(t.TempDir(), EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Publish(t.Context(), []byte(changeReview)); err != nil {
		t.Fatal(err)
	}
	in, err := e.StartPublished(t.Context(), StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "o", ActorKind: ActorService})
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(in.CeremonyID) {
		t.Fatalf("default ceremony id %q is not a lowercase UUID v4", in.CeremonyID)
	}
	// A claim without a key gets a fresh one each time: after a failure
	// the retry is not refused as a reused key.
	claim := ClaimRequest{CeremonyID: in.CeremonyID, StepID: "draft", ActorKind: ActorAgent}
	if _, err := e.Claim(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Complete(t.Context(), CompleteRequest{CeremonyID: in.CeremonyID, StepID: "draft", ActorKind: ActorAgent, Status: StepFailed, Error: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Claim(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddedConcurrentInstances drives several instances at once (run
// with -race).
func TestEmbeddedConcurrentInstances(t *testing.T) {
	e := openTest(t, t.TempDir(), &testClock{now: time.Unix(0, 0)})
	defer e.Close()
	if _, err := e.Publish(t.Context(), []byte(changeReview)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("cr-%d", i)
			ctx := t.Context()
			if _, err := e.StartPublished(ctx, StartRequest{Ceremony: "change_review", Version: "1.0", CeremonyID: id, ActorID: "o", ActorKind: ActorService}); err != nil {
				errs <- err
				return
			}
			if _, err := e.Claim(ctx, ClaimRequest{CeremonyID: id, StepID: "draft", ActorKind: ActorAgent}); err != nil {
				errs <- err
				return
			}
			if _, err := e.Complete(ctx, CompleteRequest{CeremonyID: id, StepID: "draft", ActorKind: ActorAgent, Status: StepCompleted}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	list, err := e.List(t.Context())
	if err != nil || len(list) != 8 {
		t.Fatalf("list: %d entries, %v", len(list), err)
	}
	for _, entry := range list {
		if s, _ := entry.Instance.Step("draft"); s.Status != StepCompleted {
			t.Errorf("%s: draft is %s", entry.CeremonyID, s.Status)
		}
	}
}

func TestHumanTime(t *testing.T) {
	for _, c := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 6, 6, 12, 0, 0, 0, time.UTC), "2026-06-06 12:00:00.0 +00:00:00"},
		{time.Date(2026, 6, 6, 12, 0, 1, 250_000_000, time.UTC), "2026-06-06 12:00:01.25 +00:00:00"},
		{time.Date(2026, 6, 6, 14, 0, 0, 1, time.FixedZone("x", 2*3600)), "2026-06-06 12:00:00.000000001 +00:00:00"},
	} {
		if got := humanTime(c.in); got != c.want {
			t.Errorf("humanTime(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestLeaseTTL(t *testing.T) {
	for _, c := range []struct {
		in, want time.Duration
	}{
		{0, 5 * time.Minute}, {time.Minute, time.Minute}, {1500 * time.Microsecond, 2 * time.Millisecond},
	} {
		if got, err := leaseTTL(c.in); err != nil || got != c.want {
			t.Errorf("leaseTTL(%v) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	_, err := leaseTTL(-time.Second)
	wantKind(t, err, KindInvalid, "field `lease_ttl_ms` must be a non-negative integer")
}

func TestClassifyMessage(t *testing.T) {
	for _, c := range []struct {
		message string
		kind    Kind
	}{
		{"ceremony draft could not be parsed: unknown key \"x\" in the definition", KindNotPublishable},
		{"ceremony draft is not publishable: not found: ceremony_transition.to_state", KindNotPublishable},
		{"failed to load ceremony instance: not found: ceremony_instance", KindNotFound},
		{"failed to start published ceremony: already exists: ceremony_instance", KindExists},
		{"ceremony step has no authorized role: invariant violated: no ceremony role can execute step", KindNoRole},
		{"failed to complete ceremony step: invariant violated: no ceremony role can execute step", KindNoRole},
		{"failed to claim ceremony step: invariant violated: terminal ceremony instances cannot start steps", KindTerminal},
		{"failed to claim ceremony step: invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`", KindWrongState},
		{"failed to claim ceremony step: invariant violated: step lease is still active", KindLeaseActive},
		{"failed to claim ceremony step: invariant violated: step retry policy exhausted", KindRetryExhausted},
		{"failed to complete ceremony step: invariant violated: step result requires an in-progress step", KindNotInProgress},
		{"failed to apply ceremony transition: invariant violated: ceremony transition guards are not satisfied", KindGuardsNotSatisfied},
		{"failed to apply ceremony transition: invariant violated: transition limit reached (20)", KindLimit},
		{"failed to apply ceremony transition: invariant violated: bounce limit reached (3)", KindLimit},
		{"failed to approve ceremony guard: invariant violated: only a human can approve a human guard", KindGuard},
		{"failed to approve ceremony guard: invariant violated: ceremony role cannot apply a transition that requires this guard", KindGuard},
		{"failed to approve ceremony guard: not found: ceremony_role", KindNotFound},
		{"failed to defer ceremony guard: invariant violated: approved human guards cannot be deferred", KindGuard},
		{"failed to load ceremony definition: invariant violated: the published definition no longer matches the digest this instance ran", KindConflict},
		{"failed to claim ceremony step: conflict: ceremony_instance was changed by someone else first", KindConflict},
		{"embedded engine is closed", KindUnavailable},
		{"field `step_id` contains invalid characters", KindInvalid},
		{"invariant violated: only failed step results may carry an error message", KindInvalid},
	} {
		if got := ClassifyMessage(c.message); got != c.kind {
			t.Errorf("%q: %s, want %s", c.message, got, c.kind)
		}
	}
}

func TestRandomUUID(t *testing.T) {
	a, b := randomUUID(), randomUUID()
	if a == b || len(a) != 36 {
		t.Fatalf("%s %s", a, b)
	}
}

// stepper drives an instance of a test definition.
type stepper struct {
	t  *testing.T
	e  *Embedded
	id string
}

func newStepper(t *testing.T, yaml string) *stepper {
	t.Helper()
	e := openTest(t, t.TempDir(), &testClock{now: time.Unix(0, 0)})
	t.Cleanup(func() { _ = e.Close() })
	def, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Publish(t.Context(), []byte(yaml)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartPublished(t.Context(), StartRequest{Ceremony: def.Name, Version: def.Version, CeremonyID: "i", ActorID: "o", ActorKind: ActorService}); err != nil {
		t.Fatal(err)
	}
	return &stepper{t: t, e: e, id: "i"}
}

func (s *stepper) run(step string, output map[string]any) Instance {
	s.t.Helper()
	if _, err := s.e.Claim(s.t.Context(), ClaimRequest{CeremonyID: s.id, StepID: step, ActorKind: ActorAgent}); err != nil {
		s.t.Fatal(err)
	}
	in, err := s.e.Complete(s.t.Context(), CompleteRequest{CeremonyID: s.id, StepID: step, ActorKind: ActorAgent, Status: StepCompleted, Output: output})
	if err != nil {
		s.t.Fatal(err)
	}
	return in
}

func enabled(in Instance) string {
	var out []string
	for _, t := range in.EnabledTransitions() {
		out = append(out, t.Trigger)
	}
	return fmt.Sprint(out)
}

func TestAllStepsCompletedAndWaiting(t *testing.T) {
	s := newStepper(t, `version: "1"
name: all_done
states: [{id: A, initial: true}, {id: B, terminal: true}]
transitions: [{from: A, to: B, trigger: go, guards: [all, sign]}]
steps: [{id: s1, state: A, handler: h}, {id: s2, state: A, handler: h}]
guards:
  all: {type: automated, check: all_steps_completed}
  sign: {type: automated, check: manual_approval}
roles: [{id: R, allowed_actions: [s1, s2, go]}]
`)
	in := s.run("s1", nil)
	if len(in.WaitingForHuman) != 0 || in.Transitions[0].Guards[1] != (GuardStatus{Name: "sign", Kind: "human"}) {
		t.Fatalf("with a step left: waiting %v, guards %+v", in.WaitingForHuman, in.Transitions[0].Guards)
	}
	in = s.run("s2", nil)
	if fmt.Sprint(in.WaitingForHuman) != "[sign]" || enabled(in) != "[]" {
		t.Fatalf("with every step done: waiting %v, enabled %s", in.WaitingForHuman, enabled(in))
	}
}

// TestRepeatsNested runs a repeating step inside a repeating state: the
// step's repeat counts the iterations of the state's current round.
func TestRepeatsNested(t *testing.T) {
	s := newStepper(t, `version: "1"
name: nested
states:
  - {id: A, initial: true, repeat: {max_iterations: 2, until: {step: review, output_field: accepted, equals: true}}}
  - {id: B, terminal: true}
transitions: [{from: A, to: B, trigger: go, guards: [accepted]}]
steps:
  - {id: revise, state: A, handler: h, repeat: {max_iterations: 2, until: {output_field: ok, equals: true}}}
  - {id: review, state: A, handler: h}
guards:
  accepted: {type: automated, check: "output_field:review:accepted=true"}
roles: [{id: R, allowed_actions: [revise, review, go]}]
`)
	for i, c := range []struct {
		step       string
		output     map[string]any
		revise     string // status/iteration/exhausted after the completion
		iterations int
	}{
		{"revise", map[string]any{"ok": false}, "pending/2/false", 1},
		{"revise", map[string]any{"ok": true}, "completed/2/false", 1},
		{"review", map[string]any{"accepted": false}, "pending/3/false", 2},
		{"revise", map[string]any{"ok": false}, "pending/4/false", 2},
		{"revise", map[string]any{"ok": false}, "completed/4/true", 2},
		{"review", map[string]any{"accepted": true}, "completed/4/true", 2},
	} {
		in := s.run(c.step, c.output)
		r, _ := in.Step("revise")
		if got := fmt.Sprintf("%s/%d/%v", r.Status, r.Iteration, r.RepeatExhausted); got != c.revise || in.StateIterations["A"] != c.iterations {
			t.Fatalf("completion %d: revise %s, round %d; want %s, round %d", i, got, in.StateIterations["A"], c.revise, c.iterations)
		}
	}
	if in, err := s.e.ApplyTransition(t.Context(), TransitionRequest{CeremonyID: "i", Trigger: "go", ActorKind: ActorService}); err != nil || !in.Completed {
		t.Fatalf("go: %v, %v", in.Completed, err)
	}
}
