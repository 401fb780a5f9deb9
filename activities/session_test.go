package activities

import (
	"cmp"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/redact"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// fixture is the real session activities over a real store, a real
// workspace and an httptest model.
type fixture struct {
	t     *testing.T
	acts  *Session
	model *agenttest.Server
	root  string
	id    string
	env   *testsuite.TestActivityEnvironment
}

func newFixture(t *testing.T, script agenttest.Script) *fixture {
	t.Helper()
	dir := t.TempDir()
	store, err := session.Open(filepath.Join(dir, "sessions"), session.Options{Redactor: redact.New([]string{"sk-very-secret-key"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	model := agenttest.NewServer(t, script)
	root := filepath.Join(dir, "ws")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	acts := &Session{
		Store:      store,
		Model:      agent.NewClient(agent.Config{BaseURL: model.URL, APIKey: "sk-very-secret-key"}),
		Settings:   SessionSettings{Model: "settings-model", Approvals: policy.Settings{AlwaysAsk: []string{"git push --force"}}, Stream: true},
		Workspaces: &Workspaces{},
		Log:        zerolog.Nop(),
	}
	t.Cleanup(func() { acts.Workspaces.Close() })
	id, err := session.NewID()
	if err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return &fixture{t: t, acts: acts, model: model, root: root, id: id, env: env}
}

func call[I, O any](f *fixture, fn func(*Session) any, in I) (O, error) {
	var out O
	v, err := f.env.ExecuteActivity(fn(f.acts), in)
	if err != nil {
		return out, err
	}
	return out, v.Get(&out)
}

func (f *fixture) begin(prompt string) workflows.BeginTurnResult {
	f.t.Helper()
	res, err := call[workflows.BeginTurnInput, workflows.BeginTurnResult](f, func(s *Session) any { return s.BeginTurn },
		workflows.BeginTurnInput{SessionID: f.id, ExecutionID: "exec-1", Prompt: prompt, Root: f.root, Mode: "normal"})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *fixture) request(rev int) (workflows.ModelRequestResult, error) {
	return call[workflows.ModelRequestInput, workflows.ModelRequestResult](f, func(s *Session) any { return s.ModelRequest },
		workflows.ModelRequestInput{SessionID: f.id, Revision: rev, Model: "m", Tools: workflows.LocalTools})
}

func (f *fixture) tool(c workflows.ModelCall) (workflows.ToolCallResult, error) {
	return call[workflows.ToolCallInput, workflows.ToolCallResult](f, func(s *Session) any { return s.ToolCall },
		workflows.ToolCallInput{SessionID: f.id, Root: f.root, Key: c.Key, CallID: c.CallID, Tool: c.Tool, Decision: contract.AutoApprove})
}

// firstCall begins a turn with prompt and runs the model's first call.
func (f *fixture) firstCall(prompt string) workflows.ToolCallResult {
	f.t.Helper()
	res, err := f.request(f.begin(prompt).Revision)
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := f.tool(res.Calls[0])
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func writeCall(id, args string) agenttest.Reply {
	return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: id, Name: "local_write", Arguments: args}}}
}

func TestBeginTurnModelAndRoot(t *testing.T) {
	f := newFixture(t, agenttest.Queue())
	res := f.begin("hello")
	if res.Model != "settings-model" || res.Root != f.root || res.Revision != 3 || !res.Stream {
		t.Fatalf("begin %+v", res)
	}
	if len(res.Settings.AlwaysAsk) == 0 || res.Settings.AlwaysAsk[0] != "git push --force" {
		t.Fatalf("destructive list %v", res.Settings.AlwaysAsk)
	}
	// The same prompt again (a retry) appends nothing.
	if again := f.begin("hello"); again.Revision != 3 {
		t.Fatalf("retried begin appended: %+v", again)
	}
	f.acts.Settings.Model = ""
	_, err := call[workflows.BeginTurnInput, workflows.BeginTurnResult](f, func(s *Session) any { return s.BeginTurn },
		workflows.BeginTurnInput{SessionID: mustID(t), ExecutionID: "e", Prompt: "x", Root: f.root, Mode: "normal"})
	assertAppError(t, err, workflows.ErrTypeBadRequest, `no model: pass --model NAME or set "model" in settings.json`)
	_, err = call[workflows.BeginTurnInput, workflows.BeginTurnResult](f, func(s *Session) any { return s.BeginTurn },
		workflows.BeginTurnInput{SessionID: mustID(t), ExecutionID: "e", Prompt: "x", Model: "m", Root: filepath.Join(f.root, "absent"), Mode: "normal"})
	assertAppError(t, err, workflows.ErrTypeBadRequest, "is not a directory on this host")
}

func TestModelRequestIsIdempotent(t *testing.T) {
	f := newFixture(t, func(req agenttest.Request) agenttest.Reply {
		return agenttest.Reply{Text: "hi", Usage: &agenttest.Usage{PromptTokens: 10, CompletionTokens: 2, Cost: ptr(0.5)}}
	})
	rev := f.begin("say hi").Revision
	first, err := f.request(rev)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.request(rev)
	if err != nil {
		t.Fatal(err)
	}
	if f.model.Count() != 1 {
		t.Fatalf("the provider saw %d requests for one revision", f.model.Count())
	}
	if first.Text != "hi" || first.Revision != rev+1 || second.Revision != first.Revision || second.Text != first.Text {
		t.Fatalf("first %+v second %+v", first, second)
	}
	want := contract.Usage{Requests: 1, PromptTokens: 10, CompletionTokens: 2, CostUSD: 0.5, CostRequests: 1}
	if first.Usage != want {
		t.Fatalf("usage %+v", first.Usage)
	}
	// A revision the log does not hold is refused, not sent.
	_, err = f.request(rev + 5)
	assertAppError(t, err, workflows.ErrTypeSessionDiverged, "has 4 events where the workflow expected 8")
	if f.model.Count() != 1 {
		t.Fatal("a diverged request reached the provider")
	}
}

func TestProviderErrors(t *testing.T) {
	f := newFixture(t, agenttest.Queue(
		agenttest.Reply{Status: 400, Error: "model not found"},
		agenttest.Reply{Status: 503, Error: "overloaded"},
	))
	rev := f.begin("x").Revision
	_, err := f.request(rev)
	assertAppError(t, err, workflows.ErrTypeProviderRejected, "model not found")
	_, err = f.request(rev)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.NonRetryable() || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("a 503 should be retryable: %v", err)
	}
}

func TestToolCallRunsOnceAndUncertainAfterCrash(t *testing.T) {
	f := newFixture(t, agenttest.Queue(
		writeCall("w1", `{"path":"a.txt","content":"one","mode":"create","why":"test"}`),
		writeCall("w2", `{"path":"b.txt","content":"two","mode":"create"}`),
	))
	rev := f.begin("write with the key sk-very-secret-key").Revision
	res, err := f.request(rev)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Calls[0]
	if c.Invalid != "" || c.Args["path"].Text != "a.txt" || !strings.Contains(string(c.Preview), `"why":"test"`) {
		t.Fatalf("call %+v", c)
	}
	out, err := f.tool(c)
	if err != nil || out.Status != contract.CallCompleted || out.Revision != res.Revision+2 {
		t.Fatalf("tool %+v %v", out, err)
	}
	// A retry returns the saved result: a.txt is not created twice (which
	// create mode would refuse).
	again, err := f.tool(c)
	if err != nil || again.Status != contract.CallCompleted || again.Revision != out.Revision {
		t.Fatalf("retry %+v %v", again, err)
	}

	// A crash after the start marker and before the result: the retry
	// reports the call uncertain and does not run it.
	res2, err := f.request(out.Revision)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := f.acts.Store.Log(f.id)
	if _, err := appendEvent(log, evStarted, keyStarted(res2.Calls[0].Key), startedData{CallKey: res2.Calls[0].Key, Tool: "local_write", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	unc, err := f.tool(res2.Calls[0])
	if err != nil || unc.Status != contract.CallUncertain {
		t.Fatalf("after a crash: %+v %v", unc, err)
	}
	if _, err := os.Stat(filepath.Join(f.root, "b.txt")); err == nil {
		t.Fatal("an uncertain call ran again")
	}
	msgs, _, _, err := f.acts.transcripts.get(log, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := msgs[len(msgs)-1]; last.Role != "tool" || last.ToolCallID != "w2" || !strings.Contains(last.Content, "may have run") {
		t.Fatalf("last message %+v", last)
	}
	// The API key never reached the log file.
	b, err := os.ReadFile(filepath.Join(filepath.Dir(f.root), "sessions", f.id+".jsonl"))
	if err != nil || strings.Contains(string(b), "sk-very-secret-key") || !strings.Contains(string(b), "the key [REDACTED]") {
		t.Fatalf("the configured secret is not redacted in the session log (%v)", err)
	}
}

func TestInspectCall(t *testing.T) {
	tests := []struct {
		name, tool, args, invalid string
		truncated                 bool
	}{
		{"valid read", "local_read", `{"path":"a.go"}`, "", false},
		{"no arguments", "local_list", ``, "", false},
		{"unknown tool", "shell", `{}`, `unknown tool "shell"`, false},
		{"malformed JSON", "local_read", `{"path":`, "the arguments are not a JSON object", false},
		{"absolute path", "local_read", `{"path":"/etc/passwd"}`, "invalid arguments:", false},
		{"replace without sha", "local_write", `{"path":"a","content":"x","mode":"replace"}`, "invalid arguments:", false},
		{"timeout over the limit", "local_exec", `{"program":"sleep","timeout_ms":600000}`, "300000 ms", false},
		{"long content is cut for the policy", "local_write", `{"path":"a","content":"` + strings.Repeat("x", 3000) + `","mode":"create"}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := inspectCall(nil, "3.0", agent.ToolCall{ID: "c", Name: tt.tool, Arguments: tt.args}, false)
			if !strings.Contains(c.Invalid, tt.invalid) || (tt.invalid == "" && c.Invalid != "") {
				t.Fatalf("invalid %q, want %q", c.Invalid, tt.invalid)
			}
			if c.Args["content"].Truncated != tt.truncated {
				t.Fatalf("content truncated %v", c.Args["content"].Truncated)
			}
			if tt.truncated && (len(c.Args["content"].Text) != ArgLimit || len(c.Preview) > 1024) {
				t.Fatalf("cut to %d, preview %d bytes", len(c.Args["content"].Text), len(c.Preview))
			}
		})
	}
}

func TestTranscriptRepairsMissingResults(t *testing.T) {
	ev := func(seq int, m agent.Message) session.Event {
		d, _ := json.Marshal(messageData{Message: m})
		return session.Event{Seq: seq, Type: evMessage, Data: d}
	}
	events := []session.Event{
		ev(0, agent.Message{Role: "system", Content: "s"}),
		ev(1, agent.Message{Role: "user", Content: "u"}),
		ev(2, agent.Message{Role: "assistant", Reasoning: "hidden", ToolCalls: []agent.ToolCall{{ID: "a"}, {ID: "b"}}}),
		ev(3, agent.Message{Role: "tool", ToolCallID: "b", Content: "ok"}),
		ev(4, agent.Message{Role: "tool", ToolCallID: "zzz", Content: "stray"}),
		ev(5, agent.Message{Role: "user", Content: "next"}),
		ev(6, agent.Message{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "c"}}}),
	}
	var b builder
	if err := b.add(events[:4]); err != nil {
		t.Fatal(err)
	}
	if err := b.add(events[4:]); err != nil {
		t.Fatal(err)
	}
	got, _ := b.messages(0)
	var shape []string
	for _, m := range got {
		shape = append(shape, m.Role+":"+m.ToolCallID+":"+cmp.Or(m.Content, "-")[:1])
		if m.Reasoning != "" {
			t.Fatal("reasoning kept in the transcript sent back")
		}
	}
	want := "system::s user::u assistant::- tool:b:o tool:a:n user::n assistant::- tool:c:n"
	if strings.Join(shape, " ") != want {
		t.Fatalf("transcript %s\nwant       %s", strings.Join(shape, " "), want)
	}
}

func TestContinueSession(t *testing.T) {
	f := newFixture(t, agenttest.Queue(
		agenttest.Reply{Text: "reading", ToolCalls: []agenttest.ToolCall{{ID: "r1", Name: "local_list", Arguments: `{}`}}, Usage: &agenttest.Usage{PromptTokens: 900, CompletionTokens: 50}},
	))
	out := f.firstCall("summarize the workspace")
	log, _ := f.acts.Store.Log(f.id)
	if _, _, full, _ := f.acts.transcripts.get(log, 900, 0); !full {
		t.Fatal("950 tokens and a tool result are not past a cap of 900")
	}
	if _, _, full, _ := f.acts.transcripts.get(log, 100000, 0); full {
		t.Fatal("past a cap of 100000")
	}
	capped, err := call[workflows.ModelRequestInput, workflows.ModelRequestResult](f, func(s *Session) any { return s.ModelRequest },
		workflows.ModelRequestInput{SessionID: f.id, Revision: out.Revision, Model: "m", ContextCap: 900})
	if err != nil || !capped.ContextFull || f.model.Count() != 1 {
		t.Fatalf("capped request %+v %v (provider saw %d)", capped, err, f.model.Count())
	}
	in := workflows.ContinueSessionInput{SessionID: f.id, Revision: out.Revision, ExecutionID: "exec-1", Model: "m", ContextCap: 900}
	succ, err := call[workflows.ContinueSessionInput, workflows.ContinueSessionResult](f, func(s *Session) any { return s.ContinueSession }, in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := call[workflows.ContinueSessionInput, workflows.ContinueSessionResult](f, func(s *Session) any { return s.ContinueSession }, in)
	if err != nil || again != succ {
		t.Fatalf("retry opened another successor: %+v vs %+v (%v)", again, succ, err)
	}
	slog, err := f.acts.Store.Log(succ.SessionID)
	if err != nil || slog.Len() != succ.Revision {
		t.Fatalf("successor log: %v", err)
	}
	msgs, _, _, _ := f.acts.transcripts.get(slog, 0, 0)
	note := msgs[len(msgs)-1].Content
	for _, want := range []string{"continues session " + f.id, "summarize the workspace", "local_list {} → completed", "Your last message:\nreading"} {
		if !strings.Contains(note, want) {
			t.Errorf("continuation lacks %q:\n%s", want, note)
		}
	}
}

func TestFinishExecution(t *testing.T) {
	f := newFixture(t, agenttest.Queue(
		agenttest.Reply{Text: "I will run it.", ToolCalls: []agenttest.ToolCall{{ID: "x1", Name: "local_exec", Arguments: `{"program":"touch","args":["n"],"why":"asked"}`}}},
	))
	rev := f.begin("touch n").Revision
	res, err := f.request(rev)
	if err != nil {
		t.Fatal(err)
	}
	in := workflows.FinishExecutionInput{
		ExecutionID: "exec-1", Status: contract.NeedsDecision, Sessions: []string{f.id},
		Pending:   &workflows.PendingRef{Session: f.id, Key: res.Calls[0].Key, CallID: "x1", Tool: "local_exec"},
		ToolCalls: []contract.ToolCallRecord{{CallID: "x1", Tool: "local_exec", Status: contract.CallPending}},
		Mode:      "review",
	}
	r, err := call[workflows.FinishExecutionInput, contract.Result](f, func(s *Session) any { return s.FinishExecution }, in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Schema != contract.Schema || r.Answer != "I will run it." || r.SessionID != f.id || r.Pending == nil ||
		string(r.Pending.Arguments) != `{"program":"touch","args":["n"],"why":"asked"}` || r.Artifacts == nil || r.Mode != "review" {
		t.Fatalf("result %+v", r)
	}
	// Written once: a retry with other inputs returns the saved result.
	in.Status = contract.Failed
	r2, err := call[workflows.FinishExecutionInput, contract.Result](f, func(s *Session) any { return s.FinishExecution }, in)
	if err != nil || r2.Status != contract.NeedsDecision {
		t.Fatalf("retry %+v %v", r2, err)
	}
}

func assertAppError(t *testing.T, err error, typ, contains string) {
	t.Helper()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != typ || !app.NonRetryable() || !strings.Contains(app.Message(), contains) {
		t.Fatalf("error %v, want non-retryable %s containing %q", err, typ, contains)
	}
}

func mustID(t *testing.T) string {
	id, err := session.NewID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func ptr(v float64) *float64 { return &v }

// TestLateResponseIsNotAppended: a response that arrives after the session
// moved on (an interrupted attempt finishing late) is refused, not appended
// after newer messages.
func TestLateResponseIsNotAppended(t *testing.T) {
	var f *fixture
	f = newFixture(t, func(req agenttest.Request) agenttest.Reply {
		log, err := f.acts.Store.Log(f.id)
		if err == nil {
			_, err = appendEvent(log, evMessage, keyPrompt("exec-2"), messageData{Message: agent.Message{Role: "user", Content: "next"}, Prompt: true})
		}
		if err != nil {
			t.Error(err)
		}
		return agenttest.Reply{Text: "late"}
	})
	rev := f.begin("x").Revision
	_, err := f.request(rev)
	assertAppError(t, err, workflows.ErrTypeSessionDiverged, "session log moved on")
	log, _ := f.acts.Store.Log(f.id)
	if last, _ := log.Last(evMessage); !strings.Contains(string(last.Data), `"next"`) || log.Len() != rev+1 {
		t.Fatalf("the late response was appended: %d events, last %s", log.Len(), last.Data)
	}
}

func TestPastCap(t *testing.T) {
	msg := func(m agent.Message, u *agent.Usage) session.Event {
		d, _ := json.Marshal(messageData{Message: m, Usage: u})
		return session.Event{Type: evMessage, Data: d}
	}
	big := strings.Repeat("x", 4000) // about 1000 tokens
	tests := []struct {
		name   string
		events []session.Event
		limit  int
		want   bool
	}{
		{"no response yet", []session.Event{msg(agent.Message{Role: "user", Content: big + big}, nil)}, 100, false},
		{"no cap", []session.Event{msg(agent.Message{Role: "user", Content: big}, nil), msg(agent.Message{Role: "assistant", Content: "a"}, &agent.Usage{PromptTokens: 5000})}, 0, false},
		{"reported usage under", []session.Event{msg(agent.Message{Role: "assistant"}, &agent.Usage{PromptTokens: 800, CompletionTokens: 100})}, 1000, false},
		{"reported usage plus new bytes over", []session.Event{
			msg(agent.Message{Role: "assistant"}, &agent.Usage{PromptTokens: 800, CompletionTokens: 100}),
			msg(agent.Message{Role: "tool", ToolCallID: "x", Content: big}, nil)}, 1000, true},
		{"no usage reported: all bytes", []session.Event{
			msg(agent.Message{Role: "user", Content: big}, nil),
			msg(agent.Message{Role: "assistant", Content: big}, nil)}, 1500, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b builder
			if err := b.add(tt.events); err != nil {
				t.Fatal(err)
			}
			if got := b.pastCap(tt.limit); got != tt.want {
				t.Fatalf("pastCap(%d) = %v", tt.limit, got)
			}
		})
	}
}

func TestCompactUnquotesExec(t *testing.T) {
	c := inspectCall(nil, "1.0", agent.ToolCall{ID: "x", Name: "local_exec", Arguments: "{\"program\": \"`go`\", \"args\": [\"“test”\", \"'./...'\", \"plain\"]}"}, true)
	if c.Invalid != "" || c.Args["program"].Text != "go" || c.Args["args"].Text != `["test","./...","plain"]` {
		t.Fatalf("compact call %+v", c)
	}
	std := inspectCall(nil, "1.0", agent.ToolCall{ID: "x", Name: "local_exec", Arguments: "{\"program\": \"`go`\"}"}, false)
	if std.Args["program"].Text != "`go`" {
		t.Fatalf("the standard profile runs a call as sent: %+v", std.Args)
	}
	args, err := toolArgs(`{"program": "«ls»", "args": ["<-la>"], "why": "look"}`, true)
	if err != nil || string(args) != `{"args":["-la"],"program":"ls"}` {
		t.Fatalf("toolArgs %s %v", args, err)
	}
}
