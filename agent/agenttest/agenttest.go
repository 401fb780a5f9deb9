// Package agenttest runs a scripted OpenAI-compatible chat completions server
// for tests of code that calls a model provider (package agent and the
// workflows and activities above it).
//
// The server speaks the real wire format over HTTP on 127.0.0.1: a JSON
// chat.completion for a request without "stream", SSE chat.completion.chunk
// events (ending with an include_usage usage chunk and "data: [DONE]") for a
// request with "stream": true. What it answers is decided per request by a
// Script, a function from the decoded Request to a Reply; Queue makes a
// Script from a fixed list. Every request is recorded, so a test can assert on
// what was sent.
//
//	srv := agenttest.NewServer(t, agenttest.Queue(
//		agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "call_1", Name: "read", Arguments: `{"path":"a.go"}`}}},
//		agenttest.Reply{Text: "done", Usage: &agenttest.Usage{PromptTokens: 120, CompletionTokens: 8}},
//	))
//	client := agent.NewClient(agent.Config{BaseURL: srv.URL, APIKey: "test-key"})
//	// … run the code under test …
//	if srv.Count() != 2 { … }
//	req := srv.Requests()[1] // the second request: its Messages end with the tool result
//
// Replies can also fail (Status, Body, StreamError, Cut, NoFinish), take
// their time (Delay, Wait, ChunkDelay) or hang mid-stream (StallAfter);
// waiting ends early when the client goes away or the server closes. Events
// sends a stream of any shape. The server is safe for concurrent requests
// and closes itself when the test ends.
package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Script decides the reply to each request. It is called on the server's
// goroutines, one call per request, possibly concurrently.
type Script func(Request) Reply

// Queue returns a Script that answers request N with replies[N-1]. A request
// beyond the list fails the test and gets a 500.
func Queue(replies ...Reply) Script {
	return func(req Request) Reply {
		if req.N > len(replies) {
			return Reply{
				Status:     http.StatusInternalServerError,
				Error:      fmt.Sprintf("agenttest: no reply scripted for request %d (%d scripted)", req.N, len(replies)),
				unscripted: true,
			}
		}
		return replies[req.N-1]
	}
}

// Request is one request the server received.
type Request struct {
	N      int         // arrival order, from 1
	Header http.Header // as received (Authorization, custom headers)
	Body   []byte      // the JSON body as received

	Model               string
	Messages            []Message
	Tools               []Tool
	Stream              bool
	IncludeUsage        bool  // stream_options.include_usage
	MaxCompletionTokens int64 // 0 when absent
	MaxTokens           int64 // 0 when absent
}

// Has reports whether the request body has the top-level member key.
func (r Request) Has(key string) bool { return hasMember(r.Body, key) }

// Message is one entry of a request's "messages".
type Message struct {
	Role string
	// Content is the string content, or the text of its parts joined; empty
	// when absent or null.
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	Raw        json.RawMessage // the message object as received
}

// Has reports whether the message object has the member key, e.g. to check
// that "reasoning" is never sent back.
func (m Message) Has(key string) bool { return hasMember(m.Raw, key) }

// ToolCall is a function call: in a request, one of an assistant message's
// tool_calls; in a Reply, one the model makes.
type ToolCall struct {
	ID        string
	Type      string // as received; replies always send "function"
	Name      string
	Arguments string
}

// Tool is one entry of a request's "tools".
type Tool struct {
	Type        string
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Usage is sent as the usage object in OpenRouter's shape: prompt_tokens,
// completion_tokens, total_tokens, prompt_tokens_details.cached_tokens and
// .cache_write_tokens, completion_tokens_details.reasoning_tokens, and cost
// when Cost is not nil.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	CacheWriteTokens int64
	ReasoningTokens  int64
	Cost             *float64
}

// ErrorObject is the error member of an SSE error event.
type ErrorObject struct {
	Message string `json:"message"`
	Code    any    `json:"code,omitempty"` // OpenRouter sends a number (502) or a string
}

// Reply scripts the answer to one request. The zero Reply is an empty answer
// with finish_reason "stop".
type Reply struct {
	Text      string
	Reasoning string
	// ReasoningField names the member that carries Reasoning: "reasoning"
	// (OpenRouter; the default) or "reasoning_content" (vLLM, DeepSeek).
	ReasoningField string
	ToolCalls      []ToolCall
	// FinishReason defaults to "tool_calls" when there are ToolCalls, else
	// "stop".
	FinishReason string
	// Usage is sent in the response, or for a stream in a final usage chunk
	// when the request asked for include_usage. RawUsage, when set, is sent
	// verbatim instead. Neither set: no usage.
	Usage    *Usage
	RawUsage json.RawMessage
	ID       string // default "chatcmpl-<N>"
	Model    string // default: the request's model

	// Delay holds the reply back before anything is written; Wait, when not
	// nil, holds it until the channel is closed. Both end early, without a
	// reply, when the client goes away or the server closes.
	Delay time.Duration
	Wait  <-chan struct{}
	// ChunkDelay is the pause between streamed events.
	ChunkDelay time.Duration
	// StallAfter, when more than 0, stops a stream after that many events:
	// the server sends nothing more until the client goes away or the server
	// closes, like a provider that hangs mid-answer.
	StallAfter int
	// ChunkBytes is the most text or argument bytes per streamed event
	// (never splitting a UTF-8 sequence). Default 8.
	ChunkBytes int

	// Status, when 400 or more, fails the request with that HTTP status and
	// the body {"error":{"message":Error,"code":Status}} unless Body is set.
	Status int
	Error  string
	// Body, when set, is sent verbatim as an application/json body with
	// Status (default 200) in place of everything else.
	Body string
	// Header is added to the response headers (e.g. Retry-After).
	Header http.Header
	// StreamError, for a stream, is sent as an SSE error event in
	// OpenRouter's shape after the content events, and the stream ends there.
	StreamError *ErrorObject
	// Events, when set, are sent verbatim to a stream request, each as one
	// "data:" event, in place of the generated events (for shapes the other
	// fields cannot make; include "[DONE]" to end the stream properly).
	Events []string
	// Cut closes the connection abruptly: for a stream after the content
	// events (before finish_reason), otherwise halfway through the body.
	Cut bool
	// NoFinish leaves finish_reason null; a stream then ends normally with
	// "data: [DONE]" but without a finish_reason.
	NoFinish bool

	unscripted bool
}

// Server is a running scripted provider.
type Server struct {
	// URL is the API base URL (".../v1"), for agent.Config.BaseURL.
	URL string

	t      testing.TB
	srv    *httptest.Server
	script Script
	done   chan struct{}
	once   sync.Once

	mu   sync.Mutex
	reqs []Request
}

// NewServer starts a server on 127.0.0.1 that answers with script and is
// closed by t.Cleanup. Requests to anything but POST /v1/chat/completions,
// and bodies that are not JSON, fail the test.
func NewServer(t testing.TB, script Script) *Server {
	t.Helper()
	s := &Server{t: t, script: script, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, ending any reply that is waiting. It is called
// automatically when the test ends.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}

// Count returns the number of requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("agenttest: unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(r.Body); err != nil {
		s.t.Errorf("agenttest: read request body: %v", err)
		return
	}
	req, err := decodeRequest(body.Bytes())
	if err != nil {
		s.t.Errorf("agenttest: decode request body %q: %v", body.String(), err)
		http.Error(w, `{"error":{"message":"invalid JSON body"}}`, http.StatusBadRequest)
		return
	}
	req.Header = r.Header.Clone()
	s.mu.Lock()
	req.N = len(s.reqs) + 1
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	reply := s.script(req)
	if reply.unscripted {
		s.t.Errorf("%s", reply.Error)
	}
	if !s.wait(r.Context(), reply.Delay, reply.Wait) {
		return
	}
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch {
	case reply.Body != "":
		status := reply.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(reply.Body))
	case reply.Status >= 400:
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": reply.Error, "code": reply.Status}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		_, _ = w.Write(b)
	case req.Stream:
		s.writeStream(r.Context(), w, req, reply)
	default:
		s.writeCompletion(w, req, reply)
	}
}

// wait blocks for d and until ch is closed; false when the client went away
// or the server closed first.
func (s *Server) wait(ctx context.Context, d time.Duration, ch <-chan struct{}) bool {
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		}
	}
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		}
	}
	return true
}

// created is the fixed "created" time of every response.
const created = 1700000000

func (s *Server) writeCompletion(w http.ResponseWriter, req Request, reply Reply) {
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	if reply.Text == "" && len(reply.ToolCalls) > 0 {
		msg["content"] = nil
	}
	if reply.Reasoning != "" {
		msg[reply.reasoningField()] = reply.Reasoning
	}
	if len(reply.ToolCalls) > 0 {
		calls := make([]map[string]any, len(reply.ToolCalls))
		for i, tc := range reply.ToolCalls {
			calls[i] = map[string]any{
				"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			}
		}
		msg["tool_calls"] = calls
	}
	doc := map[string]any{
		"id": reply.id(req), "object": "chat.completion", "created": created, "model": reply.model(req),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": reply.finishReason()}},
	}
	if u := reply.usage(); u != nil {
		doc["usage"] = u
	}
	b, err := json.Marshal(doc)
	if err != nil {
		s.t.Errorf("agenttest: encode reply to request %d: %v", req.N, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if reply.Cut {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b[:len(b)/2])
		s.cut(w, req)
		return
	}
	_, _ = w.Write(b)
}

func (s *Server) writeStream(ctx context.Context, w http.ResponseWriter, req Request, reply Reply) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.t.Errorf("agenttest: response writer cannot flush")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sent := 0
	sendRaw := func(data []byte) bool {
		if reply.StallAfter > 0 && sent == reply.StallAfter {
			select {
			case <-ctx.Done():
			case <-s.done:
			}
			return false
		}
		if sent > 0 && !s.wait(ctx, reply.ChunkDelay, nil) {
			return false
		}
		sent++
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if len(reply.Events) > 0 {
		for _, ev := range reply.Events {
			if !sendRaw([]byte(ev)) {
				return
			}
		}
		return
	}
	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			s.t.Errorf("agenttest: encode stream event for request %d: %v", req.N, err)
			return false
		}
		return sendRaw(b)
	}
	id, model := reply.id(req), reply.model(req)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}

	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, piece := range split(reply.Reasoning, reply.chunkBytes()) {
		if !send(chunk(map[string]any{reply.reasoningField(): piece}, nil)) {
			return
		}
	}
	for _, piece := range split(reply.Text, reply.chunkBytes()) {
		if !send(chunk(map[string]any{"content": piece}, nil)) {
			return
		}
	}
	for i, tc := range reply.ToolCalls {
		head := map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}
		if !send(chunk(map[string]any{"tool_calls": []any{head}}, nil)) {
			return
		}
		for _, piece := range split(tc.Arguments, reply.chunkBytes()) {
			part := map[string]any{"index": i, "function": map[string]any{"arguments": piece}}
			if !send(chunk(map[string]any{"tool_calls": []any{part}}, nil)) {
				return
			}
		}
	}
	if reply.StreamError != nil {
		ev := chunk(map[string]any{"content": ""}, "error")
		ev["error"] = reply.StreamError
		send(ev)
		return
	}
	if reply.Cut {
		s.cut(w, req)
		return
	}
	if !send(chunk(map[string]any{}, reply.finishReason())) {
		return
	}
	if u := reply.usage(); u != nil && req.IncludeUsage {
		if !send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": model, "choices": []any{}, "usage": u}) {
			return
		}
	}
	sendRaw([]byte("[DONE]"))
}

// cut closes the connection under a response that is not finished.
func (s *Server) cut(w http.ResponseWriter, req Request) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		s.t.Errorf("agenttest: cannot cut the connection of request %d", req.N)
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		s.t.Errorf("agenttest: hijack connection of request %d: %v", req.N, err)
		return
	}
	_ = conn.Close()
}

func (r Reply) reasoningField() string {
	if r.ReasoningField != "" {
		return r.ReasoningField
	}
	return "reasoning"
}

func (r Reply) finishReason() any {
	switch {
	case r.NoFinish:
		return nil
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (r Reply) id(req Request) string {
	if r.ID != "" {
		return r.ID
	}
	return "chatcmpl-" + strconv.Itoa(req.N)
}

func (r Reply) model(req Request) string {
	if r.Model != "" {
		return r.Model
	}
	return req.Model
}

func (r Reply) chunkBytes() int {
	if r.ChunkBytes > 0 {
		return r.ChunkBytes
	}
	return 8
}

// usage returns the usage object to send, or nil.
func (r Reply) usage() any {
	if len(r.RawUsage) > 0 {
		return r.RawUsage
	}
	u := r.Usage
	if u == nil {
		return nil
	}
	m := map[string]any{
		"prompt_tokens":     u.PromptTokens,
		"completion_tokens": u.CompletionTokens,
		"total_tokens":      u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details": map[string]any{
			"cached_tokens":      u.CachedTokens,
			"cache_write_tokens": u.CacheWriteTokens,
		},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
	}
	if u.Cost != nil {
		m["cost"] = *u.Cost
	}
	return m
}

// split cuts s into pieces of at most n bytes, never inside a UTF-8
// sequence (a piece may exceed n only to hold one long rune).
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		if end == 0 {
			_, end = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// wireRequest is the part of a chat completions body the server decodes.
type wireRequest struct {
	Model    string            `json:"model"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxCompletionTokens int64 `json:"max_completion_tokens"`
	MaxTokens           int64 `json:"max_tokens"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func decodeRequest(body []byte) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, err
	}
	req := Request{
		Body:                body,
		Model:               w.Model,
		Stream:              w.Stream,
		IncludeUsage:        w.StreamOptions != nil && w.StreamOptions.IncludeUsage,
		MaxCompletionTokens: w.MaxCompletionTokens,
		MaxTokens:           w.MaxTokens,
	}
	for i, raw := range w.Messages {
		var wm wireMessage
		if err := json.Unmarshal(raw, &wm); err != nil {
			return Request{}, fmt.Errorf("message %d: %w", i, err)
		}
		content, err := contentText(wm.Content)
		if err != nil {
			return Request{}, fmt.Errorf("message %d content: %w", i, err)
		}
		m := Message{Role: wm.Role, Content: content, ToolCallID: wm.ToolCallID, Raw: raw}
		for _, tc := range wm.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, ToolCall{
				ID: tc.ID, Type: tc.Type, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
			})
		}
		req.Messages = append(req.Messages, m)
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, Tool{
			Type: t.Type, Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters,
		})
	}
	return req, nil
}

// contentText reads message content given as a string, as an array of
// {"type":"text","text":…} parts, or as null.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func hasMember(obj []byte, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}
