package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/daemon"
)

// TestContextCapOpensSuccessor: past context_tokens the execution goes on in
// a successor session; the result names both, and the successor's id finds
// the session's workflow through its search attribute.
func TestContextCapOpensSuccessor(t *testing.T) {
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		first := req.Messages[1].Content
		switch {
		case strings.HasPrefix(first, "[AXLR] This session continues"):
			return agenttest.Reply{Text: "continued after the cap", Usage: &agenttest.Usage{PromptTokens: 100, CompletionTokens: 5}}
		case toolResults(req) == 0:
			return agenttest.Reply{Text: "listing", Usage: &agenttest.Usage{PromptTokens: 450, CompletionTokens: 100},
				ToolCalls: []agenttest.ToolCall{{ID: "l1", Name: "local_list", Arguments: `{}`}}}
		}
		return agenttest.Reply{Text: "should not be asked: past the cap"}
	})
	e := newEnv(t, model.URL)
	e.writeSettings(`{"model": "m", "context_tokens": 500}`)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--exec", "list the workspace", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs, res := lines(t, r.stdout)
	if len(res.Sessions) != 2 || res.SessionID != res.Sessions[1] || res.Answer != "continued after the cap" {
		t.Fatalf("result %+v", res)
	}
	if res.Usage.Requests != 2 || res.Usage.PromptTokens != 550 {
		t.Fatalf("usage over both sessions %+v", res.Usage)
	}
	var continued *contract.Event
	for i := range evs {
		if evs[i].Type == contract.EventSessionContinued {
			continued = &evs[i]
		}
	}
	if continued == nil || continued.From != res.Sessions[0] || continued.SessionID != res.Sessions[1] {
		t.Fatalf("session.continued %+v in %+v", continued, evs)
	}
	if last := model.Requests()[model.Count()-1]; !strings.Contains(last.Messages[1].Content, "list the workspace") {
		t.Fatalf("the successor does not carry the request: %q", last.Messages[1].Content)
	}

	// The successor's id reaches the workflow (visibility is updated
	// asynchronously, so allow it a moment).
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := e.tui(ctx, "result", res.SessionID)
		if got.code == 0 && strings.TrimSpace(got.stdout) == res.Answer {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("result by successor id: exit %d %q %q", got.code, got.stdout, got.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestProviderRejectionFailsExecution(t *testing.T) {
	model := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Status: 401, Error: "Incorrect API key provided"}))
	e := newEnv(t, model.URL)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "hi", "--model", "m", "--json")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, res := lines(t, r.stdout)
	if res.Status != contract.Failed || !strings.Contains(res.Error, "Incorrect API key provided") || model.Count() != 1 {
		t.Fatalf("result %+v after %d requests", res, model.Count())
	}
}

// TestContinueAsNewOnTheServer: with a low suggestion threshold the
// session continues as new between executions, and the next execution and
// the result command work across runs.
func TestContinueAsNewOnTheServer(t *testing.T) {
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		// One call per prompt, then the answer.
		last := len(req.Messages) - 1
		for req.Messages[last].Role != "user" {
			last--
		}
		if last == len(req.Messages)-1 {
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "l", Name: "local_list", Arguments: `{}`}}}
		}
		return agenttest.Reply{Text: "answer to " + req.Messages[last].Content}
	})
	e := newEnv(t, model.URL)
	e.startWith(func(o *daemon.Options) {
		o.DynamicConfig = map[string]any{"limit.historyCount.suggestContinueAsNew": 20}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := e.tui(ctx, "--exec", "one", "--model", "m", "--json")
	if first.code != 0 {
		t.Fatalf("first: exit %d %s", first.code, first.stderr)
	}
	_, res := lines(t, first.stdout)
	for _, prompt := range []string{"two", "three"} {
		r := e.tui(ctx, "--exec", prompt, "--session", res.SessionID)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "answer to "+prompt {
			t.Fatalf("%s: exit %d %q %q", prompt, r.code, r.stdout, r.stderr)
		}
	}
	h := e.tui(ctx, "history", res.SessionID, "--json")
	var traj client.Trajectory
	if err := json.Unmarshal([]byte(h.stdout), &traj); err != nil || len(traj.Runs) < 2 {
		t.Fatalf("history runs %v (%v)", traj.Runs, err)
	}
	got := e.tui(ctx, "result", res.SessionID, "--json")
	var last contract.Result
	if err := json.Unmarshal([]byte(got.stdout), &last); err != nil || last.Answer != "answer to three" || len(last.ToolCalls) != 3 || last.Usage.Requests != 6 {
		t.Fatalf("result across runs: %+v (%v)", last, err)
	}
}
