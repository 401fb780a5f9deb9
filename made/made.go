// Package made is axlr's boundary with MADE, the ceremony ledger: every
// console-driven ceremony is a MADE instance whose steps a workflow claims
// and completes.
//
// It holds what the engines and their callers share: the Engine interface,
// its requests and the instance projection, the error kinds (*Error,
// *ConflictError and their sentinels), ClaimOnce, and ModelMayCall, which
// of made-mcp's tools a model may call. It imports none of its
// subpackages, which do the rest: definition parses, validates and digests
// definitions; embedded is the in-process engine axlrd uses when no
// made-mcp is configured; mcp is the client for made-mcp over stdio. Both
// engines speak made-mcp's semantics and messages, so one conformance suite
// (package madetest) runs against both. MADE records step timeouts and
// retry policies without enforcing them: enforcing them is the caller's job.
package made

import (
	"context"
	"errors"
	"time"
)

// Engine is the ceremony ledger: the verbs axlr drives an instance with.
// Every mutating verb returns the refreshed instance.
type Engine interface {
	// Publish stores a definition. Publishing the same name, version and
	// digest again is "already_published"; another digest under a
	// published version is a *ConflictError (made-mcp's version_occupied).
	Publish(ctx context.Context, definitionYAML []byte) (Published, error)
	// StartPublished opens an instance of a published definition. A
	// caller-chosen CeremonyID that exists already fails with kind
	// KindExists, which makes a retried start safe: Get it.
	StartPublished(ctx context.Context, req StartRequest) (Instance, error)
	// Get returns an instance.
	Get(ctx context.Context, ceremonyID string) (Instance, error)
	// List returns every instance, ordered by id.
	List(ctx context.Context) ([]ListEntry, error)
	// Claim takes a step's lease. It is not idempotent: a reused key or a
	// live lease fails (see ClaimOnce).
	Claim(ctx context.Context, req ClaimRequest) (Instance, error)
	// Complete records a claimed step's result.
	Complete(ctx context.Context, req CompleteRequest) (Instance, error)
	// ApplyTransition fires a trigger whose guards hold.
	ApplyTransition(ctx context.Context, req TransitionRequest) (Instance, error)
	// ApproveGuard grants a human guard.
	ApproveGuard(ctx context.Context, req ApproveRequest) (Instance, error)
	// DeferGuard records why a human guard is not granted yet.
	DeferGuard(ctx context.Context, req DeferRequest) (Instance, error)
}

// ActorKind is who acts: human, agent, service or engine.
type ActorKind string

// Actor kinds.
const (
	ActorHuman   ActorKind = "human"
	ActorAgent   ActorKind = "agent"
	ActorService ActorKind = "service"
	ActorEngine  ActorKind = "engine"
)

// StepStatus is a step's state in an instance.
type StepStatus string

// Step statuses, as the projection writes them.
const (
	StepPending         StepStatus = "pending"
	StepInProgress      StepStatus = "in_progress"
	StepCompleted       StepStatus = "completed"
	StepFailed          StepStatus = "failed"
	StepWaitingForHuman StepStatus = "waiting_for_human"
	StepCancelled       StepStatus = "cancelled"
)

// Published answers Publish.
type Published struct {
	Outcome  string `json:"outcome"` // "published" or "already_published"
	Ceremony string `json:"ceremony"`
	Version  string `json:"version"`
	Digest   string `json:"digest"`
}

// StartRequest opens an instance (made_start_published_ceremony).
type StartRequest struct {
	Ceremony   string
	Version    string
	CeremonyID string // empty: a random UUID
	ActorID    string
	ActorKind  ActorKind
	Context    map[string]any
}

// ClaimRequest takes a step (made_claim_ceremony_step).
type ClaimRequest struct {
	CeremonyID     string
	StepID         string
	ActorKind      ActorKind
	LeaseOwnerID   string        // empty: made-mcp-external-host
	IdempotencyKey string        // empty: a random key
	LeaseTTL       time.Duration // 0: five minutes
}

// CompleteRequest records a step's result (made_complete_ceremony_step).
type CompleteRequest struct {
	CeremonyID string
	StepID     string
	ActorKind  ActorKind
	Status     StepStatus // completed, failed, waiting_for_human or cancelled
	Output     map[string]any
	Error      string // required with failed, refused otherwise
}

// TransitionRequest fires a trigger (made_apply_ceremony_transition).
type TransitionRequest struct {
	CeremonyID string
	Trigger    string
	ActorKind  ActorKind
}

// ApproveRequest grants a human guard (made_approve_ceremony_guard).
type ApproveRequest struct {
	CeremonyID string
	GuardName  string
	RoleID     string
	RoleKind   ActorKind
}

// DeferRequest defers a human guard (made_defer_ceremony_guard).
type DeferRequest struct {
	CeremonyID     string
	GuardName      string
	RoleID         string
	RoleKind       ActorKind
	Statement      string
	Reason         string
	ReconsiderWhen []string
}

// Instance is an instance's projection, as made-mcp returns it (§4 of the
// reference) plus the fields of the newer constructs (repeats and limits).
type Instance struct {
	CeremonyID            string          `json:"ceremony_id"`
	DefinitionName        string          `json:"definition_name"`
	DefinitionVersion     string          `json:"definition_version"`
	BoundDefinitionDigest *string         `json:"bound_definition_digest"`
	CurrentState          string          `json:"current_state"`
	Completed             bool            `json:"completed"`
	NextStepID            *string         `json:"next_step_id"`
	WaitingForHuman       []string        `json:"waiting_for_human"`
	Transitions           []Transition    `json:"transitions"`
	Steps                 []Step          `json:"steps"`
	GuardDeferrals        []GuardDeferral `json:"guard_deferrals"`
	Interventions         []any           `json:"interventions"`
	OpenInterventionIDs   []string        `json:"open_intervention_ids"`
	Context               map[string]any  `json:"context"`
	ParticipantBindings   []any           `json:"participant_bindings"`
	Reasons               []any           `json:"reasons"`
	// TransitionCount is how many transitions were applied (bounded by the
	// definition's max_transitions).
	TransitionCount int `json:"transition_count"`
	// Bounces is how many transitions re-entered a state visited before
	// (bounded by max_bounces).
	Bounces int `json:"bounces"`
	// StateIterations counts the rounds of each repeating state.
	StateIterations map[string]int `json:"state_iterations,omitempty"`
}

// Transition is a transition leaving the current state.
type Transition struct {
	Trigger string        `json:"trigger"`
	ToState string        `json:"to_state"`
	Enabled bool          `json:"enabled"`
	Guards  []GuardStatus `json:"guards"`
}

// GuardStatus is a guard of a transition and whether it holds.
type GuardStatus struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"` // automated or human
	Satisfied bool   `json:"satisfied"`
}

// Step is one declared step of the definition in the instance.
type Step struct {
	StepID  string         `json:"step_id"`
	StateID string         `json:"state_id"`
	Status  StepStatus     `json:"status"`
	Attempt int            `json:"attempt"`
	Output  map[string]any `json:"output"`
	Error   *string        `json:"error"`
	// Iteration is the round of a repeating step, from 1.
	Iteration int `json:"iteration"`
	// RepeatExhausted: the step completed max_iterations rounds without
	// its until condition.
	RepeatExhausted bool `json:"repeat_exhausted"`
}

// GuardDeferral is a deferred human guard.
type GuardDeferral struct {
	GuardName      string   `json:"guard_name"`
	Statement      string   `json:"statement"`
	Reason         string   `json:"reason"`
	ReconsiderWhen []string `json:"reconsider_when"`
	DeferredAt     string   `json:"deferred_at"`
}

// ListEntry is one instance of List: its projection, or why it cannot be
// read.
type ListEntry struct {
	CeremonyID string
	Instance   *Instance
	// Reason is set when the instance cannot be rehydrated.
	Reason string
}

// Step returns the instance's step by id.
func (in *Instance) Step(id string) (Step, bool) {
	for _, s := range in.Steps {
		if s.StepID == id {
			return s, true
		}
	}
	return Step{}, false
}

// EnabledTransitions returns the triggers that can fire now, in declaration
// order.
func (in *Instance) EnabledTransitions() []Transition {
	var out []Transition
	for _, t := range in.Transitions {
		if t.Enabled {
			out = append(out, t)
		}
	}
	return out
}

// Kind classifies an engine error, whichever engine reported it.
type Kind string

// Error kinds. The messages are made-mcp's; the kinds let callers decide
// without parsing them.
const (
	KindNotFound           Kind = "not_found"            // not found: …
	KindExists             Kind = "already_exists"       // already exists: … (instance id, idempotency key)
	KindInvalid            Kind = "invalid"              // an argument is missing or malformed
	KindNotPublishable     Kind = "not_publishable"      // the definition has error findings
	KindNoRole             Kind = "no_role"              // no role may claim the step or fire the trigger
	KindTerminal           Kind = "terminal"             // the instance is in a terminal state
	KindWrongState         Kind = "wrong_state"          // the step or trigger is not of the current state
	KindLeaseActive        Kind = "lease_active"         // the step is leased, completed or cancelled
	KindRetryExhausted     Kind = "retry_exhausted"      // the step's retry policy allows no more attempts
	KindNotInProgress      Kind = "not_in_progress"      // a completion for a step not in progress
	KindGuardsNotSatisfied Kind = "guards_not_satisfied" // a transition whose guards do not hold
	KindGuard              Kind = "guard"                // a guard that cannot be approved or deferred
	KindLimit              Kind = "limit"                // max_transitions or max_bounces reached
	KindConflict           Kind = "conflict"             // changed by someone else first
	KindVersionOccupied    Kind = "version_occupied"     // see ConflictError
	KindUnavailable        Kind = "unavailable"          // the engine process cannot be reached
)

// Error is an engine failure: made-mcp's message and its kind.
type Error struct {
	Kind    Kind
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is matches an *Error of the same kind, so errors.Is(err, made.ErrNotFound)
// works for any message.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Kind == e.Kind && t.Message == ""
}

// Sentinels for errors.Is.
var (
	ErrNotFound           = &Error{Kind: KindNotFound}
	ErrExists             = &Error{Kind: KindExists}
	ErrInvalid            = &Error{Kind: KindInvalid}
	ErrNotPublishable     = &Error{Kind: KindNotPublishable}
	ErrNoRole             = &Error{Kind: KindNoRole}
	ErrTerminal           = &Error{Kind: KindTerminal}
	ErrWrongState         = &Error{Kind: KindWrongState}
	ErrLeaseActive        = &Error{Kind: KindLeaseActive}
	ErrRetryExhausted     = &Error{Kind: KindRetryExhausted}
	ErrNotInProgress      = &Error{Kind: KindNotInProgress}
	ErrGuardsNotSatisfied = &Error{Kind: KindGuardsNotSatisfied}
	ErrGuard              = &Error{Kind: KindGuard}
	ErrLimit              = &Error{Kind: KindLimit}
	ErrConflict           = &Error{Kind: KindConflict}
	ErrVersionOccupied    = &Error{Kind: KindVersionOccupied}
	ErrUnavailable        = &Error{Kind: KindUnavailable}
)

// ConflictError is made-mcp's version_occupied: the version is published
// with another digest.
type ConflictError struct {
	Ceremony        string
	Version         string
	PublishedDigest string
	OfferedDigest   string
}

func (e *ConflictError) Error() string {
	return "ceremony " + e.Ceremony + " " + e.Version + " is published with digest " + e.PublishedDigest + ", not " + e.OfferedDigest
}

// Is makes errors.Is(err, made.ErrVersionOccupied) true.
func (e *ConflictError) Is(target error) bool { return target == ErrVersionOccupied }

// ClaimOnce claims a step for a caller that is the instance's only driver
// and may retry: when the claim fails because a previous attempt of the same
// caller took it (a reused key, a live lease) and the step is in progress at
// the attempt that claim made, the step is taken as claimed.
func ClaimOnce(ctx context.Context, e Engine, req ClaimRequest) (Instance, error) {
	in, err := e.Claim(ctx, req)
	if err == nil || !(errors.Is(err, ErrExists) || errors.Is(err, ErrLeaseActive)) {
		return in, err
	}
	cur, gerr := e.Get(ctx, req.CeremonyID)
	if gerr != nil {
		return Instance{}, errors.Join(err, gerr)
	}
	if s, ok := cur.Step(req.StepID); ok && s.Status == StepInProgress {
		return cur, nil
	}
	return Instance{}, err
}
