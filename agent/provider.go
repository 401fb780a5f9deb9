// Package agent talks to model providers: OpenAI-compatible chat completions
// with function tools (OpenAI, OpenRouter, vLLM, llama.cpp and the like),
// streamed over SSE or not.
//
// Client.Complete sends exactly one request and returns the answer with its
// reasoning text, tool calls and token usage (including the cache, reasoning
// and cost fields providers add to the usage object). It never retries: the
// Temporal activity that calls it owns retries, and Transient tells it which
// errors are worth one. Storing transcripts is the caller's job too.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// Request is one chat completion request.
type Request struct {
	Model    string
	Messages []Message
	Tools    []ToolSpec
	// MaxTokens caps the completion (sent as max_completion_tokens, which
	// counts reasoning tokens too). 0: the provider's default.
	MaxTokens int
	// Stream asks for an SSE stream with stream_options.include_usage, so the
	// last event carries the usage.
	Stream bool
}

// Response is the provider's answer to one Request.
type Response struct {
	ID    string
	Model string // as the provider reported it
	Text  string // the assistant's content
	// Reasoning is the "reasoning" or "reasoning_content" text of the message
	// (OpenRouter, vLLM, DeepSeek style), empty when the provider sent none.
	Reasoning    string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
}

// Message returns the assistant message to append to the conversation.
func (r Response) Message() Message {
	return Message{Role: RoleAssistant, Content: r.Text, Reasoning: r.Reasoning, ToolCalls: r.ToolCalls}
}

// Progress describes how much of a streamed response has arrived.
type Progress struct {
	TextBytes      int
	ReasoningBytes int
	ToolCalls      int
	// TextDelta and ReasoningDelta are what this chunk added to the
	// answer and to the readable reasoning.
	TextDelta      string `json:"-"`
	ReasoningDelta string `json:"-"`
}

// Client sends chat completion requests to one provider. It is safe for
// concurrent use.
type Client struct {
	completions openai.ChatCompletionService
	baseErr     error
}

// NewClient returns a Client for cfg. Nothing is read from the environment:
// cfg is the whole configuration (see ConfigFromEnv). A malformed BaseURL
// makes every Complete fail with a permanent error.
func NewClient(cfg Config) *Client {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = newHTTPClient()
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	c := &Client{completions: openai.NewChatCompletionService(opts...)}
	if u, err := url.Parse(base); err != nil {
		c.baseErr = fmt.Errorf("invalid base URL %q: %w", base, err)
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.baseErr = fmt.Errorf("invalid base URL %q: want http(s)://host/path", base)
	}
	return c
}

// Complete sends req and returns the answer. onProgress, when not nil, is
// called after every streamed chunk that adds text, reasoning or a tool call;
// it must be cheap (the activity heartbeats from it). It is not called for a
// non-streaming request. Errors name the model; Transient classifies them.
func (c *Client) Complete(ctx context.Context, req Request, onProgress func(Progress)) (Response, error) {
	if c.baseErr != nil {
		return Response{}, fmt.Errorf("chat completion with %s: %w", req.Model, c.baseErr)
	}
	params, err := buildParams(req)
	if err != nil {
		return Response{}, fmt.Errorf("build chat completion request for %s: %w", req.Model, err)
	}
	var x exchange
	watch := option.WithMiddleware(x.middleware)
	var resp Response
	if req.Stream {
		resp, err = c.stream(ctx, params, onProgress, watch)
	} else {
		resp, err = c.complete(ctx, params, watch)
	}
	if err != nil {
		return Response{}, fmt.Errorf("chat completion with %s: %w", req.Model, classify(ctx, err, &x))
	}
	return resp, nil
}

func buildParams(req Request) (openai.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return openai.ChatCompletionNewParams{}, errors.New("model is empty")
	}
	if len(req.Messages) == 0 {
		return openai.ChatCompletionNewParams{}, errors.New("no messages")
	}
	msgs, err := toParamMessages(req.Messages)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	tools, err := toParamTools(req.Tools)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	p := openai.ChatCompletionNewParams{Model: req.Model, Messages: msgs}
	if len(tools) > 0 {
		p.Tools = tools
	}
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if req.Stream {
		p.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	return p, nil
}

func (c *Client) complete(ctx context.Context, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (Response, error) {
	cc, err := c.completions.New(ctx, params, opts...)
	if err != nil {
		return Response{}, err
	}
	if extraRaw(cc.JSON.ExtraFields, "error") != "" {
		return Response{}, newBodyError([]byte(cc.RawJSON()), false)
	}
	if len(cc.Choices) == 0 {
		return Response{}, ErrNoChoices
	}
	choice := cc.Choices[0]
	msg := choice.Message
	resp := Response{
		ID:           cc.ID,
		Model:        cc.Model,
		Text:         msg.Content,
		Reasoning:    reasoningText(msg.JSON.ExtraFields),
		FinishReason: choice.FinishReason,
		Usage:        parseUsage(cc.JSON.Usage.Raw()),
	}
	for i, tc := range msg.ToolCalls {
		args := tc.Function.Arguments
		if raw := strings.TrimSpace(tc.Function.JSON.Arguments.Raw()); strings.HasPrefix(raw, "{") {
			args = raw // a server that sent the arguments as an object, not a string
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{
			ID:        toolCallID(tc.ID, i),
			Name:      tc.Function.Name,
			Arguments: normalizeArguments(args),
		})
	}
	return resp, nil
}

// keepPlainBody keeps what a server that does not stream answers with: one
// JSON body, which the event-stream decoder reads as no events. The
// buffer is nil until such a body is read.
func keepPlainBody(plain **cappedBuffer) option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if resp != nil && resp.Body != nil {
			if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
				*plain = &cappedBuffer{limit: maxErrorBody}
				resp.Body = struct {
					io.Reader
					io.Closer
				}{io.TeeReader(resp.Body, *plain), resp.Body}
			}
		}
		return resp, err
	})
}

func (c *Client) stream(ctx context.Context, params openai.ChatCompletionNewParams, onProgress func(Progress), opts ...option.RequestOption) (Response, error) {
	var plain *cappedBuffer
	opts = append(opts, keepPlainBody(&plain))
	s := c.completions.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var (
		acc       openai.ChatCompletionAccumulator
		reasoning strings.Builder
		usageRaw  string
		id        string
		chunks    int
	)
	for s.Next() {
		chunk := s.Current()
		if chunks == 0 {
			id = chunk.ID
		}
		chunks++
		if chunk.JSON.Object.Raw() == `"error"` {
			// vLLM reports a failure mid-stream as an error object in place
			// of a chunk.
			return Response{}, newBodyError([]byte(chunk.RawJSON()), true)
		}
		// Some servers (older llama.cpp among them) give every chunk a new
		// id; the accumulator would drop them, so pin the first one.
		chunk.ID = id
		if !acc.AddChunk(chunk) {
			return Response{}, fmt.Errorf("stream chunk %d rejected by the accumulator: choice or tool call index out of range", chunks)
		}
		grew := false
		var text, thought string
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if r := reasoningText(ch.Delta.JSON.ExtraFields); r != "" {
				reasoning.WriteString(r)
				thought += r
				grew = true
			}
			text += ch.Delta.Content
			grew = grew || ch.Delta.Content != "" || len(ch.Delta.ToolCalls) > 0
		}
		if chunk.JSON.Usage.Valid() {
			usageRaw = chunk.JSON.Usage.Raw()
		}
		if grew && onProgress != nil {
			p := Progress{ReasoningBytes: reasoning.Len(), TextDelta: text, ReasoningDelta: thought}
			if len(acc.Choices) > 0 {
				p.TextBytes = len(acc.Choices[0].Message.Content)
				p.ToolCalls = len(acc.Choices[0].Message.ToolCalls)
			}
			onProgress(p)
		}
	}
	if err := s.Err(); err != nil {
		var se *ssestream.StreamError
		if errors.As(err, &se) {
			return Response{}, newBodyError(bytes.TrimSpace(se.Event.Data), true)
		}
		return Response{}, err
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		if chunks == 0 {
			if plain != nil {
				return Response{}, plainBodyError(plain.Bytes())
			}
			return Response{}, ErrNoChoices
		}
		return Response{}, ErrIncompleteStream
	}
	return streamed(&acc, reasoning.String(), usageRaw), nil
}

// streamed is the response a finished stream accumulated: its first
// choice, the reasoning and the usage it sent.
func streamed(acc *openai.ChatCompletionAccumulator, reasoning, usageRaw string) Response {
	choice := acc.Choices[0]
	resp := Response{
		ID:           acc.ID,
		Model:        acc.Model,
		Text:         choice.Message.Content,
		Reasoning:    reasoning,
		FinishReason: choice.FinishReason,
		Usage:        parseUsage(usageRaw),
	}
	for i, tc := range choice.Message.ToolCalls {
		if tc.ID == "" && tc.Function.Name == "" && tc.Function.Arguments == "" {
			continue // a gap left by a sparse tool call index
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{
			ID:        toolCallID(tc.ID, i),
			Name:      tc.Function.Name,
			Arguments: normalizeArguments(tc.Function.Arguments),
		})
	}
	return resp
}

// reasoningText returns the "reasoning" member of a message or delta, or its
// "reasoning_content" when "reasoning" is absent or empty.
func reasoningText(extra map[string]respjson.Field) string {
	for _, key := range []string{"reasoning", "reasoning_content"} {
		var s string
		if raw := extraRaw(extra, key); raw != "" && json.Unmarshal([]byte(raw), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// extraRaw returns the raw JSON of a member openai-go does not know, or ""
// when it is absent or null. (openai-go marks such members invalid, as they
// match no field, but keeps their raw text.)
func extraRaw(extra map[string]respjson.Field, key string) string {
	raw := strings.TrimSpace(extra[key].Raw())
	if raw == "null" {
		return ""
	}
	return raw
}

// exchange watches one HTTP exchange as it passes through openai-go. It
// records the status, headers and body of an error response, for the bodies
// openai-go cannot decode into an *openai.Error (such as {"error":"model not
// found"}), and marks a failure to read a successful response's body as a
// transport failure, whatever its type (a reset, an HTTP/2 stream error).
type exchange struct {
	status int
	header http.Header
	body   []byte
}

func (x *exchange) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil {
		return res, err
	}
	if res.StatusCode < 400 {
		res.Body = transportBody{res.Body}
		return res, nil
	}
	body, readErr := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	_ = res.Body.Close()
	x.status, x.header, x.body = res.StatusCode, res.Header, body
	res.Body = io.NopCloser(bytes.NewReader(body))
	if readErr != nil {
		return nil, &transportError{err: readErr}
	}
	return res, nil
}

// transportBody wraps the errors of a response body in *transportError.
type transportBody struct{ io.ReadCloser }

func (b transportBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = &transportError{err: err}
	}
	return n, err
}

// classify turns the error of a failed exchange into the error Complete
// returns: the caller's cancellation, a *ProviderError, or a transport
// failure.
func classify(ctx context.Context, err error, x *exchange) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var ae *openai.Error
	if errors.As(err, &ae) {
		var body []byte
		if ae.Response != nil && ae.Response.Body != nil {
			body, _ = io.ReadAll(ae.Response.Body)
		}
		var header http.Header
		if ae.Response != nil {
			header = ae.Response.Header
		}
		return newHTTPError(ae.StatusCode, header, body)
	}
	if x.status >= 400 {
		return newHTTPError(x.status, x.header, x.body)
	}
	var (
		ue *url.Error
		te *transportError
	)
	if errors.As(err, &ue) && !errors.As(err, &te) {
		return &transportError{err: err} // the request could not be sent
	}
	return err
}
