package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/session"
)

// toolResults counts the tool results a request carries: the position of a
// turn, whatever retries reached the server before.
func toolResults(req agenttest.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	return n
}

func cost(v float64) *float64 { return &v }

// changelogScript writes CHANGELOG.md, then answers.
func changelogScript(req agenttest.Request) agenttest.Reply {
	switch toolResults(req) {
	case 0:
		return agenttest.Reply{
			Text: "I will add the entry.",
			ToolCalls: []agenttest.ToolCall{{ID: "call_write", Name: "local_write",
				Arguments: `{"path":"CHANGELOG.md","content":"# Changelog\n\n## 1.2\n\n- Added the changelog.\n","mode":"create","why":"The person asked for a 1.2 entry."}`}},
			Usage: &agenttest.Usage{PromptTokens: 1000, CachedTokens: 512, CompletionTokens: 40, ReasoningTokens: 8, Cost: cost(0.0012)},
		}
	default:
		return agenttest.Reply{
			Text:  "Added a CHANGELOG entry for 1.2.",
			Usage: &agenttest.Usage{PromptTokens: 1100, CachedTokens: 1024, CacheWriteTokens: 64, CompletionTokens: 12, Cost: cost(0.0003)},
		}
	}
}

func TestExecWritesFileAndAnswers(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			model := agenttest.NewServer(t, changelogScript)
			e := newEnv(t, model.URL)
			e.writeSettings(`{"model": "test-model", "provider": {"stream": ` + map[bool]string{true: "true", false: "false"}[stream] + `}}`)
			e.start()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			r := e.tui(ctx, "--exec", "add a CHANGELOG entry for 1.2", "--approve", "local", "--json")
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			evs, res := lines(t, r.stdout)

			got, err := os.ReadFile(filepath.Join(e.workspace, "CHANGELOG.md"))
			if err != nil || !strings.Contains(string(got), "## 1.2") {
				t.Fatalf("CHANGELOG.md: %q, %v", got, err)
			}
			if model.Count() != 2 {
				t.Fatalf("model saw %d requests, want 2", model.Count())
			}
			for _, req := range model.Requests() {
				if req.Stream != stream || req.Model != "test-model" {
					t.Fatalf("request stream=%v model=%q", req.Stream, req.Model)
				}
			}

			// The result, field by field.
			if res.Schema != "axlr.execution-result/v1" {
				t.Errorf("schema %q", res.Schema)
			}
			if res.Status != contract.Completed {
				t.Errorf("status %q (%s)", res.Status, res.Error)
			}
			if !session.ValidID(res.SessionID) || !reflect.DeepEqual(res.Sessions, []string{res.SessionID}) {
				t.Errorf("session_id %q sessions %v", res.SessionID, res.Sessions)
			}
			if res.Answer != "Added a CHANGELOG entry for 1.2." {
				t.Errorf("answer %q", res.Answer)
			}
			if res.Pending != nil || res.Error != "" {
				t.Errorf("pending %+v error %q", res.Pending, res.Error)
			}
			wantCalls := []contract.ToolCallRecord{{CallID: "call_write", Tool: "local_write", Decision: contract.AutoApprove, Status: contract.CallCompleted}}
			if !reflect.DeepEqual(res.ToolCalls, wantCalls) {
				t.Errorf("tool_calls %+v", res.ToolCalls)
			}
			wantUsage := contract.Usage{Requests: 2, PromptTokens: 2100, CachedTokens: 1536, CacheWriteTokens: 64, CompletionTokens: 52,
				ReasoningTokens: 8, CostUSD: res.Usage.CostUSD, CostRequests: 2, UnmeteredRequests: 0}
			if res.Usage != wantUsage || res.Usage.CostUSD < 0.00149 || res.Usage.CostUSD > 0.00151 {
				t.Errorf("usage %+v", res.Usage)
			}
			if res.Artifacts == nil || len(res.Artifacts) != 0 {
				t.Errorf("artifacts %v", res.Artifacts)
			}
			// The raw line holds every field of the contract, artifacts as [].
			last := r.stdout[strings.LastIndex(strings.TrimSpace(r.stdout), "\n")+1:]
			var raw struct {
				Type   string                     `json:"type"`
				Result map[string]json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(last), &raw); err != nil || raw.Type != "result" {
				t.Fatalf("last line %q: %v", last, err)
			}
			for _, k := range []string{"schema", "status", "session_id", "sessions", "answer", "tool_calls", "usage", "artifacts"} {
				if _, ok := raw.Result[k]; !ok {
					t.Errorf("result lacks %q", k)
				}
			}
			if string(raw.Result["artifacts"]) != "[]" {
				t.Errorf("artifacts %s", raw.Result["artifacts"])
			}

			var types []contract.EventType
			for _, ev := range evs {
				types = append(types, ev.Type)
			}
			want := []contract.EventType{contract.EventSession, contract.EventText, contract.EventToolRequested, contract.EventToolCompleted, contract.EventText, contract.EventCompleted}
			if !reflect.DeepEqual(types, want) {
				t.Errorf("events %v, want %v", types, want)
			}
			if evs[2].Tool != "local_write" || evs[3].Status != contract.CallCompleted || evs[3].Decision != contract.AutoApprove {
				t.Errorf("tool events %+v %+v", evs[2], evs[3])
			}

			// The second request carried the write's result, and no secret
			// reached the session log.
			second := model.Requests()[1]
			if m := second.Messages[len(second.Messages)-1]; m.Role != "tool" || m.ToolCallID != "call_write" || !strings.Contains(m.Content, "content_sha256") {
				t.Errorf("tool result sent back: %+v", m)
			}
			logBytes, err := os.ReadFile(filepath.Join(e.stateDir, "sessions", res.SessionID+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(logBytes), "sk-test-secret-value-1234") {
				t.Error("the API key reached the session log")
			}

			// Without --json: the answer on stdout, exit 0; result later.
			again := e.tui(ctx, "result", res.SessionID)
			if again.code != 0 || strings.TrimSpace(again.stdout) != res.Answer {
				t.Errorf("result: exit %d stdout %q stderr %q", again.code, again.stdout, again.stderr)
			}
			asJSON := e.tui(ctx, "result", res.SessionID, "--json")
			var later contract.Result
			if err := json.Unmarshal([]byte(asJSON.stdout), &later); err != nil || !reflect.DeepEqual(&later, res) {
				t.Errorf("result --json: %v\n%s", err, asJSON.stdout)
			}

			// Watching an execution the session never ran is refused at
			// once: the refusal's type crosses the server, so it is not
			// taken for a query the worker failed to answer.
			c := dialAxlrd(t, e)
			wid, err := c.FindSession(ctx, res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Watch(ctx, client.Execution{WorkflowID: wid, ExecutionID: "not-this-one", SessionID: res.SessionID}, &events{})
			if want := "watch execution not-this-one: execution not-this-one is not one of the recent executions of session " + res.SessionID; err == nil || err.Error() != want {
				t.Errorf("watch of a foreign execution: %v, want %q", err, want)
			}
		})
	}
}
