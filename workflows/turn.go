package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// errPending ends a turn that waits for a decision.
var errPending = errors.New("a call waits for a decision")

// Activity options of the session workflow. Every activity runs on the
// workflow's own task queue: the session store and the workspace are on
// this host.
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

	err := s.turn(turnCtx, q)
	status, msg := contract.Completed, ""
	switch {
	case err == nil:
	case errors.Is(err, errPending):
		status = contract.NeedsDecision
	case errors.Is(err, errPaused):
		status, msg = contract.Interrupted, err.Error()+": send a message to continue the step"
	case s.interrupted != "":
		status, msg = contract.Interrupted, s.interrupted
	default:
		status, msg = contract.Failed, failureMessage(err)
	}
	s.finish(ctx, status, msg)
}

// turn runs the model and its calls until an answer, a pending decision or
// an error.
func (s *sessionRun) turn(ctx workflow.Context, q *queuedRequest) error {
	switch {
	case q.Execute != nil:
		return s.begin(ctx, q.Execute)
	case q.Decide != nil:
		return s.resume(ctx, q.Decide)
	}
	return errors.New("empty request")
}

func (s *sessionRun) begin(ctx workflow.Context, req *ExecuteRequest) error {
	if req.Policy != nil {
		s.st.Policy = req.Policy
	}
	s.st.Approval = req.Approval
	s.st.Mode = req.Mode
	if c := s.st.Ceremony; c.Active() {
		s.st.Mode = c.Mode
	}
	if req.Root != "" {
		s.st.Root = req.Root
	}
	var begin BeginTurnResult
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, LocalOptions), ActivityBeginTurn, BeginTurnInput{
		SessionID:   s.st.Current(),
		ExecutionID: req.ExecutionID,
		Prompt:      req.Prompt,
		Model:       cmp.Or(req.Model, s.st.Model),
		Root:        s.st.Root,
		Mode:        req.Mode,
	}).Get(ctx, &begin)
	if err != nil {
		return fmt.Errorf("begin turn: %w", err)
	}
	s.st.Turn = &begin
	s.st.Model = begin.Model
	s.st.Root = begin.Root
	s.st.Revision = begin.Revision
	s.emit(contract.Event{Type: contract.EventSession, SessionID: s.st.Current()})
	switch c := s.st.Ceremony; {
	case c.Active():
		// Any prompt continues the open step.
		c.Execution = req.ExecutionID
		c.Reminded, c.Calls, c.Renewals, c.BudgetNoted = false, 0, 0, false
		if c.Step != "" {
			if err := s.note(ctx, "prompt", c.stepNote(false)); err != nil {
				return err
			}
		}
	case s.st.Mode != "normal":
		if err := s.startCeremony(ctx, s.st.Mode, req.Prompt); err != nil {
			return err
		}
		s.st.Ceremony.Execution = req.ExecutionID
		if err := s.note(ctx, "began", s.st.Ceremony.stepNote(true)); err != nil {
			return err
		}
	}
	return s.loop(ctx, nil)
}

func (s *sessionRun) resume(ctx workflow.Context, req *DecideRequest) error {
	p := s.st.Pending
	s.st.Pending = nil
	if req.Policy != nil {
		s.st.Policy = req.Policy
	}
	s.emit(contract.Event{Type: contract.EventSession, SessionID: s.st.Current()})
	if c := s.st.Ceremony; c.Active() {
		c.Execution = req.ExecutionID
	}
	switch {
	case p.Check != nil && req.Decision == contract.Approve:
		s.setCall(ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: CheckTool}, contract.Approve, contract.CallCompleted)
		if err := s.stepDone(ctx, p.Call, p.Queue, true); err != nil {
			return err
		}
	case p.Check != nil:
		s.setCall(ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: CheckTool}, contract.Deny, contract.CallDenied)
		msg := "the person refused the check command " + p.Check.String()
		if req.Reason != "" {
			msg += ": " + req.Reason
		}
		if err := s.record(ctx, p.Call, contract.CallDenied, contract.Deny, stepReply{Step: s.st.Ceremony.Step, Error: msg + ". MADE is unchanged; propose another command or explain."}.text()); err != nil {
			return err
		}
	case req.Decision == contract.Approve:
		if err := s.runTool(ctx, p.Call, contract.Approve); err != nil {
			return err
		}
	default:
		msg := "denied by the person"
		if req.Reason != "" {
			msg += ": " + req.Reason
		}
		if err := s.record(ctx, p.Call, contract.CallDenied, contract.Deny, msg); err != nil {
			return err
		}
	}
	return s.loop(ctx, p.Queue)
}

// loop handles the calls of a response, then asks the model again, until
// the model answers without calls.
func (s *sessionRun) loop(ctx workflow.Context, queue []ModelCall) error {
	requests := 0
	for {
		for i, c := range queue {
			if err := s.handleCall(ctx, c, queue[i+1:]); err != nil {
				return err
			}
		}
		if requests >= MaxRequestsPerTurn {
			return fmt.Errorf("the turn made %d model requests without an answer (the limit per turn)", MaxRequestsPerTurn)
		}
		if err := s.beforeRequest(ctx); err != nil {
			return err
		}
		res, err := s.modelRequest(ctx)
		if err != nil {
			return err
		}
		if res.ContextFull {
			if err := s.continueSession(ctx); err != nil {
				return err
			}
			queue = nil
			continue
		}
		requests++
		if res.Text != "" {
			s.emit(contract.Event{Type: contract.EventText, SessionID: s.st.Current(), Text: res.Text})
		}
		if len(res.Calls) == 0 {
			more, err := s.answeredWithStepOpen(ctx, res.Text)
			if err != nil || !more {
				return err
			}
			queue = nil
			continue
		}
		queue = res.Calls
	}
}

func (s *sessionRun) modelRequest(ctx workflow.Context) (ModelRequestResult, error) {
	t := s.st.Turn
	var tools []string
	for _, name := range LocalTools {
		if policy.Offered(s.st.Policy, name) {
			tools = append(tools, name)
		}
	}
	var stepDone *StepDoneSpec
	if c := s.st.Ceremony; c.Active() && c.Step != "" {
		tools = s.ceremonyTools(tools)
		stepDone = &StepDoneSpec{Definition: c.Definition, Step: c.Step, Compact: c.Compact}
	}
	var res ModelRequestResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ModelRequestOptions), ActivityModelRequest, ModelRequestInput{
		SessionID:  s.st.Current(),
		Revision:   s.st.Revision,
		Model:      t.Model,
		Tools:      tools,
		MaxTokens:  t.MaxTokens,
		Stream:     t.Stream,
		ContextCap: t.ContextCap,
		StepDone:   stepDone,
	}).Get(ctx, &res)
	if err != nil {
		return res, fmt.Errorf("model request: %w", err)
	}
	s.st.Revision = res.Revision
	if !res.ContextFull {
		s.st.Ledgers[len(s.st.Ledgers)-1].Add(res.Usage)
	}
	return res, nil
}

func (s *sessionRun) continueSession(ctx workflow.Context) error {
	from := s.st.Current()
	var res ContinueSessionResult
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, LocalOptions), ActivityContinueSession, ContinueSessionInput{
		SessionID:   from,
		Revision:    s.st.Revision,
		ExecutionID: s.st.Execution.ID,
		Model:       s.st.Turn.Model,
		ContextCap:  s.st.Turn.ContextCap,
	}).Get(ctx, &res)
	if err != nil {
		return fmt.Errorf("continue session %s: %w", from, err)
	}
	s.st.SessionIDs = append(s.st.SessionIDs, res.SessionID)
	s.st.Ledgers = append(s.st.Ledgers, contract.Usage{})
	s.st.Revision = res.Revision
	s.st.Execution.Sessions = append(s.st.Execution.Sessions, res.SessionID)
	if err := workflow.UpsertTypedSearchAttributes(ctx,
		temporal.NewSearchAttributeKeyKeywordList(SearchAttributeSessions).ValueSet(s.st.SessionIDs)); err != nil {
		workflow.GetLogger(ctx).Warn("search attribute not set", "error", err)
	}
	s.emit(contract.Event{Type: contract.EventSessionContinued, From: from, SessionID: res.SessionID})
	s.emit(contract.Event{Type: contract.EventSession, SessionID: res.SessionID})
	return nil
}

// handleCall decides one call and runs or records it. It returns errPending
// when the call waits for a decision; rest are the calls of the same
// response that follow it.
func (s *sessionRun) handleCall(ctx workflow.Context, c ModelCall, rest []ModelCall) error {
	s.emit(contract.Event{Type: contract.EventToolRequested, SessionID: s.st.Current(), CallID: c.CallID, Tool: c.Tool, Arguments: c.Preview})
	if cer := s.st.Ceremony; cer.Active() && cer.Step != "" {
		if c.Tool == StepDoneTool {
			return s.stepDone(ctx, c, rest, false)
		}
		cer.Calls++
		if cer.Compact {
			same := c.Tool + " " + string(c.Preview)
			if same == cer.LastCall {
				return s.record(ctx, c, contract.CallFailed, "", "same call as before; change something")
			}
			cer.LastCall = same
			if st, _ := ceremonies.StepOf(cer.Definition, cer.Step); st.ReadOnly && (c.Tool == "local_write" || c.Tool == "local_edit") {
				return s.record(ctx, c, contract.CallFailed, "", fmt.Sprintf("%s is not available in step %s: this step reads, and changes nothing", c.Tool, cer.Step))
			}
		}
	}
	if c.Tool == StepDoneTool {
		return s.record(ctx, c, contract.CallFailed, "", stepReply{Error: "no ceremony step is open in this session"}.text())
	}
	if cer := s.st.Ceremony; c.Tool == HistoryTool && !(cer.Active() && cer.Compact && cer.Step != "") {
		return s.record(ctx, c, contract.CallFailed, "", HistoryTool+" is not offered here: it reads the transcript in a compact ceremony step")
	}
	if c.Invalid != "" {
		return s.record(ctx, c, contract.CallFailed, "", c.Invalid)
	}
	d := policy.Decide(policy.Input{
		Policy:   s.st.Policy,
		Approval: s.st.Approval,
		Settings: s.st.Turn.Settings,
		Call:     policy.Call{Tool: c.Tool, Args: c.Args},
	})
	switch d.Verdict {
	case policy.Forbid:
		return s.record(ctx, c, contract.CallForbidden, "", "forbidden by the execution's policy: "+d.Reason)
	case policy.Ask:
		s.st.Pending = &PendingState{Call: c, Queue: slices.Clone(rest), Reason: d.Reason}
		s.setCall(c, "", contract.CallPending)
		s.emit(contract.Event{Type: contract.EventDecisionRequired, SessionID: s.st.Current(), CallID: c.CallID, Tool: c.Tool, Arguments: c.Preview, Reason: d.Reason})
		return errPending
	}
	return s.runTool(ctx, c, contract.AutoApprove)
}

// runTool runs an approved call: a local activity for the short workspace
// tools, a regular heartbeating activity for local_exec.
func (s *sessionRun) runTool(ctx workflow.Context, c ModelCall, decision contract.Decision) error {
	idx := s.setCall(c, decision, contract.CallPending)
	in := ToolCallInput{SessionID: s.st.Current(), Root: s.st.Root, Key: c.Key, CallID: c.CallID, Tool: c.Tool, Decision: decision}
	if cer := s.st.Ceremony; cer.Active() && cer.Compact {
		in.Compact = true
	}
	var f workflow.Future
	if c.Tool == "local_exec" {
		f = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ExecOptions), ActivityToolCall, in)
	} else {
		f = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, LocalOptions), ActivityToolCall, in)
	}
	var res ToolCallResult
	if err := f.Get(ctx, &res); err != nil {
		status := contract.CallFailed
		if temporal.IsCanceledError(err) {
			status = contract.CallUncertain
		}
		s.st.Calls[idx].Status = status
		s.emit(contract.Event{Type: contract.EventToolCompleted, SessionID: s.st.Current(), CallID: c.CallID, Tool: c.Tool, Decision: decision, Status: status, Error: failureMessage(err)})
		return fmt.Errorf("tool call %s (%s): %w", c.CallID, c.Tool, err)
	}
	s.st.Revision = res.Revision
	s.st.Calls[idx].Status = res.Status
	s.emit(contract.Event{Type: contract.EventToolCompleted, SessionID: s.st.Current(), CallID: c.CallID, Tool: c.Tool, Decision: decision, Status: res.Status, Text: res.Summary})
	return nil
}

// record writes the result of a call that does not run.
func (s *sessionRun) record(ctx workflow.Context, c ModelCall, status contract.CallStatus, decision contract.Decision, msg string) error {
	idx := s.setCall(c, decision, status)
	var res RecordToolResultResult
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, LocalOptions), ActivityRecordToolResult, RecordToolResultInput{
		SessionID: s.st.Current(), Key: c.Key, CallID: c.CallID, Tool: c.Tool, Status: status, Decision: decision, Message: msg,
	}).Get(ctx, &res)
	if err != nil {
		return fmt.Errorf("record result of call %s: %w", c.CallID, err)
	}
	s.st.Revision = res.Revision
	s.st.Calls[idx].Status = status
	s.emit(contract.Event{Type: contract.EventToolCompleted, SessionID: s.st.Current(), CallID: c.CallID, Tool: c.Tool, Decision: decision, Status: status, Reason: msg})
	return nil
}

// setCall records a call's decision and status, adding it on first sight,
// and returns its index.
func (s *sessionRun) setCall(c ModelCall, decision contract.Decision, status contract.CallStatus) int {
	cur := s.st.Current()
	for i := len(s.st.Calls) - 1; i >= 0; i-- {
		if s.st.Calls[i].Key == c.Key && s.st.Calls[i].Session == cur {
			s.st.Calls[i].Decision = decision
			s.st.Calls[i].Status = status
			return i
		}
	}
	s.st.Calls = append(s.st.Calls, CallState{Session: cur, Key: c.Key, CallID: c.CallID, Tool: c.Tool, Decision: decision, Status: status})
	if len(s.st.Calls) > MaxCalls {
		s.st.Calls = slices.Clone(s.st.Calls[len(s.st.Calls)-MaxCalls:])
	}
	return len(s.st.Calls) - 1
}

// finish builds and saves the execution's result, even when the turn was
// cancelled.
func (s *sessionRun) finish(ctx workflow.Context, status contract.Status, msg string) {
	ex := s.st.Execution
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	in := FinishExecutionInput{ExecutionID: ex.ID, Status: status, Error: msg, Sessions: slices.Clone(ex.Sessions)}
	if p := s.st.Pending; p != nil && status == contract.NeedsDecision {
		in.Pending = &PendingRef{Session: s.st.Current(), Key: p.Call.Key, CallID: p.Call.CallID, Tool: p.Call.Tool, Check: p.Check}
		if p.Check != nil {
			in.Pending.Tool = CheckTool
		}
	}
	if c := s.st.Ceremony; c != nil && c.Execution == ex.ID {
		in.Ceremony = c.outcome()
	}
	for _, c := range s.st.Calls {
		if slices.Contains(ex.Sessions, c.Session) {
			in.ToolCalls = append(in.ToolCalls, contract.ToolCallRecord{CallID: c.CallID, Tool: c.Tool, Decision: c.Decision, Status: c.Status})
		}
	}
	for i, id := range s.st.SessionIDs {
		if slices.Contains(ex.Sessions, id) {
			in.Usage.Add(s.st.Ledgers[i])
		}
	}
	var res contract.Result
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, LocalOptions), ActivityFinishExecution, in).Get(ctx, &res)
	if err != nil {
		// The session could not be saved: say so in a result built here.
		res = contract.Result{
			Schema: contract.Schema, Status: contract.Failed, SessionID: s.st.Current(), Sessions: in.Sessions,
			Error: "the result could not be saved: " + failureMessage(err), ToolCalls: in.ToolCalls, Usage: in.Usage,
			Artifacts: []contract.Artifact{},
		}
		if res.ToolCalls == nil {
			res.ToolCalls = []contract.ToolCallRecord{}
		}
	}
	ex.Result = &res
	s.st.Recent = append(s.st.Recent, *ex)
	if len(s.st.Recent) > maxRecent {
		s.st.Recent = slices.Clone(s.st.Recent[len(s.st.Recent)-maxRecent:])
	}
	switch res.Status {
	case contract.Completed:
		s.emit(contract.Event{Type: contract.EventCompleted, SessionID: res.SessionID})
	case contract.Failed, contract.Interrupted:
		s.emit(contract.Event{Type: contract.EventFailed, SessionID: res.SessionID, Error: res.Error})
	}
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
