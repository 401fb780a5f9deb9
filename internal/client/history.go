package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/workflows"
)

// Step is one line of a trajectory: an update, an activity or a local
// activity, with its outcome.
type Step struct {
	Time     time.Time `json:"time"`
	RunID    string    `json:"run_id"`
	Kind     string    `json:"kind"` // update, activity, local_activity, workflow
	Name     string    `json:"name"`
	Detail   string    `json:"detail,omitempty"`
	Attempt  int32     `json:"attempt,omitempty"`
	Duration *Duration `json:"duration_ms,omitempty"`
	Outcome  string    `json:"outcome"`
	Error    string    `json:"error,omitempty"`
}

// Duration prints as milliseconds in JSON.
type Duration time.Duration

// MarshalJSON writes the duration in milliseconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Milliseconds())
}

// Trajectory is a workflow's history (a session's or a task's), readable:
// its runs oldest first and their steps.
type Trajectory struct {
	WorkflowID string   `json:"workflow_id"`
	Runs       []string `json:"runs"`
	Steps      []Step   `json:"steps"`
}

// HistoryReader reads a workflow's history: what LoadTrajectory needs of
// the Temporal SDK's client.
type HistoryReader interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
	GetWorkflowHistory(ctx context.Context, workflowID, runID string, isLongPoll bool, filterType enumspb.HistoryEventFilterType) sdkclient.HistoryEventIterator
}

// History returns the trajectory of a session (by its id) or of a workflow
// (by an id that starts with "axlr-").
func (c *Client) History(ctx context.Context, id string) (*Trajectory, error) {
	wid := id
	if !strings.HasPrefix(id, "axlr-") {
		var err error
		if wid, err = c.FindSession(ctx, id); err != nil {
			return nil, err
		}
	}
	t, err := LoadTrajectory(ctx, c.tc, wid)
	if err != nil {
		return nil, c.reached(err)
	}
	return t, nil
}

// LoadTrajectory reads every run of a workflow, following continue-as-new
// back to the first, and returns its steps oldest first.
func LoadTrajectory(ctx context.Context, h HistoryReader, workflowID string) (*Trajectory, error) {
	desc, err := h.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return nil, fmt.Errorf("describe workflow %s: %w", workflowID, err)
	}
	runID := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	var runs [][]*historypb.HistoryEvent
	var ids []string
	for runID != "" {
		var events []*historypb.HistoryEvent
		it := h.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return nil, fmt.Errorf("history of %s run %s: %w", workflowID, runID, err)
			}
			events = append(events, ev)
		}
		runs = append([][]*historypb.HistoryEvent{events}, runs...)
		ids = append([]string{runID}, ids...)
		runID = ""
		if len(events) > 0 {
			runID = events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		}
	}
	t := &Trajectory{WorkflowID: workflowID, Runs: ids}
	dc := converter.GetDefaultDataConverter()
	for i, events := range runs {
		t.Steps = append(t.Steps, Steps(ids[i], events, dc)...)
	}
	return t, nil
}

// Steps turns one run's history events into steps.
func Steps(runID string, events []*historypb.HistoryEvent, dc converter.DataConverter) []Step {
	r := &runSteps{id: runID, dc: dc, scheduled: map[int64]int{}, types: map[int64]string{}, started: map[int64]time.Time{}, updates: map[string]int{}}
	for _, ev := range events {
		r.add(ev)
	}
	return r.steps
}

// runSteps is what Steps keeps as it reads one run's events: the steps so
// far and where each activity and update stands among them.
type runSteps struct {
	id    string
	dc    converter.DataConverter
	steps []Step
	// scheduled: an activity's scheduled event id -> its step's index;
	// types: -> its activity type; started: -> when its attempt started.
	scheduled map[int64]int
	types     map[int64]string
	started   map[int64]time.Time
	// updates: an update's id -> its step's index.
	updates map[string]int
	// since is when the current local activity started, task when the
	// current workflow task did.
	since, task time.Time
}

// add reads the run's next event.
func (r *runSteps) add(ev *historypb.HistoryEvent) {
	at := ev.GetEventTime().AsTime()
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		a := ev.GetWorkflowExecutionStartedEventAttributes()
		detail := "first run"
		if a.GetContinuedExecutionRunId() != "" {
			detail = "continued as new from " + a.GetContinuedExecutionRunId()
		}
		r.steps = append(r.steps, Step{Time: at, RunID: r.id, Kind: "workflow", Name: "started", Detail: detail, Outcome: a.GetTaskQueue().GetName()})
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
		r.since, r.task = at, at
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
		r.update(ev, at)
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
		enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		r.activity(ev, at)
	case enumspb.EVENT_TYPE_MARKER_RECORDED:
		r.localActivity(ev.GetMarkerRecordedEventAttributes(), at)
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		r.steps = append(r.steps, Step{Time: at, RunID: r.id, Kind: "workflow", Name: "continued as new", Outcome: ev.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()})
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
		r.steps = append(r.steps, Step{Time: at, RunID: r.id, Kind: "workflow", Name: "closed", Outcome: strings.ToLower(strings.TrimPrefix(ev.GetEventType().String(), "WorkflowExecution"))})
	}
}

// update reads an update's acceptance (its step) or completion (a
// failure's outcome on that step).
func (r *runSteps) update(ev *historypb.HistoryEvent, at time.Time) {
	if a := ev.GetWorkflowExecutionUpdateCompletedEventAttributes(); a != nil {
		if i, ok := r.updates[a.GetMeta().GetUpdateId()]; ok && a.GetOutcome().GetFailure() != nil {
			r.steps[i].Outcome = "failed"
			r.steps[i].Error = a.GetOutcome().GetFailure().GetMessage()
		}
		return
	}
	req := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest()
	name := req.GetInput().GetName()
	r.updates[req.GetMeta().GetUpdateId()] = len(r.steps)
	// The worker took the update when its task started; the event is
	// written when the task completes, after the local activities the
	// update ran in it.
	if !r.task.IsZero() {
		at = r.task
	}
	r.steps = append(r.steps, Step{Time: at, RunID: r.id, Kind: "update", Name: name, Detail: updateDetail(name, req.GetInput().GetArgs(), r.dc), Outcome: "accepted"})
}

// activity reads an activity task's event: its scheduling adds its step,
// the others set that step's attempt, outcome and duration.
func (r *runSteps) activity(ev *historypb.HistoryEvent, at time.Time) {
	if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
		r.scheduled[ev.GetEventId()] = len(r.steps)
		r.types[ev.GetEventId()] = a.GetActivityType().GetName()
		r.steps = append(r.steps, Step{Time: at, RunID: r.id, Kind: "activity", Name: shortName(a.GetActivityType().GetName()),
			Detail: activityInput(a.GetActivityType().GetName(), a.GetInput(), r.dc), Outcome: "scheduled"})
		return
	}
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		a := ev.GetActivityTaskStartedEventAttributes()
		if i, ok := r.scheduled[a.GetScheduledEventId()]; ok {
			r.steps[i].Attempt = a.GetAttempt()
			r.steps[i].Outcome = "running"
			r.started[a.GetScheduledEventId()] = at
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		a := ev.GetActivityTaskCompletedEventAttributes()
		if i, ok := r.scheduled[a.GetScheduledEventId()]; ok {
			r.steps[i].Outcome = activityOutcome(r.types[a.GetScheduledEventId()], a.GetResult(), r.dc)
			setDuration(&r.steps[i], r.started[a.GetScheduledEventId()], at)
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		a := ev.GetActivityTaskFailedEventAttributes()
		if i, ok := r.scheduled[a.GetScheduledEventId()]; ok {
			r.steps[i].Outcome = "failed"
			r.steps[i].Error = a.GetFailure().GetMessage()
			setDuration(&r.steps[i], r.started[a.GetScheduledEventId()], at)
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		a := ev.GetActivityTaskTimedOutEventAttributes()
		if i, ok := r.scheduled[a.GetScheduledEventId()]; ok {
			r.steps[i].Outcome = "timed out"
			r.steps[i].Error = a.GetFailure().GetMessage()
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		a := ev.GetActivityTaskCanceledEventAttributes()
		if i, ok := r.scheduled[a.GetScheduledEventId()]; ok {
			r.steps[i].Outcome = "cancelled"
		}
	}
}

// localActivity reads a marker: a local activity's is its step, timed
// from the end of the one before it in the workflow task; others are not
// steps.
func (r *runSteps) localActivity(a *historypb.MarkerRecordedEventAttributes, at time.Time) {
	if a.GetMarkerName() != "LocalActivity" {
		return
	}
	var md struct {
		ActivityType string
		ReplayTime   time.Time
		Attempt      int32
	}
	if p := a.GetDetails()["data"]; p != nil {
		_ = r.dc.FromPayloads(p, &md)
	}
	s := Step{Time: md.ReplayTime, RunID: r.id, Kind: "local_activity", Name: shortName(md.ActivityType), Attempt: md.Attempt}
	if s.Time.IsZero() {
		s.Time = at
	}
	if f := a.GetFailure(); f != nil {
		s.Outcome, s.Error = "failed", f.GetMessage()
	} else {
		s.Detail, s.Outcome = localOutcome(md.ActivityType, a.GetDetails()["result"], r.dc)
	}
	if !r.since.IsZero() {
		setDuration(&s, r.since, s.Time)
	}
	r.since = s.Time
	r.steps = append(r.steps, s)
}

func setDuration(s *Step, from, to time.Time) {
	if from.IsZero() || to.Before(from) {
		return
	}
	d := Duration(to.Sub(from))
	s.Duration = &d
}

func shortName(activityType string) string { return strings.TrimPrefix(activityType, "session.") }

func updateDetail(name string, args *commonpb.Payloads, dc converter.DataConverter) string {
	switch name {
	case workflows.UpdateExecute:
		var r workflows.ExecuteRequest
		if dc.FromPayloads(args, &r) == nil {
			d := fmt.Sprintf("%q", cut(r.Prompt, 80))
			if r.Model != "" {
				d += " model " + r.Model
			}
			return d + " approve " + string(r.Approval) + by(r.By)
		}
	case workflows.UpdateDecide:
		var r workflows.DecideRequest
		if dc.FromPayloads(args, &r) == nil {
			return strings.TrimSpace(fmt.Sprintf("%s the pending call %s", r.Decision, r.CallID)) + by(r.By)
		}
	case workflows.UpdateJobDecide:
		var r workflows.JobDecision
		if dc.FromPayloads(args, &r) == nil {
			verb := "approve"
			if !r.Approve {
				verb = "refuse"
			}
			return fmt.Sprintf("%s the %s", verb, r.Kind) + by(r.By)
		}
	case workflows.UpdatePlanDecide:
		var r workflows.PlanDecision
		if dc.FromPayloads(args, &r) == nil {
			return fmt.Sprintf("%s the %s", r.Decision, r.Kind) + by(r.By)
		}
	case workflows.UpdateStopCeremony:
		var r workflows.StopCeremonyRequest
		if dc.FromPayloads(args, &r) == nil {
			return strings.TrimSpace(r.InstanceID + " " + r.Reason)
		}
	case workflows.UpdateInterrupt:
		var r workflows.InterruptRequest
		if dc.FromPayloads(args, &r) == nil {
			return strings.TrimSpace(r.ExecutionID + " " + r.Reason)
		}
	}
	return ""
}

// by names who sent a request through the service API.
func by(who string) string {
	if who == "" {
		return ""
	}
	return " by " + who
}

func activityInput(activityType string, in *commonpb.Payloads, dc converter.DataConverter) string {
	switch activityType {
	case workflows.ActivityModelRequest:
		var r workflows.ModelRequestInput
		if dc.FromPayloads(in, &r) == nil {
			return fmt.Sprintf("%s at revision %d", r.Model, r.Revision)
		}
	case workflows.ActivityToolCall:
		var r workflows.ToolCallInput
		if dc.FromPayloads(in, &r) == nil {
			return fmt.Sprintf("%s call %s · %s", r.Tool, r.CallID, r.Decision)
		}
	case workflows.ActivityCeremonyStart:
		// Inputs recorded before the driver opened definitions by name
		// named the mode instead.
		var r struct {
			workflows.CeremonyStartInput
			Mode string `json:"mode"`
		}
		if dc.FromPayloads(in, &r) == nil {
			if r.Definition == "" {
				return fmt.Sprintf("%s mode, instance %s", r.Mode, r.InstanceID)
			}
			return fmt.Sprintf("%s %s, instance %s", r.Definition, r.Version, r.InstanceID)
		}
	case workflows.ActivityCeremonyClaim:
		var r workflows.ClaimInput
		if dc.FromPayloads(in, &r) == nil {
			return fmt.Sprintf("step %s, iteration %d", r.Step, r.Iteration)
		}
	case workflows.ActivityCeremonyRunCheck:
		var r workflows.RunCheckInput
		if dc.FromPayloads(in, &r) == nil {
			if r.Command.Program == "" {
				return "git rev-parse HEAD, git status --porcelain"
			}
			return r.Command.String()
		}
	case workflows.ActivityCeremonyComplete:
		var r workflows.CompleteInput
		if dc.FromPayloads(in, &r) == nil {
			return fmt.Sprintf("step %s, iteration %d, %s", r.Step, r.Iteration, r.Status)
		}
	case workflows.ActivityCeremonyTransition:
		var r workflows.TransitionInput
		if dc.FromPayloads(in, &r) == nil {
			return fmt.Sprintf("%s from %s", r.Trigger, r.From)
		}
	case workflows.ActivityIncidentCheck:
		var r workflows.IncidentCheckInput
		if dc.FromPayloads(in, &r) == nil {
			return "incident step " + r.Step
		}
	case workflows.ActivityIncidentReview:
		var r workflows.IncidentReviewInput
		if dc.FromPayloads(in, &r) == nil {
			return fmt.Sprintf("review %s, sha256 %s", r.Path, r.Digest)
		}
	}
	return ""
}

func activityOutcome(activityType string, out *commonpb.Payloads, dc converter.DataConverter) string {
	switch activityType {
	case workflows.ActivityModelRequest:
		var r workflows.ModelRequestResult
		if dc.FromPayloads(out, &r) == nil {
			return modelOutcome(r)
		}
	case workflows.ActivityToolCall:
		var r workflows.ToolCallResult
		if dc.FromPayloads(out, &r) == nil {
			return toolOutcome(string(r.Status), r.Summary)
		}
	case workflows.ActivityCeremonyStart:
		var r workflows.CeremonyStartResult
		if dc.FromPayloads(out, &r) == nil {
			return fmt.Sprintf("%s %s in %s, step %s claimed", r.Definition, r.Version, r.Instance.State, r.Instance.NextStep)
		}
	case workflows.ActivityCeremonyClaim, workflows.ActivityCeremonyComplete, workflows.ActivityCeremonyTransition:
		var r workflows.InstanceView
		if dc.FromPayloads(out, &r) == nil {
			return instanceOutcome(r)
		}
	case workflows.ActivityCeremonyRunCheck:
		var r contract.CheckRecord
		if dc.FromPayloads(out, &r) == nil {
			return checkOutcome(r)
		}
	case workflows.ActivityIncidentCheck:
		var r workflows.IncidentCheckResult
		if dc.FromPayloads(out, &r) == nil {
			return incidentOutcome(r)
		}
	case workflows.ActivityIncidentReview:
		var r workflows.IncidentReviewResult
		if dc.FromPayloads(out, &r) == nil {
			if r.Accepted {
				return "accepted by " + r.ReviewerModel
			}
			return fmt.Sprintf("%d findings from %s", len(r.Findings), r.ReviewerModel)
		}
	}
	return "completed"
}

// checkOutcome is a check's row: how it ended and, when axlrd confines
// commands, how it ran.
func checkOutcome(r contract.CheckRecord) string {
	out := r.Ending()
	if r.ExitCode != nil {
		out = fmt.Sprintf("exit %d", *r.ExitCode)
	}
	return out + contract.SandboxSummary(r.Sandbox, r.SandboxNote)
}

// incidentOutcome is an incident check's row: the refusal, or what it
// recorded that a person looks for (the draft's digest, the path
// published).
func incidentOutcome(r workflows.IncidentCheckResult) string {
	switch {
	case r.Refused != "":
		return "refused: " + cut(r.Refused, 160)
	case r.Recorded["path"] != nil:
		return fmt.Sprintf("published %v, sha256 %v", r.Recorded["path"], r.Recorded["draft_digest"])
	case r.Recorded["draft_digest"] != nil:
		return fmt.Sprintf("draft %v, sha256 %v", r.Recorded["draft_path"], r.Recorded["draft_digest"])
	}
	return "accepted"
}

func instanceOutcome(v workflows.InstanceView) string {
	out := "state " + v.State
	if v.Completed {
		out += " (ended)"
	}
	if v.NextStep != "" {
		out += ", step " + v.NextStep
	}
	if len(v.Enabled) > 0 {
		out += ", enabled " + strings.Join(v.Enabled, ", ")
	}
	return out
}

func modelOutcome(r workflows.ModelRequestResult) string {
	if r.ContextFull {
		return "context cap reached"
	}
	what := "answer"
	if n := len(r.Calls); n > 0 {
		names := make([]string, n)
		for i, c := range r.Calls {
			names[i] = c.Tool
		}
		what = fmt.Sprintf("%d call(s): %s", n, strings.Join(names, ", "))
	}
	return fmt.Sprintf("%s · %d→%d tokens", what, r.Usage.PromptTokens, r.Usage.CompletionTokens)
}

func toolOutcome(status, summary string) string {
	if summary == "" {
		return status
	}
	return status + ": " + summary
}

func localOutcome(activityType string, out *commonpb.Payloads, dc converter.DataConverter) (detail, outcome string) {
	if out == nil {
		return "", "completed"
	}
	switch activityType {
	case workflows.ActivityBeginTurn:
		var r workflows.BeginTurnResult
		if dc.FromPayloads(out, &r) == nil {
			return "model " + r.Model, fmt.Sprintf("revision %d", r.Revision)
		}
	case workflows.ActivityToolCall:
		var r workflows.ToolCallResult
		if dc.FromPayloads(out, &r) == nil {
			return fmt.Sprintf("%s call %s · %s", r.Tool, r.CallID, r.Decision), toolOutcome(string(r.Status), r.Summary)
		}
	case workflows.ActivityRecordToolResult:
		var r workflows.RecordToolResultResult
		if dc.FromPayloads(out, &r) == nil {
			return fmt.Sprintf("%s call %s", r.Tool, r.CallID), string(r.Status)
		}
	case workflows.ActivityCeremonyStart:
		var r workflows.CeremonyStartResult
		if dc.FromPayloads(out, &r) == nil {
			return fmt.Sprintf("%s %s, instance %s", r.Definition, r.Version, r.Instance.InstanceID),
				fmt.Sprintf("%s, step %s claimed", r.Instance.State, r.Instance.NextStep)
		}
	case workflows.ActivityCeremonyClaim, workflows.ActivityCeremonyComplete, workflows.ActivityCeremonyTransition, workflows.ActivityCeremonyApproveGuard,
		workflows.ActivityCeremonyRead:
		var r workflows.InstanceView
		if dc.FromPayloads(out, &r) == nil {
			return r.Action, instanceOutcome(r)
		}
	case workflows.ActivityDraftDigest:
		var r workflows.DraftDigestResult
		if dc.FromPayloads(out, &r) == nil {
			return "the draft on disk", "sha256 " + digestOrGone(r.Digest)
		}
	case workflows.ActivityCeremonyHandBack:
		var r workflows.HandBackResult
		if dc.FromPayloads(out, &r) == nil {
			if r.Error != "" {
				return "axlr_step_done", "refused: " + r.Error
			}
			return "axlr_step_done", "accepted"
		}
	case workflows.ActivityAppendNote:
		return "[AXLR] note", "appended"
	case workflows.ActivityContinueSession:
		var r workflows.ContinueSessionResult
		if dc.FromPayloads(out, &r) == nil {
			return "", "successor " + r.SessionID
		}
	case workflows.ActivityFinishExecution:
		var r struct {
			Status   string                    `json:"status"`
			Error    string                    `json:"error"`
			Ceremony *contract.CeremonyOutcome `json:"ceremony"`
		}
		if dc.FromPayloads(out, &r) == nil {
			var detail string
			if c := r.Ceremony; c != nil && c.Stopped != "" {
				// A ceremony the driver stopped (an operator's to look at,
				// the person's stop, a stall) shows where it stands.
				detail = fmt.Sprintf("ceremony %s in %s, stopped: %s", c.InstanceID, c.State, c.Stopped)
			}
			return detail, strings.TrimSpace(r.Status + " " + r.Error)
		}
	}
	return "", "completed"
}

func digestOrGone(d string) string {
	if d == "" {
		return "none (gone)"
	}
	return d
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
