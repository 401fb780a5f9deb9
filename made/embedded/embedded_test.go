package embedded

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

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
	"github.com/underpass-ai/axlr/made/madetest"
)

func openTest(t *testing.T, dir string, clock *madetest.Clock) *Engine {
	t.Helper()
	e, err := Open(dir, Options{Now: clock.Now})
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

func wantKind(t *testing.T, err error, kind made.Kind, message string) {
	t.Helper()
	var e *made.Error
	if !errors.As(err, &e) || e.Kind != kind || e.Message != message {
		t.Fatalf("got %v, want %s: %q", err, kind, message)
	}
}

// drive takes a change_review instance to REVIEWING with review in
// progress and a deferral recorded.
func drive(t *testing.T, e *Engine, id string) made.Instance {
	t.Helper()
	ctx := t.Context()
	steps := []func() (made.Instance, error){
		func() (made.Instance, error) {
			return e.StartPublished(ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", CeremonyID: id, ActorID: "o", ActorKind: made.ActorService, Context: map[string]any{"change_ref": "PR-1"}})
		},
		func() (made.Instance, error) {
			return e.Claim(ctx, made.ClaimRequest{CeremonyID: id, StepID: "draft", ActorKind: made.ActorAgent, IdempotencyKey: id + "/draft"})
		},
		func() (made.Instance, error) {
			return e.Complete(ctx, made.CompleteRequest{CeremonyID: id, StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted, Output: map[string]any{"n": 1}})
		},
		func() (made.Instance, error) {
			return e.ApplyTransition(ctx, made.TransitionRequest{CeremonyID: id, Trigger: "submit", ActorKind: made.ActorService})
		},
		func() (made.Instance, error) {
			return e.DeferGuard(ctx, made.DeferRequest{CeremonyID: id, GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman,
				Statement: "later", Reason: "notes missing", ReconsiderWhen: []string{"notes"}})
		},
		func() (made.Instance, error) {
			return e.Claim(ctx, made.ClaimRequest{CeremonyID: id, StepID: "review", ActorKind: made.ActorAgent, IdempotencyKey: id + "/review", LeaseTTL: time.Hour})
		},
	}
	var in made.Instance
	for i, step := range steps {
		var err error
		if in, err = step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return in
}

func TestPersistence(t *testing.T) {
	for _, closeFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("closed_%v", closeFirst), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "made")
			clock := madetest.NewClock(time.Date(2026, 6, 6, 12, 0, 0, 0, time.UTC))
			first := openTest(t, dir, clock)
			if _, err := first.Publish(t.Context(), []byte(madetest.ChangeReviewYAML)); err != nil {
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
			p, err := second.Publish(t.Context(), []byte(madetest.ChangeReviewYAML))
			if err != nil || p.Outcome != "already_published" {
				t.Fatalf("republish after reopening: %+v, %v", p, err)
			}
			// The lease and the idempotency keys survived.
			_, err = second.Claim(t.Context(), made.ClaimRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: made.ActorAgent, IdempotencyKey: "other"})
			wantKind(t, err, made.KindLeaseActive, "failed to claim ceremony step: invariant violated: step lease is still active")
			if _, err := second.Complete(t.Context(), made.CompleteRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: made.ActorAgent, Status: made.StepFailed, Error: "x"}); err != nil {
				t.Fatal(err)
			}
			_, err = second.Claim(t.Context(), made.ClaimRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: made.ActorAgent, IdempotencyKey: "cr-1/review"})
			wantKind(t, err, made.KindExists, "failed to claim ceremony step: already exists: ceremony_instance.idempotency_key")
		})
	}
}

func TestStoreLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made")
	e := openTest(t, dir, madetest.NewClock(time.Unix(0, 0)))
	defer e.Close()
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("store directory: %v, %v", info, err)
	}
	if _, err := e.Publish(t.Context(), []byte(madetest.ChangeReviewYAML)); err != nil {
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

func TestInterruptedWrite(t *testing.T) {
	dir := t.TempDir()
	clock := madetest.NewClock(time.Unix(0, 0))
	e := openTest(t, dir, clock)
	if _, err := e.Publish(t.Context(), []byte(madetest.ChangeReviewYAML)); err != nil {
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

func TestCorruptStore(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, madetest.NewClock(time.Unix(0, 0)))
	if _, err := e.Publish(t.Context(), []byte(madetest.ChangeReviewYAML)); err != nil {
		t.Fatal(err)
	}
	drive(t, e, "cr-1")
	path := e.b.(*fileBackend).store.instancePath("cr-1")
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	want := fmt.Sprintf("open embedded ceremony engine: read instance %s: not a ceremony instance of this store", path)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// TestDigestMismatch reads a store whose definition no longer has
// the digest it was published under (a store written by another digest
// scheme).
func TestDigestMismatch(t *testing.T) {
	dir := t.TempDir()
	clock := madetest.NewClock(time.Unix(0, 0))
	e := openTest(t, dir, clock)
	if _, err := e.Publish(t.Context(), []byte(madetest.ChangeReviewYAML)); err != nil {
		t.Fatal(err)
	}
	drive(t, e, "cr-1")
	path := e.b.(*fileBackend).store.definitionPath("change_review", "1.0")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d storedDefinition
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	d.YAML += "max_bounces: 1\n"
	if err := e.b.(*fileBackend).store.writeDefinition(d); err != nil {
		t.Fatal(err)
	}

	again := openTest(t, dir, clock)
	const mismatch = "invariant violated: the published definition no longer matches the digest this instance ran"
	_, err = again.Get(t.Context(), "cr-1")
	wantKind(t, err, made.KindConflict, "failed to load ceremony definition: "+mismatch)
	_, err = again.Claim(t.Context(), made.ClaimRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: made.ActorAgent})
	wantKind(t, err, made.KindConflict, "failed to load ceremony definition: "+mismatch)
	_, err = again.StartPublished(t.Context(), made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "o", ActorKind: made.ActorService})
	wantKind(t, err, made.KindConflict, "failed to start published ceremony: "+mismatch)
	list, err := again.List(t.Context())
	if err != nil || len(list) != 1 || list[0].Instance != nil || list[0].CeremonyID != "cr-1" ||
		list[0].Reason != "failed to load ceremony definition: "+mismatch {
		t.Fatalf("list %+v, %v", list, err)
	}
}

func TestClosed(t *testing.T) {
	e := openTest(t, t.TempDir(), madetest.NewClock(time.Unix(0, 0)))
	if _, err := e.Publish(t.Context(), []byte(madetest.ChangeReviewYAML)); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for name, call := range map[string]func() error{
		"publish": func() error { _, err := e.Publish(ctx, []byte(madetest.ChangeReviewYAML)); return err },
		"start": func() error {
			_, err := e.StartPublished(ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "o", ActorKind: made.ActorService})
			return err
		},
		"get":  func() error { _, err := e.Get(ctx, "x"); return err },
		"list": func() error { _, err := e.List(ctx); return err },
		"claim": func() error {
			_, err := e.Claim(ctx, made.ClaimRequest{CeremonyID: "x", StepID: "draft", ActorKind: made.ActorAgent})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { wantKind(t, call(), made.KindUnavailable, "embedded engine is closed") })
	}
}

func TestCancelledContext(t *testing.T) {
	e := openTest(t, t.TempDir(), madetest.NewClock(time.Unix(0, 0)))
	defer e.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.Publish(ctx, []byte(madetest.ChangeReviewYAML)); !errors.Is(err, context.Canceled) {
		t.Fatalf("publish under a cancelled context: %v", err)
	}
	if _, err := e.Get(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("get under a cancelled context: %v", err)
	}
}

func TestDefaultIDs(t *testing.T) {
	e, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Publish(t.Context(), []byte(madetest.ChangeReviewYAML)); err != nil {
		t.Fatal(err)
	}
	in, err := e.StartPublished(t.Context(), made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "o", ActorKind: made.ActorService})
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(in.CeremonyID) {
		t.Fatalf("default ceremony id %q is not a lowercase UUID v4", in.CeremonyID)
	}
	// A claim without a key gets a fresh one each time: after a failure
	// the retry is not refused as a reused key.
	claim := made.ClaimRequest{CeremonyID: in.CeremonyID, StepID: "draft", ActorKind: made.ActorAgent}
	if _, err := e.Claim(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Complete(t.Context(), made.CompleteRequest{CeremonyID: in.CeremonyID, StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepFailed, Error: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Claim(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentInstances drives several instances at once (run
// with -race).
func TestConcurrentInstances(t *testing.T) {
	e := openTest(t, t.TempDir(), madetest.NewClock(time.Unix(0, 0)))
	defer e.Close()
	if _, err := e.Publish(t.Context(), []byte(madetest.ChangeReviewYAML)); err != nil {
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
			if _, err := e.StartPublished(ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", CeremonyID: id, ActorID: "o", ActorKind: made.ActorService}); err != nil {
				errs <- err
				return
			}
			if _, err := e.Claim(ctx, made.ClaimRequest{CeremonyID: id, StepID: "draft", ActorKind: made.ActorAgent}); err != nil {
				errs <- err
				return
			}
			if _, err := e.Complete(ctx, made.CompleteRequest{CeremonyID: id, StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted}); err != nil {
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
		if s, _ := entry.Instance.Step("draft"); s.Status != made.StepCompleted {
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
	wantKind(t, err, made.KindInvalid, "field `lease_ttl_ms` must be a non-negative integer")
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
	e  *Engine
	id string
}

func newStepper(t *testing.T, yaml string) *stepper {
	t.Helper()
	e := openTest(t, t.TempDir(), madetest.NewClock(time.Unix(0, 0)))
	t.Cleanup(func() { _ = e.Close() })
	def, err := definition.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Publish(t.Context(), []byte(yaml)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartPublished(t.Context(), made.StartRequest{Ceremony: def.Name, Version: def.Version, CeremonyID: "i", ActorID: "o", ActorKind: made.ActorService}); err != nil {
		t.Fatal(err)
	}
	return &stepper{t: t, e: e, id: "i"}
}

func (s *stepper) run(step string, output map[string]any) made.Instance {
	s.t.Helper()
	if _, err := s.e.Claim(s.t.Context(), made.ClaimRequest{CeremonyID: s.id, StepID: step, ActorKind: made.ActorAgent}); err != nil {
		s.t.Fatal(err)
	}
	in, err := s.e.Complete(s.t.Context(), made.CompleteRequest{CeremonyID: s.id, StepID: step, ActorKind: made.ActorAgent, Status: made.StepCompleted, Output: output})
	if err != nil {
		s.t.Fatal(err)
	}
	return in
}

func enabled(in made.Instance) string {
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
	if len(in.WaitingForHuman) != 0 || in.Transitions[0].Guards[1] != (made.GuardStatus{Name: "sign", Kind: "human"}) {
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
	if in, err := s.e.ApplyTransition(t.Context(), made.TransitionRequest{CeremonyID: "i", Trigger: "go", ActorKind: made.ActorService}); err != nil || !in.Completed {
		t.Fatalf("go: %v, %v", in.Completed, err)
	}
}
