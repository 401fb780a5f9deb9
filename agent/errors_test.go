package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestTransient(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"caller cancelled", fmt.Errorf("chat completion with m: %w", context.Canceled), false},
		{"cancelled under a transport error", &transportError{err: &url.Error{Op: "Post", URL: "u", Err: context.Canceled}}, false},
		{"deadline exceeded", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"400", &ProviderError{StatusCode: 400}, false},
		{"401", &ProviderError{StatusCode: 401}, false},
		{"402", &ProviderError{StatusCode: 402}, false},
		{"403", &ProviderError{StatusCode: 403}, false},
		{"404", &ProviderError{StatusCode: 404}, false},
		{"413", &ProviderError{StatusCode: 413}, false},
		{"422", &ProviderError{StatusCode: 422}, false},
		{"408", &ProviderError{StatusCode: 408}, true},
		{"409", &ProviderError{StatusCode: 409}, true},
		{"425", &ProviderError{StatusCode: 425}, true},
		{"429", fmt.Errorf("wrapped: %w", &ProviderError{StatusCode: 429}), true},
		{"500", &ProviderError{StatusCode: 500}, true},
		{"503", &ProviderError{StatusCode: 503}, true},
		{"error object without status", &ProviderError{MidStream: true}, true},
		{"incomplete stream", fmt.Errorf("x: %w", ErrIncompleteStream), true},
		{"no choices", fmt.Errorf("x: %w", ErrNoChoices), true},
		{"body cut short", fmt.Errorf("error reading response body: %w", io.ErrUnexpectedEOF), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: &net.OpError{Err: syscall.ECONNREFUSED}}, true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"transport timeout", &url.Error{Op: "Post", URL: "u", Err: timeoutError{}}, true},
		{"transport failure", &transportError{err: errors.New("http2: stream closed")}, true},
		{"garbled json", fmt.Errorf("error parsing response json: %w", &json.SyntaxError{Offset: 3}), true},
		{"url error that is no timeout", &url.Error{Op: "Post", URL: "u", Err: errors.New("unsupported protocol scheme")}, false},
		{"json of the wrong type", &json.UnmarshalTypeError{Value: "string"}, false},
		{"anything else", errors.New("model is empty"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Transient(tc.err); got != tc.want {
				t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestProviderErrorText(t *testing.T) {
	cases := []struct {
		err  ProviderError
		want string
	}{
		{ProviderError{StatusCode: 400, Message: "bad model"}, "provider returned 400: bad model"},
		{ProviderError{StatusCode: 503}, "provider returned 503: Service Unavailable"},
		{ProviderError{StatusCode: 502, Message: "upstream gone", MidStream: true}, "provider stream failed with 502: upstream gone"},
		{ProviderError{Message: "upstream gone", MidStream: true}, "provider stream failed: upstream gone"},
		{ProviderError{Message: "timed out"}, "provider reported an error: timed out"},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestErrorDetails(t *testing.T) {
	cases := []struct {
		name, body, message, code string
	}{
		{"openai", `{"error":{"message":"Invalid model","type":"invalid_request_error","code":"model_not_found"}}`, "Invalid model", "model_not_found"},
		{"type without code", `{"error":{"message":"Rate limited","type":"rate_limit_error","code":null}}`, "Rate limited", "rate_limit_error"},
		{"numeric code", `{"error":{"message":"Overloaded","code":529}}`, "Overloaded", "529"},
		{"openrouter raw", `{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"detail\":\"bad tool schema\"}","provider_name":"X"}}}`,
			`Provider returned error: {"detail":"bad tool schema"}`, "400"},
		{"raw equal to message", `{"error":{"message":"same","metadata":{"raw":"same"}}}`, "same", ""},
		{"error string", `{"error":"model not loaded"}`, "model not loaded", ""},
		{"top-level message", `{"object":"error","message":"too long","type":"BadRequestError","code":400}`, "too long", "400"},
		{"detail string", `{"detail":"Not authenticated"}`, "Not authenticated", ""},
		{"detail list", `{"detail":[{"msg":"field required"}]}`, `[{"msg":"field required"}]`, ""},
		{"not json", "upstream connect error\n", "upstream connect error", ""},
		{"unknown json", `{"status":"down"}`, `{"status":"down"}`, ""},
		{"empty", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, code := errorDetails([]byte(tc.body))
			if msg != tc.message || code != tc.code {
				t.Errorf("errorDetails(%s) = %q, %q; want %q, %q", tc.body, msg, code, tc.message, tc.code)
			}
		})
	}
}

func TestCut(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"añb", 2, "a"}, // ñ is 2 bytes: never half of it
		{"añb", 3, "añ"},
		{"✓✓", 4, "✓"},
		{"✓", 2, ""},
	}
	for _, tc := range cases {
		if got := cut(tc.s, tc.n); got != tc.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	cases := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"absent", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{"milliseconds win", http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond},
		{"http date ignored", http.Header{"Retry-After": {"Wed, 21 Oct 2015 07:28:00 GMT"}}, 0},
		{"negative ignored", http.Header{"Retry-After": {"-1"}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryAfter(tc.header); got != tc.want {
				t.Errorf("retryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTransportBodyMarksReadErrors(t *testing.T) {
	broken := transportBody{io.NopCloser(iotest.ErrReader(errors.New("stream error: stream ID 3; INTERNAL_ERROR")))}
	_, err := io.ReadAll(broken)
	if err == nil || !Transient(err) {
		t.Errorf("read error %v: Transient = false, want true", err)
	}
	whole := transportBody{io.NopCloser(strings.NewReader("data"))}
	if b, err := io.ReadAll(whole); err != nil || string(b) != "data" {
		t.Errorf("ReadAll = %q, %v; want the body and no error", b, err)
	}
}
