package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// TestPinnedDigestMismatch: a definition MADE holds under another digest
// stops that ceremony's start with both digests; the other ceremony still
// publishes.
func TestPinnedDigestMismatch(t *testing.T) {
	eng, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	debug, _ := ceremonies.ForMode("debug")
	y, err := debug.YAML()
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(y, []byte("description: \"Reproduce"), []byte("description: \"Changed: reproduce"), 1)
	other, err := eng.Publish(context.Background(), changed)
	if err != nil {
		t.Fatal(err)
	}
	_, err = PublishPinned(context.Background(), eng, debug)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeMadeRefused || !app.NonRetryable() ||
		!strings.Contains(app.Message(), other.Digest) || !strings.Contains(app.Message(), debug.Digest) {
		t.Fatalf("error %v, want a refusal naming %s and %s", err, other.Digest, debug.Digest)
	}
	delivery, _ := ceremonies.ForMode("delivery")
	if _, err := PublishPinned(context.Background(), eng, delivery); err != nil {
		t.Fatalf("delivery: %v", err)
	}
}

// TestCheckEndings: the recorded evidence of a check says how it ended,
// with no invented exit code: an exit, a program that cannot start, a
// check past its timeout.
func TestCheckEndings(t *testing.T) {
	ws, err := tools.Open(t.TempDir(), tools.Options{Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, tt := range []struct {
		name    string
		cmd     ceremonies.CheckCommand
		exit    *int
		timeout bool
		start   string
	}{
		{name: "exit", cmd: ceremonies.CheckCommand{Program: "sh", Args: []string{"-c", "exit 3"}}, exit: contract.Exit(3)},
		{name: "pass", cmd: ceremonies.CheckCommand{Program: "true"}, exit: contract.Exit(0)},
		{name: "not found", cmd: ceremonies.CheckCommand{Program: "no-such-program-axlr"}, start: `start_failed: program "no-such-program-axlr" was not found`},
		{name: "timeout", cmd: ceremonies.CheckCommand{Program: "sleep", Args: []string{"10"}}, timeout: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := runCommand(context.Background(), ws, tt.cmd, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if (rec.ExitCode == nil) != (tt.exit == nil) || (rec.ExitCode != nil && *rec.ExitCode != *tt.exit) ||
				rec.TimedOut != tt.timeout || !strings.HasPrefix(rec.StartError, tt.start) || (tt.start == "") != (rec.StartError == "") {
				t.Fatalf("record %+v (exit %v)", rec, rec.ExitCode)
			}
			b, _ := json.Marshal(rec)
			if tt.exit == nil && !strings.Contains(string(b), `"exit_code":null`) {
				t.Fatalf("recorded %s", b)
			}
		})
	}
}

// TestCancelAndUnresolvedClaim, on the embedded engine: 2.1 starts in the
// debug mode; its cancel trigger is not among the transitions the driver
// chooses from, and firing it ends the instance in CANCELLED. A claim of a
// step MADE closed is an operator's to resolve, not a retry.
func TestCancelAndUnresolvedClaim(t *testing.T) {
	eng, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	a := &Ceremony{Made: eng, Owner: "axlrd-test"}
	start := func(id string) workflows.CeremonyStartResult {
		t.Helper()
		res, err := a.Start(ctx, workflows.CeremonyStartInput{Definition: "axlr_debug", Version: "2.1", InstanceID: id, SessionID: "s-1",
			Context: map[string]any{"failure_brief": "TestParse fails", "workspace": "/work/app"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := start("cancel-1")
	if res.Version != "2.1" || slices.Contains(res.Instance.Enabled, ceremonies.CancelTrigger) {
		t.Fatalf("started %s, enabled %v", res.Version, res.Instance.Enabled)
	}
	v, err := a.Transition(ctx, workflows.TransitionInput{InstanceID: "cancel-1", Trigger: ceremonies.CancelTrigger, From: "REPRODUCE"})
	if err != nil || v.State != "CANCELLED" || !v.Completed {
		t.Fatalf("cancel: %+v, %v", v, err)
	}

	start("claim-1")
	if _, err := a.Complete(ctx, workflows.CompleteInput{InstanceID: "claim-1", Step: "reproduce", Iteration: 1, Status: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	_, err = a.Claim(ctx, workflows.ClaimInput{InstanceID: "claim-1", Step: "reproduce", Iteration: 2, LeaseTTL: time.Minute})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeNeedsOperator || !app.NonRetryable() {
		t.Fatalf("claim of a closed step: %v", err)
	}
}

// TestCompleteFoundDone: a completion retried after the instance moved on
// (the transition an earlier attempt applied) is found done and says the
// instance moved, instead of failing on MADE's state check.
func TestCompleteFoundDone(t *testing.T) {
	eng, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	a := &Ceremony{Made: eng, Owner: "axlrd-test"}
	if _, err := a.Start(ctx, workflows.CeremonyStartInput{Definition: "axlr_debug", Version: "2.1", InstanceID: "done-1", SessionID: "s-1",
		Context: map[string]any{"failure_brief": "TestParse fails", "workspace": "/work/app"}}); err != nil {
		t.Fatal(err)
	}
	in := workflows.CompleteInput{InstanceID: "done-1", Step: "reproduce", Iteration: 1, Status: "completed", Recorded: map[string]any{"reproduced": true, "settled": true}}
	if _, err := a.Complete(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Transition(ctx, workflows.TransitionInput{InstanceID: "done-1", Trigger: "reproduced", From: "REPRODUCE"}); err != nil {
		t.Fatal(err)
	}
	v, err := a.Complete(ctx, in)
	if err != nil || !v.Moved || v.State != "DIAGNOSE" || !strings.HasSuffix(v.Action, "found done") {
		t.Fatalf("the retried completion: %+v, %v", v, err)
	}
}

// TestClaimRounds: MADE starts a state entered again at iteration 1, so a
// repair step claimed again after a red round needs a key that names the
// round; the first round's key is refused as an unresolved claim.
func TestClaimRounds(t *testing.T) {
	eng, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	a := &Ceremony{Made: eng, Owner: "axlrd-test"}
	const id = "rounds-1"
	if _, err := a.Start(ctx, workflows.CeremonyStartInput{Definition: "axlr_repair", Version: "1.0", InstanceID: id, SessionID: "s-1",
		Context: map[string]any{"failure_brief": "TestParse fails", "workspace": "/work/app", "repository": "acme/app"}}); err != nil {
		t.Fatal(err)
	}
	step := func(name, from, trigger, next string, recorded map[string]any) {
		t.Helper()
		if _, err := a.Complete(ctx, workflows.CompleteInput{InstanceID: id, Step: name, Iteration: 1, Status: "completed", Recorded: recorded}); err != nil {
			t.Fatalf("complete %s: %v", name, err)
		}
		if _, err := a.Transition(ctx, workflows.TransitionInput{InstanceID: id, Trigger: trigger, From: from}); err != nil {
			t.Fatalf("%s: %v", trigger, err)
		}
		if next == "" {
			return
		}
		if _, err := a.Claim(ctx, workflows.ClaimInput{InstanceID: id, Step: next, Iteration: 1, LeaseTTL: time.Minute}); err != nil {
			t.Fatalf("claim %s: %v", next, err)
		}
	}
	step("reproduce", "REPRODUCE", "reproduced", "diagnose", map[string]any{"reproduced": true, "settled": true})
	step("diagnose", "DIAGNOSE", "diagnosed", "repair", map[string]any{"diagnosed": true})
	step("repair", "REPAIR", "repaired", "propose", map[string]any{"repaired": true})
	step("propose", "PROPOSE", "proposed", "watch", map[string]any{"proposed": true})
	step("watch", "WATCH", "checks_failed", "", map[string]any{"verdict": "red"})

	_, err = a.Claim(ctx, workflows.ClaimInput{InstanceID: id, Step: "repair", Iteration: 1, LeaseTTL: time.Minute})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeNeedsOperator {
		t.Fatalf("the first round's key again: %v", err)
	}
	v, err := a.Claim(ctx, workflows.ClaimInput{InstanceID: id, Step: "repair", Iteration: 1, Round: 1, LeaseTTL: time.Minute})
	if err != nil || v.State != "REPAIR" || v.NextStep != "repair" {
		t.Fatalf("the second round's claim: %+v, %v", v, err)
	}
}

// TestJobTexts: a job's hand-back gives its pull request's texts, each
// cut to its bound; another ceremony's gives none.
func TestJobTexts(t *testing.T) {
	fields := map[string]any{"summary": strings.Repeat("s", jobs.MaxSummary+10), "root_cause": "Parse slices s[:1]", "scope": "  ", "expected": "ok"}
	got := jobTexts("axlr_repair", fields)
	if len(got) != 2 || got["root_cause"] != "Parse slices s[:1]" || len(got["summary"]) > jobs.MaxSummary || !strings.HasSuffix(got["summary"], "…") {
		t.Fatalf("texts %v", got)
	}
	if got := jobTexts("axlr_debug", fields); got != nil {
		t.Fatalf("a debug hand-back gave texts %v", got)
	}
}
