package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/plans"
)

// The ceremony driver runs a MADE ceremony inside its host's workflow (a
// session's --mode debug or delivery, a task's, a job's, a plan's and its
// tasks'): it claims each step, gives the model the step's instruction and
// the axlr_step_done tool, validates the hand-back, runs the step's check
// itself (or asks its host to, for a hosted step), completes the step in
// MADE with what it recorded, applies the enabled transition and claims
// the next step; a console step it leaves to the host, which completes it
// with CompleteConsole. Every MADE verb, check and note is an activity;
// the ceremony's state is part of the host's, so decisions, restarts and
// continue-as-new carry it.

// StepDoneTool is the host tool the model hands a step back with.
const StepDoneTool = "axlr_step_done"

// HistoryTool is the host tool that reads the saved transcript by event
// number, offered in compact steps, whose model context leaves out the
// earlier work (the ledger, checkpoints).
const HistoryTool = "axlr_history"

// CheckTool names a check command waiting for the person's approval in a
// result's pending call.
const CheckTool = "axlr_check"

// Activity names of the ceremony driver, registered with the "ceremony."
// prefix by activities.Ceremony.
const (
	ActivityCeremonyStart        = "ceremony.Start"
	ActivityCeremonyClaim        = "ceremony.Claim"
	ActivityCeremonyHandBack     = "ceremony.HandBack"
	ActivityCeremonyRunCheck     = "ceremony.RunCheck"
	ActivityCeremonyComplete     = "ceremony.Complete"
	ActivityCeremonyTransition   = "ceremony.Transition"
	ActivityCeremonyApproveGuard = "ceremony.ApproveGuard"
	ActivityAppendNote           = "session.AppendNote"
	ActivityResetView            = "session.ResetView"
)

// Limits of the driver.
const (
	// StepBudget and CompactStepBudget are the tool calls a step may use
	// before AXLR continues it with a new budget.
	StepBudget        = 32
	CompactStepBudget = 16
	// MaxBudgetRenewals is how many new budgets a step gets before the turn
	// pauses for the person.
	MaxBudgetRenewals = 2
	// CompactWindow is the largest context window that selects the compact
	// profile under ceremonies.profile auto.
	CompactWindow = 65536
	// DefaultStepTimeout applies when a definition names none.
	DefaultStepTimeout = time.Hour
)

// Ceremony outcome reasons when the driver stops an instance itself.
const (
	StoppedStalled = "ceremony_stalled"
	StoppedTimeout = "step_timeout"
	// StoppedByPerson: the person stopped the ceremony (--stop-ceremony).
	StoppedByPerson = "stopped_by_person"
	// StoppedNeedsOperator: MADE's instance is in a state the driver does
	// not resolve alone (several enabled transitions, a claim it cannot
	// make or find as its own). The instance is left as it is for an
	// operator to inspect.
	StoppedNeedsOperator = "needs_operator"
)

// ErrTypeNeedsOperator is a MADE verb's failure that an operator has to
// resolve: a step the driver cannot claim and does not hold.
const ErrTypeNeedsOperator = "NeedsOperator"

// StoppedNote is what the next prompt after the person's stop carries, once.
const StoppedNote = "[AXLR] The person stopped the workflow; do not resume it or call axlr_step_done unless asked."

// CeremonyActivities are the activities of the ceremony driver.
type CeremonyActivities interface {
	Start(context.Context, CeremonyStartInput) (CeremonyStartResult, error)
	Resume(context.Context, CeremonyResumeInput) (CeremonyResumeResult, error)
	Claim(context.Context, ClaimInput) (InstanceView, error)
	HandBack(context.Context, HandBackInput) (HandBackResult, error)
	RunCheck(context.Context, RunCheckInput) (contract.CheckRecord, error)
	Complete(context.Context, CompleteInput) (InstanceView, error)
	Transition(context.Context, TransitionInput) (InstanceView, error)
	ApproveGuard(context.Context, GrantInput) (InstanceView, error)
}

// GrantInput grants a human guard of an instance as the role named (the
// person's approver identity, never AXLR's).
type GrantInput struct {
	InstanceID string `json:"instance_id"`
	Guard      string `json:"guard"`
	Role       string `json:"role"`
}

// CeremonyState is the driver's state, part of its host's.
type CeremonyState struct {
	Mode       string `json:"mode"`
	Definition string `json:"definition"`
	Version    string `json:"version"`
	InstanceID string `json:"instance_id"`
	Compact    bool   `json:"compact,omitempty"`
	// State is the instance's current state; Step and Iteration the open
	// step ("" when none is open).
	State     string `json:"state"`
	Step      string `json:"step,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	// Entries counts each step's claims at iteration 1: how often its
	// state was entered. Round is the open step's earlier entries.
	Entries map[string]int `json:"entries,omitempty"`
	Round   int            `json:"round,omitempty"`
	// Deadline is when the open step times out (the definition's
	// timeouts.step_default, which MADE does not enforce).
	Deadline    time.Time     `json:"deadline"`
	StepTimeout time.Duration `json:"step_timeout"`
	// Instructions are the definition's step prompts; Limits each step's
	// iterations at most.
	Instructions map[string]string `json:"instructions"`
	Limits       map[string]int    `json:"limits,omitempty"`
	// Command is the check command the person accepted.
	Command *ceremonies.CheckCommand `json:"command,omitempty"`
	// Budget of the open step.
	Calls       int  `json:"calls"`
	Renewals    int  `json:"renewals"`
	BudgetNoted bool `json:"budget_noted,omitempty"`
	// Reminders counts the reminders of the open step. Reminded is how
	// states saved before the count said one was given.
	Reminders int  `json:"reminders,omitempty"`
	Reminded  bool `json:"reminded,omitempty"`
	// LastCall is the previous call under the compact profile, which
	// refuses the same call twice in a row.
	LastCall string                `json:"last_call,omitempty"`
	Records  []contract.StepRecord `json:"records,omitempty"`
	// Ended: the instance reached a terminal state or was stopped; the
	// session is back in normal mode.
	Ended   bool   `json:"ended,omitempty"`
	Stopped string `json:"stopped,omitempty"`
	// Execution is the last execution that drove the ceremony; its result
	// carries the ceremony's outcome.
	Execution string `json:"execution"`
	// Notes counts the notes appended, for their idempotency keys.
	Notes int `json:"notes"`
	// Brief is the person's request that began the ceremony (the compact
	// profile's ledger starts with it).
	Brief string `json:"brief,omitempty"`
	// StepSession and StepFrom are where the open step's work begins: the
	// session and the revision when it was claimed.
	StepSession string `json:"step_session,omitempty"`
	StepFrom    int    `json:"step_from,omitempty"`
	// StopNoted: the person stopped the ceremony and the next prompt has
	// carried StoppedNote. False with Stopped by the person: it is due.
	StopNoted bool `json:"stop_noted,omitempty"`
	// Published: a person's definition, run by the generic loop in
	// ceremonies.ModeCeremony. AXLR knows its steps by their prompts
	// alone (Instructions); Approvers are the roles that grant each of
	// its human guards.
	Published bool              `json:"published,omitempty"`
	Approvers map[string]string `json:"approvers,omitempty"`
	// Cancel: a person's definition with a cancel trigger, which the
	// person's stop fires.
	Cancel bool `json:"cancel,omitempty"`
	// Guard is the human guard the ceremony waits on, to be asked of the
	// person; Waiting says what a ceremony with no step open waits for;
	// Unapplied are the transitions enabled beside the ones applied.
	Guard     string   `json:"guard,omitempty"`
	Waiting   string   `json:"waiting,omitempty"`
	Unapplied []string `json:"unapplied,omitempty"`
	// Memory is the ceremony's memory: its about, what its wake showed,
	// and what it recorded; nil when the host woke none (and before
	// memory existed).
	Memory *CeremonyMemory `json:"memory,omitempty"`
	// Epoch counts the runs that took the instance over from an earlier
	// one (a recovered job's): 0 for the run that opened it. Past 0 it
	// names the keys of the claims, checks and notes, so a run never
	// finds an earlier run's under the same key.
	Epoch int `json:"epoch,omitempty"`
}

// key is the idempotency key of a claim of step, and the base of its
// checks': ClaimKey, and the epoch past the first run.
func (c *CeremonyState) key(step string, iteration, round int) string {
	return EpochKey(ClaimKey(c.InstanceID, step, iteration, round), c.Epoch)
}

// EpochKey names a key with the run that made it, past the first.
func EpochKey(key string, epoch int) string {
	if epoch > 0 {
		key += fmt.Sprintf(":e%d", epoch)
	}
	return key
}

// Active reports whether the ceremony still drives its host.
func (c *CeremonyState) Active() bool { return c != nil && !c.Ended }

func (c *CeremonyState) outcome() *contract.CeremonyOutcome {
	o := &contract.CeremonyOutcome{InstanceID: c.InstanceID, Definition: c.Definition, Version: c.Version,
		State: c.State, Ended: c.Ended, Stopped: c.Stopped, Step: c.Step, Steps: c.Records, Waiting: c.Waiting, Unapplied: c.Unapplied}
	if o.Steps == nil {
		o.Steps = []contract.StepRecord{}
	}
	return o
}

func (c *CeremonyState) budget() int {
	if c.Compact {
		return CompactStepBudget
	}
	return StepBudget
}

// CeremonyStartInput opens an instance of a pinned definition and claims
// its first step.
type CeremonyStartInput struct {
	// Definition and Version name the pinned definition
	// (ceremonies.Lookup).
	Definition string         `json:"definition"`
	Version    string         `json:"version"`
	InstanceID string         `json:"instance_id"`
	SessionID  string         `json:"session_id"`
	Context    map[string]any `json:"context"`
	// Published starts a person's definition: its kept copy is read, an
	// empty Version is the newest one, and Brief fills every required
	// input the context does not.
	Published bool   `json:"published,omitempty"`
	Brief     string `json:"brief,omitempty"`
	// MemoryAbout fills a person's definition's memory_about input.
	MemoryAbout string `json:"memory_about,omitempty"`
}

// CeremonyStartResult is the started instance with its claimed first step.
type CeremonyStartResult struct {
	Definition   string            `json:"definition"`
	Version      string            `json:"version"`
	Instructions map[string]string `json:"instructions"`
	StepTimeout  time.Duration     `json:"step_timeout"`
	Instance     InstanceView      `json:"instance"`
	// Limits are each step's iterations at most (its repeat's, else 1).
	Limits map[string]int `json:"limits,omitempty"`
	// Approvers are a person's definition's human guards, each with the
	// role that grants it.
	Approvers map[string]string `json:"approvers,omitempty"`
	// Cancel: the definition has the cancel trigger.
	Cancel bool `json:"cancel,omitempty"`
}

// InstanceView is the compact projection the driver decides with. Action
// says what the verb did, so the local activity's marker in history reads
// by itself.
type InstanceView struct {
	Action     string     `json:"action,omitempty"`
	InstanceID string     `json:"instance_id"`
	State      string     `json:"state"`
	Completed  bool       `json:"completed"`
	NextStep   string     `json:"next_step,omitempty"`
	Enabled    []string   `json:"enabled,omitempty"`
	Waiting    []string   `json:"waiting,omitempty"`
	Steps      []StepView `json:"steps"`
	// Moved: a completion found done, with the instance already past the
	// step's state (the transition an earlier attempt applied).
	Moved bool `json:"moved,omitempty"`
}

// StepView is one step of an InstanceView.
type StepView struct {
	Step            string `json:"step"`
	Status          string `json:"status"`
	Iteration       int    `json:"iteration"`
	Attempt         int    `json:"attempt"`
	RepeatExhausted bool   `json:"repeat_exhausted,omitempty"`
}

func (v InstanceView) step(id string) (StepView, bool) {
	for _, s := range v.Steps {
		if s.Step == id {
			return s, true
		}
	}
	return StepView{}, false
}

// ClaimInput claims a step at an iteration; the claim's idempotency key is
// <instance>:<step>:<iteration>.
type ClaimInput struct {
	InstanceID string `json:"instance_id"`
	Step       string `json:"step"`
	Iteration  int    `json:"iteration"`
	// Round counts the earlier entries into the step's state: MADE starts
	// a re-entered state's steps at iteration 1 again, so the claim's key
	// names the round too.
	Round    int           `json:"round,omitempty"`
	LeaseTTL time.Duration `json:"lease_ttl"`
	// Epoch is the ceremony's (CeremonyState.Epoch): the key names it.
	Epoch int `json:"epoch,omitempty"`
}

// ClaimKey is the idempotency key of a step's claim, and the base of its
// check's: the instance, the step, its iteration and, past the first
// entry into its state, the round.
func ClaimKey(instance, step string, iteration, round int) string {
	key := fmt.Sprintf("%s:%s:%d", instance, step, iteration)
	if round > 0 {
		key += fmt.Sprintf(":r%d", round)
	}
	return key
}

// HandBackInput validates an axlr_step_done call read from the transcript.
type HandBackInput struct {
	SessionID  string `json:"session_id"`
	CallKey    string `json:"call_key"`
	Definition string `json:"definition"`
	// Version of the definition; empty (inputs recorded before versions
	// were named) is 2.0.
	Version string `json:"version,omitempty"`
	Step    string `json:"step"`
	Compact bool   `json:"compact,omitempty"`
	// Published: a person's step, whose fields are whatever the model
	// hands back (ceremonies.ValidatePublished).
	Published bool `json:"published,omitempty"`
}

// HandBackResult is the validation's verdict.
type HandBackResult struct {
	Error           string                   `json:"error,omitempty"`
	Command         *ceremonies.CheckCommand `json:"command,omitempty"`
	NotReproducible bool                     `json:"not_reproducible,omitempty"`
	// NotFeasible: an improvement's brief declared it not feasible.
	NotFeasible bool     `json:"not_feasible,omitempty"`
	Ignored     []string `json:"ignored,omitempty"`
	// Links are the connect_to links a diagnosis proposes.
	Links []ceremonies.Link `json:"links,omitempty"`
	// Texts are a job's hand-back's fields its pull request is written
	// from (summary, root_cause, proposed_fix, criteria, scope), each
	// bounded; the step's record keeps them.
	Texts map[string]string `json:"texts,omitempty"`
}

// RunCheckInput runs a check command in the workspace, once per key.
type RunCheckInput struct {
	SessionID string                  `json:"session_id"`
	Root      string                  `json:"root"`
	Key       string                  `json:"key"`
	Command   ceremonies.CheckCommand `json:"command"`
}

// CompleteInput completes a step in MADE with the hand-back's fields (read
// from the transcript) and what AXLR recorded.
type CompleteInput struct {
	SessionID  string         `json:"session_id"`
	CallKey    string         `json:"call_key,omitempty"`
	Definition string         `json:"definition"`
	Version    string         `json:"version,omitempty"`
	InstanceID string         `json:"instance_id"`
	Step       string         `json:"step"`
	Iteration  int            `json:"iteration"`
	Status     string         `json:"status"`
	Recorded   map[string]any `json:"recorded,omitempty"`
	Compact    bool           `json:"compact,omitempty"`
	Published  bool           `json:"published,omitempty"`
}

// TransitionInput fires a trigger from a state.
type TransitionInput struct {
	InstanceID string `json:"instance_id"`
	Trigger    string `json:"trigger"`
	From       string `json:"from"`
	// Others are the transitions enabled beside Trigger, not applied (a
	// person's definition), for the history to show.
	Others []string `json:"others,omitempty"`
}

// AppendNoteInput appends an [AXLR] note to the transcript as the person's
// side of the conversation, once per key.
type AppendNoteInput struct {
	SessionID string `json:"session_id"`
	Key       string `json:"key"`
	Text      string `json:"text"`
}

// CeremonyOptions are the options of the MADE verbs: short calls to the
// host's engine (embedded, or the made-mcp child), run as local activities
// (each is idempotent on its key, so a replay after a crash finds what the
// first run did); an unreachable engine is retried, a refusal is not.
var CeremonyOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		MaximumAttempts:        10,
		MaximumInterval:        30 * time.Second,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeSessionDiverged, ErrTypeMadeRefused, ErrTypeNeedsOperator},
	},
}

// CheckOptions: a check runs up to five minutes and heartbeats.
var CheckOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 6 * time.Minute,
	HeartbeatTimeout:    10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		MaximumAttempts:        3,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeSessionDiverged},
	},
}

// ErrTypeMadeRefused: MADE refused a verb (a definition that differs from
// its pin, a guard not satisfied); retrying cannot help.
const ErrTypeMadeRefused = "MadeRefused"

// errPaused ends a turn whose step ran out of tool calls three times.
var errPaused = errors.New("paused for the person")

// Driver is the ceremony driver as a component: it keeps a ceremony's
// state in its host's slot, plugs into the host's turn through TurnHooks
// (the step's tools, its budget and deadline, axlr_step_done, a model that
// answers with the step open) and reaches the transcript through the
// turn. A driver with no ceremony running takes nothing but the calls of
// its own tools, which it refuses. It knows no host: what a host adds to
// its ceremony comes through the CeremonyHooks it opens it with.
type Driver struct {
	// slot is where the host keeps the ceremony: the one that runs, or the
	// last one that ended; nil before the first.
	slot **CeremonyState
	t    *Turn
	// mode is the host's work mode: the ceremony's while it runs, normal
	// once it ends.
	mode *string
	// approved are the check commands approved with the work (a task's);
	// any other waits for the person.
	approved []ceremonies.CheckCommand
	// reminders and stallFails are the host's (hostOptions): how often a
	// model that ends its turn with the step open is reminded, and whether
	// the stop that follows fails the step.
	reminders  int
	stallFails bool
	// hooks are what the host added to the ceremony it opened; nil is
	// none (a session continued as new with its ceremony running).
	hooks CeremonyHooks
}

var _ TurnHooks = (*Driver)(nil)

// CeremonyHooks are what a host adds to a ceremony it opens: the check of
// each step that is the host's to check (ceremonies.Check.Hosted: a plan
// task's red and green) and the files a step whose writes reach only test
// files may write. The driver asks them and has no case for any host.
type CeremonyHooks interface {
	// CheckStep checks an accepted hand-back of a hosted step. It fills
	// what AXLR records and tells the model how the round went, or says
	// why the hand-back is refused, which leaves MADE unchanged.
	CheckStep(ctx workflow.Context, hb *StepHandBack) (refused string, err error)
	// TestFiles are the only files a test-files-only step may write, when
	// the host narrows them (ok); otherwise any test file may be written.
	TestFiles() (files []string, ok bool)
}

// noHooks are the hooks of a host that adds nothing: it checks no step.
type noHooks struct{}

func (noHooks) CheckStep(_ workflow.Context, hb *StepHandBack) (string, error) {
	return "", fmt.Errorf("step %s is checked by its host (%s), and this host checks none", hb.Step.ID, hb.Step.Check)
}

func (noHooks) TestFiles() ([]string, bool) { return nil, false }

func (d *Driver) c() *CeremonyState { return *d.slot }

// Attach gives a running ceremony its host's hooks again: a host continued
// as new carries the ceremony in its state, and its hooks are code.
func (d *Driver) Attach(hooks CeremonyHooks) { d.hooks = hooks }

// runConsole runs the console steps the host runs between the model's
// requests (ConsoleRunner), until a model's step is open, the ceremony
// ends or waits.
func (d *Driver) runConsole(ctx workflow.Context) error {
	r, ok := d.host().(ConsoleRunner)
	for ok {
		st, open := d.ConsoleStep()
		if !open {
			return nil
		}
		if err := r.RunConsole(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// DecideConsole applies the person's decision on the call a console step
// made wait, through the host that ran the step.
func (d *Driver) DecideConsole(ctx workflow.Context, p *PendingState, req *DecideRequest) error {
	r, ok := d.host().(ConsoleRunner)
	if !ok {
		return fmt.Errorf("call %s waits on a console step this host does not run", p.Call.CallID)
	}
	return r.DecideConsole(ctx, p, req)
}

// host is what the host added to its ceremony.
func (d *Driver) host() CeremonyHooks {
	if d.hooks == nil {
		return noHooks{}
	}
	return d.hooks
}

// Active reports whether a ceremony drives the host's turn.
func (d *Driver) Active() bool { return d.c().Active() }

// Outcome is the ceremony's outcome for the result of an execution: the
// ceremony the execution drove, else nil.
func (d *Driver) Outcome(executionID string) *contract.CeremonyOutcome {
	if c := d.c(); c != nil && c.Execution == executionID {
		return c.outcome()
	}
	return nil
}

// Opening is what a host opens a ceremony with, beside its definition.
type Opening struct {
	// InstanceID names the instance; empty: axlr-<session>-<unix>. A
	// plan's instances are named by the plan (axlr-<plan>-<unix>,
	// axlr-<plan>-sync<wave>-<unix>), since they run in the planner's
	// session.
	InstanceID string
	// Brief fills the definition's brief input, when it has one: the
	// person's request, a job's brief, a task's context pack. It begins
	// the compact profile's ledger.
	Brief string
	// Inputs are the definition's other inputs (a job's repository; a
	// plan task's plan, task and wave). The workspace is the turn's root.
	Inputs map[string]any
	// Execution is the execution that drives the ceremony: its result
	// carries the ceremony's outcome.
	Execution string
	// Memory is what the host's wake showed; nil: the ceremony records
	// nothing in memory. Recall is the wake's text, which the first
	// step's note carries.
	Memory *CeremonyMemory
	Recall string
}

// Open opens an instance of a pinned definition with the host's hooks
// (nil: none) and claims its first step. A first step that is the model's
// is announced in the transcript; a console step is the host's to run
// (ConsoleStep), and the model is not told of it. A job's definition runs
// under the standard profile, any other under the one the settings
// choose.
func (d *Driver) Open(ctx workflow.Context, definition, version string, in Opening, hooks CeremonyHooks) error {
	def, ok := ceremonies.Lookup(definition, version)
	if !ok {
		return fmt.Errorf("open ceremony: no pinned definition %s %s", definition, version)
	}
	d.hooks = hooks
	id := in.InstanceID
	if id == "" {
		id = fmt.Sprintf("axlr-%s-%d", d.t.Current(), workflow.Now(ctx).Unix())
	}
	start := CeremonyStartInput{Definition: def.Name, Version: def.Version, InstanceID: id, SessionID: d.t.Current(), Context: map[string]any{}}
	if in.Memory != nil {
		start.Context["memory_about"] = in.Memory.About
	}
	//workflowcheck:ignore copying a map into a map does not depend on the order
	for k, v := range in.Inputs {
		start.Context[k] = v
	}
	if def.BriefInput != "" {
		start.Context[def.BriefInput] = in.Brief
	}
	start.Context["workspace"] = d.t.st.Root
	var res CeremonyStartResult
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyStart, start).Get(ctx, &res)
	if err != nil {
		return fmt.Errorf("start ceremony %s %s: %w", def.Name, def.Version, err)
	}
	var entries map[string]int
	// axlr_plan and axlr_sync came after claim-rounds and count rounds
	// from their start: their histories hold no marker here (the first
	// one is their first claim's), so they must not ask for it.
	if roundsFromStart(def) || workflow.GetVersion(ctx, versionRounds, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		entries = map[string]int{res.Instance.NextStep: 1}
	}
	return d.opened(ctx, &CeremonyState{
		Mode: def.Mode, Definition: res.Definition, Version: res.Version, InstanceID: id,
		Compact:      !def.Job && !def.Standard && d.t.st.Snapshot.compactProfile(),
		Instructions: res.Instructions, Limits: res.Limits, StepTimeout: res.StepTimeout, Brief: in.Brief, Entries: entries,
		Memory: in.Memory,
	}, res.Instance, in.Execution, in.Recall)
}

// opened takes a started instance: the ceremony drives the host in its
// mode from its claimed first step, which is announced unless it is a
// console step.
func (d *Driver) opened(ctx workflow.Context, c *CeremonyState, first InstanceView, execution, recall string) error {
	*d.slot = c
	*d.mode = c.Mode
	d.claimed(ctx, first)
	c.Execution = execution
	if c.step().Console {
		return nil
	}
	note := c.stepNote(true)
	if recall != "" {
		note += "\n\n" + recall
	}
	return d.note(ctx, "began", note)
}

// roundsFromStart reports whether a definition was only ever opened
// counting rounds, without asking versionRounds at its opening.
func roundsFromStart(def ceremonies.Definition) bool {
	return def.Plan && (def.Mode == ceremonies.PartPlan || def.Mode == ceremonies.PartSync)
}

// compactProfile reports whether the settings of the turn choose the
// compact profile: ceremonies.profile compact, or auto with a context
// window of at most CompactWindow.
func (b *BeginTurnResult) compactProfile() bool {
	if b == nil {
		return false
	}
	return b.CeremonyProfile == "compact" || (b.CeremonyProfile != "standard" && b.ContextCap > 0 && b.ContextCap <= CompactWindow)
}

// Continue takes a new prompt while the ceremony runs: the prompt
// continues the open step with a fresh budget.
func (d *Driver) Continue(ctx workflow.Context, executionID string) error {
	c := d.c()
	c.Execution = executionID
	c.Reminded, c.Calls, c.Renewals, c.BudgetNoted = false, 0, 0, false
	c.Reminders = 0
	if c.Published && c.Step == "" {
		// Something outside AXLR may have moved the instance since.
		return d.recheck(ctx)
	}
	if c.Step == "" || c.step().Console {
		// A console step runs before the next request (runConsole).
		return nil
	}
	return d.note(ctx, "prompt", c.stepNote(false))
}

// Resumed takes note that a decision continues the ceremony's execution.
func (d *Driver) Resumed(executionID string) {
	if c := d.c(); c.Active() {
		c.Execution = executionID
	}
}

// Decide applies the person's decision on a check command that waits: an
// approved command is accepted and the hand-back goes on; a refused one
// leaves MADE untouched and the model is told.
func (d *Driver) Decide(ctx workflow.Context, p *PendingState, req *DecideRequest) error {
	if req.Decision == contract.Approve {
		d.t.SetCall(ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: CheckTool}, contract.Approve, contract.CallCompleted)
		return d.stepDone(ctx, p.Call, p.Queue, true)
	}
	d.t.SetCall(ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: CheckTool}, contract.Deny, contract.CallDenied)
	msg := "the person refused the check command " + p.Check.String()
	if req.Reason != "" {
		msg += ": " + req.Reason
	}
	return d.t.Record(ctx, p.Call, contract.CallDenied, contract.Deny, stepReply{Step: d.c().Step, Error: msg + ". MADE is unchanged; propose another command or explain."}.text())
}

// step is what the driver knows of the open step, read by the
// definition's name and version: a published version's steps never
// change, so a run in flight reads what it started with.
func (c *CeremonyState) step() ceremonies.Step {
	if c.Published {
		// A person's step is the model's, with no check of AXLR's.
		return ceremonies.Step{ID: c.Step}
	}
	st, _ := ceremonies.StepOf(c.Definition, c.Version, c.Step)
	return st
}

// claimed takes note of a claimed step.
func (d *Driver) claimed(ctx workflow.Context, v InstanceView) {
	c := d.c()
	c.State = v.State
	c.Step = v.NextStep
	if st, ok := v.step(v.NextStep); ok {
		c.Iteration = st.Iteration
	}
	c.Calls, c.Renewals, c.BudgetNoted, c.Reminded, c.LastCall = 0, 0, false, false, ""
	c.Reminders = 0
	c.Deadline = workflow.Now(ctx).Add(c.StepTimeout)
	c.StepSession, c.StepFrom = d.t.Current(), d.t.st.Revision
	d.t.emit(contract.Event{Type: contract.EventStepClaimed, SessionID: d.t.Current(), Instance: c.InstanceID, Step: c.Step, Iteration: c.Iteration, Limit: c.Limits[c.Step], State: c.State})
}

// stepNote is the console note that tells the model where the ceremony
// stands: at its start and on every later prompt while it runs.
func (c *CeremonyState) stepNote(began bool) string {
	verb := "runs"
	if began {
		verb = "began"
	}
	return fmt.Sprintf("[AXLR] Ceremony %s %s %s (instance %s), current step: %s (iteration %d).\n%s\nWork with your tools, then hand the step back with %s.",
		c.Definition, c.Version, verb, c.InstanceID, c.Step, c.Iteration, c.instruction(), StepDoneTool)
}

func (c *CeremonyState) instruction() string {
	if c.Compact && !c.Published {
		if st := c.step(); st.ID != "" {
			return st.Compact
		}
	}
	return c.Instructions[c.Step]
}

// note appends an [AXLR] note to the transcript.
func (d *Driver) note(ctx workflow.Context, kind, text string) error {
	c := d.c()
	c.Notes++
	if err := d.t.AppendConsole(ctx, ActivityAppendNote, EpochKey(fmt.Sprintf("note:%s:%d:%s", c.InstanceID, c.Notes, kind), c.Epoch), text); err != nil {
		return fmt.Errorf("append %s note: %w", kind, err)
	}
	return nil
}

// stepOpen reports whether a ceremony runs with a step open for the
// model: a console step (a job's propose, watch, decide, merge) is the
// host's to run, and the model has nothing to hand back.
func (d *Driver) stepOpen() bool {
	c := d.c()
	return c.Active() && c.Step != "" && !c.step().Console
}

// ConsoleStep is the console step the ceremony waits on, if any: the host
// runs it without the model.
func (d *Driver) ConsoleStep() (ceremonies.Step, bool) {
	c := d.c()
	if !c.Active() || c.Step == "" {
		return ceremonies.Step{}, false
	}
	st := c.step()
	return st, st.Console
}

// Offer is the tools offered while a step is open: the compact profile
// hides writes in read-only steps and adds axlr_history; axlr_step_done
// comes last.
func (d *Driver) Offer(tools []string) Offer {
	c := d.c()
	o := Offer{Tools: tools, Compact: c.Active() && c.Compact}
	if !d.stepOpen() {
		return o
	}
	st := c.step()
	var out []string
	for _, t := range tools {
		if c.Compact && st.ReadOnly && (t == "local_write" || t == "local_edit") {
			continue
		}
		if c.Compact && !slices.Contains(LocalTools, t) {
			// The compact profile offers the local tools only.
			continue
		}
		out = append(out, t)
	}
	if c.Compact {
		out = append(out, HistoryTool)
	}
	o.Tools = append(out, StepDoneTool)
	o.StepDone = &StepDoneSpec{Definition: c.Definition, Version: c.Version, Step: c.Step, Compact: c.Compact, Published: c.Published}
	return o
}

// OnCall takes axlr_step_done while a step is open, counts the step's
// calls, and applies the compact profile's refusals; outside a step it
// refuses the driver's own tools.
func (d *Driver) OnCall(ctx workflow.Context, c ModelCall, rest []ModelCall) (bool, error) {
	if cer := d.c(); d.stepOpen() {
		if c.Tool == StepDoneTool {
			return true, d.stepDone(ctx, c, rest, false)
		}
		cer.Calls++
		if msg := d.writeRefused(c); msg != "" {
			return true, d.t.Record(ctx, c, contract.CallFailed, "", msg)
		}
		if cer.Compact {
			same := c.Tool + " " + string(c.Preview)
			if same == cer.LastCall {
				return true, d.t.Record(ctx, c, contract.CallFailed, "", "same call as before; change something")
			}
			cer.LastCall = same
			if cer.step().ReadOnly && (c.Tool == "local_write" || c.Tool == "local_edit") {
				return true, d.t.Record(ctx, c, contract.CallFailed, "", fmt.Sprintf("%s is not available in step %s: this step reads, and changes nothing", c.Tool, cer.Step))
			}
		}
	}
	if c.Tool == StepDoneTool {
		msg := "no ceremony step is open in this session"
		if st, ok := d.ConsoleStep(); ok {
			msg = fmt.Sprintf("step %s is AXLR's own and runs without you: there is nothing to hand back", st.ID)
		}
		return true, d.t.Record(ctx, c, contract.CallFailed, "", stepReply{Error: msg}.text())
	}
	if cer := d.c(); c.Tool == HistoryTool && !(d.stepOpen() && cer.Compact) {
		return true, d.t.Record(ctx, c, contract.CallFailed, "", HistoryTool+" is not offered here: it reads the transcript in a compact ceremony step")
	}
	return false, nil
}

// writeRefused is why a write is refused in a step whose writes reach only
// test files (a plan task's red): a path that is not a test file, or not
// one the host allows (CeremonyHooks.TestFiles). Empty: the call goes on.
func (d *Driver) writeRefused(call ModelCall) string {
	st := d.c().step()
	if !st.TestFilesOnly || (call.Tool != "local_write" && call.Tool != "local_edit") {
		return ""
	}
	raw := call.Args["path"].Text
	p, ok := plans.CleanPath(raw)
	test := false
	if ok {
		test, _ = plans.IsTestFile(p)
	}
	allowed := "test files"
	if files, narrowed := d.host().TestFiles(); narrowed {
		test = test && slices.Contains(files, p)
		allowed = "the task's test files (" + strings.Join(files, ", ") + ")"
	}
	if test {
		return ""
	}
	return fmt.Sprintf("%s of %q is refused in step %s: until the unit check fails, only %s may be written. Write the failing test first, then hand the step back.",
		call.Tool, raw, st.ID, allowed)
}

// BeforeRequest enforces the open step's deadline and tool-call budget
// before a model request: a note at a fifth left, a new budget at the
// limit (twice), then a pause for the person.
func (d *Driver) BeforeRequest(ctx workflow.Context) error {
	if err := d.runConsole(ctx); err != nil {
		return err
	}
	if err := d.askGuard(); err != nil {
		return err
	}
	if !d.stepOpen() {
		return nil
	}
	c := d.c()
	if workflow.Now(ctx).After(c.Deadline) {
		step := c.Step
		if err := d.stop(ctx, StoppedTimeout, fmt.Sprintf("step %s passed its %s timeout", step, c.StepTimeout), "failed"); err != nil {
			return err
		}
		return d.note(ctx, "timeout", fmt.Sprintf("[AXLR] Step %s passed its %s timeout: the ceremony %s was stopped and the session is back in normal mode. Answer the person.", step, c.StepTimeout, c.InstanceID))
	}
	budget := c.budget()
	switch left := budget - c.Calls; {
	case left <= 0 && c.Renewals >= MaxBudgetRenewals:
		return fmt.Errorf("step %s used its %d tool calls %d times: %w", c.Step, budget, c.Renewals+1, errPaused)
	case left <= 0:
		c.Renewals++
		c.Calls, c.BudgetNoted = 0, false
		return d.note(ctx, "budget", fmt.Sprintf("[AXLR · budget] Step %s used its %d tool calls. AXLR continues it with a new budget of %d (%d of %d); finish the step and hand it back with %s.",
			c.Step, budget, budget, c.Renewals, MaxBudgetRenewals, StepDoneTool))
	case left <= budget/5 && !c.BudgetNoted:
		c.BudgetNoted = true
		return d.note(ctx, "budget", fmt.Sprintf("[AXLR · budget] %d tool calls remain for step %s: finish it and hand it back with %s.", left, c.Step, StepDoneTool))
	}
	return nil
}

// toolCallMarkup are the tool-call markups a server's parser failed to turn
// into calls when they appear in an answer's text.
var toolCallMarkup = []string{"<|tool_call>", "<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=", "<|tool_calls_section_begin|>", "<｜tool▁call"}

func markupIn(text string) string {
	for _, m := range toolCallMarkup {
		if strings.Contains(text, m) {
			return m
		}
	}
	return ""
}

// versionReminders guards the host's number of reminders (issue 18): a
// job and a plan task are reminded up to BackgroundReminders times, and a
// job's step so stopped fails, where every host was reminded once and the
// step was cancelled. The job's record reads the same version.
const versionReminders = "host-reminders"

// reminded is how many reminders the open step has had.
func (c *CeremonyState) reminded() int {
	if c.Reminders == 0 && c.Reminded {
		return 1
	}
	return c.Reminders
}

// OnAnswer handles a model that ends its turn while the step is open: a
// visible reminder, as many times as the host allows (hostOptions), then
// the instance is stopped and the model answers the person. It reports
// whether the turn goes on.
func (d *Driver) OnAnswer(ctx workflow.Context, text string) (bool, error) {
	if !d.stepOpen() {
		return false, nil
	}
	c := d.c()
	markup := markupIn(text)
	n, limit, status := c.reminded(), 1, "cancelled"
	if n > 0 && workflow.GetVersion(ctx, versionReminders, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		limit = max(d.reminders, 1)
		if d.stallFails {
			status = "failed"
		}
	}
	if n < limit {
		c.Reminders = n + 1
		msg := fmt.Sprintf("[AXLR] Step %s is still open: do its work and hand it back with %s, giving the fields the step asks for.", c.Step, StepDoneTool)
		if n > 0 {
			msg = fmt.Sprintf("[AXLR] Step %s is still open (reminder %d of %d; then AXLR stops the ceremony): do its work and hand it back with %s, giving the fields the step asks for.", c.Step, n+1, limit, StepDoneTool)
		}
		if markup != "" {
			msg += fmt.Sprintf(" Your answer held a tool call written as text (%s): the server's tool-call parser did not turn it into a call. Call the tool itself.", markup)
		}
		return true, d.note(ctx, "reminder", msg)
	}
	step, times := c.Step, answerTimes(n+1)
	if err := d.stop(ctx, StoppedStalled, fmt.Sprintf("the model ended its turn %s with step %s open", times, step), status); err != nil {
		return false, err
	}
	msg := fmt.Sprintf("[AXLR] The ceremony %s was stopped: you ended your turn %s with step %s open. The session is back in normal mode; answer the person.", c.InstanceID, times, step)
	if markup != "" {
		msg += fmt.Sprintf(" The answers held tool-call markup (%s): the server's tool-call parser is the first suspect.", markup)
	}
	return true, d.note(ctx, "stalled", msg)
}

// answerTimes says how often the model ended its turn: twice, 4 times.
func answerTimes(n int) string {
	if n == 2 {
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// stop ends the open step in MADE (cancelled or failed) and returns the
// host to normal mode.
func (d *Driver) stop(ctx workflow.Context, why, detail, status string) error {
	c := d.c()
	var v InstanceView
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyComplete, CompleteInput{
		SessionID: d.t.Current(), Definition: c.Definition, Version: c.Version, InstanceID: c.InstanceID, Step: c.Step, Iteration: c.Iteration,
		Status: status, Recorded: map[string]any{"reason": why, "detail": detail},
	}).Get(ctx, &v)
	if err != nil {
		return fmt.Errorf("stop ceremony %s: %w", c.InstanceID, err)
	}
	c.Records = append(c.Records, contract.StepRecord{Step: c.Step, Iteration: c.Iteration, Status: status, Output: map[string]any{"reason": why, "detail": detail}})
	d.t.emit(contract.Event{Type: contract.EventStepCompleted, SessionID: d.t.Current(), Instance: c.InstanceID, Step: c.Step, Iteration: c.Iteration, Status: contract.CallStatus(status), Reason: detail})
	c.State = v.State
	if err := d.cancel(ctx); err != nil {
		return err
	}
	c.Step, c.Ended, c.Stopped = "", true, why+": "+detail
	*d.mode = "normal"
	return nil
}

// cancel ends the instance in CANCELLED with the definition's cancel
// trigger; a definition without one (2.0) leaves the instance where the
// stop left it.
func (d *Driver) cancel(ctx workflow.Context) error {
	c := d.c()
	if !(ceremonies.Cancellable(c.Definition, c.Version) || c.Published && c.Cancel) || workflow.GetVersion(ctx, versionSeeds, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	var v InstanceView
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyTransition, TransitionInput{
		InstanceID: c.InstanceID, Trigger: ceremonies.CancelTrigger, From: c.State,
	}).Get(ctx, &v)
	if err != nil {
		return fmt.Errorf("cancel ceremony %s: %w", c.InstanceID, err)
	}
	d.t.emit(contract.Event{Type: contract.EventTransition, SessionID: d.t.Current(), Instance: c.InstanceID, Trigger: ceremonies.CancelTrigger, State: v.State})
	c.State = v.State
	return nil
}

// StopByPerson stops the running ceremony for the person: the open step
// is cancelled, the instance ends in CANCELLED, the session is back in
// normal mode, and the next prompt carries StoppedNote. Nothing in the
// workspace is rolled back.
func (d *Driver) StopByPerson(ctx workflow.Context, reason, executionID string) error {
	c := d.c()
	c.Execution = executionID
	detail := "the person stopped the ceremony"
	if reason != "" {
		detail += ": " + reason
	}
	if c.Step != "" {
		if err := d.stop(ctx, StoppedByPerson, detail, "cancelled"); err != nil {
			return err
		}
	} else {
		if err := d.cancel(ctx); err != nil {
			return err
		}
		c.Ended, c.Stopped = true, StoppedByPerson+": "+detail
		*d.mode = "normal"
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("ceremony %s stopped by the person in %s", c.InstanceID, c.State))
	return nil
}

// StopNote appends StoppedNote once, to the first prompt after the
// person stopped the ceremony.
func (d *Driver) StopNote(ctx workflow.Context) error {
	c := d.c()
	if c == nil || c.StopNoted || !strings.HasPrefix(c.Stopped, StoppedByPerson) {
		return nil
	}
	c.StopNoted = true
	return d.note(ctx, "stopped", StoppedNote)
}

// needsOperator stops driving an instance that MADE holds in a state the
// driver does not resolve alone: the instance is left as it is, the
// ceremony's outcome, the journal and the workflow's current details (the
// Web UI) name why, and the model is told to answer the person.
func (d *Driver) needsOperator(ctx workflow.Context, state, why string, reply *stepReply) {
	c := d.c()
	c.State, c.Step, c.Ended, c.Stopped = state, "", true, StoppedNeedsOperator+": "+why
	*d.mode = "normal"
	d.t.emit(contract.Event{Type: contract.EventCeremonyStopped, SessionID: d.t.Current(), Instance: c.InstanceID, State: state, Reason: c.Stopped})
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("ceremony %s needs an operator in %s: %s", c.InstanceID, state, why))
	reply.State = state
	reply.Feedback += fmt.Sprintf("The ceremony needs an operator: %s. AXLR stopped driving it and left instance %s as it is in MADE; the session is back in normal mode. Tell the person.", why, c.InstanceID)
}

// resetView makes the model's next request start from the ledger: the
// request that began the ceremony, one line per accepted step, then the
// hand-back that opened the step.
func (d *Driver) resetView(ctx workflow.Context, opening string) error {
	c := d.c()
	var b strings.Builder
	fmt.Fprintf(&b, "[AXLR] Ceremony %s %s (instance %s), compact profile: the ledger so far.\n\nThe person's request:\n%s\n\nAccepted steps:\n", c.Definition, c.Version, c.InstanceID, c.Brief)
	for _, r := range c.Records {
		fmt.Fprintf(&b, "- %s (iteration %d): %s", r.Step, r.Iteration, r.Status)
		if r.Check != nil {
			fmt.Fprintf(&b, "; check %s %s", (ceremonies.CheckCommand{Program: r.Check.Program, Args: r.Check.Args}).String(), r.Check.Ending())
		}
		if t := r.Transcript; t != nil && t.SessionID == d.t.Current() {
			fmt.Fprintf(&b, "; messages #%d-#%d", t.From, t.To)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "The saved transcript keeps every message; %s reads any of them by number.\n", HistoryTool)
	fmt.Fprintf(&b, "\nThe hand-back that opened step %s:\n%s\n\n%s", c.Step, opening, c.stepNote(false))
	c.Notes++
	if err := d.t.AppendConsole(ctx, ActivityResetView, EpochKey(fmt.Sprintf("view:%s:%d", c.InstanceID, c.Notes), c.Epoch), b.String()); err != nil {
		return fmt.Errorf("start step %s from its ledger: %w", c.Step, err)
	}
	return nil
}

// versionSeeds guards what issue 7 changed in flight: a check command is
// judged as a local_exec by the policy, and a check that did not exit is
// neither a failure nor a pass.
const versionSeeds = "seeds-agree"

// CompleteConsole completes the console step the ceremony waits on (a
// job's propose, watch, decide or merge) with what the host recorded, and
// moves the instance on: the enabled transition, and the next step's
// claim. It returns where the ceremony stands for the host: the next
// step, or the state it ended in. A retried completion finds the one MADE
// already holds (the step's iteration is its key).
func (d *Driver) CompleteConsole(ctx workflow.Context, recorded map[string]any, grant *GrantInput) (ConsoleOutcome, error) {
	cer := d.c()
	st, ok := d.ConsoleStep()
	if !ok {
		return ConsoleOutcome{}, fmt.Errorf("no console step is open in ceremony %s", cer.InstanceID)
	}
	var v InstanceView
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyComplete, CompleteInput{
		SessionID: d.t.Current(), Definition: cer.Definition, Version: cer.Version, InstanceID: cer.InstanceID,
		Step: st.ID, Iteration: cer.Iteration, Status: "completed", Recorded: recorded,
	}).Get(ctx, &v)
	if err != nil {
		return ConsoleOutcome{}, fmt.Errorf("complete step %s: %w", st.ID, err)
	}
	cer.Records = append(cer.Records, contract.StepRecord{Step: st.ID, Iteration: cer.Iteration, Status: "completed", Output: recordedForResult(recorded)})
	d.t.emit(contract.Event{Type: contract.EventStepCompleted, SessionID: d.t.Current(), Instance: cer.InstanceID, Step: st.ID, Iteration: cer.Iteration, Status: contract.CallCompleted})
	if grant != nil {
		// The person's approval is granted by their own identity before
		// the transition it guards.
		grant.InstanceID = cer.InstanceID
		if err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyApproveGuard, *grant).Get(ctx, &v); err != nil {
			return ConsoleOutcome{}, fmt.Errorf("grant %s: %w", grant.Guard, err)
		}
	}
	var reply stepReply
	if err := d.advance(ctx, v, &reply); err != nil {
		return ConsoleOutcome{}, err
	}
	return ConsoleOutcome{Step: cer.Step, State: cer.State, Ended: cer.Ended, Stopped: cer.Stopped, Note: reply.Feedback}, nil
}

// ConsoleOutcome is where a ceremony stands after a console step.
type ConsoleOutcome struct {
	// Step is the step claimed next (a model's or the console's), empty
	// when none is.
	Step  string `json:"step,omitempty"`
	State string `json:"state"`
	Ended bool   `json:"ended,omitempty"`
	// Stopped says why the driver stopped driving (needs_operator: …).
	Stopped string `json:"stopped,omitempty"`
	// Note is what the driver said of the move, for the host's log.
	Note string `json:"note,omitempty"`
}

// advance moves the instance on after a completion: the same step again
// when it repeats, else the enabled transition and the next step's claim.
func (d *Driver) advance(ctx workflow.Context, v InstanceView, reply *stepReply) error {
	cer := d.c()
	if cer.Published {
		return d.advancePublished(ctx, v, reply)
	}
	if v.Moved {
		// The transition was applied before a crash: take the instance
		// as it stands.
		cer.State, reply.State = v.State, v.State
		switch {
		case v.Completed:
			cer.Step, cer.Ended = "", true
			*d.mode = "normal"
			reply.Ceremony = v.State
			return nil
		case v.NextStep != "":
			st, _ := v.step(v.NextStep)
			return d.claim(ctx, v.NextStep, max(st.Iteration, 1), reply)
		}
		cer.Step = ""
		return nil
	}
	if st, ok := v.step(cer.Step); ok && st.Status == "pending" && st.Iteration > cer.Iteration && (v.NextStep == "" || v.NextStep == cer.Step) {
		reply.Feedback += fmt.Sprintf("Step %s continues: iteration %d.", cer.Step, st.Iteration)
		return d.claim(ctx, cer.Step, st.Iteration, reply)
	}
	if len(v.Enabled) == 0 && v.NextStep != "" && v.NextStep != cer.Step && workflow.GetVersion(ctx, versionStateSteps, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		// The state's next step (an incident's review after its revision,
		// or the revision of a state's next round).
		st, _ := v.step(v.NextStep)
		return d.claim(ctx, v.NextStep, max(st.Iteration, 1), reply)
	}
	if len(v.Enabled) == 0 {
		cer.State = v.State
		reply.Feedback += "No transition is enabled: the ceremony waits for something outside AXLR (a person's approval)."
		reply.State = v.State
		cer.Step = ""
		return nil
	}
	if len(v.Enabled) > 1 && workflow.GetVersion(ctx, versionSeeds, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		// The driver never takes the first of several.
		d.needsOperator(ctx, v.State, fmt.Sprintf("%d transitions are enabled from %s (%s)", len(v.Enabled), v.State, strings.Join(v.Enabled, ", ")), reply)
		return nil
	}
	trigger := v.Enabled[0]
	var next InstanceView
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyTransition, TransitionInput{
		InstanceID: cer.InstanceID, Trigger: trigger, From: v.State,
	}).Get(ctx, &next)
	if err != nil {
		return fmt.Errorf("apply %s: %w", trigger, err)
	}
	d.t.emit(contract.Event{Type: contract.EventTransition, SessionID: d.t.Current(), Instance: cer.InstanceID, Trigger: trigger, State: next.State})
	cer.State = next.State
	reply.State = next.State
	if next.Completed {
		cer.Step, cer.Ended = "", true
		*d.mode = "normal"
		reply.Ceremony = next.State
		reply.Feedback += fmt.Sprintf("The ceremony ended %s; the session is back in normal mode. Answer the person.", next.State)
		return nil
	}
	if next.NextStep == "" {
		cer.Step = ""
		reply.Feedback += "The new state has no claimable step: the ceremony waits for something outside AXLR."
		return nil
	}
	st, _ := next.step(next.NextStep)
	return d.claim(ctx, next.NextStep, max(st.Iteration, 1), reply)
}

// versionStateSteps guards the claim of a state's next step when no
// transition is enabled (issue 20: a state of several steps), where the
// driver waited for something outside AXLR. No definition before
// axlr_incident has such a state.
const versionStateSteps = "state-steps"

// versionRounds guards the round in a claim's and a check's keys: a state
// entered again (a red round back to repair) claims its steps anew.
const versionRounds = "claim-rounds"

// claim claims a step and puts its instruction in the reply.
func (d *Driver) claim(ctx workflow.Context, step string, iteration int, reply *stepReply) error {
	cer := d.c()
	round := cer.Round
	rounds := workflow.GetVersion(ctx, versionRounds, workflow.DefaultVersion, 1) != workflow.DefaultVersion
	if rounds && iteration <= 1 {
		round = cer.Entries[step]
	}
	var v InstanceView
	lease := cer.StepTimeout
	if st, ok := ceremonies.StepOf(cer.Definition, cer.Version, step); ok && st.Lease > 0 {
		// A console step that waits for the person (an incident's
		// approval) holds its claim longer than a step's timeout.
		lease = st.Lease
	}
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyClaim, ClaimInput{
		InstanceID: cer.InstanceID, Step: step, Iteration: iteration, Round: round, LeaseTTL: lease, Epoch: cer.Epoch,
	}).Get(ctx, &v)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == ErrTypeNeedsOperator && workflow.GetVersion(ctx, versionSeeds, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		d.needsOperator(ctx, cer.State, app.Message(), reply)
		return nil
	}
	if err != nil {
		return fmt.Errorf("claim %s: %w", step, err)
	}
	v.NextStep = step
	if rounds && iteration <= 1 {
		if cer.Entries == nil {
			cer.Entries = map[string]int{}
		}
		cer.Entries[step] = round + 1
	}
	cer.Round = round
	d.claimed(ctx, v)
	reply.NextStep, reply.Iteration, reply.Instr = step, cer.Iteration, cer.instruction()
	if cer.step().Console {
		reply.Instr = fmt.Sprintf("Step %s is AXLR's own: it runs without you. Do not call %s; answer the person briefly with what you did.", step, StepDoneTool)
		if _, runs := d.host().(ConsoleRunner); runs {
			reply.Instr = fmt.Sprintf("Step %s is AXLR's own: it runs before your next request, and AXLR tells you how it went. Do not call %s for it.", step, StepDoneTool)
		}
	}
	return nil
}
