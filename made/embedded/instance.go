package embedded

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

// instanceState is an instance as the embedded engine stores it: what the
// projection shows plus leases, idempotency keys, approvals, the states
// visited and the transition history.
type instanceState struct {
	ID              string                `json:"ceremony_id"`
	Name            string                `json:"definition_name"`
	Version         string                `json:"definition_version"`
	Digest          string                `json:"bound_definition_digest"`
	CurrentState    string                `json:"current_state"`
	Steps           map[string]*stepState `json:"steps"`
	Context         map[string]any        `json:"context"`
	Deferrals       []deferral            `json:"guard_deferrals"`
	Approvals       []approval            `json:"guard_approvals"`
	IdempotencyKeys map[string]bool       `json:"idempotency_keys"`
	Visited         []string              `json:"visited_states"`
	TransitionCount int                   `json:"transition_count"`
	Bounces         int                   `json:"bounces"`
	StateRounds     map[string]*round     `json:"state_rounds"`
	History         []transitionRecord    `json:"transitions"`
	StartedBy       actor                 `json:"started_by"`
	CreatedAt       time.Time             `json:"created_at"`
	UpdatedAt       time.Time             `json:"updated_at"`
	CompletedAt     *time.Time            `json:"completed_at,omitempty"`
}

// stepState is one step's record.
type stepState struct {
	Status  made.StepStatus `json:"status"`
	Attempt int             `json:"attempt"`
	Output  map[string]any  `json:"output"`
	Error   *string         `json:"error"`
	Lease   *lease          `json:"lease,omitempty"`
	// Iteration counts the step's rounds in this visit of its state;
	// RoundStart is the iteration its state's current round began with.
	Iteration       int  `json:"iteration"`
	RoundStart      int  `json:"round_start"`
	RepeatExhausted bool `json:"repeat_exhausted"`
	// LastCompleted is the output of the last completion with status
	// completed (nil before one): what output_field guards and untils read.
	LastCompleted map[string]any `json:"last_completed,omitempty"`
}

type lease struct {
	Owner      string    `json:"owner"`
	Key        string    `json:"key"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// round is a repeating state's round in this visit, from 1.
type round struct {
	Round     int  `json:"round"`
	Exhausted bool `json:"exhausted"`
}

type actor struct {
	ID   string         `json:"id"`
	Kind made.ActorKind `json:"kind"`
}

type deferral struct {
	Guard          string         `json:"guard_name"`
	Role           string         `json:"deferred_by"`
	RoleKind       made.ActorKind `json:"deferred_by_kind"`
	Statement      string         `json:"statement"`
	Reason         string         `json:"reason"`
	ReconsiderWhen []string       `json:"reconsider_when"`
	At             time.Time      `json:"deferred_at"`
}

type approval struct {
	Guard    string         `json:"guard_name"`
	Role     string         `json:"approved_by"`
	RoleKind made.ActorKind `json:"approved_by_kind"`
	At       time.Time      `json:"approved_at"`
}

type transitionRecord struct {
	Trigger string         `json:"trigger"`
	From    string         `json:"from"`
	To      string         `json:"to"`
	Role    string         `json:"applied_by"`
	Kind    made.ActorKind `json:"applied_by_kind"`
	At      time.Time      `json:"applied_at"`
	Bounce  bool           `json:"bounce"`
}

// newInstance opens an instance in the definition's initial state.
func newInstance(id string, p *published, ctx map[string]any, by actor, now time.Time) *instanceState {
	in := &instanceState{
		ID: id, Name: p.def.Name, Version: p.def.Version, Digest: p.digest,
		Steps: map[string]*stepState{}, Context: ctx, Deferrals: []deferral{}, Approvals: []approval{},
		IdempotencyKeys: map[string]bool{}, StateRounds: map[string]*round{}, History: []transitionRecord{},
		StartedBy: by, CreatedAt: now, UpdatedAt: now,
	}
	for _, id := range slices.Sorted(maps.Keys(p.ix.States)) {
		s := p.ix.States[id]
		if s.Kind == definition.StateInitial {
			in.CurrentState = id
		}
		if s.Repeat != nil {
			in.StateRounds[id] = &round{Round: 1}
		}
	}
	in.Visited = []string{in.CurrentState}
	for id := range p.ix.Steps {
		in.Steps[id] = freshStep()
	}
	return in
}

func freshStep() *stepState {
	return &stepState{Status: made.StepPending, Attempt: 1, Output: map[string]any{}, Iteration: 1, RoundStart: 1}
}

// startable: pending, failed or waiting for a human, or in progress under
// an expired lease.
func (s *stepState) startable(now time.Time) bool {
	switch s.Status {
	case made.StepPending, made.StepFailed, made.StepWaitingForHuman:
		return true
	case made.StepInProgress:
		return s.Lease != nil && !now.Before(s.Lease.ExpiresAt)
	}
	return false
}

// claimArgs are a checked claim.
type claimArgs struct {
	step, owner, key string
	ttl              time.Duration
}

// claim takes a step's lease (made_claim_ceremony_step).
func (in *instanceState) claim(p *published, a claimArgs, now time.Time) *made.Error {
	if _, ok := p.roleFor(definition.RoleAction{Kind: definition.ActionStep, Value: a.step}); !ok {
		return newError(made.KindNoRole, "%s%s", prefixStepNoRole, msgNoStepRole)
	}
	fail := func(kind made.Kind, msg string) *made.Error { return newError(kind, "%s%s", prefixClaim, msg) }
	if p.isTerminal(in.CurrentState) {
		return fail(made.KindTerminal, msgTerminalStart)
	}
	def, rec := p.ix.Steps[a.step], in.Steps[a.step]
	if def.State != in.CurrentState {
		return fail(made.KindWrongState, msgStepWrongState)
	}
	if !rec.startable(now) {
		return fail(made.KindLeaseActive, msgLeaseActive)
	}
	attempt := rec.Attempt
	if rec.Status == made.StepFailed || rec.Status == made.StepInProgress {
		attempt++
	}
	if attempt > p.def.Retry.MaxAttempts {
		return fail(made.KindRetryExhausted, msgRetryExhausted)
	}
	if in.IdempotencyKeys[a.key] {
		return fail(made.KindExists, msgKeyExists)
	}
	in.IdempotencyKeys[a.key] = true
	rec.Status, rec.Attempt, rec.Error = made.StepInProgress, attempt, nil
	rec.Lease = &lease{Owner: a.owner, Key: a.key, AcquiredAt: now, ExpiresAt: now.Add(a.ttl)}
	return nil
}

// complete records a step's result (made_complete_ceremony_step), then
// runs the step's and its state's repeats.
func (in *instanceState) complete(p *published, step string, status made.StepStatus, output map[string]any, message *string) *made.Error {
	if _, ok := p.roleFor(definition.RoleAction{Kind: definition.ActionStep, Value: step}); !ok {
		return newError(made.KindNoRole, "%s%s", prefixComplete, msgNoStepRole)
	}
	def, rec := p.ix.Steps[step], in.Steps[step]
	if def.State != in.CurrentState {
		return newError(made.KindWrongState, "%s%s", prefixComplete, msgStepWrongState)
	}
	if rec.Status != made.StepInProgress {
		return newError(made.KindNotInProgress, "%s%s", prefixComplete, msgNotInProgress)
	}
	rec.Status, rec.Output, rec.Error, rec.Lease = status, output, message, nil
	if status == made.StepCompleted {
		rec.LastCompleted = output
		repeatStep(def, rec)
		in.repeatState(p)
	}
	return nil
}

// transition fires a trigger (made_apply_ceremony_transition).
func (in *instanceState) transition(p *published, trigger string, by made.ActorKind, now time.Time) *made.Error {
	role, ok := p.roleFor(definition.RoleAction{Kind: definition.ActionTransition, Value: trigger})
	if !ok {
		return newError(made.KindNoRole, "%s%s", prefixTransitionNoRole, msgNoTransitionRole)
	}
	fail := func(kind made.Kind, msg string) *made.Error { return newError(kind, "%s%s", prefixApply, msg) }
	if p.isTerminal(in.CurrentState) {
		return fail(made.KindTerminal, msgTerminalTransition)
	}
	t, ok := in.outgoing(p, trigger)
	if !ok {
		return fail(made.KindWrongState, msgTriggerWrongState)
	}
	if !in.enabled(p, t) {
		return fail(made.KindGuardsNotSatisfied, msgGuardsNotSatisfied)
	}
	if limit := p.def.MaxTransitions; limit != nil && in.TransitionCount >= *limit {
		return newError(made.KindLimit, prefixApply+msgTransitionLimit, *limit)
	}
	bounce := contains(in.Visited, t.To)
	if limit := p.def.MaxBounces; bounce && limit != nil && in.Bounces >= *limit {
		return newError(made.KindLimit, prefixApply+msgBounceLimit, *limit)
	}
	in.History = append(in.History, transitionRecord{
		Trigger: trigger, From: in.CurrentState, To: t.To, Role: role.ID, Kind: by, At: now, Bounce: bounce,
	})
	in.CurrentState = t.To
	in.TransitionCount++
	if bounce {
		in.Bounces++
		in.reenter(p, t.To)
	} else {
		in.Visited = append(in.Visited, t.To)
	}
	if p.isTerminal(t.To) {
		in.CompletedAt = &now
	}
	return nil
}

func (in *instanceState) outgoing(p *published, trigger string) (definition.Transition, bool) {
	for _, t := range p.transitionsFrom(in.CurrentState) {
		if t.Trigger == trigger {
			return t, true
		}
	}
	return definition.Transition{}, false
}

// approveArgs are a checked approval or deferral's seat and guard.
type approveArgs struct {
	guard, role string
	kind        made.ActorKind
}

// approve grants a human guard (made_approve_ceremony_guard), by a human
// in a role that may fire a transition needing it.
func (in *instanceState) approve(p *published, a approveArgs, now time.Time) *made.Error {
	g, ok := p.ix.Guards[a.guard]
	switch {
	case !ok:
		return newError(made.KindGuard, "%s", msgGuardNotInDef)
	case !g.IsHuman():
		return newError(made.KindGuard, "%s", msgApproveNotHuman)
	case !p.requiredFrom(in.CurrentState, a.guard):
		return newError(made.KindGuard, "%s", msgApproveNotRequired)
	}
	fail := func(kind made.Kind, msg string) *made.Error { return newError(kind, "%s%s", prefixApprove, msg) }
	role, declared := p.ix.Roles[a.role]
	switch {
	case p.isTerminal(in.CurrentState):
		return fail(made.KindTerminal, msgTerminalApprove)
	case !declared:
		return fail(made.KindNotFound, msgRoleNotFound)
	case a.kind != made.ActorHuman:
		return fail(made.KindGuard, msgApproveByNonHuman)
	case !p.mayApprove(role, a.guard):
		return fail(made.KindGuard, msgApproveNotPermitted)
	}
	in.Context[a.guard] = true
	in.Approvals = append(in.Approvals, approval{Guard: a.guard, Role: a.role, RoleKind: a.kind, At: now})
	return nil
}

// deferGuard records why a human guard is not granted yet
// (made_defer_ceremony_guard).
func (in *instanceState) deferGuard(p *published, a approveArgs, d deferral) *made.Error {
	fail := func(kind made.Kind, msg string) *made.Error { return newError(kind, "%s%s", prefixDefer, msg) }
	g, ok := p.ix.Guards[a.guard]
	_, declared := p.ix.Roles[a.role]
	switch {
	case p.isTerminal(in.CurrentState):
		return fail(made.KindTerminal, msgTerminalDefer)
	case !ok:
		return fail(made.KindNotFound, msgGuardNotFound)
	case !g.IsHuman():
		return fail(made.KindGuard, msgDeferNotHuman)
	case in.approved(a.guard):
		return fail(made.KindGuard, msgDeferApproved)
	case !p.requiredFrom(in.CurrentState, a.guard):
		return fail(made.KindGuard, msgDeferNotRequired)
	case !declared:
		return fail(made.KindNotFound, msgRoleNotFound)
	}
	d.Guard, d.Role, d.RoleKind = a.guard, a.role, a.kind
	in.Deferrals = append(in.Deferrals, d)
	return nil
}

func (in *instanceState) approved(guard string) bool {
	b, ok := in.Context[guard].(bool)
	return ok && b
}

// enabled reports whether every guard of the transition holds.
func (in *instanceState) enabled(p *published, t definition.Transition) bool {
	for _, name := range t.Guards {
		if !in.satisfied(p, name) {
			return false
		}
	}
	return true
}

// satisfied evaluates a guard against the instance.
func (in *instanceState) satisfied(p *published, name string) bool {
	g, ok := p.ix.Guards[name]
	if !ok {
		return false
	}
	c := g.Condition
	switch c.Kind {
	case definition.GuardHumanApproval:
		return in.approved(name)
	case definition.GuardAllStepsCompleted:
		return in.allStepsCompleted()
	case definition.GuardStepStatus:
		rec, ok := in.Steps[c.Step]
		return ok && strings.ToUpper(string(rec.Status)) == c.Status
	case definition.GuardOutputField:
		rec, ok := in.Steps[c.Step]
		return ok && definition.OutputHas(rec.LastCompleted, c.Field, c.Value)
	case definition.GuardStepRepeatExhausted:
		rec, ok := in.Steps[c.Step]
		return ok && rec.RepeatExhausted
	case definition.GuardStateRepeatExhausted:
		r, ok := in.StateRounds[c.State]
		return ok && r.Exhausted
	}
	return false
}

func (in *instanceState) allStepsCompleted() bool {
	if len(in.Steps) == 0 {
		return false
	}
	for _, s := range in.Steps {
		if s.Status != made.StepCompleted {
			return false
		}
	}
	return true
}
