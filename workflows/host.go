package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// A host is a workflow that runs a model: the session, the task, the job,
// the plan and the plan task. Each keeps a HostState in its own state and
// builds its turn and ceremony driver over it with newHost, the one place
// they are wired: the turn reads and writes the state, and the driver keeps
// the ceremony in its slot and plugs into the turn's hooks.

// HostState is what every host keeps for its turn and its ceremony. Its
// fields sit flat in the host's state (JSON flattens an embedded struct),
// under the names they always had: a session continued as new from an
// older run decodes into it unchanged.
type HostState struct {
	TurnState
	// Journal holds the recent events for the host's watchers.
	Journal
	// Mode is the host's work mode: a ceremony's while it runs, normal (or
	// empty) otherwise.
	Mode string `json:"mode,omitempty"`
	// Execution is the current or last execution; nil in a session before
	// its first.
	Execution *ExecutionState `json:"execution,omitempty"`
	// Ceremony is the host's ceremony: the one that runs, or the last one
	// that ended; nil before the first.
	Ceremony *CeremonyState `json:"ceremony,omitempty"`
}

// newHostState is the state of a host that has not begun: its first
// session, its mode and, for a one-shot host, its execution.
func newHostState(sessionID, mode, executionID string) HostState {
	st := HostState{TurnState: newTurnState(sessionID), Mode: mode}
	if executionID != "" {
		st.Execution = &ExecutionState{ID: executionID, Sessions: []string{sessionID}}
	}
	return st
}

// Host is a host's turn and ceremony driver, built over its HostState.
type Host struct {
	turn   *Turn
	driver *Driver
}

// hostOptions are what differs between hosts in their driver.
type hostOptions struct {
	// approved are check commands approved with the work (a task's): any
	// other waits for the person.
	approved []ceremonies.CheckCommand
	// reminders is how often a model that ends its turn with a step open
	// is reminded before the driver stops the ceremony (0: once, as a
	// session the person watches is; a job and a plan task, which nobody
	// watches, BackgroundReminders).
	reminders int
	// stallFails completes the step of a ceremony so stopped as failed
	// rather than cancelled: the host's work fails with it (a job's).
	stallFails bool
}

// BackgroundReminders is how often the model of a host nobody watches (a
// job, a plan task) is reminded of its open step before the ceremony
// stops; a session the person watches is reminded once.
const BackgroundReminders = 3

// newHost builds the turn over st and the driver over st's ceremony and
// mode, plugged into the turn, with the host's options.
func newHost(st *HostState, opts hostOptions) Host {
	t := &Turn{st: st}
	d := &Driver{slot: &st.Ceremony, t: t, mode: &st.Mode, approved: opts.approved, reminders: opts.reminders, stallFails: opts.stallFails}
	t.hooks = d
	return Host{turn: t, driver: d}
}

// plugIn makes hooks what the turn plugs in instead of the driver: a host
// that wraps the driver's hooks (a plan task's) passes its own.
func (h Host) plugIn(hooks TurnHooks) { h.turn.hooks = hooks }

// secondDriver is a driver for another ceremony of the host, kept in slot
// with its own mode, that shares the host's turn for its journal and
// transcript (a plan's wave sync, whose steps are all the console's).
func (h Host) secondDriver(slot **CeremonyState, mode *string) *Driver {
	return &Driver{slot: slot, t: h.turn, mode: mode}
}

// decidePending applies the person's decision on the call that waits: a check
// command's is the driver's, a tool call's the turn's.
func (h Host) decidePending(ctx workflow.Context, p *PendingState, req *DecideRequest) error {
	if p.Check != nil {
		return h.driver.Decide(ctx, p, req)
	}
	if p.Approval != nil {
		return h.driver.DecideConsole(ctx, p, req)
	}
	if p.Guard != nil {
		return h.driver.DecideGuard(ctx, p, req)
	}
	return h.turn.Decide(ctx, p, req)
}

// finish saves the result of the host's execution with the outcome of the
// ceremony it drove.
func (h Host) finish(ctx workflow.Context, status contract.Status, msg string) *contract.Result {
	return h.turn.Finish(ctx, status, msg, h.driver.Outcome(h.turn.st.Execution.ID))
}
