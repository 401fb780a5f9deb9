package made

import (
	"strings"
	"time"
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
	Status  StepStatus     `json:"status"`
	Attempt int            `json:"attempt"`
	Output  map[string]any `json:"output"`
	Error   *string        `json:"error"`
	Lease   *lease         `json:"lease,omitempty"`
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
	ID   string    `json:"id"`
	Kind ActorKind `json:"kind"`
}

type deferral struct {
	Guard          string    `json:"guard_name"`
	Role           string    `json:"deferred_by"`
	RoleKind       ActorKind `json:"deferred_by_kind"`
	Statement      string    `json:"statement"`
	Reason         string    `json:"reason"`
	ReconsiderWhen []string  `json:"reconsider_when"`
	At             time.Time `json:"deferred_at"`
}

type approval struct {
	Guard    string    `json:"guard_name"`
	Role     string    `json:"approved_by"`
	RoleKind ActorKind `json:"approved_by_kind"`
	At       time.Time `json:"approved_at"`
}

type transitionRecord struct {
	Trigger string    `json:"trigger"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Role    string    `json:"applied_by"`
	Kind    ActorKind `json:"applied_by_kind"`
	At      time.Time `json:"applied_at"`
	Bounce  bool      `json:"bounce"`
}

// newInstance opens an instance in the definition's initial state.
func newInstance(id string, p *published, ctx map[string]any, by actor, now time.Time) *instanceState {
	in := &instanceState{
		ID: id, Name: p.def.Name, Version: p.def.Version, Digest: p.digest,
		Steps: map[string]*stepState{}, Context: ctx, Deferrals: []deferral{}, Approvals: []approval{},
		IdempotencyKeys: map[string]bool{}, StateRounds: map[string]*round{}, History: []transitionRecord{},
		StartedBy: by, CreatedAt: now, UpdatedAt: now,
	}
	for _, id := range sortedKeys(p.ix.states) {
		s := p.ix.states[id]
		if s.Kind == StateInitial {
			in.CurrentState = id
		}
		if s.Repeat != nil {
			in.StateRounds[id] = &round{Round: 1}
		}
	}
	in.Visited = []string{in.CurrentState}
	for id := range p.ix.steps {
		in.Steps[id] = freshStep()
	}
	return in
}

func freshStep() *stepState {
	return &stepState{Status: StepPending, Attempt: 1, Output: map[string]any{}, Iteration: 1, RoundStart: 1}
}

// startable: pending, failed or waiting for a human, or in progress under
// an expired lease.
func (s *stepState) startable(now time.Time) bool {
	switch s.Status {
	case StepPending, StepFailed, StepWaitingForHuman:
		return true
	case StepInProgress:
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
func (in *instanceState) claim(p *published, a claimArgs, now time.Time) *Error {
	if _, ok := p.roleFor(RoleAction{Kind: ActionStep, Value: a.step}); !ok {
		return newError(KindNoRole, "%s%s", prefixStepNoRole, msgNoStepRole)
	}
	fail := func(kind Kind, msg string) *Error { return newError(kind, "%s%s", prefixClaim, msg) }
	if p.isTerminal(in.CurrentState) {
		return fail(KindTerminal, msgTerminalStart)
	}
	def, rec := p.ix.steps[a.step], in.Steps[a.step]
	if def.State != in.CurrentState {
		return fail(KindWrongState, msgStepWrongState)
	}
	if !rec.startable(now) {
		return fail(KindLeaseActive, msgLeaseActive)
	}
	attempt := rec.Attempt
	if rec.Status == StepFailed || rec.Status == StepInProgress {
		attempt++
	}
	if attempt > p.def.Retry.MaxAttempts {
		return fail(KindRetryExhausted, msgRetryExhausted)
	}
	if in.IdempotencyKeys[a.key] {
		return fail(KindExists, msgKeyExists)
	}
	in.IdempotencyKeys[a.key] = true
	rec.Status, rec.Attempt, rec.Error = StepInProgress, attempt, nil
	rec.Lease = &lease{Owner: a.owner, Key: a.key, AcquiredAt: now, ExpiresAt: now.Add(a.ttl)}
	return nil
}

// complete records a step's result (made_complete_ceremony_step), then
// runs the step's and its state's repeats.
func (in *instanceState) complete(p *published, step string, status StepStatus, output map[string]any, message *string) *Error {
	if _, ok := p.roleFor(RoleAction{Kind: ActionStep, Value: step}); !ok {
		return newError(KindNoRole, "%s%s", prefixComplete, msgNoStepRole)
	}
	def, rec := p.ix.steps[step], in.Steps[step]
	if def.State != in.CurrentState {
		return newError(KindWrongState, "%s%s", prefixComplete, msgStepWrongState)
	}
	if rec.Status != StepInProgress {
		return newError(KindNotInProgress, "%s%s", prefixComplete, msgNotInProgress)
	}
	rec.Status, rec.Output, rec.Error, rec.Lease = status, output, message, nil
	if status == StepCompleted {
		rec.LastCompleted = output
		repeatStep(def, rec)
		in.repeatState(p)
	}
	return nil
}

// transition fires a trigger (made_apply_ceremony_transition).
func (in *instanceState) transition(p *published, trigger string, by ActorKind, now time.Time) *Error {
	role, ok := p.roleFor(RoleAction{Kind: ActionTransition, Value: trigger})
	if !ok {
		return newError(KindNoRole, "%s%s", prefixTransitionNoRole, msgNoTransitionRole)
	}
	fail := func(kind Kind, msg string) *Error { return newError(kind, "%s%s", prefixApply, msg) }
	if p.isTerminal(in.CurrentState) {
		return fail(KindTerminal, msgTerminalTransition)
	}
	t, ok := in.outgoing(p, trigger)
	if !ok {
		return fail(KindWrongState, msgTriggerWrongState)
	}
	if !in.enabled(p, t) {
		return fail(KindGuardsNotSatisfied, msgGuardsNotSatisfied)
	}
	if limit := p.def.MaxTransitions; limit != nil && in.TransitionCount >= *limit {
		return newError(KindLimit, prefixApply+msgTransitionLimit, *limit)
	}
	bounce := contains(in.Visited, t.To)
	if limit := p.def.MaxBounces; bounce && limit != nil && in.Bounces >= *limit {
		return newError(KindLimit, prefixApply+msgBounceLimit, *limit)
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

func (in *instanceState) outgoing(p *published, trigger string) (TransitionDef, bool) {
	for _, t := range p.transitionsFrom(in.CurrentState) {
		if t.Trigger == trigger {
			return t, true
		}
	}
	return TransitionDef{}, false
}

// approveArgs are a checked approval or deferral's seat and guard.
type approveArgs struct {
	guard, role string
	kind        ActorKind
}

// approve grants a human guard (made_approve_ceremony_guard), by a human
// in a role that may fire a transition needing it.
func (in *instanceState) approve(p *published, a approveArgs, now time.Time) *Error {
	g, ok := p.ix.guards[a.guard]
	switch {
	case !ok:
		return newError(KindGuard, "%s", msgGuardNotInDef)
	case !g.IsHuman():
		return newError(KindGuard, "%s", msgApproveNotHuman)
	case !p.requiredFrom(in.CurrentState, a.guard):
		return newError(KindGuard, "%s", msgApproveNotRequired)
	}
	fail := func(kind Kind, msg string) *Error { return newError(kind, "%s%s", prefixApprove, msg) }
	role, declared := p.ix.roles[a.role]
	switch {
	case p.isTerminal(in.CurrentState):
		return fail(KindTerminal, msgTerminalApprove)
	case !declared:
		return fail(KindNotFound, msgRoleNotFound)
	case a.kind != ActorHuman:
		return fail(KindGuard, msgApproveByNonHuman)
	case !p.mayApprove(role, a.guard):
		return fail(KindGuard, msgApproveNotPermitted)
	}
	in.Context[a.guard] = true
	in.Approvals = append(in.Approvals, approval{Guard: a.guard, Role: a.role, RoleKind: a.kind, At: now})
	return nil
}

// deferGuard records why a human guard is not granted yet
// (made_defer_ceremony_guard).
func (in *instanceState) deferGuard(p *published, a approveArgs, d deferral) *Error {
	fail := func(kind Kind, msg string) *Error { return newError(kind, "%s%s", prefixDefer, msg) }
	g, ok := p.ix.guards[a.guard]
	_, declared := p.ix.roles[a.role]
	switch {
	case p.isTerminal(in.CurrentState):
		return fail(KindTerminal, msgTerminalDefer)
	case !ok:
		return fail(KindNotFound, msgGuardNotFound)
	case !g.IsHuman():
		return fail(KindGuard, msgDeferNotHuman)
	case in.approved(a.guard):
		return fail(KindGuard, msgDeferApproved)
	case !p.requiredFrom(in.CurrentState, a.guard):
		return fail(KindGuard, msgDeferNotRequired)
	case !declared:
		return fail(KindNotFound, msgRoleNotFound)
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
func (in *instanceState) enabled(p *published, t TransitionDef) bool {
	for _, name := range t.Guards {
		if !in.satisfied(p, name) {
			return false
		}
	}
	return true
}

// satisfied evaluates a guard against the instance.
func (in *instanceState) satisfied(p *published, name string) bool {
	g, ok := p.ix.guards[name]
	if !ok {
		return false
	}
	c := g.Condition
	switch c.Kind {
	case GuardHumanApproval:
		return in.approved(name)
	case GuardAllStepsCompleted:
		return in.allStepsCompleted()
	case GuardStepStatus:
		rec, ok := in.Steps[c.Step]
		return ok && strings.ToUpper(string(rec.Status)) == c.Status
	case GuardOutputField:
		rec, ok := in.Steps[c.Step]
		return ok && outputHas(rec.LastCompleted, c.Field, c.Value)
	case GuardStepRepeatExhausted:
		rec, ok := in.Steps[c.Step]
		return ok && rec.RepeatExhausted
	case GuardStateRepeatExhausted:
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
		if s.Status != StepCompleted {
			return false
		}
	}
	return true
}

func outputHas(output map[string]any, field string, want any) bool {
	got, ok := output[field]
	return ok && jsonEqual(got, want)
}
