package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/jsonargs"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// JobClient is what the job request tools need of the job registry: to
// admit and start a launch workflows.NewJobLaunch decided (a refusal is a
// *workflows.JobRefusedError), and to list the jobs. axlrd's
// internal/client.Client is one.
type JobClient interface {
	Launch(ctx context.Context, l workflows.JobLaunch) (jobs.Record, error)
	Jobs(ctx context.Context) ([]jobs.Record, error)
}

var _ workflows.JobRequestActivities = (*Session)(nil)

// jobSpecs are the functions offered for the job request tools. A request's
// properties are jobs.Request's; the limits are jobs'.
var jobSpecs = []agent.ToolSpec{
	{Name: jobs.ToolRequestRepair,
		Description: "Ask axlr to repair itself when one of its own tools (local_*, axlr_*, web_*) failed in a way that points at axlr, and failed the same way again when you repeated the call once. " +
			"A separate repair session reproduces the failure in its own clone and fixes it while you carry on; the person approves its check command and its merge, and a later prompt of this session carries the outcome. " +
			"Refused: a program that exited nonzero, a failure of the workspace, a rejected, denied, cancelled or timed-out call, an MCP plugin's tool, a single failure, and any text that names a provider, credential, permission or network cause.",
		Parameters: requestSchema("Which axlr operation fails and how", "What axlr should have done", "What it did instead",
			"One to %d IDs of this session's calls that failed this way", 1)},
	{Name: jobs.ToolRequestImprovement,
		Description: "Ask axlr to improve one of its own tools (local_*, axlr_*, web_*) when it made your task needlessly hard: a capability it lacks, a rough edge. " +
			"A separate improvement session makes the change in its own clone while you carry on; the person approves its check command and its merge, and a later prompt of this session carries the outcome. " +
			"A session asks for at most one improvement; an MCP plugin's tool, a denied or cancelled call and any text that names a provider, credential, permission or network cause are refused.",
		Parameters: requestSchema("What axlr should do better", "What axlr should let you do", "What you had to do instead",
			"Two to %d IDs of this session's calls that show the friction", jobs.MinImprovementCalls)},
	{Name: jobs.ToolRepairStatus,
		Description: "List the repairs and improvements this session asked for, newest first: status, step, pull request, merge commit and reason. Give job to read one of them.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"job":{"type":"string","description":"A job's ID, as the request's answer gave it; leave it out to list them all."}},"additionalProperties":false}`)},
}

// requestSchema is the schema of a request's arguments: describe,
// expected and observed say what its texts hold, and calls how many calls
// it cites (with %d for jobs.MaxCitedCalls).
func requestSchema(describe, expected, observed, calls string, minCalls int) json.RawMessage {
	str := func(text string) map[string]any { return map[string]any{"type": "string", "description": text} }
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"description": str(fmt.Sprintf("%s, in at least %d characters and at most %d bytes.", describe, jobs.MinDescription, jobs.MaxText)),
			"expected":    str(fmt.Sprintf("%s (at most %d bytes).", expected, jobs.MaxText)),
			"observed":    str(fmt.Sprintf("%s (at most %d bytes).", observed, jobs.MaxText)),
			"evidence": str(fmt.Sprintf("One to %d concrete items you observed, one per line: outputs, error messages, file paths (at most %d bytes each).",
				jobs.MaxEvidence, jobs.MaxEvidenceItem)),
			"tool_calls": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
				"minItems": minCalls, "maxItems": jobs.MaxCitedCalls, "description": fmt.Sprintf(calls, jobs.MaxCitedCalls) + "."},
		},
		"required":             []string{"description", "expected", "observed", "evidence", "tool_calls"},
		"additionalProperties": false,
	}
	// A map of strings, numbers, lists and maps always encodes, with its
	// keys sorted: the offer is the same bytes every request.
	b, _ := json.Marshal(schema)
	return b
}

// registryError is a failure to reach the job registry: tried again, and
// on the last attempt the model's to read.
type registryError struct{ error }

func (e registryError) Unwrap() error { return e.error }

// RequestJob runs a call of axlr_request_repair, axlr_request_improvement
// or axlr_repair_status and saves its result; a call whose result is saved
// returns it. A request is validated against the transcripts of the
// workflow's sessions (jobs.ValidateRepairRequest,
// ValidateImprovementRequest) before the registry is asked, and it is asked
// under the call's own id, so a retry admits no second job. A refusal, the
// validation's or the registry's, names its reason and the session's most
// recent citable calls. A registry that still does not answer at the last
// attempt (workflows.JobRequestAttempts) is a failed call the model reads,
// not a failed turn.
func (a *Session) RequestJob(ctx context.Context, in workflows.JobRequestInput) (workflows.ToolCallResult, error) {
	if n := len(in.Sessions); n == 0 || in.Sessions[n-1] != in.SessionID {
		return workflows.ToolCallResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("job request %s: the sessions %v do not end with session %s", in.Key, in.Sessions, in.SessionID), workflows.ErrTypeBadRequest, nil)
	}
	log, err := a.open(in.SessionID)
	if err != nil {
		return workflows.ToolCallResult{}, err
	}
	if res, ok, err := savedResult(log, in.Key, in.CallID, in.Tool, in.Decision); ok || err != nil {
		return res, err
	}
	tc, err := findCall(log, in.Key)
	if err != nil {
		return workflows.ToolCallResult{}, err
	}
	stop := heartbeat(ctx, a.HeartbeatEvery, func() any { return in.Key })
	out, err := a.jobRequest(ctx, in, tc)
	stop()
	if ctx.Err() != nil {
		return workflows.ToolCallResult{}, ctx.Err()
	}
	if err != nil {
		var reg registryError
		if !errors.As(err, &reg) || activity.GetInfo(ctx).Attempt < workflows.JobRequestAttempts {
			return workflows.ToolCallResult{}, err
		}
		out = hostCall{contract.CallFailed, toolError("internal_error", fmt.Sprintf("%v; tried %d times: tell the person, and ask again later", err, workflows.JobRequestAttempts))}
	}
	ev, err := appendEvent(log, evMessage, keyTool(in.Key), messageData{
		Message: agent.Message{Role: "tool", ToolCallID: tc.ID, Content: out.content},
		Tool:    tc.Name, CallKey: in.Key, Status: out.status, Decision: in.Decision,
	})
	if err != nil {
		return workflows.ToolCallResult{}, err
	}
	return workflows.ToolCallResult{Revision: ev.Seq + 1, CallID: in.CallID, Tool: tc.Name, Decision: in.Decision, Status: out.status, Summary: summarize(tc.Name, out.status, out.content)}, nil
}

// jobRequest answers one call.
func (a *Session) jobRequest(ctx context.Context, in workflows.JobRequestInput, tc agent.ToolCall) (hostCall, error) {
	if a.Hosts == nil || a.Hosts.Jobs == nil {
		return hostCall{contract.CallFailed, toolError("unavailable", "this axlrd takes no job requests; tell the person what you would have asked for")}, nil
	}
	jc := a.Hosts.Jobs(ctx)
	origin := in.Sessions[0]
	if tc.Name == jobs.ToolRepairStatus {
		return repairStatus(ctx, jc, origin, tc.Arguments)
	}
	calls, err := a.sessionCalls(in.Sessions)
	if err != nil {
		return hostCall{}, err
	}
	js := a.Settings.Jobs
	rc := jobs.RequestContext{Session: origin, Mode: in.Mode, Clone: inClone(in.Root), Repository: js.Repository, Build: js.Build}
	validate := jobs.ValidateRepairRequest
	if tc.Name == jobs.ToolRequestImprovement {
		validate = jobs.ValidateImprovementRequest
	}
	v, err := validate(json.RawMessage(tc.Arguments), calls, rc)
	var ref *jobs.Refusal
	if errors.As(err, &ref) {
		return refused(ref), nil
	}
	if err != nil {
		return hostCall{}, fmt.Errorf("validate %s: %w", tc.Name, err)
	}
	l, err := workflows.NewJobLaunch(js, workflows.LaunchRequest{
		RequestID: "request:" + in.SessionID + ":" + in.Key, Kind: v.Kind, Brief: v.Brief, Model: in.Model,
		OriginSession: origin, Signature: v.Signature,
	})
	if err != nil {
		return hostCall{contract.CallFailed, toolError("internal_error", err.Error()+": tell the person what you asked for")}, nil
	}
	rec, err := jc.Launch(ctx, l)
	var refusal *workflows.JobRefusedError
	if errors.As(err, &refusal) {
		r := refusal.Refusal
		return refused(r.InSession(calls)), nil
	}
	if err != nil {
		return hostCall{}, registryError{fmt.Errorf("the job registry did not admit the %s: %w", v.Kind.Noun(), err)}
	}
	noun := v.Kind.Noun()
	return answered(struct {
		Job     jobView `json:"job"`
		Message string  `json:"message"`
	}{jobOf(rec), fmt.Sprintf("%s%s %s was admitted (%s). It runs in its own session and clone while you carry on with your task; the person approves its check command and its merge. "+
		"A later prompt of this session carries its outcome; axlr_repair_status reports it meanwhile.", strings.ToUpper(noun[:1]), noun[1:], rec.ID, rec.Status)}), nil
}

// refused is a refusal as the model reads it: its code, and its reason
// with the session's most recent citable calls.
func refused(r *jobs.Refusal) hostCall {
	return hostCall{contract.CallFailed, toolError(string(r.Code), r.Error())}
}

// answered is a completed call answering v.
func answered(v any) hostCall {
	b, err := json.Marshal(v)
	if err != nil {
		return hostCall{contract.CallFailed, toolError("internal_error", "encode the answer: "+err.Error())}
	}
	return hostCall{contract.CallCompleted, string(b)}
}

// jobView is a job as the model reads it.
type jobView struct {
	ID          string      `json:"id"`
	Kind        jobs.Kind   `json:"kind"`
	Status      jobs.Status `json:"status"`
	Attempt     int         `json:"attempt,omitempty"`
	Step        string      `json:"step,omitempty"`
	Waiting     string      `json:"waiting,omitempty"`
	Session     string      `json:"session,omitempty"`
	Clone       string      `json:"clone,omitempty"`
	PullRequest int         `json:"pull_request,omitempty"`
	URL         string      `json:"url,omitempty"`
	MergeSHA    string      `json:"merge_sha,omitempty"`
	Reason      string      `json:"reason,omitempty"`
	Updated     time.Time   `json:"updated,omitzero"`
}

func jobOf(r jobs.Record) jobView {
	v := jobView{ID: r.ID, Kind: r.Kind, Status: r.Status, Attempt: r.Attempt, Step: r.Step, Session: r.Session, Clone: r.Clone,
		PullRequest: r.PullRequest, URL: r.URL, MergeSHA: r.MergeSHA, Reason: r.Reason, Updated: r.Updated}
	if p := r.Pending; p != nil {
		switch p.Kind {
		case jobs.PendingCheck:
			v.Waiting = "the person's approval of the check command " + p.Command
		case jobs.PendingMerge:
			v.Waiting = fmt.Sprintf("the person's decision on merging pull request #%d", p.PullRequest)
		}
	}
	return v
}

// repairStatus answers axlr_repair_status: the jobs the origin session
// asked for, newest first, or the one named.
func repairStatus(ctx context.Context, jc JobClient, origin, raw string) (hostCall, error) {
	var args struct {
		Job string `json:"job"`
	}
	if err := jsonargs.Decode(jobs.ToolRepairStatus, json.RawMessage(raw), &args); err != nil {
		return hostCall{contract.CallFailed, toolError("invalid_arguments", err.Error())}, nil
	}
	args.Job = strings.TrimSpace(args.Job)
	all, err := jc.Jobs(ctx)
	if err != nil {
		return hostCall{}, registryError{fmt.Errorf("the job registry did not list the jobs: %w", err)}
	}
	out := struct {
		Jobs    []jobView `json:"jobs"`
		Message string    `json:"message,omitempty"`
	}{Jobs: []jobView{}}
	var ids []string
	for _, r := range all {
		if r.OriginSession != origin {
			continue
		}
		ids = append(ids, r.ID)
		if args.Job == "" || r.ID == args.Job {
			out.Jobs = append(out.Jobs, jobOf(r))
		}
	}
	switch {
	case args.Job != "" && len(out.Jobs) == 0 && len(ids) == 0:
		return hostCall{contract.CallFailed, toolError("not_found", fmt.Sprintf("job %s is not one this session asked for; it asked for none", args.Job))}, nil
	case args.Job != "" && len(out.Jobs) == 0:
		return hostCall{contract.CallFailed, toolError("not_found", fmt.Sprintf("job %s is not one this session asked for; it asked for %s", args.Job, strings.Join(ids, ", ")))}, nil
	case len(ids) == 0:
		out.Message = "This session has asked for no repair or improvement."
	}
	return answered(out), nil
}

// inClone reports whether a workspace is a job's clone: it holds a
// marker, even one that does not read.
func inClone(root string) bool {
	if root == "" {
		return false
	}
	_, err := forge.ReadMarker(root)
	return !errors.Is(err, forge.ErrNoMarker)
}

// sessionCalls are the tool calls of sessions, in order, as their
// transcripts record them.
func (a *Session) sessionCalls(ids []string) ([]jobs.CallOutcome, error) {
	var out []jobs.CallOutcome
	for _, id := range ids {
		log, err := a.open(id)
		if err != nil {
			return nil, err
		}
		calls, err := transcriptCalls(log)
		if err != nil {
			return nil, err
		}
		out = append(out, calls...)
	}
	return out, nil
}

// maxOutcomeMessage bounds the text kept of a call's result.
const maxOutcomeMessage = 2 << 10

// transcriptCalls are a session's tool calls in the order the model made
// them, each with what its result in the transcript says became of it.
func transcriptCalls(log *session.Log) ([]jobs.CallOutcome, error) {
	type made struct {
		key string
		tc  agent.ToolCall
	}
	var order []made
	results := map[string]messageData{}
	for _, ev := range log.Events(0) {
		if ev.Type != evMessage {
			continue
		}
		d, err := decode[messageData](ev)
		if err != nil {
			return nil, err
		}
		switch d.Message.Role {
		case "assistant":
			// A response is saved at the revision it answers, which is its
			// calls' key.
			for i, tc := range d.Message.ToolCalls {
				order = append(order, made{fmt.Sprintf("%d.%d", ev.Seq, i), tc})
			}
		case "tool":
			if d.CallKey != "" {
				results[d.CallKey] = d
			}
		}
	}
	out := make([]jobs.CallOutcome, 0, len(order))
	for _, m := range order {
		r, ok := results[m.key]
		if !ok {
			out = append(out, jobs.CallOutcome{CallID: m.tc.ID, Tool: m.tc.Name, Status: jobs.CallPending, Plugin: pluginTool(m.tc.Name)})
			continue
		}
		out = append(out, callOutcome(m.tc, r))
	}
	return out, nil
}

// pluginTool reports whether a call reached an MCP plugin: axlr_call_tool,
// or an alias <plugin>__<tool>, which no tool of axlr's own is named like.
func pluginTool(name string) bool { return name == CallToolTool || strings.Contains(name, "__") }

// callOutcome is what a call's result says became of it. A workspace tool
// that failed takes the status its error code reports under (rejected,
// timed out, cancelled, failed); a call axlr refused before it ran (no
// decision: an unknown tool, malformed arguments, a tool not offered) is
// rejected; a workspace tool's result that does not read as one is
// unreadable.
func callOutcome(tc agent.ToolCall, r messageData) jobs.CallOutcome {
	c := jobs.CallOutcome{CallID: tc.ID, Tool: tc.Name, Plugin: pluginTool(tc.Name)}
	content := r.Message.Content
	_, local := workspaceTool(tc.Name)
	switch r.Status {
	case contract.CallCompleted:
		c.Status = jobs.CallCompleted
		if tc.Name == modelPrefix+tools.Exec {
			var out struct {
				ExitCode *int `json:"exit_code"`
			}
			if json.Unmarshal([]byte(content), &out) != nil || out.ExitCode == nil {
				c.Status = jobs.CallUnreadable
			}
			c.ExitCode = out.ExitCode
		}
	case contract.CallFailed:
		var e struct {
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		coded := json.Unmarshal([]byte(content), &e) == nil && e.Error != nil && e.Error.Code != ""
		switch {
		case coded && local:
			c.Status = jobs.CallStatus((&tools.Error{Code: e.Error.Code}).Status())
			c.Code, c.Message = e.Error.Code, e.Error.Message
		case coded:
			c.Status, c.Code, c.Message = jobs.CallFailed, e.Error.Code, e.Error.Message
		case r.Decision == "":
			c.Status, c.Message = jobs.CallRejected, content
		case local:
			c.Status, c.Message = jobs.CallUnreadable, content
		default:
			c.Status, c.Message = jobs.CallFailed, content
		}
	case contract.CallUncertain:
		c.Status, c.Message = jobs.CallUncertain, content
	case contract.CallDenied:
		c.Status, c.Message = jobs.CallDenied, content
	case contract.CallForbidden:
		c.Status, c.Message = jobs.CallForbidden, content
	case contract.CallPending, "":
		c.Status = jobs.CallPending
	default:
		c.Status, c.Message = jobs.CallStatus(r.Status), content
	}
	c.Message = cutUTF8(c.Message, maxOutcomeMessage)
	return c
}
