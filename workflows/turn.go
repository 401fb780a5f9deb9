package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// The turn is the model/tool loop as a component: it asks the model, runs
// or records each call the policy decides, and asks again until the model
// answers without calls, a call waits for a decision, or an error ends it.
// A host workflow (the session, the task) keeps its state, journals its
// events and plugs a component into its hooks (the ceremony driver); the
// turn knows nothing of what the hooks do.

// errPending ends a turn that waits for a decision.
var errPending = errors.New("a call waits for a decision")

// Activity options of the turn. Every activity runs on the workflow's own
// task queue: the session store and the workspace are on this host.
var (
	// ModelRequestOptions: a provider can take minutes; heartbeats every
	// few seconds let a dead worker be noticed in HeartbeatTimeout.
	// Transient provider errors are retried; a rejection is not.
	ModelRequestOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 15 * time.Minute,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        10,
			NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeProviderRejected, ErrTypeSessionDiverged},
		},
	}
	// ExecOptions: local_exec runs up to five minutes.
	ExecOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 6 * time.Minute,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeSessionDiverged},
		},
	}
	// LocalOptions: short workspace and session-store work runs as local
	// activities, about 2 ms each instead of a task round trip.
	LocalOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        100 * time.Millisecond,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{ErrTypeBadRequest, ErrTypeSessionDiverged},
		},
	}
)

// TurnState is the conversation a turn works on: the sessions, the
// workspace, the model, the decisions it takes calls with, where the log
// stands, the calls and the one that waits. Its host carries it across
// executions and continue-as-new; its fields sit flat in the host's state.
type TurnState struct {
	// SessionIDs lists every session of this workflow: the first and each
	// successor, in order. Current is the last.
	SessionIDs []string        `json:"session_ids"`
	Root       string          `json:"root,omitempty"`
	Model      string          `json:"model,omitempty"`
	Approval   policy.Approval `json:"approval,omitempty"`
	Policy     *policy.Policy  `json:"policy,omitempty"`
	// Revision is the length of the current session's log.
	Revision int `json:"revision"`
	// Ledgers holds each session's usage, in SessionIDs order.
	Ledgers []contract.Usage `json:"ledgers"`
	Calls   []CallState      `json:"calls,omitempty"`
	Pending *PendingState    `json:"pending,omitempty"`
	// Snapshot is the settings snapshot of the last turn, reused when a
	// decision continues it.
	Snapshot *BeginTurnResult `json:"turn,omitempty"`
	// NoWeb removes the web tools from this session's offer.
	NoWeb bool `json:"no_web,omitempty"`
}

// newTurnState is the state of a session that has not started yet.
func newTurnState(sessionID string) TurnState {
	return TurnState{SessionIDs: []string{sessionID}, Ledgers: []contract.Usage{{}}}
}

// Current is the session the workflow works in now.
func (s *TurnState) Current() string { return s.SessionIDs[len(s.SessionIDs)-1] }

// CallState is one tool call of the session.
type CallState struct {
	Session  string              `json:"session"`
	Key      string              `json:"key"`
	CallID   string              `json:"call_id"`
	Tool     string              `json:"tool"`
	Decision contract.Decision   `json:"decision,omitempty"`
	Status   contract.CallStatus `json:"status"`
	// DecidedBy is the identity that decided the call through the
	// service API.
	DecidedBy string `json:"decided_by,omitempty"`
}

// PendingState is the call waiting for a decision, with the calls of the
// same response that follow it.
type PendingState struct {
	Call  ModelCall   `json:"call"`
	Queue []ModelCall `json:"queue,omitempty"`
	// Reason is why the call asks.
	Reason string `json:"reason"`
	// Check, when set, makes this the approval of a ceremony's check
	// command that the axlr_step_done call handed back.
	Check *ceremonies.CheckCommand `json:"check,omitempty"`
	// Approval, when set, makes this an incident's reviewed draft waiting
	// for the person: a console step's wait, with no call of the model's.
	Approval *DraftApproval `json:"approval,omitempty"`
	// Guard, when set, makes this a human guard of a person's definition
	// waiting for the person, with no call of the model's.
	Guard *GuardApproval `json:"guard,omitempty"`
}

// ExecutionState is one execution of a workflow.
type ExecutionState struct {
	ID string `json:"id"`
	// Sessions spanned, first to last.
	Sessions []string `json:"sessions"`
	// EventFrom is the cursor of the execution's first event.
	EventFrom int `json:"event_from"`
	// Digest is the digest of the request that started it (its
	// RequestDigest), for the service API's idempotency.
	Digest string           `json:"digest,omitempty"`
	Result *contract.Result `json:"result,omitempty"`
}

// Offer is what the next model request offers the model, and how the calls
// it answers with run.
type Offer struct {
	Tools []string
	// StepDone selects axlr_step_done's schema when it is offered.
	StepDone *StepDoneSpec
	// Compact applies the compact profile's repairs to local_exec calls.
	Compact bool
}

// TurnHooks are where a component plugs into a turn: which tools are
// offered, what happens before each request, on each call, and on an
// answer. The ceremony driver is one.
type TurnHooks interface {
	// Offer adjusts what the next request offers, given the local tools
	// the policy offers.
	Offer(tools []string) Offer
	// BeforeRequest runs before each model request; an error ends the
	// turn.
	BeforeRequest(ctx workflow.Context) error
	// OnCall sees each call first, after its tool.requested event, and
	// reports whether it took the call (ran or recorded it); rest are the
	// calls of the same response that follow it.
	OnCall(ctx workflow.Context, c ModelCall, rest []ModelCall) (bool, error)
	// OnAnswer sees an answer without calls and reports whether the turn
	// goes on (the hook gave the model something more to read).
	OnAnswer(ctx workflow.Context, text string) (bool, error)
}

// Turn runs an execution's model/tool loop over a TurnState.
type Turn struct {
	// st is the host's state: the turn's, the journal, the execution, and
	// the mode, whose work mode (review, writer, research) decides calls
	// with the policy; a ceremony's mode works as normal.
	st    *HostState
	hooks TurnHooks
}

// workMode is the work mode the turn decides with.
func (t *Turn) workMode() policy.Mode { return policy.WorkMode(t.st.Mode) }

// Current is the session the turn works in now.
func (t *Turn) Current() string { return t.st.Current() }

func (t *Turn) emit(ev contract.Event) { t.st.emit(ev) }

// Begin opens the session if needed, appends the prompt (none for a
// decision) and takes the settings snapshot the turn decides with.
func (t *Turn) Begin(ctx workflow.Context, in BeginTurnInput) error {
	var begin BeginTurnResult
	if err := executeLocal(ctx, LocalOptions, ActivityBeginTurn, in).Get(ctx, &begin); err != nil {
		return fmt.Errorf("begin turn: %w", err)
	}
	t.st.Snapshot = &begin
	t.st.Model = begin.Model
	t.st.Root = begin.Root
	t.st.Revision = begin.Revision
	t.emit(contract.Event{Type: contract.EventSession, SessionID: t.Current()})
	return nil
}

// Decide applies the person's decision on a pending tool call: an
// approved call runs, a denied one is recorded for the model.
func (t *Turn) Decide(ctx workflow.Context, p *PendingState, req *DecideRequest) error {
	if req.Decision == contract.Approve {
		return t.runTool(ctx, p.Call, contract.Approve)
	}
	msg := "denied by the person"
	if req.Reason != "" {
		msg += ": " + req.Reason
	}
	return t.Record(ctx, p.Call, contract.CallDenied, contract.Deny, msg)
}

// Run handles the calls of a response, then asks the model again, until
// the model answers without calls.
func (t *Turn) Run(ctx workflow.Context, queue []ModelCall) error {
	requests := 0
	for {
		for i, c := range queue {
			if err := t.handleCall(ctx, c, queue[i+1:]); err != nil {
				return err
			}
		}
		if requests >= MaxRequestsPerTurn {
			return fmt.Errorf("the turn made %d model requests without an answer (the limit per turn)", MaxRequestsPerTurn)
		}
		if err := t.hooks.BeforeRequest(ctx); err != nil {
			return err
		}
		res, err := t.modelRequest(ctx)
		if err != nil {
			return err
		}
		if res.ContextFull {
			if err := t.continueSession(ctx); err != nil {
				return err
			}
			queue = nil
			continue
		}
		requests++
		t.emitStream(res)
		if len(res.Calls) == 0 {
			more, err := t.hooks.OnAnswer(ctx, res.Text)
			if err != nil || !more {
				return err
			}
			queue = nil
			continue
		}
		queue = res.Calls
	}
}

// webTool reports whether a tool is one of the host's web tools.
func (t *Turn) webTool(name string) bool {
	snap := t.st.Snapshot
	return snap != nil && slices.ContainsFunc(snap.HostTools, func(h HostTool) bool { return h.Web && h.Name == name })
}

// emitStream journals what a response streamed, in the order it streamed:
// its reasoning, then its answer, each a line per event. They are written
// once, from the activity's recorded result, so a restart never repeats or
// reorders them.
func (t *Turn) emitStream(res ModelRequestResult) {
	for _, line := range streamLines(res.Reasoning) {
		t.emit(contract.Event{Type: contract.EventReasoning, SessionID: t.Current(), Text: line})
	}
	for _, line := range streamLines(res.Text) {
		t.emit(contract.Event{Type: contract.EventText, SessionID: t.Current(), Text: line})
	}
}

// MaxStreamLine bounds one text or reasoning event; a longer line is cut
// into several.
const MaxStreamLine = 4 << 10

// streamLines cuts streamed text into the lines it arrived as, each with
// its newline, none over MaxStreamLine bytes (cut at a character
// boundary). Joined, they are the text.
func streamLines(s string) []string {
	var out []string
	for s != "" {
		n := len(s)
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			n = i + 1
		}
		if n > MaxStreamLine {
			n = MaxStreamLine
			for n > 0 && !utf8.RuneStart(s[n]) {
				n--
			}
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// offer is what the next request offers: the local tools the policy
// offers, adjusted by the hooks.
func (t *Turn) offer() Offer {
	var tools []string
	for _, name := range LocalTools {
		if policy.Offered(t.st.Policy, name) && policy.OfferedInMode(t.workMode(), name) {
			tools = append(tools, name)
		}
	}
	if snap := t.st.Snapshot; snap != nil {
		for _, h := range snap.HostTools {
			if h.Web && t.st.NoWeb || JobRequestTool(h.Name) && jobMode(t.st.Mode) || h.Name == RememberTool && !modelWritesMemory(t.st.Mode) {
				continue
			}
			var names []string
			if h.Canonical != "" {
				names = []string{h.Canonical}
			}
			if policy.Offered(t.st.Policy, h.Name, names...) {
				tools = append(tools, h.Name)
			}
		}
	}
	return t.hooks.Offer(tools)
}

func (t *Turn) modelRequest(ctx workflow.Context) (ModelRequestResult, error) {
	snap := t.st.Snapshot
	o := t.offer()
	var res ModelRequestResult
	err := executeActivity(ctx, ModelRequestOptions, ActivityModelRequest, ModelRequestInput{
		SessionID:  t.Current(),
		Revision:   t.st.Revision,
		Model:      snap.Model,
		Tools:      o.Tools,
		MaxTokens:  snap.MaxTokens,
		Stream:     snap.Stream,
		ContextCap: snap.ContextCap,
		StepDone:   o.StepDone,
	}, &res)
	if err != nil {
		return res, fmt.Errorf("model request: %w", err)
	}
	t.st.Revision = res.Revision
	if !res.ContextFull {
		t.st.Ledgers[len(t.st.Ledgers)-1].Add(res.Usage)
	}
	return res, nil
}

func (t *Turn) continueSession(ctx workflow.Context) error {
	from := t.Current()
	var res ContinueSessionResult
	err := executeLocal(ctx, LocalOptions, ActivityContinueSession, ContinueSessionInput{
		SessionID:   from,
		Revision:    t.st.Revision,
		ExecutionID: t.st.Execution.ID,
		Model:       t.st.Snapshot.Model,
		ContextCap:  t.st.Snapshot.ContextCap,
	}).Get(ctx, &res)
	if err != nil {
		return fmt.Errorf("continue session %s: %w", from, err)
	}
	t.st.SessionIDs = append(t.st.SessionIDs, res.SessionID)
	t.st.Ledgers = append(t.st.Ledgers, contract.Usage{})
	t.st.Revision = res.Revision
	t.st.Execution.Sessions = append(t.st.Execution.Sessions, res.SessionID)
	upsertSessions(ctx, t.st.SessionIDs)
	t.emit(contract.Event{Type: contract.EventSessionContinued, From: from, SessionID: res.SessionID})
	t.emit(contract.Event{Type: contract.EventSession, SessionID: res.SessionID})
	return nil
}

// upsertSessions lists the workflow's sessions in its search attribute, so
// a successor's id finds the workflow.
func upsertSessions(ctx workflow.Context, ids []string) {
	if err := workflow.UpsertTypedSearchAttributes(ctx,
		temporal.NewSearchAttributeKeyKeywordList(SearchAttributeSessions).ValueSet(ids)); err != nil {
		workflow.GetLogger(ctx).Warn("search attribute not set", "error", err)
	}
}

// handleCall decides one call and runs or records it. It returns errPending
// when the call waits for a decision; rest are the calls of the same
// response that follow it.
func (t *Turn) handleCall(ctx workflow.Context, c ModelCall, rest []ModelCall) error {
	t.emit(contract.Event{Type: contract.EventToolRequested, SessionID: t.Current(), CallID: c.CallID, Tool: c.Tool, Arguments: c.Preview})
	if took, err := t.hooks.OnCall(ctx, c, rest); took || err != nil {
		return err
	}
	if c.Invalid != "" {
		return t.Record(ctx, c, contract.CallFailed, "", c.Invalid)
	}
	if c.Host && t.st.NoWeb && t.webTool(c.Tool) {
		return t.Record(ctx, c, contract.CallFailed, "", c.Tool+" is not offered in this session: the web tools were removed from it")
	}
	if c.Tool == RememberTool && !modelWritesMemory(t.st.Mode) {
		return t.Record(ctx, c, contract.CallForbidden, "", fmt.Sprintf("refused by the work mode: in %s mode axlr records memory itself, and the model may not write it", t.st.Mode))
	}
	call := policy.Call{Tool: c.Tool, Names: c.Names, Args: c.Args}
	if c.Host && JobRequestTool(c.Tool) {
		// A request asks nothing of the person (the job's check command and
		// merge do); only the execution's policy may refuse it.
		if forbidden, reason := policy.Forbidden(t.st.Policy, call); forbidden {
			return t.Record(ctx, c, contract.CallForbidden, "", "forbidden by the execution's policy: "+reason)
		}
		return t.runTool(ctx, c, contract.AutoApprove)
	}
	d := policy.Decide(policy.Input{
		Policy:   t.st.Policy,
		Approval: t.st.Approval,
		Settings: t.st.Snapshot.Settings,
		Mode:     t.workMode(),
		Call:     call,
	})
	switch d.Verdict {
	case policy.Forbid:
		if forbidden, _ := policy.ModeForbidden(t.workMode(), call); forbidden && !policyForbids(t.st.Policy, call) {
			return t.Record(ctx, c, contract.CallForbidden, "", "refused by the work mode: "+d.Reason)
		}
		return t.Record(ctx, c, contract.CallForbidden, "", "forbidden by the execution's policy: "+d.Reason)
	case policy.Ask:
		return t.Wait(PendingState{Call: c, Queue: slices.Clone(rest), Reason: d.Reason}, c.Tool, c.Preview)
	}
	return t.runTool(ctx, c, contract.AutoApprove)
}

func policyForbids(p *policy.Policy, c policy.Call) bool {
	forbidden, _ := policy.Forbidden(p, c)
	return forbidden
}

// Wait makes a call wait for the person's decision: the turn ends with
// errPending, the call (shown as tool, with args) pending.
func (t *Turn) Wait(p PendingState, tool string, args []byte) error {
	t.st.Pending = &p
	t.SetCall(ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: tool}, "", contract.CallPending)
	t.emit(contract.Event{Type: contract.EventDecisionRequired, SessionID: t.Current(), CallID: p.Call.CallID, Tool: tool, Arguments: args, Reason: p.Reason})
	return errPending
}

// runTool runs an approved call: a local activity for the short workspace
// tools, a regular heartbeating activity for local_exec.
func (t *Turn) runTool(ctx workflow.Context, c ModelCall, decision contract.Decision) error {
	idx := t.SetCall(c, decision, contract.CallPending)
	in := ToolCallInput{SessionID: t.Current(), Root: t.st.Root, Key: c.Key, CallID: c.CallID, Tool: c.Tool, Decision: decision, Compact: t.offer().Compact}
	var res ToolCallResult
	var err error
	switch {
	case c.Host && JobRequestTool(c.Tool):
		err = executeActivity(ctx, JobRequestOptions, ActivityRequestJob, JobRequestInput{
			SessionID: in.SessionID, Sessions: slices.Clone(t.st.SessionIDs), Key: c.Key, CallID: c.CallID, Tool: c.Tool,
			Decision: decision, Mode: t.st.Mode, Root: t.st.Root, Model: t.st.Model,
		}, &res)
	case c.Tool == "local_exec" || c.Host:
		err = executeActivity(ctx, ExecOptions, ActivityToolCall, in, &res)
	default:
		err = executeLocal(ctx, LocalOptions, ActivityToolCall, in).Get(ctx, &res)
	}
	if err != nil {
		status := contract.CallFailed
		if temporal.IsCanceledError(err) {
			status = contract.CallUncertain
		}
		t.st.Calls[idx].Status = status
		t.emit(contract.Event{Type: contract.EventToolCompleted, SessionID: t.Current(), CallID: c.CallID, Tool: c.Tool, Decision: decision, Status: status, Error: failureMessage(err)})
		return fmt.Errorf("tool call %s (%s): %w", c.CallID, c.Tool, err)
	}
	t.st.Revision = res.Revision
	t.st.Calls[idx].Status = res.Status
	t.emit(contract.Event{Type: contract.EventToolCompleted, SessionID: t.Current(), CallID: c.CallID, Tool: c.Tool, Decision: decision, Status: res.Status, Text: res.Summary})
	return nil
}

// Record writes the result of a call that does not run.
func (t *Turn) Record(ctx workflow.Context, c ModelCall, status contract.CallStatus, decision contract.Decision, msg string) error {
	idx := t.SetCall(c, decision, status)
	var res RecordToolResultResult
	err := executeLocal(ctx, LocalOptions, ActivityRecordToolResult, RecordToolResultInput{
		SessionID: t.Current(), Key: c.Key, CallID: c.CallID, Tool: c.Tool, Status: status, Decision: decision, Message: msg,
	}).Get(ctx, &res)
	if err != nil {
		return fmt.Errorf("record result of call %s: %w", c.CallID, err)
	}
	t.st.Revision = res.Revision
	t.st.Calls[idx].Status = status
	t.emit(contract.Event{Type: contract.EventToolCompleted, SessionID: t.Current(), CallID: c.CallID, Tool: c.Tool, Decision: decision, Status: status, Reason: msg})
	return nil
}

// AppendConsole saves a console text on the person's side of the
// conversation (an [AXLR] note, or a view reset) with the activity named,
// once per key; the model reads it with its next request.
func (t *Turn) AppendConsole(ctx workflow.Context, activity, key, text string) error {
	var res RecordToolResultResult
	err := executeLocal(ctx, LocalOptions, activity, AppendNoteInput{
		SessionID: t.Current(), Key: key, Text: text,
	}).Get(ctx, &res)
	if err != nil {
		return err
	}
	t.st.Revision = res.Revision
	return nil
}

// SetCall records a call's decision and status, adding it on first sight,
// and returns its index.
func (t *Turn) SetCall(c ModelCall, decision contract.Decision, status contract.CallStatus) int {
	cur := t.Current()
	for i := len(t.st.Calls) - 1; i >= 0; i-- {
		if t.st.Calls[i].Key == c.Key && t.st.Calls[i].Session == cur {
			t.st.Calls[i].Decision = decision
			t.st.Calls[i].Status = status
			return i
		}
	}
	t.st.Calls = append(t.st.Calls, CallState{Session: cur, Key: c.Key, CallID: c.CallID, Tool: c.Tool, Decision: decision, Status: status})
	if len(t.st.Calls) > MaxCalls {
		t.st.Calls = slices.Clone(t.st.Calls[len(t.st.Calls)-MaxCalls:])
	}
	return len(t.st.Calls) - 1
}

// endedAs maps how a turn ended to the execution's status and error.
func endedAs(err error, interrupted string) (contract.Status, string) {
	switch {
	case err == nil:
		return contract.Completed, ""
	case errors.Is(err, errPending):
		return contract.NeedsDecision, ""
	case errors.Is(err, errPaused):
		return contract.Interrupted, err.Error() + ": send a message to continue the step"
	case interrupted != "":
		return contract.Interrupted, interrupted
	}
	return contract.Failed, failureMessage(err)
}

// Finish builds and saves the execution's result, even when the turn was
// cancelled, and journals how it ended. ceremony is the outcome of the
// ceremony the execution drove, if any.
func (t *Turn) Finish(ctx workflow.Context, status contract.Status, msg string, ceremony *contract.CeremonyOutcome) *contract.Result {
	ex := t.st.Execution
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	// The mode as the execution ended (normal once a ceremony ended), so
	// a client reads it back rather than resending the one it chose.
	in := FinishExecutionInput{ExecutionID: ex.ID, Status: status, Error: msg, Sessions: slices.Clone(ex.Sessions), Ceremony: ceremony,
		Mode: cmp.Or(t.st.Mode, "normal")}
	if p := t.st.Pending; p != nil && status == contract.NeedsDecision {
		in.Pending = &PendingRef{Session: t.Current(), Key: p.Call.Key, CallID: p.Call.CallID, Tool: p.Call.Tool, Check: p.Check, Approval: p.Approval, Guard: p.Guard}
		if p.Check != nil {
			in.Pending.Tool = CheckTool
		}
	}
	for _, c := range t.st.Calls {
		if slices.Contains(ex.Sessions, c.Session) {
			in.ToolCalls = append(in.ToolCalls, contract.ToolCallRecord{CallID: c.CallID, Tool: c.Tool, Decision: c.Decision, Status: c.Status, DecidedBy: c.DecidedBy})
		}
	}
	for i, id := range t.st.SessionIDs {
		if slices.Contains(ex.Sessions, id) {
			in.Usage.Add(t.st.Ledgers[i])
		}
	}
	var res contract.Result
	err := executeLocal(ctx, LocalOptions, ActivityFinishExecution, in).Get(ctx, &res)
	if err != nil {
		// The session could not be saved: say so in a result built here.
		res = contract.Result{
			Schema: contract.Schema, Status: contract.Failed, SessionID: t.Current(), Sessions: in.Sessions,
			Error: "the result could not be saved: " + failureMessage(err), ToolCalls: in.ToolCalls, Usage: in.Usage,
			Artifacts: []contract.Artifact{}, Mode: in.Mode,
		}
		if res.ToolCalls == nil {
			res.ToolCalls = []contract.ToolCallRecord{}
		}
	}
	ex.Result = &res
	switch res.Status {
	case contract.Completed:
		t.emit(contract.Event{Type: contract.EventCompleted, SessionID: res.SessionID})
	case contract.Failed, contract.Interrupted:
		t.emit(contract.Event{Type: contract.EventFailed, SessionID: res.SessionID, Error: res.Error})
	}
	return &res
}

// failureMessage digs the application error's own message out of the
// activity error chain, which is what a person should read.
func failureMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "cancelled"
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timed out (" + timeout.TimeoutType().String() + ")"
	}
	return err.Error()
}
