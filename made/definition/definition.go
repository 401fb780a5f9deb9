// Package definition owns MADE's ceremony definition: the YAML schema
// (made-mcp 0.1.6's plus the newer constructs AXLR uses), Parse, Validate,
// the semantic Digest that names a definition's content, and the identifier
// checks made-mcp applies to every name. Its failures are *made.Error with
// made-mcp's messages, so an engine can report them as made-mcp would.
//
// It stores nothing and runs nothing: publishing a definition and driving
// its instances are an engine's (package embedded, or made-mcp through
// package mcp). Timeouts and retry policies are read and digested, not
// enforced.
package definition

import (
	"time"
)

// Definition is a parsed ceremony definition: made-mcp 0.1.6's YAML schema
// (§6 of the reference) plus the newer constructs the AXLR definitions use.
// Parse fills it; Validate reports what keeps it from being published;
// Digest names its content.
//
// Identifiers are trimmed. Duplicate declarations are kept as written (so
// Validate can report them); the engine uses the first of each.
//
// The newer constructs, and what the embedded engine does with them:
//
//   - step num_agents (≥1, default 1) and see_prior (default true, as in
//     MADE's step configuration) are stored for the host, not acted on;
//   - step repeat {max_iterations, until {output_field, equals}}: a step
//     completed with an output that does not satisfy until goes back to
//     pending for another iteration, until max_iterations rounds have run,
//     after which it completes with repeat_exhausted;
//   - state repeat {max_iterations, until {step, output_field, equals}}:
//     when every step of the state is completed and the named step's
//     output does not satisfy until, the state's steps start another round,
//     until max_iterations rounds have run, after which the state is
//     exhausted;
//   - max_parallel (≥1) is stored for the host; max_transitions (≥1) and
//     max_bounces (≥0) bound the transitions an instance may apply and how
//     many of them may re-enter a state visited before (a bounce). A
//     re-entered state starts afresh: its steps pending at iteration 1 and
//     attempt 1 with no output, its repeat at round 1;
//   - guard checks output_field:<step>:<field>=<value>,
//     step_repeat_exhausted:<step> and state_repeat_exhausted:<STATE>.
type Definition struct {
	Name    string
	Version string
	// Description is empty when the definition has none.
	Description string
	Inputs      []Input
	// Outputs are the declared output names (their YAML values are not kept).
	Outputs     []string
	States      []State
	Transitions []Transition
	Steps       []Step
	// Guards in name order (a YAML mapping).
	Guards []Guard
	Roles  []Role
	// StepTimeout is timeouts.step_default; 0 means none. Stored, not
	// enforced.
	StepTimeout time.Duration
	// Retry is retry_policies.default, which applies to every step.
	Retry RetryPolicy
	// MaxParallel, MaxTransitions and MaxBounces are nil when not declared
	// (no limit).
	MaxParallel    *int
	MaxTransitions *int
	MaxBounces     *int
}

// Input is a declared input. Inputs are declarative: a start's context
// is not checked against them.
type Input struct {
	Name     string
	Required bool
}

// StateKind is a state's place in the machine.
type StateKind string

// State kinds.
const (
	StateInitial      StateKind = "initial"
	StateIntermediate StateKind = "intermediate"
	StateTerminal     StateKind = "terminal"
)

// State is a declared state.
type State struct {
	ID     string
	Kind   StateKind
	Repeat *Repeat // nil: the state does not repeat
}

// Transition is a declared transition.
type Transition struct {
	From    string
	To      string
	Trigger string
	// Guards are the required guard names, sorted and without duplicates.
	Guards []string
}

// Step is a declared step.
type Step struct {
	ID      string
	State   string
	Handler string
	// Config is the step's opaque configuration: strings, bools, int64,
	// uint64, float64, nil, []any and map[string]any.
	Config    map[string]any
	NumAgents int
	SeePrior  bool
	Repeat    *Repeat // nil: the step runs once
}

// Repeat is a step's or a state's repeat.
type Repeat struct {
	MaxIterations int
	Until         Until
}

// Until is a repeat's stop condition: the output field equals the value.
type Until struct {
	// Step is the step whose output is read; set for a state repeat only.
	Step        string
	OutputField string
	// Equals is a bool, int64, float64 or string.
	Equals any
}

// GuardKind is what a guard checks.
type GuardKind string

// Guard kinds, as the digest names them.
const (
	GuardHumanApproval        GuardKind = "human_approval"
	GuardAllStepsCompleted    GuardKind = "all_steps_completed"
	GuardStepStatus           GuardKind = "step_status"
	GuardOutputField          GuardKind = "output_field"
	GuardStepRepeatExhausted  GuardKind = "step_repeat_exhausted"
	GuardStateRepeatExhausted GuardKind = "state_repeat_exhausted"
)

// Guard is a declared guard.
type Guard struct {
	Name string
	// Type and Check are as written.
	Type  string
	Check string
	// Condition is what Check (or Type human) means.
	Condition GuardCondition
}

// GuardCondition is a parsed guard check.
type GuardCondition struct {
	Kind GuardKind
	// Step is set for step_status, output_field and step_repeat_exhausted.
	Step string
	// State is set for state_repeat_exhausted.
	State string
	// Status is the UPPERCASE status of step_status.
	Status string
	// Field and Value are output_field's; Value is a bool, int64, float64
	// or string.
	Field string
	Value any
}

// IsHuman reports whether only a person can satisfy the guard.
func (g Guard) IsHuman() bool { return g.Condition.Kind == GuardHumanApproval }

// ActionKind is what a role action allows.
type ActionKind string

// Action kinds, in the order the digest sorts them.
const (
	ActionStep                  ActionKind = "step"
	ActionTransition            ActionKind = "transition"
	ActionRequestIntervention   ActionKind = "request_intervention"
	ActionRespondToIntervention ActionKind = "respond_to_intervention"
)

// RoleAction is one resolved label of a role's allowed_actions.
type RoleAction struct {
	Kind  ActionKind
	Value string // the step id or trigger; empty for the capabilities
}

// Role is a declared role.
type Role struct {
	ID string
	// Actions are sorted (step < transition < request_intervention <
	// respond_to_intervention, then by value) and without duplicates.
	Actions []RoleAction
}

// Allows reports whether the role may perform the action.
func (r Role) Allows(a RoleAction) bool {
	for _, x := range r.Actions {
		if x == a {
			return true
		}
	}
	return false
}

// RetryPolicy is the retry policy of every step. MADE stores it; the
// engine only enforces MaxAttempts at claim time.
type RetryPolicy struct {
	MaxAttempts int
	Backoff     time.Duration
}

// Step returns the first declared step with the id.
func (d *Definition) Step(id string) (Step, bool) {
	for _, s := range d.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return Step{}, false
}

// State returns the first declared state with the id.
func (d *Definition) State(id string) (State, bool) {
	for _, s := range d.States {
		if s.ID == id {
			return s, true
		}
	}
	return State{}, false
}

// Guard returns the guard with the name.
func (d *Definition) Guard(name string) (Guard, bool) {
	for _, g := range d.Guards {
		if g.Name == name {
			return g, true
		}
	}
	return Guard{}, false
}

// Index is a definition's declarations by id (guards by name), the first
// of each kept: the ones Validate, Digest and the engine use.
type Index struct {
	States map[string]State
	Steps  map[string]Step
	Guards map[string]Guard
	Roles  map[string]Role
}

// Index returns the definition's declarations by id.
func (d *Definition) Index() Index {
	ix := Index{
		States: map[string]State{}, Steps: map[string]Step{},
		Guards: map[string]Guard{}, Roles: map[string]Role{},
	}
	for _, s := range d.States {
		if _, dup := ix.States[s.ID]; !dup {
			ix.States[s.ID] = s
		}
	}
	for _, s := range d.Steps {
		if _, dup := ix.Steps[s.ID]; !dup {
			ix.Steps[s.ID] = s
		}
	}
	for _, g := range d.Guards {
		if _, dup := ix.Guards[g.Name]; !dup {
			ix.Guards[g.Name] = g
		}
	}
	for _, r := range d.Roles {
		if _, dup := ix.Roles[r.ID]; !dup {
			ix.Roles[r.ID] = r
		}
	}
	return ix
}

// StepIDs returns the declared step ids in declaration order, each once.
func (d *Definition) StepIDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range d.Steps {
		if !seen[s.ID] {
			seen[s.ID] = true
			out = append(out, s.ID)
		}
	}
	return out
}
