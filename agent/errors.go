package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Errors Complete returns for responses that end without an answer. Both are
// transient: the same request can succeed when sent again.
var (
	// ErrIncompleteStream: the stream ended before a finish_reason arrived.
	ErrIncompleteStream = errors.New("provider stream ended before finish_reason")
	// ErrNoChoices: the response carried no choices.
	ErrNoChoices = errors.New("provider response has no choices")
)

// ErrNotStreaming: a streaming request was answered with one JSON body and
// no events. The server does not stream, so sending the request again cannot
// help: it is not transient.
var ErrNotStreaming = errors.New(`the provider answered a streaming request with a plain JSON body: it does not stream; set "provider": {"stream": false} in settings.json`)

// Limits of the text kept in a ProviderError.
const (
	maxErrorMessage = 2 << 10  // Message when it is cut from the body
	maxErrorBody    = 16 << 10 // Body
)

// ProviderError is a failure the provider reported: an HTTP status of 400 or
// more, or an error object inside a 200 response (OpenRouter sends one in an
// SSE event when the upstream model fails mid-stream, and sometimes in a plain
// JSON body).
type ProviderError struct {
	// StatusCode is the HTTP status, or for an error object inside a 200
	// response its numeric "code" when that is an HTTP status, else 0.
	StatusCode int
	// Message is error.message, error (when a string), message or detail from
	// the body, else the body text cut to 2 KiB. OpenRouter's
	// error.metadata.raw, the upstream provider's own text, is appended.
	Message string
	// Body is the response body (or the SSE event data), cut to 16 KiB.
	Body string
	// Code is error.code or error.type when present ("rate_limit_exceeded").
	Code string
	// MidStream reports an error object received in an SSE event after the
	// 200 response began.
	MidStream bool
	// RetryAfter is the wait the provider asked for in a retry-after-ms or
	// retry-after (seconds) header; 0 when absent.
	RetryAfter time.Duration
}

func (e *ProviderError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	switch {
	case e.MidStream && e.StatusCode != 0:
		return fmt.Sprintf("provider stream failed with %d: %s", e.StatusCode, msg)
	case e.MidStream:
		return "provider stream failed: " + msg
	case e.StatusCode == 0:
		return "provider reported an error: " + msg
	}
	return fmt.Sprintf("provider returned %d: %s", e.StatusCode, msg)
}

// Transient reports whether sending the same request again can succeed:
// 408, 409, 425, 429 and 5xx are transient, other statuses are not. An error
// object without an HTTP status inside a 200 response is transient: it is the
// provider abandoning the answer, not refusing the request.
func (e *ProviderError) Transient() bool {
	switch {
	case e.StatusCode == 0:
		return true
	case e.StatusCode == http.StatusRequestTimeout,
		e.StatusCode == http.StatusConflict,
		e.StatusCode == http.StatusTooEarly,
		e.StatusCode == http.StatusTooManyRequests,
		e.StatusCode >= 500:
		return true
	}
	return false
}

// Transient reports whether retrying the same request can succeed. Transient:
// a *ProviderError whose Transient method says so, ErrIncompleteStream,
// ErrNoChoices, network failures (refused or reset connections, a body cut
// short), timeouts including context.DeadlineExceeded, and a garbled JSON
// body. Not transient: context.Canceled (the caller gave up), 4xx statuses
// other than 408/409/425/429, invalid requests, and anything unrecognised.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Transient()
	}
	var (
		te  *transportError
		ne  net.Error
		oe  *net.OpError
		jse *json.SyntaxError
	)
	switch {
	case errors.Is(err, ErrIncompleteStream), errors.Is(err, ErrNoChoices),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &te), errors.As(err, &oe), errors.As(err, &jse):
		return true
	case errors.As(err, &ne):
		return ne.Timeout()
	}
	return false
}

// transportError marks a failure to exchange bytes with the provider: the
// request could not be sent, or the response body broke off. Retrying can
// succeed whatever the underlying cause.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// newHTTPError builds the ProviderError for an HTTP status of 400 or more.
func newHTTPError(status int, header http.Header, body []byte) *ProviderError {
	msg, code := errorDetails(body)
	return &ProviderError{
		StatusCode: status,
		Message:    msg,
		Body:       cut(string(body), maxErrorBody),
		Code:       code,
		RetryAfter: retryAfter(header),
	}
}

// newBodyError builds the ProviderError for an error object found in a 200
// response: the raw JSON of the whole event or body, whose "error" member is
// the object.
func newBodyError(raw []byte, midStream bool) *ProviderError {
	msg, code := errorDetails(raw)
	status := 0
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n <= 599 {
		status = n
	}
	return &ProviderError{
		StatusCode: status,
		Message:    msg,
		Body:       cut(string(raw), maxErrorBody),
		Code:       code,
		MidStream:  midStream,
	}
}

// errorDetails extracts the human message and the machine code from an error
// body: {"error":{"message","code"|"type","metadata":{"raw"}}}, {"error":"…"},
// {"message","code"|"type"} (vLLM) or {"detail":…} (FastAPI); anything else
// is its own message.
func errorDetails(body []byte) (message, code string) {
	var doc struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Code    json.RawMessage `json:"code"`
		Type    json.RawMessage `json:"type"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return cut(strings.TrimSpace(string(body)), maxErrorMessage), ""
	}
	var obj struct {
		Message  json.RawMessage `json:"message"`
		Code     json.RawMessage `json:"code"`
		Type     json.RawMessage `json:"type"`
		Metadata struct {
			Raw json.RawMessage `json:"raw"`
		} `json:"metadata"`
	}
	switch {
	case isObject(doc.Error) && json.Unmarshal(doc.Error, &obj) == nil:
		message = text(obj.Message)
		if raw := text(obj.Metadata.Raw); raw != "" && raw != message {
			message = strings.TrimSpace(message + ": " + cut(raw, maxErrorMessage))
		}
		code = text(obj.Code)
		if code == "" {
			code = text(obj.Type)
		}
	case text(doc.Error) != "":
		message = text(doc.Error)
	case text(doc.Message) != "":
		message = text(doc.Message)
		code = text(doc.Code)
		if code == "" {
			code = text(doc.Type)
		}
	case text(doc.Detail) != "":
		message = text(doc.Detail)
	}
	if message == "" {
		message = cut(strings.TrimSpace(string(body)), maxErrorMessage)
	}
	return message, code
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// text renders a JSON value as text: a string unquoted, null as empty, any
// other value (a number code, a FastAPI detail list) as its JSON.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// cut shortens s to at most n bytes without splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// retryAfter reads retry-after-ms or retry-after (delay-seconds; the HTTP-date
// form is not used by model providers and is ignored).
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.ParseFloat(h.Get("Retry-After"), 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return 0
}

// plainBodyError explains a JSON body that answered a streaming request: a
// completion (the server does not stream) or an error object.
func plainBodyError(body []byte) error {
	var doc struct {
		Choices json.RawMessage `json:"choices"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Choices != nil {
		return ErrNotStreaming
	}
	return newBodyError(body, false)
}

// cappedBuffer keeps the first limit bytes written to it.
type cappedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
