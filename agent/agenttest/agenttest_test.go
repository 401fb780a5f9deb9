package agenttest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/underpass-ai/axlr/agent/agenttest"
)

// recordingTB captures the failures the server reports instead of failing
// the test, so tests can check that misuse is reported.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// post sends body to the server's chat completions endpoint.
func post(ctx context.Context, url, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

func mustPost(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	res, b, err := post(context.Background(), url, body)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	return res, b
}

func TestQueueReportsUnscriptedRequests(t *testing.T) {
	rec := &recordingTB{TB: t}
	srv := agenttest.NewServer(rec, agenttest.Queue(agenttest.Reply{Text: "one"}))
	res, _ := mustPost(t, srv.URL, `{"model":"m","messages":[]}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("first request: status %d", res.StatusCode)
	}
	if errs := rec.errors(); len(errs) != 0 {
		t.Fatalf("scripted request reported %q", errs)
	}
	res, body := mustPost(t, srv.URL, `{"model":"m","messages":[]}`)
	if res.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "no reply scripted for request 2") {
		t.Errorf("second request: status %d body %s", res.StatusCode, body)
	}
	if errs := rec.errors(); len(errs) != 1 || !strings.Contains(errs[0], "request 2") {
		t.Errorf("reported %q, want one error about request 2", errs)
	}
}

func TestServerReportsBadRequests(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"wrong path", http.MethodPost, "/v1/completions", `{}`, http.StatusNotFound},
		{"wrong method", http.MethodGet, "/v1/chat/completions", ``, http.StatusNotFound},
		{"not json", http.MethodPost, "/v1/chat/completions", `{"model":`, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			srv := agenttest.NewServer(rec, agenttest.Queue())
			base := strings.TrimSuffix(srv.URL, "/v1")
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d", res.StatusCode, tc.status)
			}
			if len(rec.errors()) != 1 {
				t.Errorf("reported %q, want one error", rec.errors())
			}
			if srv.Count() != 0 {
				t.Errorf("a bad request was counted")
			}
		})
	}
}

func TestRequestsAreDecoded(t *testing.T) {
	srv := agenttest.NewServer(t, agenttest.Queue(agenttest.Reply{Text: "a"}, agenttest.Reply{Text: "b"}))
	bodies := []string{
		`{"model":"m1","messages":[{"role":"system","content":[{"type":"text","text":"be "},{"type":"text","text":"brief"}]},` +
			`{"role":"user","content":"hi"}],"max_tokens":64}`,
		`{"model":"m2","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":9,` +
			`"messages":[{"role":"assistant","content":null,"reasoning":"r","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"data"}],` +
			`"tools":[{"type":"function","function":{"name":"read","description":"Read.","parameters":{"type":"object"}}}]}`,
	}
	for _, b := range bodies {
		mustPost(t, srv.URL, b)
	}
	if srv.Count() != 2 {
		t.Fatalf("Count = %d, want 2", srv.Count())
	}
	reqs := srv.Requests()
	first, second := reqs[0], reqs[1]
	if first.N != 1 || first.Model != "m1" || first.MaxTokens != 64 || first.Stream || first.Header.Get("Authorization") != "Bearer k" {
		t.Errorf("first request = %+v", first)
	}
	if first.Messages[0].Content != "be brief" || first.Messages[1].Content != "hi" {
		t.Errorf("first request contents %q, %q", first.Messages[0].Content, first.Messages[1].Content)
	}
	if string(first.Body) != bodies[0] {
		t.Errorf("Body = %s, want it as sent", first.Body)
	}
	if second.N != 2 || !second.Stream || !second.IncludeUsage || second.MaxCompletionTokens != 9 || !second.Has("tools") || second.Has("max_tokens") {
		t.Errorf("second request = %+v", second)
	}
	asst, tool := second.Messages[0], second.Messages[1]
	if !asst.Has("reasoning") || asst.Content != "" ||
		!reflect.DeepEqual(asst.ToolCalls, []agenttest.ToolCall{{ID: "c1", Type: "function", Name: "read", Arguments: "{}"}}) {
		t.Errorf("assistant message = %+v", asst)
	}
	if tool.Role != "tool" || tool.ToolCallID != "c1" || tool.Content != "data" {
		t.Errorf("tool message = %+v", tool)
	}
	wantTools := []agenttest.Tool{{Type: "function", Name: "read", Description: "Read.", Parameters: json.RawMessage(`{"type":"object"}`)}}
	if !reflect.DeepEqual(second.Tools, wantTools) {
		t.Errorf("tools = %+v, want %+v", second.Tools, wantTools)
	}
}

// event is one decoded chat.completion.chunk.
type event struct {
	Choices []struct {
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Reasoning string  `json:"reasoning_content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

func readEvents(t *testing.T, body []byte) (events []event, done bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		if done {
			t.Fatalf("event %q after [DONE]", data)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		events = append(events, ev)
	}
	return events, done
}

func TestStreamWireFormat(t *testing.T) {
	reply := agenttest.Reply{
		Text:           "Hello, wörld!",
		Reasoning:      "thinking",
		ReasoningField: "reasoning_content",
		ToolCalls:      []agenttest.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"a/b/c.go"}`}},
		ChunkBytes:     4,
		Usage:          &agenttest.Usage{PromptTokens: 3, CompletionTokens: 2},
	}
	for _, includeUsage := range []bool{true, false} {
		t.Run(fmt.Sprintf("include_usage=%v", includeUsage), func(t *testing.T) {
			srv := agenttest.NewServer(t, agenttest.Queue(reply))
			res, body := mustPost(t, srv.URL,
				fmt.Sprintf(`{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":%v}}`, includeUsage))
			if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			events, done := readEvents(t, body)
			if !done {
				t.Error("stream does not end with [DONE]")
			}
			if len(events) == 0 || events[0].Choices[0].Delta.Role != "assistant" {
				t.Fatalf("first event does not open the assistant message: %+v", events)
			}
			var text, reasoning, args strings.Builder
			var finish []string
			var usage []json.RawMessage
			for _, ev := range events {
				if len(ev.Usage) > 0 && string(ev.Usage) != "null" {
					if len(ev.Choices) != 0 {
						t.Errorf("usage event has choices")
					}
					usage = append(usage, ev.Usage)
				}
				for _, ch := range ev.Choices {
					if ch.Delta.Content != nil {
						text.WriteString(*ch.Delta.Content)
						if len(*ch.Delta.Content) > 4 {
							t.Errorf("content piece %q longer than ChunkBytes", *ch.Delta.Content)
						}
					}
					reasoning.WriteString(ch.Delta.Reasoning)
					for _, tc := range ch.Delta.ToolCalls {
						if tc.Index != 0 {
							t.Errorf("tool call index %d, want 0", tc.Index)
						}
						if tc.ID != "" && (tc.ID != "c1" || tc.Function.Name != "read") {
							t.Errorf("tool call head = %+v", tc)
						}
						args.WriteString(tc.Function.Arguments)
					}
					if ch.FinishReason != nil {
						finish = append(finish, *ch.FinishReason)
					}
				}
			}
			if text.String() != reply.Text || reasoning.String() != reply.Reasoning || args.String() != reply.ToolCalls[0].Arguments {
				t.Errorf("stream carried text %q reasoning %q arguments %q", text.String(), reasoning.String(), args.String())
			}
			if !reflect.DeepEqual(finish, []string{"tool_calls"}) {
				t.Errorf("finish reasons %q, want one tool_calls", finish)
			}
			if wantUsage := map[bool]int{true: 1, false: 0}[includeUsage]; len(usage) != wantUsage {
				t.Errorf("%d usage events, want %d", len(usage), wantUsage)
			}
		})
	}
}

func TestWaitHoldsTheReply(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{})
	srv := agenttest.NewServer(t, func(agenttest.Request) agenttest.Reply {
		close(arrived)
		return agenttest.Reply{Text: "late", Wait: release}
	})
	var released atomic.Bool
	type result struct {
		released bool
		body     string
		err      error
	}
	got := make(chan result, 1)
	go func() {
		_, body, err := post(context.Background(), srv.URL, `{"model":"m","messages":[]}`)
		got <- result{released.Load(), string(body), err}
	}()
	<-arrived
	if srv.Count() != 1 {
		t.Errorf("Count = %d while the reply waits, want 1", srv.Count())
	}
	released.Store(true)
	close(release)
	r := <-got
	if r.err != nil || !strings.Contains(r.body, `"content":"late"`) {
		t.Fatalf("reply %s, error %v", r.body, r.err)
	}
	if !r.released {
		t.Error("the reply arrived before Wait was released")
	}
}

func TestCloseEndsWaitingReplies(t *testing.T) {
	arrived := make(chan struct{})
	srv := agenttest.NewServer(t, func(agenttest.Request) agenttest.Reply {
		close(arrived)
		return agenttest.Reply{Wait: make(chan struct{})}
	})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_, _, _ = post(context.Background(), srv.URL, `{"model":"m","messages":[]}`)
	}()
	<-arrived
	// Close waits for running handlers, so it hangs (and the test times out)
	// if the waiting reply does not end.
	srv.Close()
	<-finished
}
