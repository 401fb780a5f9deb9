package ceremonies

import (
	"slices"
	"testing"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

// newPlanWalk starts an instance of a part of a plan with the context its
// workflow gives it.
func newPlanWalk(t *testing.T, part string) *walk {
	t.Helper()
	d, ok := ForPlan(part)
	if !ok {
		t.Fatalf("no plan definition for %s", part)
	}
	context := map[string]any{"workspace": "/ws", "plan": "add-max-3f2a1c"}
	switch part {
	case PartPlan:
		context["brief"] = "add Max to calc"
	case PartTask:
		context["task"], context["wave"], context["context_pack"] = "add-max", 1, "Task add-max of plan add-max-3f2a1c, wave 1: ..."
	case PartSync:
		context["wave"], context["tasks"] = 1, []any{"add-max", "add-min"}
	}
	return startWalk(t, d, context)
}

// propose hands the planner's proposal back.
func (w *walk) propose() {
	w.step("decompose", map[string]any{
		"tasks": []any{map[string]any{"id": "add-max", "goal": "g", "scope": []any{"calc/max.go", "calc/max_test.go"},
			"context": []any{}, "unit_check": map[string]any{"program": "go", "args": []any{"test", "./calc"}},
			"depends_on": []any{}, "test_first": true, "protect": []any{}}},
		"e2e_check": map[string]any{"program": "go", "args": []any{"test", "./..."}}, "summary_en": "Adds Max.", "proposed": true})
	w.fire("decomposed", "VERIFY")
}

// verify records the verify step's verdict at a round.
func (w *walk) verify(round int, verdict string) made.Instance {
	out := map[string]any{"verdict": verdict, "round": round}
	switch verdict {
	case VerdictVerified:
		out["waves"], out["baseline"] = 1, map[string]any{
			"add-max":   map[string]any{"program": "go", "args": []any{"test", "./calc"}, "exit_code": 1, "output_tail": "undefined: Max"},
			"e2e_check": map[string]any{"program": "go", "args": []any{"test", "./..."}, "exit_code": 1, "output_tail": "FAIL"}}
	default:
		out["defects"] = []any{"task add-max: calc/max.go:3 does not contain the quote"}
	}
	return w.step("verify", out)
}

// cycle proposes and verifies, with defects twice (the most a proposal may
// have), until the plan waits for the person.
func (w *walk) cycle() {
	w.propose()
	for round := 1; round <= 2; round++ {
		w.verify(round, VerdictDefects)
		w.fire("defects_found", "DECOMPOSE")
		w.propose()
	}
	w.verify(3, VerdictVerified)
	w.fire("verified", "APPROVAL")
}

func (w *walk) grantPlan(role string, kind made.ActorKind) error {
	_, err := w.e.ApproveGuard(w.t.Context(), made.ApproveRequest{CeremonyID: w.id, GuardName: PlanApprovalGuard, RoleID: role, RoleKind: kind})
	return err
}

func TestPlanWalks(t *testing.T) {
	run := func(w *walk, outcome, trigger, state string) made.Instance {
		w.step("run", map[string]any{"outcome": outcome, "waves": 2, "synced": 1, "done": []any{"add-max"},
			"blocked": []any{"add-min: green exhausted"}, "skipped": []any{"use-min: depends on add-min, which did not finish"},
			"changed": []any{"calc/max.go"}, "revision": "abc", "reason": "add-min blocked"})
		return w.fire(trigger, state)
	}
	t.Run("the longest plan: two defects each proposal, two returns, the person's approval", func(t *testing.T) {
		w := newPlanWalk(t, PartPlan)
		w.cycle()
		for returns := 1; returns <= MaxReturns; returns++ {
			w.step("approve", map[string]any{"decision": DecisionReturn, "reason": "split add-max", "returns": returns})
			w.fire("returned", "DECOMPOSE")
			w.cycle()
		}
		in := w.step("approve", map[string]any{"decision": DecisionApprove, "returns": MaxReturns})
		if !slices.Equal(in.WaitingForHuman, []string{PlanApprovalGuard}) {
			t.Fatalf("waiting for %v, want the person's %s", in.WaitingForHuman, PlanApprovalGuard)
		}
		_, err := w.fireErr("approved")
		wantKind(t, err, made.KindGuardsNotSatisfied)
		wantKind(t, w.grantPlan("AXLR", made.ActorHuman), made.KindGuard)
		wantKind(t, w.grantPlan(ApproverRole, made.ActorService), made.KindGuard)
		if err := w.grantPlan(ApproverRole, made.ActorHuman); err != nil {
			t.Fatal(err)
		}
		w.fire("approved", "RUN")
		in = run(w, OutcomeDone, "done", "DONE")
		if !in.Completed || in.Bounces != 18 || in.TransitionCount != 22 {
			t.Fatalf("completed %v after %d transitions, %d bounces; want the bounds, 22 and 18", in.Completed, in.TransitionCount, in.Bounces)
		}
	})
	t.Run("past the longest plan MADE refuses a third return", func(t *testing.T) {
		w := newPlanWalk(t, PartPlan)
		w.cycle()
		for returns := 1; returns <= MaxReturns; returns++ {
			w.step("approve", map[string]any{"decision": DecisionReturn, "reason": "r", "returns": returns})
			w.fire("returned", "DECOMPOSE")
			w.cycle()
		}
		w.step("approve", map[string]any{"decision": DecisionReturn, "reason": "r", "returns": MaxReturns + 1})
		_, err := w.fireErr("returned")
		wantKind(t, err, made.KindLimit)
		if in, err := w.fireErr(CancelTrigger); err != nil || in.CurrentState != "CANCELLED" {
			t.Fatalf("cancel: %v in %s", err, in.CurrentState)
		}
	})
	t.Run("three unverified rounds", func(t *testing.T) {
		w := newPlanWalk(t, PartPlan)
		w.propose()
		for round := 1; round <= 2; round++ {
			w.verify(round, VerdictDefects)
			w.fire("defects_found", "DECOMPOSE")
			w.propose()
		}
		w.verify(3, VerdictBlocked)
		w.fire("verify_exhausted", "BLOCKED")
	})
	t.Run("approved automatically, partial", func(t *testing.T) {
		w := newPlanWalk(t, PartPlan)
		w.propose()
		w.verify(1, VerdictVerified)
		w.fire("verified", "APPROVAL")
		in := w.step("approve", map[string]any{"decision": DecisionAutomatic, "returns": 0})
		if len(in.WaitingForHuman) != 0 {
			t.Fatalf("an automatic approval waits for %v", in.WaitingForHuman)
		}
		w.fire("approved_automatically", "RUN")
		run(w, OutcomePartial, "partial", "PARTIAL")
	})
	t.Run("declined", func(t *testing.T) {
		w := newPlanWalk(t, PartPlan)
		w.propose()
		w.verify(1, VerdictVerified)
		w.fire("verified", "APPROVAL")
		w.step("approve", map[string]any{"decision": DecisionDecline, "reason": "not now", "returns": 0})
		w.fire("declined", "DECLINED")
	})
	t.Run("AXLR cannot approve for the person", func(t *testing.T) {
		w := newPlanWalk(t, PartPlan)
		w.propose()
		w.verify(1, VerdictVerified)
		w.fire("verified", "APPROVAL")
		w.step("approve", map[string]any{"decision": DecisionApprove, "returns": 0})
		if err := w.grantPlan(ApproverRole, made.ActorHuman); err != nil {
			t.Fatal(err)
		}
		if _, err := w.fireErr("approved_automatically"); err == nil {
			t.Fatal("an approval the person asked for fired as automatic")
		}
		w.fire("approved", "RUN")
	})
}

func TestTaskWalks(t *testing.T) {
	start := func(w *walk, testFirst bool, trigger, state string) {
		w.step("start", map[string]any{"started": true, "test_first": testFirst,
			"digests":        map[string]any{"calc/max.go": "", "calc/max_test.go": "e3b0c442"},
			"changed_before": []any{}, "check": map[string]any{"program": "go", "args": []any{"test", "./calc"}, "exit_code": 0, "output_tail": "ok"}})
		w.fire(trigger, state)
	}
	red := func(w *walk, failing bool) made.Instance {
		return w.step("red", map[string]any{"test_files": []any{"calc/max_test.go"}, "expected": "undefined: Max", "red": failing, "settled": failing})
	}
	green := func(w *walk, passing bool) made.Instance {
		return w.step("green", map[string]any{"summary": "s", "summary_en": "S.", "green": passing,
			"notes": []any{map[string]any{"to": NoteToAll, "text": "calc.Max exists"}}})
	}
	handback := func(w *walk) made.Instance {
		w.step("handback", map[string]any{"done": true, "changed_files": []any{"calc/max.go", "calc/max_test.go"}, "revision": "abc",
			"scope_checked_by": ScopeByGit, "notes": []any{map[string]any{"to": NoteToAll, "text": "calc.Max exists"}}, "questions": []any{}})
		return w.fire("handed_back", "DONE")
	}
	t.Run("test first: a red round that passes, then a failing test, a green round that fails, then a pass", func(t *testing.T) {
		w := newPlanWalk(t, PartTask)
		start(w, true, "test_first", "RED")
		in := red(w, false)
		if st, _ := in.Step("red"); st.Status != made.StepPending || st.Iteration != 2 {
			t.Fatalf("red after a passing check: %+v, want pending at iteration 2", st)
		}
		red(w, true)
		w.fire("test_failing", "GREEN")
		green(w, false)
		green(w, true)
		w.fire("check_passing", "HANDBACK")
		if in := handback(w); !in.Completed || in.TransitionCount != 4 || in.Bounces != 0 {
			t.Fatalf("completed %v after %d transitions, %d bounces", in.Completed, in.TransitionCount, in.Bounces)
		}
	})
	t.Run("code first skips red", func(t *testing.T) {
		w := newPlanWalk(t, PartTask)
		start(w, false, "code_first", "GREEN")
		green(w, true)
		w.fire("check_passing", "HANDBACK")
		handback(w)
	})
	t.Run("the unit check does not run at the start", func(t *testing.T) {
		w := newPlanWalk(t, PartTask)
		w.step("start", map[string]any{"started": false, "test_first": true, "reason": "go: executable file not found in $PATH"})
		w.fire("start_failed", "BLOCKED")
	})
	t.Run("declared untestable", func(t *testing.T) {
		w := newPlanWalk(t, PartTask)
		start(w, true, "test_first", "RED")
		w.step("red", map[string]any{"testable": false, "observed": "the goal is a doc comment", "red": false, "settled": true})
		w.fire("untestable", "BLOCKED")
	})
	t.Run("three red rounds that pass", func(t *testing.T) {
		w := newPlanWalk(t, PartTask)
		start(w, true, "test_first", "RED")
		for range 3 {
			red(w, false)
		}
		w.fire("red_exhausted", "BLOCKED")
	})
	t.Run("three green rounds that fail", func(t *testing.T) {
		w := newPlanWalk(t, PartTask)
		start(w, false, "code_first", "GREEN")
		for range 3 {
			green(w, false)
		}
		w.fire("green_exhausted", "BLOCKED")
	})
	t.Run("cancelled at the hand-back, the last transition there is", func(t *testing.T) {
		w := newPlanWalk(t, PartTask)
		start(w, true, "test_first", "RED")
		red(w, true)
		w.fire("test_failing", "GREEN")
		green(w, true)
		w.fire("check_passing", "HANDBACK")
		if in, err := w.fireErr(CancelTrigger); err != nil || in.CurrentState != "CANCELLED" {
			t.Fatalf("cancel: %v in %s", err, in.CurrentState)
		}
	})
}

func TestSyncWalks(t *testing.T) {
	integrate := func(w *walk, round int, verdict string) made.Instance {
		out := map[string]any{"verdict": verdict, "round": round,
			"check": map[string]any{"program": "go", "args": []any{"test", "./..."}, "exit_code": 1, "output_tail": "FAIL calc"}}
		switch verdict {
		case VerdictRed:
			out["affected"] = []any{"add-max"}
		case VerdictBlocked:
			out["reason"] = "the end-to-end check failed after two reconciliation rounds"
		}
		return w.step("integrate", out)
	}
	reconcile := func(w *walk, round int) {
		w.fire("conflict", "RECONCILE")
		w.step("reconcile", map[string]any{"reconciled": true, "round": round, "responses": []any{map[string]any{
			"task": "add-max", "changed": []any{"calc/max.go"}, "summary": "s", "notes": []any{map[string]any{"to": "add-min", "text": "t"}}}}})
		w.fire("reconciled", "INTEGRATE")
	}
	t.Run("green at once", func(t *testing.T) {
		w := newPlanWalk(t, PartSync)
		integrate(w, 1, VerdictGreen)
		w.fire("integrated", "SYNCED")
	})
	t.Run("red, reconciled, green", func(t *testing.T) {
		w := newPlanWalk(t, PartSync)
		integrate(w, 1, VerdictRed)
		reconcile(w, 1)
		integrate(w, 2, VerdictGreen)
		w.fire("integrated", "SYNCED")
	})
	t.Run("red after two rounds", func(t *testing.T) {
		w := newPlanWalk(t, PartSync)
		for round := 1; round <= 2; round++ {
			integrate(w, round, VerdictRed)
			reconcile(w, round)
		}
		integrate(w, 3, VerdictBlocked)
		if in := w.fire("sync_blocked", "BLOCKED"); in.TransitionCount != 5 || in.Bounces != 3 {
			t.Fatalf("blocked after %d transitions, %d bounces; want the bounds, 5 and 3", in.TransitionCount, in.Bounces)
		}
	})
	t.Run("a third reconciliation cannot open", func(t *testing.T) {
		w := newPlanWalk(t, PartSync)
		for round := 1; round <= 2; round++ {
			integrate(w, round, VerdictRed)
			reconcile(w, round)
		}
		integrate(w, 3, VerdictRed)
		_, err := w.fireErr("conflict")
		wantKind(t, err, made.KindLimit)
	})
}

// TestPlanApproval: only the approver's role may fire approved, which
// needs the person's human guard, so MADE records who approved the plan;
// a task and a sync ask the person nothing.
func TestPlanApproval(t *testing.T) {
	for _, part := range []string{PartPlan, PartTask, PartSync} {
		t.Run(part, func(t *testing.T) {
			d, _ := ForPlan(part)
			def := parsed(t, d)
			human := slices.ContainsFunc(def.Guards, definition.Guard.IsHuman)
			if human != (part == PartPlan) {
				t.Fatalf("%s has a human guard: %v", d.File, human)
			}
			if part != PartPlan {
				if len(def.Roles) != 1 || def.Roles[0].ID != "AXLR" {
					t.Fatalf("%s roles %v, want AXLR's alone", d.File, def.Roles)
				}
				return
			}
			if g, ok := def.Guard(PlanApprovalGuard); !ok || !g.IsHuman() {
				t.Fatalf("%s has no human guard %s", d.File, PlanApprovalGuard)
			}
			for _, tr := range def.Transitions {
				if slices.Contains(tr.Guards, PlanApprovalGuard) != (tr.Trigger == "approved") {
					t.Errorf("%s: trigger %s and guard %s", d.File, tr.Trigger, PlanApprovalGuard)
				}
			}
			for _, r := range def.Roles {
				may := r.Allows(definition.RoleAction{Kind: definition.ActionTransition, Value: "approved"})
				if may != (r.ID == ApproverRole) {
					t.Errorf("%s: role %s may fire approved: %v", d.File, r.ID, may)
				}
				if r.ID == ApproverRole && len(r.Actions) != 1 {
					t.Errorf("%s: %s may do more than approve the plan: %v", d.File, r.ID, r.Actions)
				}
			}
		})
	}
}
