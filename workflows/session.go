package workflows

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// Names that live in workflow history: renaming any of them needs
// versioning.
const (
	// SessionWorkflow is the workflow type of a session.
	SessionWorkflow = "axlr.Session"
	// UpdateExecute starts an execution: a prompt for the session.
	UpdateExecute = "execute"
	// UpdateDecide decides the call an execution waits on, and continues it.
	UpdateDecide = "decide"
	// UpdateInterrupt stops the running execution.
	UpdateInterrupt = "interrupt"
	// UpdateStopCeremony stops the session's running ceremony for the
	// person: StopCeremonyRequest, answered with Accepted.
	UpdateStopCeremony = "stop-ceremony"
	// QueryProgress returns the events of an execution from a cursor.
	QueryProgress = "progress"
	// QueryResult returns the session's last execution result.
	QueryResult = "result"
	// SearchAttributeSessions lists every session id a session workflow
	// holds (the first and its successors), so a successor's id finds its
	// workflow.
	SearchAttributeSessions = "AxlrSessions"
)

// Activity names of the session workflow, registered with the "session."
// prefix by activities.Session.
const (
	ActivityBeginTurn        = "session.BeginTurn"
	ActivityModelRequest     = "session.ModelRequest"
	ActivityToolCall         = "session.ToolCall"
	ActivityRecordToolResult = "session.RecordToolResult"
	ActivityContinueSession  = "session.ContinueSession"
	ActivityFinishExecution  = "session.FinishExecution"
)

// Error types of non-retryable activity failures.
const (
	// ErrTypeBadRequest: the request cannot succeed as sent (no model,
	// missing workspace).
	ErrTypeBadRequest = "BadRequest"
	// ErrTypeProviderRejected: the model provider refused the request with a
	// status a retry cannot change.
	ErrTypeProviderRejected = "ProviderRejected"
	// ErrTypeSessionDiverged: the session log does not hold what the
	// workflow expects at a revision.
	ErrTypeSessionDiverged = "SessionDiverged"
)

// Limits of a turn.
const (
	// MaxRequestsPerTurn stops a turn that keeps calling tools: a model
	// stuck in a loop spends money until something stops it.
	MaxRequestsPerTurn = 256
	// MaxEvents is how many events the workflow keeps for watchers.
	MaxEvents = 4096
	// MaxEventsPerQuery bounds one progress answer; a watcher asks again
	// from Next.
	MaxEventsPerQuery = 64
	// MaxCalls is how many tool calls the session keeps for results; the
	// oldest go first, so a session of any length continues as new within
	// Temporal's payload limits.
	MaxCalls = 2048
	// maxRecent is how many ended executions keep their result for their
	// watchers (each result lists the session's calls: a few hundred KiB at
	// most, carried over continue-as-new).
	maxRecent = 4
	// maxApplied is how many applied update ids survive continue-as-new.
	maxApplied = 256
	// MaxCarriedBytes bounds the encoded state a session carries over
	// continue-as-new (Temporal warns on payloads past 512 KiB and refuses
	// them past 2 MiB): past it the oldest tool calls go first.
	MaxCarriedBytes = 512 << 10
)

// SessionWorkflowID is the workflow id of a session.
func SessionWorkflowID(sessionID string) string { return "axlr-session-" + sessionID }

// HostTaskQueue is the task queue of the workflows bound to a host's
// workspaces and session store.
func HostTaskQueue(hostID string) string { return hostQueuePrefix + hostID }

const hostQueuePrefix = "axlr-host-"

// SessionActivities are the activities the session workflow calls, by the
// names above.
type SessionActivities interface {
	BeginTurn(context.Context, BeginTurnInput) (BeginTurnResult, error)
	ModelRequest(context.Context, ModelRequestInput) (ModelRequestResult, error)
	ToolCall(context.Context, ToolCallInput) (ToolCallResult, error)
	RecordToolResult(context.Context, RecordToolResultInput) (RecordToolResultResult, error)
	ContinueSession(context.Context, ContinueSessionInput) (ContinueSessionResult, error)
	FinishExecution(context.Context, FinishExecutionInput) (contract.Result, error)
}

// SessionInput starts (or continues as new) a session workflow.
type SessionInput struct {
	SessionID string `json:"session_id"`
	// Host is the host id whose task queue the workflow runs on.
	Host string `json:"host"`
	// State is carried over continue-as-new; nil on the first run.
	State *SessionState `json:"state,omitempty"`
	// Defaults are what the service API created the session with; nil
	// for a session started by a prompt.
	Defaults *SessionDefaults `json:"defaults,omitempty"`
}

// ExecuteRequest is a prompt for the session: the update UpdateExecute.
type ExecuteRequest struct {
	// ExecutionID is chosen by the client and is also the update id, so a
	// retried request is applied once.
	ExecutionID string `json:"execution_id"`
	Prompt      string `json:"prompt"`
	// Model, empty: the session's, then settings.json's.
	Model string `json:"model,omitempty"`
	// Root is the workspace, an absolute path. Empty continues in the
	// session's workspace.
	Root string `json:"root,omitempty"`
	// Mode is the work mode (SupportedModes). Empty keeps the session's
	// mode as it stands: a running ceremony's, else the mode the last
	// prompt set or the end of a ceremony returned to (normal for a new
	// session), so a client that sends a mode only when the person
	// chose one never restarts a ceremony that ended.
	Mode string `json:"mode"`
	// Ceremony names the person's published definition ceremony mode
	// runs: NAME, the newest version, or NAME@VERSION. Empty in ceremony
	// mode is the one the session chose before.
	Ceremony string          `json:"ceremony,omitempty"`
	Approval policy.Approval `json:"approval"`
	// Policy, when set, becomes the session's policy.
	Policy *policy.Policy `json:"policy,omitempty"`
	// Web, when set, offers (true) or removes (false) the web tools for
	// the session from this prompt on; unset keeps the session's choice
	// (offered, when the host has them).
	Web *bool `json:"web,omitempty"`
	// RequestDigest is the digest of the request a client sent under its
	// idempotency key: the same key with another request is refused.
	RequestDigest string `json:"request_digest,omitempty"`
	// By is the identity that sent the prompt (the service API's caller).
	By string `json:"by,omitempty"`
}

// Accepted answers an admitted execute or decide update.
type Accepted struct {
	ExecutionID string `json:"execution_id"`
	SessionID   string `json:"session_id"`
}

// DecideRequest decides the pending call: the update UpdateDecide. The
// decision starts a new execution that continues the session.
type DecideRequest struct {
	// ExecutionID is chosen by the client and is also the update id.
	ExecutionID string `json:"execution_id"`
	// CallID names the call it decides; the validator refuses a decision
	// for any other, so a late decision never lands on the next call.
	// Empty decides the call pending now: a client that showed the call
	// names it (axlr-tui always does).
	CallID   string            `json:"call_id,omitempty"`
	Decision contract.Decision `json:"decision"`
	Reason   string            `json:"reason,omitempty"`
	// Digest is the sha256 of the incident draft an approval approves:
	// the validator refuses any other than the one that waits.
	Digest string `json:"digest,omitempty"`
	// Policy, when set, is the policy the decision is taken under and
	// becomes the session's policy.
	Policy *policy.Policy `json:"policy,omitempty"`
	// Revision, when set, is the session's revision the decision was
	// taken at: the validator refuses it at any other.
	Revision int `json:"revision,omitempty"`
	// RequestDigest and By: as ExecuteRequest's; By is recorded with the
	// decided call.
	RequestDigest string `json:"request_digest,omitempty"`
	By            string `json:"by,omitempty"`
}

// InterruptRequest stops the running execution it names.
type InterruptRequest struct {
	// ExecutionID names the execution to stop; the validator refuses an
	// interrupt for any other, so a stale Ctrl+C never stops the next one.
	// Empty stops whatever runs now (axlr-tui always names it).
	ExecutionID string `json:"execution_id,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// StopCeremonyRequest stops the ceremony it names: the update
// UpdateStopCeremony. It runs as an execution that makes no model request.
type StopCeremonyRequest struct {
	// ExecutionID is chosen by the client and is also the update id.
	ExecutionID string `json:"execution_id"`
	// InstanceID names the ceremony to stop; the validator refuses any
	// other. Empty stops the one running (axlr-tui always names it).
	InstanceID string `json:"instance_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// Progress answers QueryProgress.
type Progress struct {
	ExecutionID string           `json:"execution_id"`
	SessionID   string           `json:"session_id"`
	Running     bool             `json:"running"`
	Events      []contract.Event `json:"events"`
	// Next is the cursor for the next query.
	Next int `json:"next"`
	// Result is set once the execution has ended.
	Result *contract.Result `json:"result,omitempty"`
}

// ProgressQuery asks for an execution's events from a cursor.
type ProgressQuery struct {
	// ExecutionID, empty: the current or last execution.
	ExecutionID string `json:"execution_id,omitempty"`
	After       int    `json:"after"`
}

// SessionState is everything the session workflow knows, carried over
// continue-as-new. It is compact: transcripts live in the session store.
// The host's state (the turn's, the mode, the execution, the ceremony and
// the event journal) sits flat in it, as it always has: a run in flight
// continues as new into this shape. The journal is not carried over
// continue-as-new, which happens only between executions (carried).
type SessionState struct {
	HostState
	// NotedMode is the work mode the model was last told of (empty:
	// normal), and ModeNotes counts those notes for their keys.
	NotedMode string `json:"noted_mode,omitempty"`
	ModeNotes int    `json:"mode_notes,omitempty"`
	// Queued is an admitted request not yet started.
	Queued *queuedRequest `json:"queued,omitempty"`
	// Recent are the last executions that ended, oldest first: the last is
	// the session's result, and a watcher that missed the end of its own
	// still finds it.
	Recent []ExecutionState `json:"recent,omitempty"`
	// Applied holds the ids of the last admitted updates (execution ids).
	Applied []string `json:"applied,omitempty"`
	// JobOutcomes are the last outcomes of the jobs this session asked
	// for (SignalJobOutcome), and JobNotes counts the notes prompts have
	// carried of them, for their keys.
	JobOutcomes []JobOutcomeState `json:"job_outcomes,omitempty"`
	JobNotes    int               `json:"job_notes,omitempty"`
	// Chosen is the person's definition ceremony mode runs, NAME or
	// NAME@VERSION as they named it: it travels with the mode, and a
	// prompt that sets another mode forgets it.
	Chosen string `json:"chosen,omitempty"`
	// Turns counts the prompts the session ran since memory: each
	// turn's memory key names it.
	Turns int `json:"turns,omitempty"`
	// Record is where the session's record (axlr_session) stands;
	// RecordTurn the execution that began its claimed turn.
	Record     SessionRecord `json:"record,omitzero"`
	RecordTurn string        `json:"record_turn,omitempty"`
	// RecordFrom is the session's usage when the claimed turn began:
	// the turn's share is what it added.
	RecordFrom contract.Usage `json:"record_from,omitzero"`
	// Defaults are what the service API created the session with.
	Defaults *SessionDefaults `json:"defaults,omitempty"`
}

type queuedRequest struct {
	Execute *ExecuteRequest      `json:"execute,omitempty"`
	Decide  *DecideRequest       `json:"decide,omitempty"`
	Stop    *StopCeremonyRequest `json:"stop,omitempty"`
	Close   *CloseSessionRequest `json:"close,omitempty"`
}

// BeginTurnInput opens the session if needed and appends the prompt.
type BeginTurnInput struct {
	SessionID   string `json:"session_id"`
	ExecutionID string `json:"execution_id"`
	// Prompt is appended as the person's message; empty for a decision,
	// which appends nothing.
	Prompt string `json:"prompt,omitempty"`
	Model  string `json:"model,omitempty"`
	Root   string `json:"root,omitempty"`
	Mode   string `json:"mode"`
}

// BeginTurnResult is the session's state at the start of a turn and the
// settings snapshot the turn decides with.
type BeginTurnResult struct {
	Revision   int             `json:"revision"`
	Model      string          `json:"model"`
	Root       string          `json:"root"`
	Settings   policy.Settings `json:"settings"`
	ContextCap int             `json:"context_cap,omitempty"`
	MaxTokens  int             `json:"max_tokens,omitempty"`
	Stream     bool            `json:"stream"`
	// CeremonyProfile is settings' ceremonies.profile: auto, standard or
	// compact.
	CeremonyProfile string `json:"ceremony_profile,omitempty"`
	// HostTools are the tools this host offers beside the workspace's:
	// the web tools and the MCP plugins' tools.
	HostTools []HostTool `json:"host_tools,omitempty"`
	// About is the workspace's memory about: repo:<owner>/<name> of its
	// origin, else ws:<digest of its path>.
	About string `json:"about,omitempty"`
}

// HostTool is a tool beside the workspace's that a turn may offer: a web
// tool, an MCP plugin's tool (Name the alias the model calls, Canonical
// its <plugin>/<tool>, which a policy rule may name instead), or
// axlr_tools and axlr_call_tool, which reach the plugins' tools.
type HostTool struct {
	Name      string `json:"name"`
	Canonical string `json:"canonical,omitempty"`
	// Web marks web_fetch and web_search, which a session may remove.
	Web bool `json:"web,omitempty"`
}

// ModelRequestInput asks for the model's next message at a revision of the
// session. The transcript is read from the session store.
type ModelRequestInput struct {
	SessionID  string   `json:"session_id"`
	Revision   int      `json:"revision"`
	Model      string   `json:"model"`
	Tools      []string `json:"tools"`
	MaxTokens  int      `json:"max_tokens,omitempty"`
	Stream     bool     `json:"stream"`
	ContextCap int      `json:"context_cap,omitempty"`
	// StepDone offers axlr_step_done for a ceremony's open step.
	StepDone *StepDoneSpec `json:"step_done,omitempty"`
}

// StepDoneSpec selects axlr_step_done's schema: every field of the
// ceremony, or the open step's own under the compact profile.
type StepDoneSpec struct {
	Definition string `json:"definition"`
	// Version of the definition; empty (inputs recorded before versions
	// were named) is 2.0.
	Version string `json:"version,omitempty"`
	Step    string `json:"step"`
	Compact bool   `json:"compact,omitempty"`
	// Published: a person's step, which takes any field the step asks for.
	Published bool `json:"published,omitempty"`
}

// ModelRequestResult is the compact outcome of a model request.
type ModelRequestResult struct {
	// Revision is the log length after the response was appended.
	Revision int `json:"revision"`
	// ContextFull: the transcript is past the context cap and nothing was
	// sent; the execution continues in a successor session.
	ContextFull bool `json:"context_full,omitempty"`
	// Text is the answer, cut to TextLimit bytes (the transcript keeps it
	// whole).
	Text string `json:"text,omitempty"`
	// Reasoning is the readable reasoning the response streamed before its
	// answer, cut to TextLimit bytes.
	Reasoning    string         `json:"reasoning,omitempty"`
	Calls        []ModelCall    `json:"calls,omitempty"`
	FinishReason string         `json:"finish_reason,omitempty"`
	Usage        contract.Usage `json:"usage"`
}

// TextLimit caps the answer text a model request returns to the workflow.
const TextLimit = 16 << 10

// ModelCall is one tool call of a response as workflow code sees it.
type ModelCall struct {
	// Key identifies the call in the session: "<revision>.<index>".
	Key    string `json:"key"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Args are the arguments as the policy sees them, long values cut.
	Args map[string]policy.Value `json:"args,omitempty"`
	// Preview is the arguments object for events, cut to a few KiB.
	Preview json.RawMessage `json:"preview,omitempty"`
	// Invalid is why the call cannot run, found without reading a file
	// (unknown tool, malformed arguments, a limit over its maximum).
	Invalid string `json:"invalid,omitempty"`
	// Names are the tool's other names the policy matches it by: a plugin
	// tool's <plugin>/<tool>, or for axlr_call_tool the tool it calls.
	Names []string `json:"names,omitempty"`
	// Host marks a call of a host tool (web, plugin): it runs as a
	// regular activity, since it reaches the network or a plugin.
	Host bool `json:"host,omitempty"`
}

// ToolCallInput runs one approved call. The arguments are read from the
// transcript.
type ToolCallInput struct {
	SessionID string            `json:"session_id"`
	Root      string            `json:"root"`
	Key       string            `json:"key"`
	CallID    string            `json:"call_id"`
	Tool      string            `json:"tool"`
	Decision  contract.Decision `json:"decision"`
	// Compact applies the compact profile's repairs to local_exec.
	Compact bool `json:"compact,omitempty"`
}

// ToolCallResult is a call's outcome. It names the call, so a local
// activity's marker in history says what ran.
type ToolCallResult struct {
	Revision int                 `json:"revision"`
	CallID   string              `json:"call_id"`
	Tool     string              `json:"tool"`
	Decision contract.Decision   `json:"decision,omitempty"`
	Status   contract.CallStatus `json:"status"`
	// Summary is one line for events and history.
	Summary string `json:"summary,omitempty"`
}

// RecordToolResultInput records the result of a call that did not run.
type RecordToolResultInput struct {
	SessionID string              `json:"session_id"`
	Key       string              `json:"key"`
	CallID    string              `json:"call_id"`
	Tool      string              `json:"tool"`
	Status    contract.CallStatus `json:"status"`
	Decision  contract.Decision   `json:"decision,omitempty"`
	Message   string              `json:"message"`
}

// RecordToolResultResult is the log length after the record, with the
// call it recorded.
type RecordToolResultResult struct {
	Revision int                 `json:"revision"`
	CallID   string              `json:"call_id"`
	Tool     string              `json:"tool"`
	Status   contract.CallStatus `json:"status"`
}

// ContinueSessionInput opens the successor of a session past its context
// cap.
type ContinueSessionInput struct {
	SessionID   string `json:"session_id"`
	Revision    int    `json:"revision"`
	ExecutionID string `json:"execution_id"`
	Model       string `json:"model"`
	ContextCap  int    `json:"context_cap"`
}

// ContinueSessionResult names the successor.
type ContinueSessionResult struct {
	SessionID string `json:"session_id"`
	Revision  int    `json:"revision"`
}

// FinishExecutionInput builds and saves an execution's result.
type FinishExecutionInput struct {
	ExecutionID string          `json:"execution_id"`
	Status      contract.Status `json:"status"`
	Error       string          `json:"error,omitempty"`
	// Sessions spanned; the last is where the execution ended. The answer
	// is its last assistant text after the person's last prompt.
	Sessions  []string                  `json:"sessions"`
	Pending   *PendingRef               `json:"pending,omitempty"`
	ToolCalls []contract.ToolCallRecord `json:"tool_calls"`
	Usage     contract.Usage            `json:"usage"`
	Ceremony  *contract.CeremonyOutcome `json:"ceremony,omitempty"`
	// Mode is the host's work mode as the execution ended, for the
	// result.
	Mode string `json:"mode,omitempty"`
}

// PendingRef names the pending call; its arguments are read from the
// transcript.
type PendingRef struct {
	Session string `json:"session"`
	Key     string `json:"key"`
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
	// Check is a check command waiting for approval: the pending call's
	// arguments.
	Check *ceremonies.CheckCommand `json:"check,omitempty"`
	// Approval is an incident's draft waiting for approval: the pending
	// call's arguments, with the draft's bytes.
	Approval *DraftApproval `json:"approval,omitempty"`
	// Guard is a person's definition's human guard waiting for the
	// person.
	Guard *GuardApproval `json:"guard,omitempty"`
}

// SupportedModes are the modes an execution may ask for: the work modes
// (normal, review, writer, research) and each ceremony's.
var SupportedModes = append([]string{"normal", "review", "writer", "research", ceremonies.ModeCeremony}, ceremonies.Modes()...)

// ceremonyHooks are what the session adds to a ceremony it opens: an
// incident's checks and console steps; nothing to a work mode's.
func (s *sessionRun) ceremonyHooks(definition string) CeremonyHooks {
	if def, ok := ceremonies.ForMode("incident"); ok && definition == def.Name {
		return incidentHooks{d: s.driver}
	}
	return nil
}

// ceremonyMode reports whether a mode runs a ceremony.
func ceremonyMode(mode string) bool {
	_, ok := ceremonies.ForMode(mode)
	return ok
}

// modeNotes are the console notes that tell the model the work mode it is
// in, appended to the prompt when the mode changes: the system prompt
// names nothing that changes, so a provider's prompt cache survives.
var modeNotes = map[policy.Mode]string{
	policy.Normal:   "[AXLR] Work mode normal: the usual tools, as the approval level allows.",
	policy.Review:   "[AXLR] Work mode review: read and report. You cannot change files (the write tools are not offered), and every command asks the person first.",
	policy.Writer:   "[AXLR] Work mode writer: you write documents only (.md, .mdx, .txt, .rst, or a file under docs/); any other write is refused, and every command asks the person first.",
	policy.Research: "[AXLR] Work mode research: find things out and write them down. You write documents only (.md, .mdx, .txt, .rst, or a file under docs/), and every command asks the person first.",
}

// modeNote tells the model its work mode when it changes from the last
// prompt's. A session that never left normal gets no note.
func (s *sessionRun) modeNote(ctx workflow.Context) error {
	mode := policy.WorkMode(s.st.Mode)
	noted := policy.WorkMode(s.st.NotedMode)
	if mode == noted {
		return nil
	}
	s.st.NotedMode = string(mode)
	s.st.ModeNotes++
	return s.turn.AppendConsole(ctx, ActivityAppendNote, fmt.Sprintf("mode:%d:%s", s.st.ModeNotes, mode), modeNotes[mode])
}

// LocalTools are the workspace tools offered to the model.
var LocalTools = []string{"local_read", "local_write", "local_edit", "local_exec", "local_search", "local_list"}

// Session is the session workflow: it runs executions one at a time, waits
// durably for decisions between them, and continues as new between turns
// when Temporal suggests it. It hosts the turn and the ceremony driver.
func Session(ctx workflow.Context, in SessionInput) error {
	s := newSessionRun(in)
	if err := s.registerHandlers(ctx); err != nil {
		return err
	}
	upsertSessions(ctx, s.st.SessionIDs)
	outcomes := workflow.GetSignalChannel(ctx, SignalJobOutcome)
	suggested := func() bool { return s.idle() && workflow.GetInfo(ctx).GetContinueAsNewSuggested() }
	for {
		if err := workflow.Await(ctx, func() bool {
			return s.st.Queued != nil || outcomes.Len() > 0 || suggested()
		}); err != nil {
			return err
		}
		// Outcomes that arrived while an execution ran are kept before the
		// next one begins, so its prompt carries their notes.
		s.receiveOutcomes(ctx, outcomes)
		if q := s.st.Queued; q != nil {
			s.st.Queued = nil
			s.runExecution(ctx, q)
			continue
		}
		if !suggested() {
			continue
		}
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return err
		}
		if s.st.Queued != nil {
			continue
		}
		s.receiveOutcomes(ctx, outcomes)
		st := s.st.carried()
		return workflow.NewContinueAsNewError(ctx, SessionWorkflow, SessionInput{SessionID: in.SessionID, Host: in.Host, State: &st})
	}
}

type sessionRun struct {
	Host
	st SessionState
	// running: an execution runs; cancel stops its turn, and interrupted
	// records why.
	running     bool
	cancel      workflow.CancelFunc
	interrupted string
}

func newSessionRun(in SessionInput) *sessionRun {
	s := &sessionRun{}
	if in.State != nil {
		s.st = *in.State
	} else {
		s.st = SessionState{HostState: newHostState(in.SessionID, "", ""), Defaults: in.Defaults}
	}
	s.Host = newHost(&s.st.HostState, hostOptions{})
	if c := s.st.Ceremony; c.Active() {
		// A run continued as new with its ceremony running.
		s.driver.Attach(s.ceremonyHooks(c.Definition))
	}
	return s
}

func (s *sessionRun) idle() bool { return !s.running && s.st.Queued == nil }

// receiveOutcomes keeps the job outcomes signalled since the last look.
func (s *sessionRun) receiveOutcomes(ctx workflow.Context, ch workflow.ReceiveChannel) {
	for {
		var o JobOutcome
		if !ch.ReceiveAsync(&o) {
			return
		}
		if o.Job == "" {
			workflow.GetLogger(ctx).Warn("job outcome without a job ignored", "status", o.Status)
			continue
		}
		s.st.JobOutcomes = keepOutcome(s.st.JobOutcomes, o)
	}
}

// jobNotes appends to the prompt the note of each kept job outcome no
// prompt has carried yet, oldest first.
func (s *sessionRun) jobNotes(ctx workflow.Context) error {
	if !slices.ContainsFunc(s.st.JobOutcomes, func(o JobOutcomeState) bool { return !o.Noted }) ||
		workflow.GetVersion(ctx, versionJobNotes, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	for i := range s.st.JobOutcomes {
		o := &s.st.JobOutcomes[i]
		if o.Noted {
			continue
		}
		// The count moves only once the note is saved: a retry at the next
		// prompt reuses the key, and the log keeps one note.
		if err := s.turn.AppendConsole(ctx, ActivityAppendNote, fmt.Sprintf("job:%d:%s", s.st.JobNotes+1, o.Job), JobOutcomeNote(o.JobOutcome)); err != nil {
			return fmt.Errorf("append the outcome note of job %s: %w", o.Job, err)
		}
		s.st.JobNotes++
		o.Noted = true
	}
	return nil
}

func (s *sessionRun) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateExecute, s.execute,
		workflow.UpdateHandlerOptions{Validator: s.validateExecute}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateExecute, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecide, s.decide,
		workflow.UpdateHandlerOptions{Validator: s.validateDecide}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateDecide, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateInterrupt, s.interrupt,
		workflow.UpdateHandlerOptions{Validator: s.validateInterrupt}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateInterrupt, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateStopCeremony, s.stopCeremony,
		workflow.UpdateHandlerOptions{Validator: s.validateStopCeremony}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateStopCeremony, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateCloseSession, s.closeSession,
		workflow.UpdateHandlerOptions{Validator: s.validateClose}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateCloseSession, err)
	}
	if err := workflow.SetQueryHandler(ctx, QuerySessionRecord, func() (SessionRecord, error) { return s.st.Record, nil }); err != nil {
		return fmt.Errorf("register %s: %w", QuerySessionRecord, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, s.progress); err != nil {
		return fmt.Errorf("register %s: %w", QueryProgress, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryResult, s.result); err != nil {
		return fmt.Errorf("register %s: %w", QueryResult, err)
	}
	if err := s.registerAPI(ctx); err != nil {
		return fmt.Errorf("register the service API's queries: %w", err)
	}
	return nil
}

func (s *sessionRun) applied(id string) bool { return slices.Contains(s.st.Applied, id) }

func (s *sessionRun) remember(id string) {
	s.st.Applied = append(s.st.Applied, id)
	if len(s.st.Applied) > maxApplied {
		s.st.Applied = slices.Clone(s.st.Applied[len(s.st.Applied)-maxApplied:])
	}
}

func (s *sessionRun) busyError() error {
	if s.running || s.st.Queued != nil {
		return fmt.Errorf("session %s is running execution %s: wait for it to end or interrupt it", s.st.Current(), s.st.Execution.ID)
	}
	return nil
}

func (s *sessionRun) validateExecute(ctx workflow.Context, req ExecuteRequest) error {
	if s.applied(req.ExecutionID) {
		return s.sameRequest(req.ExecutionID, req.RequestDigest)
	}
	if strings.TrimSpace(req.ExecutionID) == "" {
		return errors.New("execute: execution_id is empty")
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return errors.New("execute: the prompt is empty")
	}
	if req.Mode != "" && !slices.Contains(SupportedModes, req.Mode) {
		return fmt.Errorf("execute: unknown mode %q: this axlrd supports %s", req.Mode, strings.Join(SupportedModes, ", "))
	}
	if _, err := policy.ParseApproval(string(req.Approval)); err != nil {
		return fmt.Errorf("execute: %w", err)
	}
	if req.Policy != nil {
		if err := req.Policy.Validate(); err != nil {
			return fmt.Errorf("execute: %w", err)
		}
	}
	if req.Root != "" && !strings.HasPrefix(req.Root, "/") {
		return fmt.Errorf("execute: root %q is not an absolute path", req.Root)
	}
	if req.Root != "" && s.st.Root != "" && req.Root != s.st.Root {
		return fmt.Errorf("execute: session %s works in %s, not %s", s.st.Current(), s.st.Root, req.Root)
	}
	if req.Root == "" && s.st.Root == "" {
		return errors.New("execute: a new session needs its workspace root")
	}
	if err := s.busyError(); err != nil {
		return err
	}
	if p := s.st.Pending; p != nil {
		return fmt.Errorf("session %s has call %s (%s) waiting for a decision: decide it first with --decide approve|deny", s.st.Current(), p.Call.CallID, p.Call.Tool)
	}
	if c := s.st.Ceremony; c.Active() && req.Mode != "" && req.Mode != "normal" && req.Mode != c.Mode {
		return fmt.Errorf("session %s runs ceremony %s (%s mode, step %s): send a prompt without --mode to continue it", s.st.Current(), c.InstanceID, c.Mode, c.Step)
	}
	return s.validateChosen(req)
}

// validateChosen checks the person's definition a prompt names: only in
// ceremony mode, a name axlrd's own do not take, and none other than the
// one that runs. Ceremony mode without one needs the session's.
func (s *sessionRun) validateChosen(req ExecuteRequest) error {
	if req.Ceremony == "" {
		if req.Mode == ceremonies.ModeCeremony && (s.st.Chosen == "" || s.st.Mode != ceremonies.ModeCeremony) && !s.st.Ceremony.Active() {
			return errors.New("execute: ceremony mode runs a definition you published: name it (--ceremony NAME[@VERSION], /ceremony NAME)")
		}
		return nil
	}
	if req.Mode != ceremonies.ModeCeremony {
		return fmt.Errorf("execute: a definition (%s) runs in ceremony mode, not %q", req.Ceremony, cmp.Or(req.Mode, "the session's"))
	}
	name, version, err := ceremonies.ParseRef(req.Ceremony)
	if err != nil {
		return fmt.Errorf("execute: %w", err)
	}
	if c := s.st.Ceremony; c.Active() && (name != c.Definition || version != "" && version != c.Version) {
		return fmt.Errorf("session %s runs ceremony %s %s (instance %s, step %s): finish or stop it (--stop-ceremony) before %s", s.st.Current(), c.Definition, c.Version, c.InstanceID, cmp.Or(c.Step, "none open"), req.Ceremony)
	}
	return nil
}

func (s *sessionRun) execute(ctx workflow.Context, req ExecuteRequest) (Accepted, error) {
	return s.admit(req.ExecutionID, req.RequestDigest, &queuedRequest{Execute: &req}), nil
}

// admit queues an execution once per id: a request whose id was applied
// before (a retried click, across continue-as-new too) gets the same
// answer and runs nothing.
func (s *sessionRun) admit(id, digest string, q *queuedRequest) Accepted {
	if !s.applied(id) {
		s.remember(id)
		s.st.Queued = q
		s.st.Execution = &ExecutionState{ID: id, Sessions: []string{s.st.Current()}, EventFrom: s.st.cursor(), Digest: digest}
	}
	return Accepted{ExecutionID: id, SessionID: s.st.Current()}
}

func (s *sessionRun) validateDecide(ctx workflow.Context, req DecideRequest) error {
	if s.applied(req.ExecutionID) {
		return s.sameRequest(req.ExecutionID, req.RequestDigest)
	}
	if strings.TrimSpace(req.ExecutionID) == "" {
		return errors.New("decide: execution_id is empty")
	}
	if req.Decision != contract.Approve && req.Decision != contract.Deny {
		return fmt.Errorf("decide: unknown decision %q: use approve or deny", req.Decision)
	}
	if err := s.busyError(); err != nil {
		return err
	}
	p := s.st.Pending
	if req.CallID != "" && (p == nil || req.CallID != p.Call.CallID) {
		for i := len(s.st.Calls) - 1; i >= 0; i-- {
			if c := s.st.Calls[i]; c.CallID == req.CallID && c.Status != contract.CallPending {
				how := string(c.Decision)
				if how == "" {
					how = string(c.Status)
				}
				return fmt.Errorf("decide: call %s was already decided (%s)", req.CallID, how)
			}
		}
		if p == nil {
			return fmt.Errorf("decide: no call %s waits for a decision in session %s", req.CallID, s.st.Current())
		}
		return fmt.Errorf("decide: no call %s waits for a decision in session %s; the pending call is %s (%s)", req.CallID, s.st.Current(), p.Call.CallID, pendingTool(p))
	}
	if p == nil {
		return fmt.Errorf("decide: no call waits for a decision in session %s", s.st.Current())
	}
	if req.Revision != 0 && req.Revision != s.st.Revision {
		return fmt.Errorf("decide: session %s is at revision %d, not %d; call %s (%s) waits", s.st.Current(), s.st.Revision, req.Revision, p.Call.CallID, pendingTool(p))
	}
	if a := p.Approval; a != nil {
		return validateDraftDecision(a, req)
	}
	if p.Guard != nil {
		// A guard is granted or declined as it is: no policy decides it.
		return nil
	}
	if req.Policy != nil {
		if err := req.Policy.Validate(); err != nil {
			return fmt.Errorf("decide: %w", err)
		}
	}
	if req.Decision == contract.Approve {
		pol := s.st.Policy
		if req.Policy != nil {
			pol = req.Policy
		}
		call := policy.Call{Tool: p.Call.Tool, Names: p.Call.Names, Args: p.Call.Args}
		what := p.Call.Tool
		if p.Check != nil {
			// A check command is a local command to the policy.
			call, what = CheckCall(*p.Check), "check command "+p.Check.String()
		}
		if forbidden, reason := policy.Forbidden(pol, call); forbidden {
			return fmt.Errorf("decide: %s is forbidden by the execution's policy: %s", what, reason)
		}
	}
	return nil
}

// validateDraftDecision refuses an approval of any draft but the one that
// waits, and a return without its reason.
func validateDraftDecision(a *DraftApproval, req DecideRequest) error {
	switch {
	case req.Decision == contract.Approve && req.Digest == "":
		return fmt.Errorf("decide: an approval names the digest it approves: draft %s waits with sha256 %s", a.Path, a.Digest)
	case req.Decision == contract.Approve && req.Digest != a.Digest:
		return fmt.Errorf("decide: draft %s waits with sha256 %s, not %s: approve the bytes that wait", a.Path, a.Digest, req.Digest)
	case req.Decision == contract.Deny && strings.TrimSpace(req.Reason) == "":
		return fmt.Errorf("decide: a returned draft needs its reason (--reason), for the author to revise against")
	}
	return nil
}

// pendingTool names what a pending call waits on: its tool, or the check
// command a hand-back proposed.
func pendingTool(p *PendingState) string {
	if p.Check != nil {
		return CheckTool + " " + p.Check.String()
	}
	return p.Call.Tool
}

func (s *sessionRun) decide(ctx workflow.Context, req DecideRequest) (Accepted, error) {
	return s.admit(req.ExecutionID, req.RequestDigest, &queuedRequest{Decide: &req}), nil
}

func (s *sessionRun) validateStopCeremony(ctx workflow.Context, req StopCeremonyRequest) error {
	if s.applied(req.ExecutionID) {
		return nil
	}
	if strings.TrimSpace(req.ExecutionID) == "" {
		return errors.New("stop ceremony: execution_id is empty")
	}
	c := s.st.Ceremony
	if !c.Active() {
		if c != nil && req.InstanceID == c.InstanceID {
			return fmt.Errorf("stop ceremony: ceremony %s already ended (%s)", c.InstanceID, cmp.Or(c.Stopped, c.State))
		}
		return fmt.Errorf("stop ceremony: session %s runs no ceremony", s.st.Current())
	}
	if req.InstanceID != "" && req.InstanceID != c.InstanceID {
		return fmt.Errorf("stop ceremony: ceremony %s is not the one running in session %s; %s is", req.InstanceID, s.st.Current(), c.InstanceID)
	}
	if err := s.busyError(); err != nil {
		return err
	}
	if p := s.st.Pending; p != nil && p.Check == nil && p.Approval == nil && p.Guard == nil {
		return fmt.Errorf("stop ceremony: session %s has call %s (%s) waiting for a decision: decide it first", s.st.Current(), p.Call.CallID, p.Call.Tool)
	}
	return nil
}

func (s *sessionRun) stopCeremony(ctx workflow.Context, req StopCeremonyRequest) (Accepted, error) {
	return s.admit(req.ExecutionID, "", &queuedRequest{Stop: &req}), nil
}

// stop runs the person's stop: a check waiting for approval is recorded as
// not approved, and the ceremony ends without a model request.
func (s *sessionRun) stop(ctx workflow.Context, req *StopCeremonyRequest) error {
	s.turn.emit(contract.Event{Type: contract.EventSession, SessionID: s.st.Current()})
	if p := s.st.Pending; p != nil && (p.Approval != nil || p.Guard != nil) {
		// A console step's or a guard's wait: no call of the model's to
		// answer.
		s.st.Pending = nil
		s.turn.SetCall(ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: p.Call.Tool}, contract.Deny, contract.CallDenied)
		if s.st.Ceremony != nil {
			s.st.Ceremony.Guard = ""
		}
	} else if p != nil {
		s.st.Pending = nil
		s.turn.SetCall(ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: CheckTool}, contract.Deny, contract.CallDenied)
		if err := s.turn.Record(ctx, p.Call, contract.CallDenied, contract.Deny, stepReply{Step: s.st.Ceremony.Step, Error: "the person stopped the ceremony before approving the check command"}.text()); err != nil {
			return err
		}
	}
	return s.driver.StopByPerson(ctx, req.Reason, req.ExecutionID)
}

func (s *sessionRun) validateInterrupt(ctx workflow.Context, req InterruptRequest) error {
	if !s.running && s.st.Queued == nil {
		return fmt.Errorf("interrupt: session %s runs no execution", s.st.Current())
	}
	if req.ExecutionID != "" && req.ExecutionID != s.st.Execution.ID {
		return fmt.Errorf("interrupt: execution %s is not running in session %s; execution %s is", req.ExecutionID, s.st.Current(), s.st.Execution.ID)
	}
	return nil
}

func (s *sessionRun) interrupt(ctx workflow.Context, req InterruptRequest) (Accepted, error) {
	reason := req.Reason
	if reason == "" {
		reason = "interrupted by the person"
	}
	s.interrupted = reason
	if s.cancel != nil {
		s.cancel()
	}
	return Accepted{ExecutionID: s.st.Execution.ID, SessionID: s.st.Current()}, nil
}

func (s *sessionRun) progress(q ProgressQuery) (Progress, error) {
	ex := s.st.Execution
	if ex == nil {
		return Progress{}, refuse("session %s has run no execution", s.st.Current())
	}
	if q.ExecutionID != "" && q.ExecutionID != ex.ID {
		for _, r := range s.st.Recent {
			if r.ID == q.ExecutionID {
				return Progress{ExecutionID: r.ID, SessionID: r.Result.SessionID, Next: s.st.cursor(), Result: s.st.resultOf(r)}, nil
			}
		}
		return Progress{}, refuse("execution %s is not one of the recent executions of session %s", q.ExecutionID, s.st.Current())
	}
	return s.st.page(ex, s.st.Current(), q.After), nil
}

func (s *sessionRun) result() (*contract.Result, error) {
	if len(s.st.Recent) == 0 {
		return nil, refuse("session %s has no execution result yet", s.st.Current())
	}
	return s.st.resultOf(s.st.Recent[len(s.st.Recent)-1]), nil
}

// runExecution runs one admitted request to its result.
func (s *sessionRun) runExecution(ctx workflow.Context, q *queuedRequest) {
	s.running = true
	turnCtx, cancel := workflow.WithCancel(ctx)
	s.cancel = cancel
	if s.interrupted != "" {
		// Interrupted while it waited to start.
		cancel()
	}
	defer func() {
		s.running = false
		s.cancel = nil
		s.interrupted = ""
	}()
	ex := s.st.Execution
	var err error
	switch {
	case q.Execute != nil:
		err = s.begin(turnCtx, q.Execute)
	case q.Decide != nil:
		err = s.resume(turnCtx, q.Decide)
	case q.Stop != nil:
		err = s.stop(turnCtx, q.Stop)
	case q.Close != nil:
		err = s.close(turnCtx, q.Close)
	default:
		err = errors.New("empty request")
	}
	if rerr := s.driver.RecordOutcome(ctx); rerr != nil {
		workflow.GetLogger(ctx).Warn("the ceremony's outcome was not recorded in memory", "session", s.st.Current(), "error", rerr)
	}
	status, msg := endedAs(err, s.interrupted)
	s.finish(ctx, status, msg)
	if q.Execute != nil || q.Decide != nil {
		s.recordTurn(ctx, ex, s.st.Mode)
		s.endTurn(ctx, ex, false, "")
	}
	if q.Close != nil && s.st.Record.Claimed {
		s.endTurn(ctx, ex, true, s.closingSummary(q.Close.Reason))
	}
	s.st.Recent = append(s.st.Recent, *ex)
	if len(s.st.Recent) > maxRecent {
		s.st.Recent = slices.Clone(s.st.Recent[len(s.st.Recent)-maxRecent:])
	}
}

// begin runs a prompt: it takes the request's settings, begins the turn,
// starts or continues the ceremony the mode asks for, and runs the turn.
func (s *sessionRun) begin(ctx workflow.Context, req *ExecuteRequest) error {
	if req.Policy != nil {
		s.st.Policy = req.Policy
	}
	s.st.Approval = req.Approval
	// An empty mode keeps the session's. No recorded history holds one
	// (the validator refused it until empty meant "as it stands"), so a
	// replay sets the mode each recorded request named, as it did: no
	// version guard is needed.
	mode := cmp.Or(req.Mode, s.st.Mode, "normal")
	s.st.Mode = mode
	if req.Ceremony != "" {
		s.st.Chosen = req.Ceremony
	}
	if mode != ceremonies.ModeCeremony {
		s.st.Chosen = ""
	}
	if req.Web != nil {
		s.st.NoWeb = !*req.Web
	}
	if c := s.st.Ceremony; c.Active() {
		s.st.Mode = c.Mode
	}
	if req.Root != "" {
		s.st.Root = req.Root
	}
	if err := s.turn.Begin(ctx, BeginTurnInput{
		SessionID:   s.st.Current(),
		ExecutionID: req.ExecutionID,
		Prompt:      req.Prompt,
		Model:       cmp.Or(req.Model, s.st.Model),
		Root:        s.st.Root,
		Mode:        mode,
	}); err != nil {
		return err
	}
	if req.Prompt != "" {
		s.claimTurn(ctx, req.ExecutionID)
	}
	if err := s.driver.StopNote(ctx); err != nil {
		return err
	}
	if err := s.modeNote(ctx); err != nil {
		return err
	}
	if err := s.jobNotes(ctx); err != nil {
		return err
	}
	switch {
	case s.driver.Active():
		// Any prompt continues the open step.
		if err := s.driver.Continue(ctx, req.ExecutionID); err != nil {
			return err
		}
	case ceremonyMode(s.st.Mode):
		def, _ := ceremonies.ForMode(s.st.Mode)
		mem, recall, err := s.wakeCeremony(ctx, def.Name, req.Prompt)
		if err != nil {
			return err
		}
		if err := s.driver.Open(ctx, def.Name, def.Version, Opening{Brief: req.Prompt, Execution: req.ExecutionID, Memory: mem, Recall: recall}, s.ceremonyHooks(def.Name)); err != nil {
			return err
		}
	case s.st.Mode == ceremonies.ModeCeremony:
		name, version, _ := ceremonies.ParseRef(s.st.Chosen)
		mem, recall, err := s.wakeCeremony(ctx, name, req.Prompt)
		if err != nil {
			return err
		}
		if err := s.driver.OpenPublished(ctx, name, version, Opening{Brief: req.Prompt, Execution: req.ExecutionID, Memory: mem, Recall: recall}); err != nil {
			// Nothing started: the session is back in normal mode.
			s.st.Mode, s.st.Chosen = "normal", ""
			return err
		}
	}
	return s.turn.Run(ctx, nil)
}

// resume runs a decision on the pending call, then the rest of the turn.
func (s *sessionRun) resume(ctx workflow.Context, req *DecideRequest) error {
	p := s.st.Pending
	s.st.Pending = nil
	if req.Policy != nil {
		s.st.Policy = req.Policy
	}
	s.turn.emit(contract.Event{Type: contract.EventSession, SessionID: s.st.Current()})
	s.driver.Resumed(req.ExecutionID)
	if err := s.decidePending(ctx, p, req); err != nil {
		return err
	}
	s.st.decidedBy(p.Call.CallID, req.By)
	return s.turn.Run(ctx, p.Queue)
}

// carried is the state the next run starts from, within MaxCarriedBytes:
// without the event journal (the session is idle, and the last
// execution's watchers read its result from Recent), and without the
// tool calls of the older recent results, which the session's calls and
// log hold.
func (s *SessionState) carried() SessionState {
	st := *s
	st.EventBase = st.cursor()
	st.Events = nil
	st.Recent = slices.Clone(st.Recent)
	for i := range st.Recent[:max(len(st.Recent)-1, 0)] {
		if r := st.Recent[i].Result; r != nil && r.ToolCalls != nil {
			lean := *r
			lean.ToolCalls = nil
			st.Recent[i].Result = &lean
		}
	}
	st.Calls = slices.Clone(st.Calls)
	for len(st.Calls) > 0 && carriedSize(&st) > MaxCarriedBytes {
		st.Calls = st.Calls[max(len(st.Calls)/8, 1):]
	}
	return st
}

// carriedSize is the encoded size of a state.
func carriedSize(st *SessionState) int {
	b, err := json.Marshal(st)
	if err != nil {
		return 0
	}
	return len(b)
}

// resultOf is a recent execution's result; one carried over
// continue-as-new without its tool calls gets the session's calls of the
// sessions it spanned, as they stand.
func (s *SessionState) resultOf(ex ExecutionState) *contract.Result {
	r := ex.Result
	if r == nil || r.ToolCalls != nil {
		return r
	}
	full := *r
	full.ToolCalls = []contract.ToolCallRecord{}
	for _, c := range s.Calls {
		if slices.Contains(r.Sessions, c.Session) {
			full.ToolCalls = append(full.ToolCalls, contract.ToolCallRecord{CallID: c.CallID, Tool: c.Tool, Decision: c.Decision, Status: c.Status, DecidedBy: c.DecidedBy})
		}
	}
	return &full
}
