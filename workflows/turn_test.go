package workflows

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
)

// testHooks is a component a test host plugs into a turn: it offers a
// tool of its own and takes its calls, counts the requests it sees, can
// stop the turn before a request, and asks the model once more after its
// first answer.
type testHooks struct {
	t        *Turn
	stopAt   int // BeforeRequest fails on this request (0: never)
	before   int
	took     []string
	answers  []string
	noteSent bool
}

func (h *testHooks) Offer(tools []string) Offer {
	return Offer{Tools: append(slices.Clone(tools), "host_tool")}
}

func (h *testHooks) BeforeRequest(workflow.Context) error {
	h.before++
	if h.before == h.stopAt {
		return errors.New("the host stopped the turn")
	}
	return nil
}

func (h *testHooks) OnCall(ctx workflow.Context, c ModelCall, _ []ModelCall) (bool, error) {
	if c.Tool != "host_tool" {
		return false, nil
	}
	h.took = append(h.took, c.CallID)
	return true, h.t.Record(ctx, c, contract.CallCompleted, contract.AutoApprove, "the host did it")
}

func (h *testHooks) OnAnswer(ctx workflow.Context, text string) (bool, error) {
	h.answers = append(h.answers, text)
	if h.noteSent {
		return false, nil
	}
	h.noteSent = true
	return true, h.t.AppendConsole(ctx, ActivityAppendNote, "note:test", "[AXLR] one more thing")
}

var _ TurnHooks = (*testHooks)(nil)

// hookReport is what the test host saw.
type hookReport struct {
	Result  contract.Result
	Before  int
	Took    []string
	Answers []string
	Events  []contract.EventType
}

// hookHost is a workflow that hosts a turn with testHooks, the way the
// session and the task host it with the ceremony driver.
func hookHost(ctx workflow.Context, stopAt int) (hookReport, error) {
	st := newHostState(sessionID, "", "exec-1")
	st.Approval = policy.ApproveNone
	t := newHost(&st, hostOptions{}).turn
	h := &testHooks{t: t, stopAt: stopAt}
	t.hooks = h
	err := t.Begin(ctx, BeginTurnInput{SessionID: sessionID, ExecutionID: "exec-1", Prompt: "go", Root: "/work/app", Mode: "normal"})
	if err == nil {
		err = t.Run(ctx, nil)
	}
	status, msg := endedAs(err, "")
	res := t.Finish(ctx, status, msg, nil)
	return hookReport{Result: *res, Before: h.before, Took: h.took, Answers: h.answers, Events: eventTypes(st.Events)}, nil
}

func runHookHost(t *testing.T, acts *scripted, stopAt int) hookReport {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(hookHost, workflow.RegisterOptions{Name: "test.HookHost"})
	env.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session."})
	env.ExecuteWorkflow("test.HookHost", stopAt)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var r hookReport
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTurnHooks: a turn asks its hooks which tools to offer, lets them
// take a call before the policy sees it, runs them before every request,
// and lets them continue the turn after an answer.
func TestTurnHooks(t *testing.T) {
	acts := newScripted(
		reply{calls: []scriptCall{
			{tool: "host_tool", args: map[string]any{"x": 1}},
			{tool: "local_read", args: map[string]any{"path": "README.md"}},
		}},
		reply{text: "first answer"},
		reply{text: "second answer"},
	)
	r := runHookHost(t, acts, 0)
	if r.Result.Status != contract.Completed {
		t.Fatalf("result %+v", r.Result)
	}
	// Offer: every request carried the host's tool beside the local ones.
	for _, req := range acts.requests {
		if !slices.Contains(req.Tools, "host_tool") || !slices.Contains(req.Tools, "local_read") {
			t.Fatalf("request offered %v", req.Tools)
		}
	}
	// OnCall: the hook took host_tool (recorded, never run); the policy
	// ran local_read.
	if len(r.Took) != 1 || len(acts.ran) != 1 || acts.ran[0].Tool != "local_read" {
		t.Fatalf("took %v, ran %+v", r.Took, acts.ran)
	}
	if len(acts.recorded) != 1 || acts.recorded[0].Tool != "host_tool" || acts.recorded[0].Message != "the host did it" {
		t.Fatalf("recorded %+v", acts.recorded)
	}
	// BeforeRequest ran before each of the three requests.
	if r.Before != 3 || len(acts.requests) != 3 {
		t.Fatalf("before %d, requests %d", r.Before, len(acts.requests))
	}
	// OnAnswer: the first answer went on with the hook's note, the second
	// ended the turn.
	if !slices.Equal(r.Answers, []string{"first answer", "second answer"}) || len(acts.notes) != 1 {
		t.Fatalf("answers %q, notes %q", r.Answers, acts.notes)
	}
	want := []contract.EventType{contract.EventSession, contract.EventToolRequested, contract.EventToolCompleted, contract.EventToolRequested,
		contract.EventToolCompleted, contract.EventText, contract.EventText, contract.EventCompleted}
	if !slices.Equal(r.Events, want) {
		t.Fatalf("events %v, want %v", r.Events, want)
	}
}

// TestTurnHookStopsBeforeRequest: an error from BeforeRequest ends the
// turn before the request, and the execution fails with it.
func TestTurnHookStopsBeforeRequest(t *testing.T) {
	acts := newScripted(reply{calls: []scriptCall{{tool: "local_read", args: map[string]any{"path": "a"}}}}, reply{text: "never"})
	r := runHookHost(t, acts, 2)
	if r.Result.Status != contract.Failed || !strings.Contains(r.Result.Error, "the host stopped the turn") || len(acts.requests) != 1 {
		t.Fatalf("result %+v after %d requests", r.Result, len(acts.requests))
	}
}
