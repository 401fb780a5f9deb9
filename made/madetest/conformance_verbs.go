package madetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

func testPublish(h *harness) {
	t := h.t
	p := h.publish(publishableYAML)
	if p != (made.Published{Outcome: "published", Ceremony: "publishable_ceremony", Version: "1.0", Digest: publishableDigest}) {
		t.Fatalf("first publication: %+v", p)
	}
	again := h.publish(publishableReformattedYAML)
	if again != (made.Published{Outcome: "already_published", Ceremony: "publishable_ceremony", Version: "1.0", Digest: publishableDigest}) {
		t.Fatalf("same definition reformatted: %+v", again)
	}
	_, err := h.e.Publish(h.ctx, []byte(alteredYAML))
	var conflict *made.ConflictError
	if !errors.As(err, &conflict) || !errors.Is(err, made.ErrVersionOccupied) {
		t.Fatalf("another definition under a published version: got %v, want version_occupied", err)
	}
	altered, perr := definition.Parse([]byte(alteredYAML))
	if perr != nil {
		t.Fatal(perr)
	}
	want := made.ConflictError{Ceremony: "publishable_ceremony", Version: "1.0", PublishedDigest: publishableDigest, OfferedDigest: definition.Digest(altered)}
	if *conflict != want {
		t.Fatalf("version_occupied: %+v, want %+v", *conflict, want)
	}
	if cr := h.publish(ChangeReviewYAML); cr.Digest != changeReviewDigest {
		t.Fatalf("change_review digest %s, want %s", cr.Digest, changeReviewDigest)
	}

	for _, c := range []struct {
		name, yaml string
		kind       made.Kind
		message    string
	}{
		{"not_publishable_first_error", strings.Replace(publishableYAML, "to: DONE", "to: NOWHERE", 1),
			made.KindNotPublishable, "ceremony draft is not publishable: not found: ceremony_transition.to_state"},
		{"unknown_key", strings.Replace(publishableYAML, "    handler: embedded_noop", "    handler: embedded_noop\n    repeats: 3", 1),
			made.KindNotPublishable, `ceremony draft could not be parsed: unknown key "repeats" in step "work"`},
		{"unknown_top_level_key", publishableYAML + "max_rounds: 2\n",
			made.KindNotPublishable, `ceremony draft could not be parsed: unknown key "max_rounds" in the definition`},
		{"unknown_guard_check", strings.Replace(ChangeReviewYAML, "step_status:draft:COMPLETED", "draft_is_done", 1),
			made.KindNotPublishable, "ceremony draft could not be parsed: invariant violated: unsupported ceremony guard check"},
		{"yaml_syntax", "version: [", made.KindNotPublishable, "ceremony draft could not be parsed: invariant violated: invalid ceremony yaml"},
		{"empty", "", made.KindInvalid, "field `definition_yaml` must not be blank"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.e.Publish(h.ctx, []byte(c.yaml))
			wantErr(t, err, c.kind, c.message)
		})
	}
}

func testStart(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	in := h.start("change_review", "1.0", "cr-42", map[string]any{"change_ref": "PR-42", "attempts": 2})
	if in.CeremonyID != "cr-42" || in.DefinitionName != "change_review" || in.DefinitionVersion != "1.0" {
		t.Fatalf("started %s %s %s", in.CeremonyID, in.DefinitionName, in.DefinitionVersion)
	}
	if in.BoundDefinitionDigest == nil || *in.BoundDefinitionDigest != changeReviewDigest {
		t.Fatalf("bound digest %v, want %s", in.BoundDefinitionDigest, changeReviewDigest)
	}
	wantState(t, in, "DRAFTING", false, "draft")
	wantJSON(t, "context", in.Context, map[string]any{"attempts": 2, "change_ref": "PR-42"})
	wantJSON(t, "transitions", in.Transitions, []made.Transition{
		{Trigger: "submit", ToState: "REVIEWING", Guards: []made.GuardStatus{{Name: "draft_done", Kind: "automated"}}},
		{Trigger: "cancel", ToState: "CANCELLED", Enabled: true, Guards: []made.GuardStatus{}},
	})
	wantJSON(t, "steps", in.Steps, []made.Step{
		{StepID: "draft", StateID: "DRAFTING", Status: made.StepPending, Attempt: 1, Output: map[string]any{}, Iteration: 1},
		{StepID: "review", StateID: "REVIEWING", Status: made.StepPending, Attempt: 1, Output: map[string]any{}, Iteration: 1},
	})
	if len(in.WaitingForHuman) != 0 || len(in.GuardDeferrals) != 0 || in.TransitionCount != 0 || in.Bounces != 0 {
		t.Fatalf("a fresh instance waits for %v, has deferrals %v, %d transitions, %d bounces",
			in.WaitingForHuman, in.GuardDeferrals, in.TransitionCount, in.Bounces)
	}

	_, err := h.e.StartPublished(h.ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", CeremonyID: "cr-42", ActorID: "o", ActorKind: made.ActorService})
	wantErr(t, err, made.KindExists, "failed to start published ceremony: already exists: ceremony_instance")
	_, err = h.e.StartPublished(h.ctx, made.StartRequest{Ceremony: "change_review", Version: "9.9", ActorID: "o", ActorKind: made.ActorService})
	wantErr(t, err, made.KindNotFound, "failed to start published ceremony: not found: published_ceremony_definition")

	random := h.start("change_review", "1.0", "", nil)
	if random.CeremonyID == "" || random.CeremonyID == "cr-42" {
		t.Fatalf("an instance without a chosen id got %q", random.CeremonyID)
	}
	wantJSON(t, "context of a start without one", random.Context, map[string]any{})
	if got := h.get(random.CeremonyID); got.CeremonyID != random.CeremonyID {
		t.Fatalf("get %s returned %s", random.CeremonyID, got.CeremonyID)
	}
}

func testGetAndList(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	_, err := h.e.Get(h.ctx, "missing")
	wantErr(t, err, made.KindNotFound, "failed to load ceremony instance: not found: ceremony_instance")
	list, err := h.e.List(h.ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("list of an empty engine: %v, %v", list, err)
	}
	for _, id := range []string{"b", "c", "a"} {
		h.start("change_review", "1.0", id, nil)
	}
	h.run("b", "draft", "b/draft/1", map[string]any{"summary": "ready"})
	list, err = h.e.List(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, entry := range list {
		ids = append(ids, entry.CeremonyID)
		if entry.Instance == nil || entry.Reason != "" {
			t.Fatalf("entry %s: instance %v, reason %q", entry.CeremonyID, entry.Instance, entry.Reason)
		}
		wantJSON(t, "listed "+entry.CeremonyID, *entry.Instance, h.get(entry.CeremonyID))
	}
	wantJSON(t, "listed ids", ids, []string{"a", "b", "c"})
}

// testChangeReview is the reference's worked example, step by step.
func testChangeReview(h *harness) {
	t := h.t
	if p := h.publish(ChangeReviewYAML); p.Outcome != "published" || p.Digest != changeReviewDigest {
		t.Fatalf("publish: %+v", p)
	}
	h.start("change_review", "1.0", "cr-42", map[string]any{"change_ref": "PR-42"})
	claimed, err := h.e.Claim(h.ctx, made.ClaimRequest{
		CeremonyID: "cr-42", StepID: "draft", ActorKind: made.ActorAgent,
		LeaseOwnerID: "wf-cr-42", IdempotencyKey: "cr-42/draft/1", LeaseTTL: 10 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStep(t, claimed, "draft", made.StepInProgress, 1, 1)
	wantState(t, claimed, "DRAFTING", false, "draft")
	_, err = h.e.Claim(h.ctx, made.ClaimRequest{
		CeremonyID: "cr-42", StepID: "draft", ActorKind: made.ActorAgent,
		LeaseOwnerID: "wf-cr-42", IdempotencyKey: "cr-42/draft/1", LeaseTTL: 10 * time.Minute,
	})
	wantErr(t, err, made.KindLeaseActive, "failed to claim ceremony step: invariant violated: step lease is still active")

	in := h.complete("cr-42", "draft", map[string]any{"summary": "draft ready", "artifact": "git://repo/pr/42"})
	s := wantStep(t, in, "draft", made.StepCompleted, 1, 1)
	wantJSON(t, "draft output", s.Output, map[string]any{"artifact": "git://repo/pr/42", "summary": "draft ready"})
	wantState(t, in, "DRAFTING", false, "")
	wantEnabled(t, in, "submit", "cancel")

	in = h.apply("cr-42", "submit")
	wantState(t, in, "REVIEWING", false, "review")
	wantJSON(t, "transitions out of REVIEWING", in.Transitions, []made.Transition{
		{Trigger: "release", ToState: "RELEASED", Guards: []made.GuardStatus{
			{Name: "release_approved", Kind: "human"}, {Name: "review_done", Kind: "automated"}}},
		{Trigger: "cancel", ToState: "CANCELLED", Enabled: true, Guards: []made.GuardStatus{}},
	})
	wantJSON(t, "waiting for a human", in.WaitingForHuman, []string{})

	in = h.run("cr-42", "review", "cr-42/review/1", map[string]any{"verdict": "approve"})
	wantState(t, in, "REVIEWING", false, "")
	wantJSON(t, "waiting for a human", in.WaitingForHuman, []string{"release_approved"})
	wantEnabled(t, in, "cancel")

	in, err = h.e.ApproveGuard(h.ctx, made.ApproveRequest{CeremonyID: "cr-42", GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, "waiting for a human", in.WaitingForHuman, []string{})
	wantJSON(t, "context", in.Context, map[string]any{"change_ref": "PR-42", "release_approved": true})
	wantEnabled(t, in, "release", "cancel")

	in = h.apply("cr-42", "release")
	wantState(t, in, "RELEASED", true, "")
	if len(in.Transitions) != 0 || in.TransitionCount != 2 {
		t.Fatalf("a released instance has transitions %v and a count of %d", in.Transitions, in.TransitionCount)
	}
}

func testRetry(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	h.claim("cr-1", "draft", "k1")
	in := h.finish(made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", Status: made.StepFailed, Error: "CI red"})
	s := wantStep(t, in, "draft", made.StepFailed, 1, 1)
	if s.Error == nil || *s.Error != "CI red" {
		t.Fatalf("failed step error %v, want CI red", s.Error)
	}
	wantState(t, in, "DRAFTING", false, "draft")

	in = h.claim("cr-1", "draft", "k2")
	if s := wantStep(t, in, "draft", made.StepInProgress, 2, 1); s.Error != nil {
		t.Fatalf("a re-claimed step keeps error %q", *s.Error)
	}
	h.finish(made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", Status: made.StepFailed, Error: "CI red again"})
	_, err := h.e.Claim(h.ctx, h.claimReq("cr-1", "draft", "k3"))
	wantErr(t, err, made.KindRetryExhausted, "failed to claim ceremony step: invariant violated: step retry policy exhausted")
	wantStep(t, h.get("cr-1"), "draft", made.StepFailed, 2, 1)
}

func testLeaseExpiry(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	req := h.claimReq("cr-1", "draft", "k1")
	req.LeaseTTL = time.Minute
	if _, err := h.e.Claim(h.ctx, req); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute - time.Millisecond)
	_, err := h.e.Claim(h.ctx, h.claimReq("cr-1", "draft", "k2"))
	wantErr(t, err, made.KindLeaseActive, "failed to claim ceremony step: invariant violated: step lease is still active")

	h.clock.Advance(time.Millisecond)
	in := h.claim("cr-1", "draft", "k3")
	wantStep(t, in, "draft", made.StepInProgress, 2, 1)
	// A late completion by the first owner is accepted: completion is not
	// fenced.
	in = h.complete("cr-1", "draft", map[string]any{"by": "first owner"})
	wantStep(t, in, "draft", made.StepCompleted, 2, 1)
}

func testIdempotencyKey(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	h.claim("cr-1", "draft", "reused")
	h.finish(made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", Status: made.StepFailed, Error: "flaky"})
	_, err := h.e.Claim(h.ctx, h.claimReq("cr-1", "draft", "reused"))
	wantErr(t, err, made.KindExists, "failed to claim ceremony step: already exists: ceremony_instance.idempotency_key")
	wantStep(t, h.get("cr-1"), "draft", made.StepFailed, 1, 1)

	h.run("cr-1", "draft", "fresh", nil)
	h.apply("cr-1", "submit")
	_, err = h.e.Claim(h.ctx, h.claimReq("cr-1", "review", "reused"))
	wantErr(t, err, made.KindExists, "failed to claim ceremony step: already exists: ceremony_instance.idempotency_key")

	// Keys are per instance.
	h.start("change_review", "1.0", "cr-2", nil)
	h.claim("cr-2", "draft", "reused")
}

func testCompleteWithoutClaim(h *harness) {
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	_, err := h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted})
	wantErr(h.t, err, made.KindNotInProgress, "failed to complete ceremony step: invariant violated: step result requires an in-progress step")
	h.run("cr-1", "draft", "k1", nil)
	_, err = h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted})
	wantErr(h.t, err, made.KindNotInProgress, "failed to complete ceremony step: invariant violated: step result requires an in-progress step")
}

func testWrongState(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	_, err := h.e.Claim(h.ctx, h.claimReq("cr-1", "review", "k1"))
	wantErr(t, err, made.KindWrongState, "failed to claim ceremony step: invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`")
	_, err = h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "review", ActorKind: made.ActorAgent, Status: made.StepCompleted})
	wantErr(t, err, made.KindWrongState, "failed to complete ceremony step: invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`")
	_, err = h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: "cr-1", Trigger: "release", ActorKind: made.ActorService})
	wantErr(t, err, made.KindWrongState, "failed to apply ceremony transition: invalid state transition `ceremony_instance.current_state` -> `transition_trigger`")
	// The key of the refused claim was not spent.
	h.claim("cr-1", "draft", "k1")
}

func testNoRole(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	_, err := h.e.Claim(h.ctx, h.claimReq("cr-1", "ghost", "k1"))
	wantErr(t, err, made.KindNoRole, "ceremony step has no authorized role: invariant violated: no ceremony role can execute step")
	_, err = h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "ghost", ActorKind: made.ActorAgent, Status: made.StepCompleted})
	wantErr(t, err, made.KindNoRole, "failed to complete ceremony step: invariant violated: no ceremony role can execute step")
	_, err = h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: "cr-1", Trigger: "ghost", ActorKind: made.ActorService})
	wantErr(t, err, made.KindNoRole, "ceremony transition has no authorized role: invariant violated: no ceremony role can apply transition")
}

func testGuardsNotSatisfied(h *harness) {
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	h.claim("cr-1", "draft", "k1")
	_, err := h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: "cr-1", Trigger: "submit", ActorKind: made.ActorService})
	wantErr(h.t, err, made.KindGuardsNotSatisfied, "failed to apply ceremony transition: invariant violated: ceremony transition guards are not satisfied")
	wantState(h.t, h.get("cr-1"), "DRAFTING", false, "draft")
}

func testHumanGuard(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	approve := func(guard, role string, kind made.ActorKind) (made.Instance, error) {
		return h.e.ApproveGuard(h.ctx, made.ApproveRequest{CeremonyID: "cr-1", GuardName: guard, RoleID: role, RoleKind: kind})
	}
	deferral := func(guard string) (made.Instance, error) {
		return h.e.DeferGuard(h.ctx, made.DeferRequest{
			CeremonyID: "cr-1", GuardName: guard, RoleID: "REVIEWER", RoleKind: made.ActorHuman,
			Statement: "Not yet", Reason: "the release notes are missing", ReconsiderWhen: []string{"notes are written"},
		})
	}
	_, err := approve("release_approved", "REVIEWER", made.ActorHuman)
	wantErr(t, err, made.KindGuard, "human guard is not required by a transition from the current state")
	_, err = deferral("release_approved")
	wantErr(t, err, made.KindGuard, "failed to defer ceremony guard: invariant violated: human guard is not required from the current state")

	h.run("cr-1", "draft", "k1", nil)
	h.apply("cr-1", "submit")
	for _, c := range []struct {
		guard, role string
		kind        made.ActorKind
		want        made.Kind
		message     string
	}{
		{"nope", "REVIEWER", made.ActorHuman, made.KindGuard, "ceremony guard was not found in the instance definition"},
		{"review_done", "REVIEWER", made.ActorHuman, made.KindGuard, "only human approval guards can be approved explicitly"},
		{"release_approved", "GHOST", made.ActorHuman, made.KindNotFound, "failed to approve ceremony guard: not found: ceremony_role"},
		{"release_approved", "REVIEWER", made.ActorAgent, made.KindGuard, "failed to approve ceremony guard: invariant violated: only a human can approve a human guard"},
		{"release_approved", "AUTHOR", made.ActorHuman, made.KindGuard, "failed to approve ceremony guard: invariant violated: ceremony role cannot apply a transition that requires this guard"},
	} {
		_, err := approve(c.guard, c.role, c.kind)
		wantErr(t, err, c.want, c.message)
	}
	_, err = deferral("review_done")
	wantErr(t, err, made.KindGuard, "failed to defer ceremony guard: invariant violated: only human approval guards can be deferred")
	_, err = deferral("nope")
	wantErr(t, err, made.KindNotFound, "failed to defer ceremony guard: not found: ceremony_guard")

	in, err := deferral("release_approved")
	if err != nil {
		t.Fatal(err)
	}
	if len(in.GuardDeferrals) != 1 {
		t.Fatalf("deferrals %v, want one", in.GuardDeferrals)
	}
	d := in.GuardDeferrals[0]
	if d.GuardName != "release_approved" || d.Statement != "Not yet" || d.Reason != "the release notes are missing" ||
		len(d.ReconsiderWhen) != 1 || d.ReconsiderWhen[0] != "notes are written" ||
		!strings.HasPrefix(d.DeferredAt, h.clock.Now().UTC().Format("2006-01-02 15:04:05")) {
		t.Fatalf("deferral %+v", d)
	}
	in = h.run("cr-1", "review", "k2", nil)
	wantJSON(t, "waiting for a human after a deferral", in.WaitingForHuman, []string{"release_approved"})
	wantEnabled(t, in, "cancel")

	if _, err := approve("release_approved", "REVIEWER", made.ActorHuman); err != nil {
		t.Fatal(err)
	}
	_, err = deferral("release_approved")
	wantErr(t, err, made.KindGuard, "failed to defer ceremony guard: invariant violated: approved human guards cannot be deferred")
	wantEnabled(t, h.get("cr-1"), "release", "cancel")
}

func testTerminal(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	h.claim("cr-1", "draft", "k1")
	in := h.apply("cr-1", "cancel")
	wantState(t, in, "CANCELLED", true, "")
	if len(in.Transitions) != 0 {
		t.Fatalf("a cancelled instance has transitions %v", in.Transitions)
	}
	_, err := h.e.Claim(h.ctx, h.claimReq("cr-1", "draft", "k2"))
	wantErr(t, err, made.KindTerminal, "failed to claim ceremony step: invariant violated: terminal ceremony instances cannot start steps")
	_, err = h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: "cr-1", Trigger: "cancel", ActorKind: made.ActorService})
	wantErr(t, err, made.KindTerminal, "failed to apply ceremony transition: invariant violated: terminal ceremony instances cannot transition")
	_, err = h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted})
	wantErr(t, err, made.KindWrongState, "failed to complete ceremony step: invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`")
	_, err = h.e.DeferGuard(h.ctx, made.DeferRequest{CeremonyID: "cr-1", GuardName: "release_approved", RoleID: "REVIEWER",
		RoleKind: made.ActorHuman, Statement: "s", Reason: "r", ReconsiderWhen: []string{"w"}})
	wantErr(t, err, made.KindTerminal, "failed to defer ceremony guard: invariant violated: terminal ceremony instances cannot defer guard decisions")
	_, err = h.e.ApproveGuard(h.ctx, made.ApproveRequest{CeremonyID: "cr-1", GuardName: "release_approved", RoleID: "REVIEWER", RoleKind: made.ActorHuman})
	wantErr(t, err, made.KindGuard, "human guard is not required by a transition from the current state")
}

func testArguments(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	for _, c := range []struct {
		name    string
		call    func() error
		message string
	}{
		{"start_without_actor_kind", func() error {
			_, err := h.e.StartPublished(h.ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "o"})
			return err
		}, "field `actor_kind` must not be blank"},
		{"start_with_unknown_actor_kind", func() error {
			_, err := h.e.StartPublished(h.ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorID: "o", ActorKind: "robot"})
			return err
		}, "`actor_kind` must be human, agent, service or engine, not robot"},
		{"start_without_actor", func() error {
			_, err := h.e.StartPublished(h.ctx, made.StartRequest{Ceremony: "change_review", Version: "1.0", ActorKind: made.ActorService})
			return err
		}, "field `actor_id` must not be blank"},
		{"claim_without_step", func() error {
			_, err := h.e.Claim(h.ctx, made.ClaimRequest{CeremonyID: "cr-1", ActorKind: made.ActorAgent})
			return err
		}, "field `step_id` must not be blank"},
		{"claim_with_malformed_step", func() error {
			_, err := h.e.Claim(h.ctx, made.ClaimRequest{CeremonyID: "cr-1", StepID: "Draft", ActorKind: made.ActorAgent})
			return err
		}, "field `step_id` contains invalid characters"},
		{"complete_without_status", func() error {
			_, err := h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent})
			return err
		}, "field `status` must not be blank"},
		{"complete_as_pending", func() error {
			_, err := h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepPending})
			return err
		}, "`status` must be completed, failed, waiting_for_human or cancelled, not pending"},
		{"failed_without_error", func() error {
			_, err := h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepFailed})
			return err
		}, "field `step_result.error_message` must not be empty"},
		{"completed_with_error", func() error {
			_, err := h.e.Complete(h.ctx, made.CompleteRequest{CeremonyID: "cr-1", StepID: "draft", ActorKind: made.ActorAgent, Status: made.StepCompleted, Error: "boom"})
			return err
		}, "invariant violated: only failed step results may carry an error message"},
		{"transition_without_actor_kind", func() error {
			_, err := h.e.ApplyTransition(h.ctx, made.TransitionRequest{CeremonyID: "cr-1", Trigger: "cancel"})
			return err
		}, "field `actor_kind` must not be blank"},
		{"approve_without_role_kind", func() error {
			_, err := h.e.ApproveGuard(h.ctx, made.ApproveRequest{CeremonyID: "cr-1", GuardName: "release_approved", RoleID: "REVIEWER"})
			return err
		}, "field `role_kind` must not be blank"},
		{"defer_without_conditions", func() error {
			_, err := h.e.DeferGuard(h.ctx, made.DeferRequest{CeremonyID: "cr-1", GuardName: "release_approved", RoleID: "REVIEWER",
				RoleKind: made.ActorHuman, Statement: "s", Reason: "r"})
			return err
		}, "collection `ceremony_guard_deferral.reconsider_when` must contain at least one element"},
		{"get_without_id", func() error {
			_, err := h.e.Get(h.ctx, "")
			return err
		}, "field `ceremony_id` must not be blank"},
	} {
		t.Run(c.name, func(t *testing.T) { wantErr(t, c.call(), made.KindInvalid, c.message) })
	}
	wantStep(t, h.get("cr-1"), "draft", made.StepPending, 1, 1)
}

func testClaimOnce(h *harness) {
	t := h.t
	h.publish(ChangeReviewYAML)
	h.start("change_review", "1.0", "cr-1", nil)
	req := h.claimReq("cr-1", "draft", "cr-1:draft:1")
	in, err := made.ClaimOnce(h.ctx, h.e, req)
	if err != nil {
		t.Fatal(err)
	}
	wantStep(t, in, "draft", made.StepInProgress, 1, 1)
	// The retry of a claim whose answer was lost.
	in, err = made.ClaimOnce(h.ctx, h.e, req)
	if err != nil {
		t.Fatalf("a retried claim: %v", err)
	}
	wantStep(t, in, "draft", made.StepInProgress, 1, 1)

	_, err = made.ClaimOnce(h.ctx, h.e, h.claimReq("cr-1", "review", "cr-1:review:1"))
	wantErr(t, err, made.KindWrongState, "failed to claim ceremony step: invalid state transition `ceremony_instance.current_state` -> `ceremony_step.state`")
	h.complete("cr-1", "draft", nil)
	_, err = made.ClaimOnce(h.ctx, h.e, h.claimReq("cr-1", "draft", "cr-1:draft:2"))
	wantErr(t, err, made.KindLeaseActive, "failed to claim ceremony step: invariant violated: step lease is still active")
	h.apply("cr-1", "submit")
	_, err = made.ClaimOnce(h.ctx, h.e, h.claimReq("cr-1", "review", "cr-1:draft:1"))
	wantErr(t, err, made.KindExists, "failed to claim ceremony step: already exists: ceremony_instance.idempotency_key")
	wantStep(t, h.get("cr-1"), "review", made.StepPending, 1, 1)
}
