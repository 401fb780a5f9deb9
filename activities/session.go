// Package activities holds the Temporal activities of axlr's workflows. Each
// area is a struct holding its dependencies (the session store, the model
// provider, the workspace tools), built once by axlrd and by tests with real
// parts behind fake boundaries. Activities are idempotent on their keys: a
// retry after a crash finds what the first attempt saved and returns it.
package activities

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/internal/live"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// Model is the provider the session activities need.
type Model interface {
	Complete(ctx context.Context, req agent.Request, onProgress func(agent.Progress)) (agent.Response, error)
}

// SessionSettings are the person's settings the session activities apply,
// as plain values: axlrd fills them from settings.json.
type SessionSettings struct {
	// Model is the model of a session that names none (model).
	Model string
	// Approvals are the approval rules (approvals, with the destructive
	// list's default applied).
	Approvals policy.Settings
	// ContextCaps are the context caps of the models settings.json names,
	// in tokens; ContextTokens is any other model's (context_tokens). 0 is
	// no cap.
	ContextCaps   map[string]int
	ContextTokens int
	// MaxTokens caps each response (provider.max_tokens; 0: the
	// provider's default).
	MaxTokens int
	// Stream asks the provider for server-sent events (provider.stream).
	Stream bool
	// CeremonyProfile is ceremonies.profile.
	CeremonyProfile string
	// Jobs are what the jobs a session asks for launch under.
	Jobs workflows.JobLaunchSettings
}

// contextCap is model's context cap in tokens; 0 is no cap.
func (s *SessionSettings) contextCap(model string) int {
	if c, ok := s.ContextCaps[model]; ok {
		return c
	}
	return s.ContextTokens
}

// Session implements workflows.SessionActivities.
type Session struct {
	Store    *session.Store
	Model    Model
	Settings SessionSettings
	// Workspaces opens the workspace tools of each root once.
	Workspaces *Workspaces
	// Hosts are the web and plugin tools; nil offers none.
	Hosts *HostTools
	// Drafts is where the incidents' drafts are kept by digest
	// (Ceremony.Drafts): a pending approval carries the bytes.
	Drafts string
	Log    zerolog.Logger
	// HeartbeatEvery is how often long activities heartbeat (default 2 s).
	HeartbeatEvery time.Duration
	// Live receives the provider's tokens as a streamed model request
	// gets them, keyed by the workflow's id, for the service API's
	// streams on this axlrd; nil sends them nowhere.
	Live *live.Broker

	mu          sync.Mutex
	specs       map[string]agent.ToolSpec
	transcripts transcripts
}

var _ workflows.SessionActivities = (*Session)(nil)

// Workspaces keeps one tools.Workspace per root, opened on first use.
type Workspaces struct {
	// Env is the complete environment of local_exec children.
	Env []string
	// Sandbox confines them and the checks (tools.sandbox); nil runs them
	// unconfined.
	Sandbox *tools.Sandbox

	mu   sync.Mutex
	open map[string]*tools.Workspace
}

// Get returns the workspace of a root, opening it on first use.
func (w *Workspaces) Get(root string) (*tools.Workspace, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ws, ok := w.open[root]; ok {
		return ws, nil
	}
	if err := checkRoot(root); err != nil {
		return nil, err
	}
	ws, err := tools.Open(root, tools.Options{Env: w.Env, Sandbox: w.Sandbox})
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("open workspace %s: %v", root, err), workflows.ErrTypeBadRequest, err)
	}
	if w.open == nil {
		w.open = map[string]*tools.Workspace{}
	}
	w.open[root] = ws
	return ws, nil
}

// sandbox is the workspaces' sandbox; nil for no Workspaces.
func (w *Workspaces) sandbox() *tools.Sandbox {
	if w == nil {
		return nil
	}
	return w.Sandbox
}

// Close closes every workspace opened.
func (w *Workspaces) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, ws := range w.open {
		errs = append(errs, ws.Close())
	}
	w.open = nil
	return errors.Join(errs...)
}

// The compact profile's context: an 80 KiB ceiling and 8 KiB per tool
// result.
const (
	CompactCeiling     = 80 << 10
	CompactResultBytes = 8 << 10
)

// Limits of what the workflow sees of a call's arguments.
const (
	// ArgLimit cuts each argument's text before it reaches the policy.
	ArgLimit = 2 << 10
	// previewValueLimit cuts each string in an event's preview.
	previewValueLimit = 512
)

// BeginTurn opens the session on first use and appends the person's prompt.
func (a *Session) BeginTurn(ctx context.Context, in workflows.BeginTurnInput) (workflows.BeginTurnResult, error) {
	log, created, err := a.openOrCreate(in.SessionID)
	if err != nil {
		return workflows.BeginTurnResult{}, err
	}
	var meta createdData
	if ev, ok := log.ByKey(keyCreated); ok {
		if meta, err = decode[createdData](ev); err != nil {
			return workflows.BeginTurnResult{}, err
		}
	}
	root := in.Root
	if root == "" {
		root = meta.Root
	}
	if err := checkRoot(root); err != nil {
		return workflows.BeginTurnResult{}, err
	}
	model := cmp.Or(in.Model, meta.Model, a.Settings.Model)
	if model == "" {
		return workflows.BeginTurnResult{}, temporal.NewNonRetryableApplicationError(
			`no model: pass --model NAME or set "model" in settings.json`, workflows.ErrTypeBadRequest, nil)
	}
	if created || meta.Root == "" {
		if _, err := appendEvent(log, evCreated, keyCreated, createdData{Root: root, Mode: in.Mode, Model: model}); err != nil {
			return workflows.BeginTurnResult{}, err
		}
		if err := a.appendMessage(log, keySystem, messageData{Message: agent.Message{Role: "system", Content: systemPrompt(root, a.Workspaces.sandbox())}}); err != nil {
			return workflows.BeginTurnResult{}, err
		}
	}
	if in.Prompt != "" {
		if err := a.appendMessage(log, keyPrompt(in.ExecutionID), messageData{Message: agent.Message{Role: "user", Content: in.Prompt}, Prompt: true}); err != nil {
			return workflows.BeginTurnResult{}, err
		}
	}
	s := &a.Settings
	return workflows.BeginTurnResult{
		Revision: log.Len(),
		Model:    model,
		Root:     root,
		Settings: policy.Settings{
			Autonomous: s.Approvals.Autonomous,
			Allowed:    slices.Clone(s.Approvals.Allowed),
			AlwaysAsk:  slices.Clone(s.Approvals.AlwaysAsk),
		},
		ContextCap:      s.contextCap(model),
		MaxTokens:       s.MaxTokens,
		Stream:          s.Stream,
		CeremonyProfile: s.CeremonyProfile,
		HostTools:       a.Hosts.offer(ctx),
		About:           WorkspaceAbout(root),
	}, nil
}

// WorkspaceAbout is a workspace's memory about: repo:<owner>/<name> of its
// origin remote, else ws:<the first 16 hex digits of its path's sha256>.
func WorkspaceAbout(root string) string {
	if repo, ok := forge.RepositoryOf(root); ok {
		return "repo:" + repo
	}
	sum := sha256.Sum256([]byte(root))
	return "ws:" + hex.EncodeToString(sum[:8])
}

// ModelRequest asks the model for its next message at a revision of the
// session. A response already saved for that revision is returned without
// calling the provider.
func (a *Session) ModelRequest(ctx context.Context, in workflows.ModelRequestInput) (workflows.ModelRequestResult, error) {
	compact := in.StepDone != nil && in.StepDone.Compact
	log, err := a.open(in.SessionID)
	if err != nil {
		return workflows.ModelRequestResult{}, err
	}
	if ev, ok := log.ByKey(keyResponse(in.Revision)); ok {
		return a.responseResult(ev, compact)
	}
	if n := log.Len(); n != in.Revision {
		return workflows.ModelRequestResult{}, diverged(in.SessionID, n, in.Revision)
	}
	capTokens, resultLimit := in.ContextCap, 0
	if compact {
		// The compact profile keeps its own ceiling, in bytes.
		capTokens, resultLimit = 0, CompactResultBytes
	}
	msgs, seqs, full, err := a.transcripts.get(log, capTokens, resultLimit)
	if err != nil {
		return workflows.ModelRequestResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeSessionDiverged, err)
	}
	if compact {
		ceiling := CompactCeiling
		if in.ContextCap > 0 {
			ceiling = min(ceiling, in.ContextCap*bytesPerToken)
		}
		var fits bool
		msgs, fits = compactView(msgs, seqs, ceiling)
		full = !fits
	}
	if full {
		return workflows.ModelRequestResult{Revision: in.Revision, ContextFull: true}, nil
	}
	req := agent.Request{Model: in.Model, Messages: msgs, MaxTokens: in.MaxTokens, Stream: in.Stream}
	a.Hosts.ensureListed(ctx)
	for _, name := range in.Tools {
		spec, ok := a.toolSpec(name, in.StepDone)
		if !ok {
			return workflows.ModelRequestResult{}, temporal.NewNonRetryableApplicationError("unknown tool "+name, workflows.ErrTypeBadRequest, nil)
		}
		req.Tools = append(req.Tools, spec)
	}

	var progress agent.Progress
	var pmu sync.Mutex
	stop := heartbeat(ctx, a.HeartbeatEvery, func() any {
		pmu.Lock()
		defer pmu.Unlock()
		return progress
	})
	deltas := a.deltas(ctx, in.SessionID)
	resp, err := a.Model.Complete(ctx, req, func(p agent.Progress) {
		deltas(p)
		pmu.Lock()
		progress = p
		pmu.Unlock()
	})
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return workflows.ModelRequestResult{}, ctx.Err()
		}
		if !agent.Transient(err) {
			return workflows.ModelRequestResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeProviderRejected, err)
		}
		a.Log.Warn().Err(err).Str("session", in.SessionID).Int("revision", in.Revision).Msg("model request failed; retrying")
		return workflows.ModelRequestResult{}, err
	}
	usage := resp.Usage
	data, err := json.Marshal(messageData{
		Message:      agent.Message{Role: "assistant", Content: resp.Text, Reasoning: resp.Reasoning, ToolCalls: resp.ToolCalls},
		Model:        cmp.Or(resp.Model, in.Model),
		FinishReason: resp.FinishReason,
		Usage:        &usage,
	})
	if err != nil {
		return workflows.ModelRequestResult{}, fmt.Errorf("encode response of session %s: %w", in.SessionID, err)
	}
	// Only at the revision it answers: an abandoned attempt (interrupted,
	// timed out) that returns late must not land after newer messages.
	ev, _, err := log.AppendAt(in.Revision, session.Event{Type: evMessage, Key: keyResponse(in.Revision), Data: data})
	if errors.Is(err, session.ErrMoved) {
		return workflows.ModelRequestResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeSessionDiverged, err)
	}
	if err != nil {
		return workflows.ModelRequestResult{}, fmt.Errorf("save response of session %s: %w", in.SessionID, err)
	}
	return a.responseResult(ev, compact)
}

// deltas returns what hands a streamed response's chunks to the live
// readers of the activity's workflow, as text.delta and reasoning.delta
// events of the session the request is in.
func (a *Session) deltas(ctx context.Context, sessionID string) func(agent.Progress) {
	if a.Live == nil {
		return func(agent.Progress) {}
	}
	key := activity.GetInfo(ctx).WorkflowExecution.ID
	return func(p agent.Progress) {
		if p.ReasoningDelta != "" {
			a.Live.Publish(key, contract.Event{Type: contract.EventReasoningDelta, SessionID: sessionID, Text: p.ReasoningDelta})
		}
		if p.TextDelta != "" {
			a.Live.Publish(key, contract.Event{Type: contract.EventTextDelta, SessionID: sessionID, Text: p.TextDelta})
		}
	}
}

// responseResult builds the workflow's compact view of a saved response.
func (a *Session) responseResult(ev session.Event, compact bool) (workflows.ModelRequestResult, error) {
	d, err := decode[messageData](ev)
	if err != nil {
		return workflows.ModelRequestResult{}, err
	}
	res := workflows.ModelRequestResult{
		Revision:     ev.Seq + 1,
		Text:         cutUTF8(d.Message.Content, workflows.TextLimit),
		Reasoning:    cutUTF8(d.Message.Reasoning, workflows.TextLimit),
		FinishReason: d.FinishReason,
	}
	if d.Usage != nil {
		res.Usage = ledger(*d.Usage)
	}
	for i, tc := range d.Message.ToolCalls {
		res.Calls = append(res.Calls, inspectCall(a.Hosts, fmt.Sprintf("%d.%d", ev.Seq, i), tc, compact))
	}
	return res, nil
}

// ToolCall runs one approved call and saves its result. A call whose
// result is saved returns it; a call that changes the workspace and was
// started by an earlier attempt is not run again: it is reported uncertain.
func (a *Session) ToolCall(ctx context.Context, in workflows.ToolCallInput) (workflows.ToolCallResult, error) {
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
	result := func(status contract.CallStatus, content string) (workflows.ToolCallResult, error) {
		ev, err := appendEvent(log, evMessage, keyTool(in.Key), messageData{
			Message: agent.Message{Role: "tool", ToolCallID: tc.ID, Content: content},
			Tool:    tc.Name, CallKey: in.Key, Status: status, Decision: in.Decision,
		})
		if err != nil {
			return workflows.ToolCallResult{}, err
		}
		return workflows.ToolCallResult{Revision: ev.Seq + 1, CallID: in.CallID, Tool: tc.Name, Decision: in.Decision, Status: status, Summary: summarize(tc.Name, status, content)}, nil
	}
	if tc.Name == workflows.HistoryTool {
		from, to, err := parseHistoryArgs(tc.Arguments)
		if err == nil {
			var out string
			if out, err = readHistory(log, from, to, CompactResultBytes); err == nil {
				return result(contract.CallCompleted, out)
			}
		}
		return result(contract.CallFailed, toolError("invalid_request", err.Error()))
	}
	name, ok := workspaceTool(tc.Name)
	if !ok {
		return a.hostCall(ctx, log, tc, in, result)
	}
	if !tools.ReadOnly(name) {
		if _, ok := log.ByKey(keyStarted(in.Key)); ok {
			return result(contract.CallUncertain, "no result: an earlier attempt of this call was interrupted after it may have run. Check the workspace before repeating it.")
		}
		if _, err := appendEvent(log, evStarted, keyStarted(in.Key), startedData{
			CallKey: in.Key, Tool: tc.Name, Attempt: activity.GetInfo(ctx).Attempt,
		}); err != nil {
			return workflows.ToolCallResult{}, err
		}
	}
	ws, err := a.Workspaces.Get(in.Root)
	if err != nil {
		return workflows.ToolCallResult{}, err
	}
	args, err := toolArgs(tc.Arguments, name == tools.Exec && in.Compact)
	if err != nil {
		return result(contract.CallFailed, toolError("invalid_request", err.Error()))
	}
	stop := func() {}
	if name == tools.Exec {
		stop = heartbeat(ctx, a.HeartbeatEvery, func() any { return in.Key })
	}
	out, err := ws.Call(ctx, name, args)
	stop()
	if ctx.Err() != nil {
		return workflows.ToolCallResult{}, ctx.Err()
	}
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return result(contract.CallFailed, toolError(te.Code, te.Message))
		}
		return result(contract.CallFailed, toolError("internal_error", err.Error()))
	}
	return result(contract.CallCompleted, string(out))
}

// hostCall runs a call of a host tool (web, plugin). A plugin's call may
// change something outside: one that an earlier attempt started is not
// run again, it is reported uncertain.
func (a *Session) hostCall(ctx context.Context, log *session.Log, tc agent.ToolCall, in workflows.ToolCallInput,
	result func(contract.CallStatus, string) (workflows.ToolCallResult, error)) (workflows.ToolCallResult, error) {
	a.Hosts.ensureListed(ctx)
	if a.Hosts == nil || !a.Hosts.inspect(tc, &workflows.ModelCall{}) {
		return workflows.ToolCallResult{}, temporal.NewNonRetryableApplicationError("unknown tool "+tc.Name, workflows.ErrTypeBadRequest, nil)
	}
	if a.Hosts.effectful(tc.Name) {
		if _, ok := log.ByKey(keyStarted(in.Key)); ok {
			return result(contract.CallUncertain, "no result: an earlier attempt of this call was interrupted after it may have run. Check before repeating it.")
		}
		if _, err := appendEvent(log, evStarted, keyStarted(in.Key), startedData{
			CallKey: in.Key, Tool: tc.Name, Attempt: activity.GetInfo(ctx).Attempt,
		}); err != nil {
			return workflows.ToolCallResult{}, err
		}
	}
	stop := heartbeat(ctx, a.HeartbeatEvery, func() any { return in.Key })
	var out hostCall
	if workflows.MemoryTool(tc.Name) {
		out = a.Hosts.memoryCall(ctx, tc, in)
	} else {
		out, _ = a.Hosts.call(ctx, tc.Name, tc.Arguments)
	}
	stop()
	if ctx.Err() != nil {
		return workflows.ToolCallResult{}, ctx.Err()
	}
	return result(out.status, out.content)
}

// RecordToolResult saves the result of a call that does not run (forbidden,
// denied, invalid).
func (a *Session) RecordToolResult(ctx context.Context, in workflows.RecordToolResultInput) (workflows.RecordToolResultResult, error) {
	log, err := a.open(in.SessionID)
	if err != nil {
		return workflows.RecordToolResultResult{}, err
	}
	if _, ok := log.ByKey(keyTool(in.Key)); ok {
		return workflows.RecordToolResultResult{Revision: log.Len(), CallID: in.CallID, Tool: in.Tool, Status: in.Status}, nil
	}
	tc, err := findCall(log, in.Key)
	if err != nil {
		return workflows.RecordToolResultResult{}, err
	}
	ev, err := appendEvent(log, evMessage, keyTool(in.Key), messageData{
		Message: agent.Message{Role: "tool", ToolCallID: tc.ID, Content: in.Message},
		Tool:    in.Tool, CallKey: in.Key, Status: in.Status, Decision: in.Decision,
	})
	if err != nil {
		return workflows.RecordToolResultResult{}, err
	}
	return workflows.RecordToolResultResult{Revision: ev.Seq + 1, CallID: in.CallID, Tool: in.Tool, Status: in.Status}, nil
}

// ResetView starts the model's view of a session afresh from a ledger
// (a compact ceremony step): the next request carries the system prompt and
// the ledger only; the log keeps everything. Saved once per key.
func (a *Session) ResetView(ctx context.Context, in workflows.AppendNoteInput) (workflows.RecordToolResultResult, error) {
	return a.appendConsole(in, evView)
}

// AppendNote appends an [AXLR] note of the console to the transcript, on
// the person's side of the conversation: the model reads it with its next
// request. It is saved once per key.
func (a *Session) AppendNote(ctx context.Context, in workflows.AppendNoteInput) (workflows.RecordToolResultResult, error) {
	return a.appendConsole(in, evMessage)
}

// appendConsole saves a console text on the person's side of the
// conversation as an event of type typ, once per key.
func (a *Session) appendConsole(in workflows.AppendNoteInput, typ string) (workflows.RecordToolResultResult, error) {
	log, err := a.open(in.SessionID)
	if err != nil {
		return workflows.RecordToolResultResult{}, err
	}
	ev, err := appendEvent(log, typ, in.Key, messageData{Message: agent.Message{Role: "user", Content: in.Text}})
	if err != nil {
		return workflows.RecordToolResultResult{}, err
	}
	return workflows.RecordToolResultResult{Revision: max(log.Len(), ev.Seq+1)}, nil
}

// FinishExecution builds the execution's result from the transcript and
// saves it in the session it ended in; a result already saved is returned.
func (a *Session) FinishExecution(ctx context.Context, in workflows.FinishExecutionInput) (contract.Result, error) {
	last := in.Sessions[len(in.Sessions)-1]
	log, err := a.open(last)
	if err != nil {
		return contract.Result{}, err
	}
	if ev, ok := log.ByKey(keyResult(in.ExecutionID)); ok {
		return decode[contract.Result](ev)
	}
	events := log.Events(0)
	res := contract.Result{
		Schema:    contract.Schema,
		Status:    in.Status,
		SessionID: last,
		Sessions:  in.Sessions,
		Error:     in.Error,
		ToolCalls: in.ToolCalls,
		Usage:     in.Usage,
		Artifacts: []contract.Artifact{},
	}
	if res.ToolCalls == nil {
		res.ToolCalls = []contract.ToolCallRecord{}
	}
	res.Ceremony, res.Mode = in.Ceremony, in.Mode
	if res.Answer, err = answer(events); err != nil {
		return contract.Result{}, err
	}
	if p := in.Pending; p != nil && p.Approval != nil {
		if res.Pending, err = a.draftPending(p); err != nil {
			return contract.Result{}, err
		}
	} else if p != nil && p.Guard != nil {
		args, err := json.Marshal(p.Guard)
		if err != nil {
			return contract.Result{}, fmt.Errorf("encode pending guard: %w", err)
		}
		res.Pending = &contract.PendingCall{CallID: p.CallID, Tool: p.Tool, Arguments: args}
	} else if p != nil && p.Check != nil {
		args, err := json.Marshal(p.Check)
		if err != nil {
			return contract.Result{}, fmt.Errorf("encode pending check: %w", err)
		}
		res.Pending = &contract.PendingCall{CallID: p.CallID, Tool: p.Tool, Arguments: args}
	} else if p != nil {
		plog, err := a.open(p.Session)
		if err != nil {
			return contract.Result{}, err
		}
		tc, err := findCall(plog, p.Key)
		if err != nil {
			return contract.Result{}, err
		}
		args := json.RawMessage(tc.Arguments)
		if !json.Valid(args) {
			// Malformed arguments are shown as the text the model wrote.
			args, _ = json.Marshal(tc.Arguments)
		}
		res.Pending = &contract.PendingCall{CallID: p.CallID, Tool: p.Tool, Arguments: args}
	}
	ev, err := appendEvent(log, evResult, keyResult(in.ExecutionID), res)
	if err != nil {
		return contract.Result{}, err
	}
	return decode[contract.Result](ev)
}

// draftPending is the pending call of an incident's draft waiting for
// approval, with its bytes from axlrd's kept copy.
func (a *Session) draftPending(p *workflows.PendingRef) (*contract.PendingCall, error) {
	data, err := KeptDraft(a.Drafts, p.Approval.Digest)
	if err != nil {
		return nil, err
	}
	args, err := json.Marshal(workflows.DraftPending{DraftApproval: *p.Approval, Content: string(data)})
	if err != nil {
		return nil, fmt.Errorf("encode the pending draft: %w", err)
	}
	return &contract.PendingCall{CallID: p.CallID, Tool: p.Tool, Arguments: args}, nil
}

// answer is the model's last text to the person after the last prompt.
func answer(events []session.Event) (string, error) {
	text := ""
	for _, ev := range events {
		if ev.Type != evMessage {
			continue
		}
		d, err := decode[messageData](ev)
		if err != nil {
			return "", err
		}
		switch {
		case d.Prompt:
			text = ""
		case d.Message.Role == "assistant" && strings.TrimSpace(d.Message.Content) != "":
			text = d.Message.Content
		}
	}
	return text, nil
}

func (a *Session) open(id string) (*session.Log, error) { return openLog(a.Store, id) }

// savedResult answers a call whose result the log holds already, as it
// was saved: a retried attempt returns it instead of running the call.
func savedResult(log *session.Log, key, callID, tool string, decision contract.Decision) (workflows.ToolCallResult, bool, error) {
	ev, ok := log.ByKey(keyTool(key))
	if !ok {
		return workflows.ToolCallResult{}, false, nil
	}
	d, err := decode[messageData](ev)
	if err != nil {
		return workflows.ToolCallResult{}, false, err
	}
	return workflows.ToolCallResult{Revision: log.Len(), CallID: callID, Tool: tool, Decision: decision, Status: d.Status,
		Summary: summarize(tool, d.Status, d.Message.Content)}, true, nil
}

// openLog opens a session's log; a session that is not in the store, or
// whose log is corrupt, is a final error.
func openLog(store *session.Store, id string) (*session.Log, error) {
	log, err := store.Log(id)
	if errors.Is(err, session.ErrNotFound) {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s is not in the store", id), workflows.ErrTypeSessionDiverged, err)
	}
	if err != nil {
		var corrupt *session.CorruptError
		if errors.As(err, &corrupt) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeSessionDiverged, err)
		}
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	return log, nil
}

func (a *Session) openOrCreate(id string) (*session.Log, bool, error) {
	if a.Store.Exists(id) {
		log, err := a.open(id)
		return log, false, err
	}
	log, err := a.Store.Create(id)
	if errors.Is(err, session.ErrExists) {
		log, err := a.open(id)
		return log, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("create session %s: %w", id, err)
	}
	return log, true, nil
}

func (a *Session) appendMessage(log *session.Log, key string, d messageData) error {
	_, err := appendEvent(log, evMessage, key, d)
	return err
}

// heartbeat records a heartbeat every interval (default 2 s) until the
// returned stop is called. A short call sends none: a heartbeat is a round
// trip to the server.
func heartbeat(ctx context.Context, every time.Duration, details func() any) (stop func()) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return func() {}
	}
	if every <= 0 {
		every = 2 * time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details())
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func checkRoot(root string) error {
	if root == "" {
		return temporal.NewNonRetryableApplicationError("the session has no workspace root", workflows.ErrTypeBadRequest, nil)
	}
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("workspace %s is not a directory on this host", root), workflows.ErrTypeBadRequest, err)
	}
	return nil
}

func diverged(id string, have, want int) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("session %s has %d events where the workflow expected %d", id, have, want),
		workflows.ErrTypeSessionDiverged, nil)
}

// findCall returns the tool call a key names: "<revision>.<index>", the
// response's position in the log and the call's index in it.
func findCall(log *session.Log, key string) (agent.ToolCall, error) {
	revText, idxText, ok := strings.Cut(key, ".")
	rev, err1 := strconv.Atoi(revText)
	idx, err2 := strconv.Atoi(idxText)
	if !ok || err1 != nil || err2 != nil {
		return agent.ToolCall{}, temporal.NewNonRetryableApplicationError("malformed call key "+key, workflows.ErrTypeSessionDiverged, nil)
	}
	// A response is saved at the revision it answers, so its position
	// and its key agree.
	ev, ok := log.ByKey(keyResponse(rev))
	if !ok {
		return agent.ToolCall{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s has no response at %d", log.ID(), rev), workflows.ErrTypeSessionDiverged, nil)
	}
	d, err := decode[messageData](ev)
	if err != nil {
		return agent.ToolCall{}, err
	}
	if idx < 0 || idx >= len(d.Message.ToolCalls) {
		return agent.ToolCall{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("session %s response %d has no call %d", log.ID(), rev, idx), workflows.ErrTypeSessionDiverged, nil)
	}
	return d.Message.ToolCalls[idx], nil
}

func ledger(u agent.Usage) contract.Usage {
	l := contract.Usage{
		Requests:         1,
		PromptTokens:     u.PromptTokens,
		CachedTokens:     u.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens,
		CompletionTokens: u.CompletionTokens,
		ReasoningTokens:  u.ReasoningTokens,
	}
	if u.CostUSD != nil {
		l.CostUSD = *u.CostUSD
		l.CostRequests = 1
	} else {
		l.UnmeteredRequests = 1
	}
	return l
}

func toolError(code, msg string) string {
	// A map of strings always encodes.
	b, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
	return string(b)
}

func summarize(tool string, status contract.CallStatus, content string) string {
	if status != contract.CallCompleted {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(content), &e) == nil && e.Error.Code != "" {
			return cutUTF8(e.Error.Code+": "+e.Error.Message, 200)
		}
		return cutUTF8(content, 200)
	}
	if tool == "local_exec" {
		var out tools.ExecOutput
		if json.Unmarshal([]byte(content), &out) == nil {
			return fmt.Sprintf("exit code %d", out.ExitCode) + contract.SandboxSummary(out.Sandbox, out.SandboxNote)
		}
	}
	return ""
}

// appendEvent saves one event whose data is v, once per key.
func appendEvent(log *session.Log, typ, key string, v any) (session.Event, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return session.Event{}, fmt.Errorf("encode %s event for session %s: %w", typ, log.ID(), err)
	}
	ev, _, err := log.Append(session.Event{Type: typ, Key: key, Data: data})
	if err != nil {
		return session.Event{}, fmt.Errorf("save %s event %s in session %s: %w", typ, key, log.ID(), err)
	}
	return ev, nil
}

// cutUTF8 cuts s to at most n bytes at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
