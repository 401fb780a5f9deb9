package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// execOptions are the flags of --exec and --decide.
type execOptions struct {
	common
	prompt    string
	execSet   bool
	model     string
	root      string
	mode      string
	approve   string
	sessionID string
	decide    string
	callID    string
	reason    string
	policy    string
}

func parseExec(args []string, sys IO) (*execOptions, error) {
	o := &execOptions{}
	// --exec takes the prompt as its value or, when the next argument is a
	// flag, as a positional argument: both --exec "prompt" --model m and
	// --exec --model m "prompt" work.
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--exec" || a == "-exec":
			o.execSet = true
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				o.prompt = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--exec=") || strings.HasPrefix(a, "-exec="):
			o.execSet = true
			_, o.prompt, _ = strings.Cut(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	fs := newFlagSet("axlr-tui", sys)
	o.common.register(fs)
	fs.StringVar(&o.model, "model", "", "model name")
	fs.StringVar(&o.root, "root", "", "workspace (default: the current directory)")
	fs.StringVar(&o.mode, "mode", "normal", "work mode")
	fs.StringVar(&o.approve, "approve", "none", "approval level: none, local or all")
	fs.StringVar(&o.sessionID, "session", "", "session to continue")
	fs.StringVar(&o.decide, "decide", "", "decide the pending call: approve or deny")
	fs.StringVar(&o.callID, "call", "", "the call to decide (default: the pending one)")
	fs.StringVar(&o.reason, "reason", "", "why, with --decide deny")
	fs.StringVar(&o.policy, "policy", "", "execution policy file (JSON)")
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return nil, err
	}
	if o.execSet && o.prompt == "" && len(pos) > 0 {
		o.prompt, pos = pos[0], pos[1:]
	}
	if len(pos) > 0 {
		return nil, exitWith(ExitUsage, "unexpected argument %q", pos[0])
	}
	switch {
	case o.execSet && o.decide != "":
		return nil, exitWith(ExitUsage, "--exec and --decide cannot be used together")
	case o.decide != "":
		if o.sessionID == "" {
			return nil, exitWith(ExitUsage, "--decide needs --session ID")
		}
		if o.decide != "approve" && o.decide != "deny" {
			return nil, exitWith(ExitUsage, "--decide %q: use approve or deny", o.decide)
		}
	case o.execSet:
		if strings.TrimSpace(o.prompt) == "" {
			return nil, exitWith(ExitUsage, "--exec needs a prompt")
		}
		if !slices.Contains(workflows.SupportedModes, o.mode) {
			return nil, exitWith(ExitUsage, "unknown mode %q: this axlr-tui supports %s", o.mode, strings.Join(workflows.SupportedModes, ", "))
		}
		if _, err := policy.ParseApproval(o.approve); err != nil {
			return nil, exitWith(ExitUsage, "--approve: %v", err)
		}
	default:
		return nil, exitWith(ExitUsage, "nothing to do: use --exec \"<prompt>\", --decide, result or history (see --help)")
	}
	if o.sessionID != "" && !session.ValidID(o.sessionID) {
		return nil, exitWith(ExitUsage, "--session %q is not a session id (a lowercase UUID)", o.sessionID)
	}
	return o, nil
}

func runExec(ctx context.Context, args []string, sys IO) error {
	o, err := parseExec(args, sys)
	if err != nil {
		return err
	}
	var pol *policy.Policy
	if o.policy != "" {
		data, err := os.ReadFile(o.policy)
		if err != nil {
			return exitWith(ExitUsage, "read policy: %v", err)
		}
		if pol, err = policy.Parse(data); err != nil {
			return exitWith(ExitUsage, "%s: %v", o.policy, err)
		}
	}
	c, err := o.connect(ctx, sys)
	if err != nil {
		return err
	}
	defer c.Close()
	queue, err := hostQueue(sys)
	if err != nil {
		return err
	}
	if err := checkWorker(ctx, c, queue); err != nil {
		return err
	}

	id, err := session.NewID()
	if err != nil {
		return err
	}
	var (
		workflowID string
		handle     client.WorkflowUpdateHandle
	)
	switch {
	case o.decide != "":
		if workflowID, err = findSession(ctx, c, o.sessionID); err != nil {
			return err
		}
		handle, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: workflowID, UpdateID: id, UpdateName: workflows.UpdateDecide, WaitForStage: client.WorkflowUpdateStageCompleted,
			Args: []any{workflows.DecideRequest{ExecutionID: id, CallID: o.callID, Decision: contract.Decision(o.decide), Reason: o.reason, Policy: pol}},
		})
	case o.sessionID != "":
		if workflowID, err = findSession(ctx, c, o.sessionID); err != nil {
			return err
		}
		root := ""
		if o.root != "" {
			if root, err = absRoot(o.root, sys); err != nil {
				return err
			}
		}
		handle, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: workflowID, UpdateID: id, UpdateName: workflows.UpdateExecute, WaitForStage: client.WorkflowUpdateStageCompleted,
			Args: []any{workflows.ExecuteRequest{ExecutionID: id, Prompt: o.prompt, Model: o.model, Root: root, Mode: o.mode, Approval: policy.Approval(o.approve), Policy: pol}},
		})
	default:
		root, rerr := absRoot(o.root, sys)
		if rerr != nil {
			return rerr
		}
		sid, serr := session.NewID()
		if serr != nil {
			return serr
		}
		workflowID = workflows.SessionWorkflowID(sid)
		start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID:                       workflowID,
			TaskQueue:                queue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		}, workflows.SessionWorkflow, workflows.SessionInput{SessionID: sid, Host: strings.TrimPrefix(queue, "axlr-host-")})
		handle, err = c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateID: id, UpdateName: workflows.UpdateExecute, WaitForStage: client.WorkflowUpdateStageCompleted,
				Args: []any{workflows.ExecuteRequest{ExecutionID: id, Prompt: o.prompt, Model: o.model, Root: root, Mode: o.mode, Approval: policy.Approval(o.approve), Policy: pol}},
			},
		})
	}
	if err != nil {
		return requestError(err, o.common.address)
	}
	var acc workflows.Accepted
	if err := handle.Get(ctx, &acc); err != nil {
		return requestError(err, o.common.address)
	}
	w := &watcher{c: c, workflowID: workflowID, executionID: acc.ExecutionID, json: o.json, sys: sys}
	return w.run(ctx)
}

// requestError turns a refused update into a one-line message.
func requestError(err error, addr string) error {
	var unavailable *serviceerror.Unavailable
	if errors.As(err, &unavailable) {
		return unreachable(cmp.Or(addr, DefaultTemporalAddress), err)
	}
	msg := err.Error()
	for _, prefix := range []string{"unable to update workflow: ", "update failed: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return exitWith(ExitFailed, "%s", msg)
}

// checkWorker makes sure an axlrd worker polls this host's task queue, so
// a request does not wait forever for a worker that is not there. A worker
// that has just started may not have polled yet: it is given a few seconds.
func checkWorker(ctx context.Context, c client.Client, queue string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		resp, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err == nil && len(resp.GetPollers()) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return exitWith(ExitUnreachable, "describe task queue %s: %v", queue, oneLine(err))
			}
			return exitWith(ExitUnreachable, "no axlrd worker serves this host (task queue %s): start axlrd on this machine, with the same AXLR_HOST_ID if you set it", queue)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// findSession returns the workflow id holding a session: its own, or the
// workflow it was opened in as a successor past the context cap.
func findSession(ctx context.Context, c client.Client, sessionID string) (string, error) {
	id := workflows.SessionWorkflowID(sessionID)
	_, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err == nil {
		return id, nil
	}
	var notFound *serviceerror.NotFound
	if !errors.As(err, &notFound) {
		return "", exitWith(ExitUnreachable, "look up session %s: %v", sessionID, err)
	}
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query:    fmt.Sprintf("%s = '%s'", workflows.SearchAttributeSessions, sessionID),
		PageSize: 1,
	})
	if err != nil {
		return "", exitWith(ExitFailed, "look up session %s: %v", sessionID, err)
	}
	if len(resp.GetExecutions()) == 0 {
		return "", exitWith(ExitFailed, "no session %s in axlrd", sessionID)
	}
	return resp.GetExecutions()[0].GetExecution().GetWorkflowId(), nil
}

// watcher follows an execution's events until its result, through axlrd
// restarts.
type watcher struct {
	c           client.Client
	workflowID  string
	executionID string
	json        bool
	sys         IO
	// poll is the interval between progress queries (default 200 ms).
	poll time.Duration
}

func (w *watcher) run(ctx context.Context) error {
	poll := w.poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	after := 0
	down := false
	interrupted := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.sys.Interrupts:
			if interrupted {
				return &exitError{code: ExitSignal, msg: "left without waiting; the execution goes on in axlrd"}
			}
			interrupted = true
			fmt.Fprintln(w.sys.Stderr, "axlr-tui: interrupting the execution (Ctrl+C again to leave without waiting)")
			w.interrupt(ctx)
			continue
		case <-timer.C:
		}
		p, err := w.progress(ctx, after)
		var refused *serviceerror.QueryFailed
		if errors.As(err, &refused) {
			return exitWith(ExitFailed, "watch execution %s: %s", w.executionID, refused.Message)
		}
		if err != nil {
			if !down {
				fmt.Fprintf(w.sys.Stderr, "axlr-tui: axlrd unreachable (%s); waiting for it to come back\n", oneLine(err))
				down = true
			}
			timer.Reset(time.Second)
			continue
		}
		if down {
			fmt.Fprintln(w.sys.Stderr, "axlr-tui: axlrd is back")
			down = false
		}
		for _, ev := range p.Events {
			w.print(ev)
		}
		after = p.Next
		if p.Result != nil {
			w.printResult(p.Result)
			return statusExit(p.Result.Status)
		}
		timer.Reset(poll)
	}
}

func (w *watcher) progress(ctx context.Context, after int) (workflows.Progress, error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := w.c.QueryWorkflow(qctx, w.workflowID, "", workflows.QueryProgress, workflows.ProgressQuery{ExecutionID: w.executionID, After: after})
	if err != nil {
		return workflows.Progress{}, err
	}
	var p workflows.Progress
	if err := v.Get(&p); err != nil {
		return workflows.Progress{}, err
	}
	return p, nil
}

func (w *watcher) interrupt(ctx context.Context) {
	id, err := session.NewID()
	if err != nil {
		return
	}
	h, err := w.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: w.workflowID, UpdateID: id, UpdateName: workflows.UpdateInterrupt, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.InterruptRequest{Reason: "interrupted from axlr-tui"}},
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		fmt.Fprintln(w.sys.Stderr, "axlr-tui: interrupt:", oneLine(err))
	}
}

// print writes one event: a JSON line with --json, else a progress line on
// stderr (the answer alone goes to stdout).
func (w *watcher) print(ev contract.Event) {
	if w.json {
		writeJSONLine(w.sys.Stdout, ev)
		return
	}
	switch ev.Type {
	case contract.EventSession:
		fmt.Fprintf(w.sys.Stderr, "· session %s\n", ev.SessionID)
	case contract.EventToolRequested:
		fmt.Fprintf(w.sys.Stderr, "→ %s %s\n", ev.Tool, compactArgs(ev.Arguments))
	case contract.EventToolCompleted:
		detail := cmp.Or(ev.Text, ev.Reason, ev.Error)
		if detail != "" {
			detail = ": " + detail
		}
		fmt.Fprintf(w.sys.Stderr, "  %s %s%s\n", ev.Tool, ev.Status, oneLineString(detail))
	case contract.EventSessionContinued:
		fmt.Fprintf(w.sys.Stderr, "· context cap reached: continuing in session %s\n", ev.SessionID)
	case contract.EventDecisionRequired:
		fmt.Fprintf(w.sys.Stderr, "? %s (call %s) waits for a decision: %s %s\n", ev.Tool, ev.CallID, ev.Reason, compactArgs(ev.Arguments))
	case contract.EventStepClaimed:
		fmt.Fprintf(w.sys.Stderr, "▸ step %s (iteration %d) in %s\n", ev.Step, ev.Iteration, ev.State)
	case contract.EventStepCompleted:
		fmt.Fprintf(w.sys.Stderr, "✓ step %s %s %s\n", ev.Step, ev.Status, ev.Reason)
	case contract.EventTransition:
		fmt.Fprintf(w.sys.Stderr, "→ %s: now %s\n", ev.Trigger, ev.State)
	}
}

func (w *watcher) printResult(r *contract.Result) {
	if w.json {
		writeJSONLine(w.sys.Stdout, contract.Event{Type: contract.EventResult, Result: r})
		return
	}
	printResultText(w.sys, r)
}

// printResultText prints the answer on stdout and, on stderr, what the
// person needs to act on.
func printResultText(sys IO, r *contract.Result) {
	if r.Answer != "" {
		fmt.Fprintln(sys.Stdout, r.Answer)
	}
	if c := r.Ceremony; c != nil {
		where := c.State
		switch {
		case c.Stopped != "":
			where += " (stopped: " + c.Stopped + ")"
		case !c.Ended && c.Step != "":
			where += ", step " + c.Step + " open"
		}
		fmt.Fprintf(sys.Stderr, "axlr-tui: ceremony %s %s (instance %s): %s\n", c.Definition, c.Version, c.InstanceID, where)
	}
	switch r.Status {
	case contract.NeedsDecision:
		if p := r.Pending; p != nil {
			fmt.Fprintf(sys.Stderr, "axlr-tui: %s (call %s) waits for a decision: axlr-tui --session %s --decide approve|deny --call %s\n", p.Tool, p.CallID, r.SessionID, p.CallID)
		}
	case contract.Failed, contract.Interrupted:
		fmt.Fprintf(sys.Stderr, "axlr-tui: execution %s: %s (session %s)\n", r.Status, r.Error, r.SessionID)
	}
}

func writeJSONLine(out io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(out, "{\"type\":\"failed\",\"error\":%q}\n", err.Error())
		return
	}
	out.Write(append(b, '\n'))
}

func compactArgs(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return oneLineString(s)
}

func oneLine(err error) string { return oneLineString(err.Error()) }

func oneLineString(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
