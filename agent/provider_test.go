package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/agent/agenttest"
)

// modes runs a test body once without and once with streaming.
var modes = []struct {
	name   string
	stream bool
}{{"json", false}, {"sse", true}}

func newClient(srv *agenttest.Server) *agent.Client {
	return agent.NewClient(agent.Config{
		BaseURL: srv.URL,
		APIKey:  "sk-test",
		Headers: map[string]string{"HTTP-Referer": "https://axlr.test", "X-Title": "axlr"},
	})
}

func ptr(f float64) *float64 { return &f }

func TestCompletePlainAnswer(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{
				ID:         "chatcmpl-plain",
				Model:      "provider/model-2025",
				Text:       "Hello, how can I help?",
				ChunkBytes: 3,
			}))
			resp, err := newClient(srv).Complete(context.Background(), agent.Request{
				Model: "provider/model",
				Messages: []agent.Message{
					{Role: agent.RoleSystem, Content: "You are terse."},
					{Role: agent.RoleUser, Content: "Hi"},
				},
				MaxTokens: 512,
				Stream:    mode.stream,
			}, nil)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := agent.Response{
				ID: "chatcmpl-plain", Model: "provider/model-2025",
				Text: "Hello, how can I help?", FinishReason: "stop",
			}
			if !reflect.DeepEqual(resp, want) {
				t.Errorf("response = %+v, want %+v", resp, want)
			}

			if srv.Count() != 1 {
				t.Fatalf("server got %d requests, want 1", srv.Count())
			}
			req := srv.Requests()[0]
			if got := req.Header.Get("Authorization"); got != "Bearer sk-test" {
				t.Errorf("Authorization = %q", got)
			}
			if got := req.Header.Get("X-Title"); got != "axlr" {
				t.Errorf("X-Title = %q", got)
			}
			if got := req.Header.Get("HTTP-Referer"); got != "https://axlr.test" {
				t.Errorf("HTTP-Referer = %q", got)
			}
			if req.Model != "provider/model" || req.MaxCompletionTokens != 512 || req.Has("max_tokens") {
				t.Errorf("model %q, max_completion_tokens %d, has max_tokens %v", req.Model, req.MaxCompletionTokens, req.Has("max_tokens"))
			}
			if req.Stream != mode.stream || req.IncludeUsage != mode.stream {
				t.Errorf("stream = %v, include_usage = %v, want both %v", req.Stream, req.IncludeUsage, mode.stream)
			}
			if req.Has("tools") {
				t.Errorf("body has tools without any: %s", req.Body)
			}
			var roles, contents []string
			for _, m := range req.Messages {
				roles = append(roles, m.Role)
				contents = append(contents, m.Content)
			}
			if !reflect.DeepEqual(roles, []string{"system", "user"}) || !reflect.DeepEqual(contents, []string{"You are terse.", "Hi"}) {
				t.Errorf("messages sent: roles %q contents %q", roles, contents)
			}
		})
	}
}

func TestCompleteToolCallsRoundTrip(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file to read"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`)
	conversation := []agent.Message{
		{Role: agent.RoleSystem, Content: "Use tools."},
		{Role: agent.RoleUser, Content: "Read a.go and list the dir."},
		{Role: agent.RoleAssistant, Reasoning: "I should read first.", ToolCalls: []agent.ToolCall{
			{ID: "call_a", Name: "read", Arguments: `{"path":"a.go"}`},
			{ID: "call_b", Name: "list", Arguments: ""},
		}},
		{Role: agent.RoleTool, ToolCallID: "call_a", Content: "package a"},
		{Role: agent.RoleTool, ToolCallID: "call_b", Content: "a.go\nb.go"},
		{Role: agent.RoleAssistant, Content: "Both done.", Reasoning: "secret thoughts"},
		{Role: agent.RoleUser, Content: "Now edit b.go."},
	}
	tools := []agent.ToolSpec{
		{Name: "read", Description: "Read a file.", Parameters: schema},
		{Name: "list", Description: "List the directory."},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{
				Text: "Editing.",
				ToolCalls: []agenttest.ToolCall{
					{ID: "", Name: "read", Arguments: `{"path":"b.go","limit":20}`},
					{ID: "call_9", Name: "list", Arguments: ""},
				},
			}))
			resp, err := newClient(srv).Complete(context.Background(), agent.Request{
				Model: "m", Messages: conversation, Tools: tools, Stream: mode.stream,
			}, nil)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			wantCalls := []agent.ToolCall{
				{ID: "call_0", Name: "read", Arguments: `{"path":"b.go","limit":20}`},
				{ID: "call_9", Name: "list", Arguments: "{}"},
			}
			if !reflect.DeepEqual(resp.ToolCalls, wantCalls) {
				t.Errorf("tool calls = %+v, want %+v", resp.ToolCalls, wantCalls)
			}
			if resp.Text != "Editing." || resp.FinishReason != "tool_calls" {
				t.Errorf("text %q finish %q", resp.Text, resp.FinishReason)
			}

			req := srv.Requests()[0]
			if len(req.Messages) != len(conversation) {
				t.Fatalf("sent %d messages, want %d", len(req.Messages), len(conversation))
			}
			for i, m := range req.Messages {
				if m.Has("reasoning") || m.Has("reasoning_content") {
					t.Errorf("message %d sends reasoning back: %s", i, m.Raw)
				}
				if m.Role != conversation[i].Role || m.Content != conversation[i].Content || m.ToolCallID != conversation[i].ToolCallID {
					t.Errorf("message %d = %s, want %+v", i, m.Raw, conversation[i])
				}
			}
			asst := req.Messages[2]
			if asst.Has("content") {
				t.Errorf("assistant message with tool calls and no text has content: %s", asst.Raw)
			}
			wantSent := []agenttest.ToolCall{
				{ID: "call_a", Type: "function", Name: "read", Arguments: `{"path":"a.go"}`},
				{ID: "call_b", Type: "function", Name: "list", Arguments: "{}"},
			}
			if !reflect.DeepEqual(asst.ToolCalls, wantSent) {
				t.Errorf("assistant tool calls sent = %+v, want %+v", asst.ToolCalls, wantSent)
			}

			if len(req.Tools) != 2 {
				t.Fatalf("sent %d tools, want 2", len(req.Tools))
			}
			read, list := req.Tools[0], req.Tools[1]
			if read.Type != "function" || read.Name != "read" || read.Description != "Read a file." {
				t.Errorf("tool 0 = %+v", read)
			}
			if !jsonEqual(t, read.Parameters, schema) {
				t.Errorf("tool 0 parameters = %s, want %s", read.Parameters, schema)
			}
			if list.Name != "list" || list.Parameters != nil {
				t.Errorf("tool 1 = %+v, want no parameters", list)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestCompleteStreamAccumulates(t *testing.T) {
	text := strings.Repeat("Grüße, wörld ✓ — ", 20)
	reasoning := "Let me think… " + strings.Repeat("step. ", 10)
	args0 := `{"path":"internal/very/long/path/to/a/file.go","limit":200}`
	args1 := `{"pattern":"func (c \"quoted\") Complete","glob":"**/*.go"}`
	srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{
		Text:      text,
		Reasoning: reasoning,
		ToolCalls: []agenttest.ToolCall{
			{ID: "call_r", Name: "read", Arguments: args0},
			{ID: "call_s", Name: "search", Arguments: args1},
		},
		ChunkBytes: 2,
		Usage:      &agenttest.Usage{PromptTokens: 900, CompletionTokens: 300},
	}))
	var progress []agent.Progress
	resp, err := newClient(srv).Complete(context.Background(), agent.Request{
		Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}}, Stream: true,
	}, func(p agent.Progress) { progress = append(progress, p) })
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := agent.Response{
		ID: "chatcmpl-1", Model: "m", Text: text, Reasoning: reasoning, FinishReason: "tool_calls",
		ToolCalls: []agent.ToolCall{
			{ID: "call_r", Name: "read", Arguments: args0},
			{ID: "call_s", Name: "search", Arguments: args1},
		},
		Usage: agent.Usage{PromptTokens: 900, CompletionTokens: 300},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response =\n%+v\nwant\n%+v", resp, want)
	}

	// One call per chunk that adds something, each at least the one before.
	if len(progress) < 100 {
		t.Fatalf("got %d progress calls, want one per content chunk (over 100)", len(progress))
	}
	for i := 1; i < len(progress); i++ {
		a, b := progress[i-1], progress[i]
		if b.TextBytes < a.TextBytes || b.ReasoningBytes < a.ReasoningBytes || b.ToolCalls < a.ToolCalls {
			t.Fatalf("progress went back at call %d: %+v then %+v", i, a, b)
		}
	}
	last := progress[len(progress)-1]
	if wantLast := (agent.Progress{TextBytes: len(text), ReasoningBytes: len(reasoning), ToolCalls: 2}); last != wantLast {
		t.Errorf("last progress = %+v, want %+v", last, wantLast)
	}
}

func TestCompleteNoProgressWithoutStream(t *testing.T) {
	srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Text: "hi", Reasoning: "hmm"}))
	calls := 0
	if _, err := newClient(srv).Complete(context.Background(), agent.Request{
		Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}},
	}, func(agent.Progress) { calls++ }); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if calls != 0 {
		t.Errorf("onProgress called %d times for a non-streaming request", calls)
	}
}

func TestCompleteUsage(t *testing.T) {
	cases := []struct {
		name  string
		reply agenttest.Reply
		want  agent.Usage
	}{
		{
			name: "openrouter with cost",
			reply: agenttest.Reply{Usage: &agenttest.Usage{
				PromptTokens: 1200, CompletionTokens: 340, CachedTokens: 1000,
				CacheWriteTokens: 150, ReasoningTokens: 200, Cost: ptr(0.00231),
			}},
			want: agent.Usage{
				PromptTokens: 1200, CompletionTokens: 340, CachedTokens: 1000,
				CacheWriteTokens: 150, ReasoningTokens: 200, CostUSD: ptr(0.00231),
			},
		},
		{
			name:  "without cost",
			reply: agenttest.Reply{Usage: &agenttest.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 4}},
			want:  agent.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 4},
		},
		{
			name: "anthropic style cache creation",
			reply: agenttest.Reply{RawUsage: json.RawMessage(`{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55,` +
				`"prompt_tokens_details":{"cached_tokens":20},"cache_creation_input_tokens":30,"cache_read_input_tokens":20}`)},
			want: agent.Usage{PromptTokens: 50, CompletionTokens: 5, CachedTokens: 20, CacheWriteTokens: 30},
		},
		{
			name:  "zero cost is reported",
			reply: agenttest.Reply{RawUsage: json.RawMessage(`{"prompt_tokens":1,"completion_tokens":1,"cost":0}`)},
			want:  agent.Usage{PromptTokens: 1, CompletionTokens: 1, CostUSD: ptr(0)},
		},
		{
			name:  "no usage",
			reply: agenttest.Reply{},
			want:  agent.Usage{},
		},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				reply := tc.reply
				reply.Text = "ok"
				srv := agenttest.NewServer(t, agenttest.Queue(reply))
				resp, err := newClient(srv).Complete(context.Background(), agent.Request{
					Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}}, Stream: mode.stream,
				}, nil)
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if !reflect.DeepEqual(resp.Usage, tc.want) {
					t.Errorf("usage = %s, want %s", usageString(resp.Usage), usageString(tc.want))
				}
			})
		}
	}
}

func usageString(u agent.Usage) string {
	b, _ := json.Marshal(u)
	return string(b)
}

func TestCompleteReasoning(t *testing.T) {
	for _, field := range []string{"reasoning", "reasoning_content"} {
		for _, mode := range modes {
			t.Run(field+"/"+mode.name, func(t *testing.T) {
				srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{
					Text: "42", Reasoning: "Six times seven is forty-two.", ReasoningField: field,
				}))
				resp, err := newClient(srv).Complete(context.Background(), agent.Request{
					Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "6*7?"}}, Stream: mode.stream,
				}, nil)
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if resp.Reasoning != "Six times seven is forty-two." || resp.Text != "42" {
					t.Errorf("reasoning %q text %q", resp.Reasoning, resp.Text)
				}
				msg := resp.Message()
				if msg.Role != agent.RoleAssistant || msg.Reasoning != resp.Reasoning || msg.Content != "42" {
					t.Errorf("Message() = %+v", msg)
				}
			})
		}
	}
}

func TestCompleteHTTPErrors(t *testing.T) {
	cases := []struct {
		name       string
		reply      agenttest.Reply
		status     int
		message    string
		code       string
		retryAfter time.Duration
		transient  bool
	}{
		{
			name:    "400 error object",
			reply:   agenttest.Reply{Status: 400, Body: `{"error":{"message":"maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`},
			status:  400,
			message: "maximum context length is 8192 tokens",
			code:    "context_length_exceeded",
		},
		{name: "401", reply: agenttest.Reply{Status: 401, Error: "invalid api key"}, status: 401, message: "invalid api key", code: "401"},
		{name: "403", reply: agenttest.Reply{Status: 403, Error: "flagged"}, status: 403, message: "flagged", code: "403"},
		{name: "404 error string", reply: agenttest.Reply{Status: 404, Body: `{"error":"model 'x' not found"}`}, status: 404, message: "model 'x' not found"},
		{name: "413", reply: agenttest.Reply{Status: 413, Body: `request too large`}, status: 413, message: "request too large"},
		{name: "422 detail", reply: agenttest.Reply{Status: 422, Body: `{"detail":[{"loc":["body","model"],"msg":"field required"}]}`}, status: 422,
			message: `[{"loc":["body","model"],"msg":"field required"}]`},
		{
			name:    "402 openrouter metadata",
			reply:   agenttest.Reply{Status: 402, Body: `{"error":{"message":"Provider returned error","code":402,"metadata":{"raw":"insufficient credits"}}}`},
			status:  402,
			message: "Provider returned error: insufficient credits",
			code:    "402",
		},
		{
			name:       "429 retry after",
			reply:      agenttest.Reply{Status: 429, Error: "slow down", Header: http.Header{"Retry-After": {"7"}}},
			status:     429,
			message:    "slow down",
			code:       "429",
			retryAfter: 7 * time.Second,
			transient:  true,
		},
		{name: "408", reply: agenttest.Reply{Status: 408, Error: "timeout"}, status: 408, message: "timeout", code: "408", transient: true},
		{name: "409", reply: agenttest.Reply{Status: 409, Error: "conflict"}, status: 409, message: "conflict", code: "409", transient: true},
		{name: "500", reply: agenttest.Reply{Status: 500, Body: `{"message":"boom","type":"InternalServerError","code":500}`}, status: 500, message: "boom", code: "500", transient: true},
		{name: "502 html", reply: agenttest.Reply{Status: 502, Body: "<html>bad gateway</html>"}, status: 502, message: "<html>bad gateway</html>", transient: true},
		{name: "503 empty body", reply: agenttest.Reply{Status: 503, Body: " "}, status: 503, message: "", transient: true},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				srv := agenttest.NewServer(t, agenttest.Queue(tc.reply))
				_, err := newClient(srv).Complete(context.Background(), agent.Request{
					Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}}, Stream: mode.stream,
				}, nil)
				var pe *agent.ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v (%T) is not a *ProviderError", err, err)
				}
				if pe.StatusCode != tc.status || pe.Message != tc.message || pe.Code != tc.code || pe.RetryAfter != tc.retryAfter || pe.MidStream {
					t.Errorf("ProviderError = %+v, want status %d message %q code %q retry after %v",
						pe, tc.status, tc.message, tc.code, tc.retryAfter)
				}
				if got := agent.Transient(err); got != tc.transient {
					t.Errorf("Transient(%v) = %v, want %v", err, got, tc.transient)
				}
				if !strings.Contains(err.Error(), "provider returned ") || !strings.Contains(err.Error(), "m:") {
					t.Errorf("error text %q does not name the model and the status", err)
				}
				if strings.TrimSpace(tc.reply.Body) != "" && pe.Body != tc.reply.Body {
					t.Errorf("Body = %q, want %q", pe.Body, tc.reply.Body)
				}
			})
		}
	}
}

func TestProviderErrorMessageIsCut(t *testing.T) {
	body := strings.Repeat("é", 3000) // 6000 bytes, no JSON
	srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Status: 500, Body: body}))
	_, err := newClient(srv).Complete(context.Background(), agent.Request{
		Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}},
	}, nil)
	var pe *agent.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *ProviderError", err)
	}
	if len(pe.Message) != 2048 || pe.Message != body[:2048] {
		t.Errorf("message is %d bytes, want the first 2048 bytes of the body", len(pe.Message))
	}
	if pe.Body != body {
		t.Errorf("Body is %d bytes, want the whole %d-byte body", len(pe.Body), len(body))
	}
}

func TestCompleteErrorInsideSuccess(t *testing.T) {
	cases := []struct {
		name      string
		reply     agenttest.Reply
		stream    bool
		status    int
		message   string
		midStream bool
		transient bool
	}{
		{
			name:      "openrouter stream error with status code",
			reply:     agenttest.Reply{Text: "partial answer", StreamError: &agenttest.ErrorObject{Message: "upstream disconnected", Code: 502}},
			stream:    true,
			status:    502,
			message:   "upstream disconnected",
			midStream: true,
			transient: true,
		},
		{
			name:      "openrouter stream error with string code",
			reply:     agenttest.Reply{StreamError: &agenttest.ErrorObject{Message: "Provider disconnected", Code: "server_error"}},
			stream:    true,
			message:   "Provider disconnected",
			midStream: true,
			transient: true,
		},
		{
			name:      "stream error with client status",
			reply:     agenttest.Reply{Text: "x", StreamError: &agenttest.ErrorObject{Message: "content policy", Code: 400}},
			stream:    true,
			status:    400,
			message:   "content policy",
			midStream: true,
		},
		{
			name: "vllm error event",
			reply: agenttest.Reply{Events: []string{
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"a"},"finish_reason":null}]}`,
				`{"object":"error","message":"prompt too long","type":"BadRequestError","param":null,"code":400}`,
			}},
			stream:    true,
			status:    400,
			message:   "prompt too long",
			midStream: true,
		},
		{
			name:      "error object in a 200 JSON body",
			reply:     agenttest.Reply{Body: `{"id":"gen-1","choices":[],"error":{"message":"upstream timed out","code":504}}`},
			status:    504,
			message:   "upstream timed out",
			transient: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := agenttest.NewServer(t, agenttest.Queue(tc.reply))
			_, err := newClient(srv).Complete(context.Background(), agent.Request{
				Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}}, Stream: tc.stream,
			}, nil)
			var pe *agent.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ProviderError", err, err)
			}
			if pe.StatusCode != tc.status || pe.Message != tc.message || pe.MidStream != tc.midStream {
				t.Errorf("ProviderError = %+v, want status %d message %q mid-stream %v", pe, tc.status, tc.message, tc.midStream)
			}
			if got := agent.Transient(err); got != tc.transient {
				t.Errorf("Transient(%v) = %v, want %v", err, got, tc.transient)
			}
		})
	}
}

func TestCompleteBrokenResponses(t *testing.T) {
	cases := []struct {
		name    string
		reply   agenttest.Reply
		stream  bool
		wantErr error // checked with errors.Is when set
	}{
		{name: "stream cut before finish", reply: agenttest.Reply{Text: "half an ans", Cut: true}, stream: true, wantErr: io.ErrUnexpectedEOF},
		{name: "body cut", reply: agenttest.Reply{Text: "half an answer", Cut: true}, wantErr: io.ErrUnexpectedEOF},
		{name: "stream ends without finish_reason", reply: agenttest.Reply{Text: "abc", NoFinish: true}, stream: true, wantErr: agent.ErrIncompleteStream},
		{name: "stream without chunks", reply: agenttest.Reply{Events: []string{"[DONE]"}}, stream: true, wantErr: agent.ErrNoChoices},
		{name: "no choices", reply: agenttest.Reply{Body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`}, wantErr: agent.ErrNoChoices},
		{name: "garbled body", reply: agenttest.Reply{Body: `{"id":"x","choices":[{"index":0,`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := agenttest.NewServer(t, agenttest.Queue(tc.reply))
			_, err := newClient(srv).Complete(context.Background(), agent.Request{
				Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}}, Stream: tc.stream,
			}, nil)
			if err == nil {
				t.Fatal("Complete succeeded on a broken response")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v is not %v", err, tc.wantErr)
			}
			if !agent.Transient(err) {
				t.Errorf("Transient(%v) = false, want true", err)
			}
		})
	}
}

func TestCompleteConnectionRefused(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	base := closed.URL + "/v1"
	closed.Close()
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			_, err := agent.NewClient(agent.Config{BaseURL: base}).Complete(context.Background(), agent.Request{
				Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}}, Stream: mode.stream,
			}, nil)
			if err == nil {
				t.Fatal("Complete succeeded against a closed port")
			}
			if !agent.Transient(err) {
				t.Errorf("Transient(%v) = false, want true", err)
			}
		})
	}
}

func TestCompleteCallerContext(t *testing.T) {
	cases := []struct {
		name      string
		stream    bool
		reply     agenttest.Reply
		deadline  bool
		wantErr   error
		transient bool
	}{
		{name: "cancel while waiting for headers", reply: agenttest.Reply{Wait: make(chan struct{})}, wantErr: context.Canceled},
		{name: "cancel mid-stream", stream: true, reply: agenttest.Reply{Text: "abcdef", ChunkBytes: 1, StallAfter: 3}, wantErr: context.Canceled},
		{name: "deadline mid-stream", stream: true, reply: agenttest.Reply{Text: "abcdef", ChunkBytes: 1, StallAfter: 3}, deadline: true,
			wantErr: context.DeadlineExceeded, transient: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			arrived := make(chan struct{})
			srv := agenttest.NewServer(t, func(agenttest.Request) agenttest.Reply {
				close(arrived)
				return tc.reply
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.deadline {
				ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
			} else {
				go func() {
					<-arrived
					cancel()
				}()
			}
			_, err := newClient(srv).Complete(ctx, agent.Request{
				Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}}, Stream: tc.stream,
			}, nil)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if got := agent.Transient(err); got != tc.transient {
				t.Errorf("Transient(%v) = %v, want %v", err, got, tc.transient)
			}
		})
	}
}

func TestCompleteRejectsInvalidRequests(t *testing.T) {
	cases := []struct {
		name string
		req  agent.Request
	}{
		{name: "no model", req: agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}}}},
		{name: "no messages", req: agent.Request{Model: "m"}},
		{name: "unknown role", req: agent.Request{Model: "m", Messages: []agent.Message{{Role: "developer", Content: "x"}}}},
		{name: "tool result without call id", req: agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleTool, Content: "x"}}}},
		{name: "tool without name", req: agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}},
			Tools: []agent.ToolSpec{{Description: "d"}}}},
		{name: "parameters not an object", req: agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}},
			Tools: []agent.ToolSpec{{Name: "t", Parameters: json.RawMessage(`["a"]`)}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := agenttest.NewServer(t, agenttest.Queue())
			_, err := newClient(srv).Complete(context.Background(), tc.req, nil)
			if err == nil {
				t.Fatal("Complete accepted an invalid request")
			}
			if agent.Transient(err) {
				t.Errorf("Transient(%v) = true for an invalid request", err)
			}
			if srv.Count() != 0 {
				t.Errorf("an invalid request reached the server")
			}
		})
	}
}

func TestNewClientBadBaseURL(t *testing.T) {
	for _, base := range []string{"127.0.0.1:8080/v1", "ftp://example.com/v1", "http://[::1"} {
		t.Run(base, func(t *testing.T) {
			_, err := agent.NewClient(agent.Config{BaseURL: base}).Complete(context.Background(), agent.Request{
				Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}},
			}, nil)
			if err == nil || !strings.Contains(err.Error(), "invalid base URL") {
				t.Fatalf("error = %v, want an invalid base URL error", err)
			}
			if agent.Transient(err) {
				t.Errorf("Transient(%v) = true for a configuration error", err)
			}
		})
	}
}

// The environment openai-go reads by default must not leak into requests:
// Config is the whole configuration.
func TestNewClientIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Text: "ok"}))
	client := agent.NewClient(agent.Config{BaseURL: srv.URL})
	if _, err := client.Complete(context.Background(), agent.Request{
		Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}},
	}, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	h := srv.Requests()[0].Header
	for _, name := range []string{"Authorization", "OpenAI-Organization", "X-Leak"} {
		if v := h.Get(name); v != "" {
			t.Errorf("request carries %s: %q from the environment", name, v)
		}
	}
}

func TestCompleteConcurrent(t *testing.T) {
	srv := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		return agenttest.Reply{Text: "answer to " + req.Messages[0].Content, ChunkBytes: 4}
	})
	client := newClient(srv)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			q := strings.Repeat("q", i+1)
			resp, err := client.Complete(context.Background(), agent.Request{
				Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: q}}, Stream: i%2 == 0,
			}, func(agent.Progress) {})
			if err == nil && resp.Text != "answer to "+q {
				err = errors.New("got " + resp.Text + " for " + q)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if srv.Count() != n {
		t.Errorf("server counted %d requests, want %d", srv.Count(), n)
	}
	seen := map[int]bool{}
	for _, r := range srv.Requests() {
		seen[r.N] = true
	}
	if len(seen) != n {
		t.Errorf("request numbers %v are not distinct", seen)
	}
}

func TestCompleteToolArgumentsAsObject(t *testing.T) {
	// Some servers send arguments as a JSON object rather than a string.
	body := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"read","arguments":{"path":"a.go"}}}]}}]}`
	srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Body: body}))
	resp, err := newClient(srv).Complete(context.Background(), agent.Request{
		Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}},
	}, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := []agent.ToolCall{{ID: "t1", Name: "read", Arguments: `{"path":"a.go"}`}}
	if !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Errorf("tool calls = %+v, want %+v", resp.ToolCalls, want)
	}
}

func TestCompleteStreamWithChangingChunkIDs(t *testing.T) {
	events := []string{
		`{"id":"a1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
		`{"id":"a2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}`,
		`{"id":"a3","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		"[DONE]",
	}
	srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Events: events}))
	resp, err := newClient(srv).Complete(context.Background(), agent.Request{
		Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}}, Stream: true,
	}, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Text != "Hello" || resp.ID != "a1" || resp.FinishReason != "stop" {
		t.Errorf("response = %+v, want text Hello, id a1, finish stop", resp)
	}
}

func TestCompleteLargeStream(t *testing.T) {
	text := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Text: text, ChunkBytes: 512}))
	resp, err := newClient(srv).Complete(context.Background(), agent.Request{
		Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}}, Stream: true,
	}, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if !bytes.Equal([]byte(resp.Text), []byte(text)) {
		t.Errorf("text is %d bytes, want %d", len(resp.Text), len(text))
	}
}

// A server that does not stream answers a streaming request with one JSON
// body: a completion fails at once with what to change, an error object is
// the provider's error.
func TestStreamAnsweredWithPlainJSON(t *testing.T) {
	completion := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	srv := agenttest.NewServer(t, agenttest.Queue(
		agenttest.Reply{Body: completion},
		agenttest.Reply{Body: `{"error":{"message":"upstream overloaded","code":503}}`},
	))
	req := agent.Request{Model: "m", Messages: []agent.Message{{Role: agent.RoleUser, Content: "go"}}, Stream: true}
	_, err := newClient(srv).Complete(context.Background(), req, nil)
	if !errors.Is(err, agent.ErrNotStreaming) || agent.Transient(err) || !strings.Contains(err.Error(), `"stream": false`) {
		t.Fatalf("completion body: %v (transient %v), want ErrNotStreaming, not transient", err, agent.Transient(err))
	}
	_, err = newClient(srv).Complete(context.Background(), req, nil)
	var pe *agent.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 503 || pe.Message != "upstream overloaded" || !agent.Transient(err) {
		t.Fatalf("error body: %v, want the provider's 503, transient", err)
	}
}
