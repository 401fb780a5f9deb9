package web

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/jsonargs"
	"github.com/underpass-ai/axlr/redact"
)

// Names of the tools as the model calls them.
const (
	Fetch  = "web_fetch"
	Search = "web_search"
)

// Names returns the tool names: web_fetch, web_search.
func Names() []string { return []string{Fetch, Search} }

// BraveKeyEnv is the environment variable OptionsFromEnv reads the Brave
// Search API key from.
const BraveKeyEnv = "BRAVE_SEARCH_API_KEY"

// Engines web_search reports in its results.
const (
	EngineBrave      = "brave"
	EngineDuckDuckGo = "duckduckgo"
)

// Defaults and maxima of Options.
const (
	DefaultTimeout   = 30 * time.Second
	MaxTimeout       = 5 * time.Minute
	DefaultMaxBytes  = 1 << 20
	MaxMaxBytes      = 16 << 20
	DefaultUserAgent = "axlr-web/1 (+https://github.com/underpass-ai/axlr)"
)

// Options configures Tools. The zero value is valid: DuckDuckGo search and
// the defaults below.
type Options struct {
	// Timeout bounds one call as a whole: resolution, connections, redirects
	// and reading the body. Default 30s, at most 5m.
	Timeout time.Duration
	// MaxBytes bounds the bytes of a response body read in one call, after
	// decompression. Default 1 MiB, at most 16 MiB.
	MaxBytes int64
	// BraveKey, when set, makes web_search use the Brave Search API with this
	// subscription token; empty selects DuckDuckGo Instant Answers. It is a
	// secret: register Tools.Secrets with the host's redactor.
	BraveKey string
	// UserAgent is sent with every request. Default DefaultUserAgent.
	UserAgent string
}

// OptionsFromEnv returns the Options an environment (KEY=VALUE entries, as
// os.Environ) selects: BraveKey from BRAVE_SEARCH_API_KEY; everything else
// is left at its default.
func OptionsFromEnv(environ []string) Options {
	var o Options
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, BraveKeyEnv+"="); ok {
			o.BraveKey = v
		}
	}
	return o
}

// Validate reports the first field of o that New would refuse, by name.
func (o Options) Validate() error {
	switch {
	case o.Timeout < 0:
		return fmt.Errorf("web options: Timeout %s is negative", o.Timeout)
	case o.Timeout > MaxTimeout:
		return fmt.Errorf("web options: Timeout %s exceeds the %s limit", o.Timeout, MaxTimeout)
	case o.MaxBytes < 0:
		return fmt.Errorf("web options: MaxBytes %d is negative", o.MaxBytes)
	case o.MaxBytes > MaxMaxBytes:
		return fmt.Errorf("web options: MaxBytes %d exceeds the %d-byte limit", o.MaxBytes, MaxMaxBytes)
	}
	for i := 0; i < len(o.BraveKey); i++ {
		// The key must need no escaping in a header or JSON, so that redacting
		// it in output bytes is complete.
		if c := o.BraveKey[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return fmt.Errorf("web options: BraveKey holds a byte that is not a visible ASCII character other than \" and \\ (at offset %d)", i)
		}
	}
	for i := 0; i < len(o.UserAgent); i++ {
		if c := o.UserAgent[i]; c < ' ' || c == 0x7f {
			return fmt.Errorf("web options: UserAgent holds a control character (at offset %d)", i)
		}
	}
	return nil
}

// Tools runs web_fetch and web_search. Safe for concurrent use.
type Tools struct {
	timeout   time.Duration
	maxBytes  int64
	braveKey  string
	userAgent string
	fetch     *http.Client // follows checked redirects
	api       *http.Client // the search services: follows no redirect
}

// New returns the web tools over the system's resolver and network, with
// the checks of the package documentation. It fails when opts do not
// validate.
func New(opts Options) (*Tools, error) {
	return newTools(opts, systemNetwork())
}

// newTools builds Tools over n; only New and tests call it.
func newTools(opts Options, n network) (*Tools, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	t := &Tools{
		timeout:   cmp.Or(opts.Timeout, DefaultTimeout),
		maxBytes:  cmp.Or(opts.MaxBytes, DefaultMaxBytes),
		braveKey:  opts.BraveKey,
		userAgent: cmp.Or(opts.UserAgent, DefaultUserAgent),
	}
	tr := n.transport()
	t.fetch = &http.Client{Transport: tr, CheckRedirect: followRedirect}
	t.api = &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
	return t, nil
}

// Engine returns the search engine web_search uses: EngineBrave with a key,
// EngineDuckDuckGo without.
func (t *Tools) Engine() string {
	if t.braveKey != "" {
		return EngineBrave
	}
	return EngineDuckDuckGo
}

// Secrets returns the secret values the host must register with its
// redactor: the Brave key when one is set.
func (t *Tools) Secrets() []string {
	if t.braveKey == "" {
		return nil
	}
	return []string{t.braveKey}
}

// Statuses of a finished call, as the workspace tools report them.
const (
	StatusRejected  = "rejected"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusTimedOut  = "timed_out"
)

// Error codes. The first four are refusals of the request itself (Refused):
// the model can read the reason and change the call.
const (
	CodeInvalidRequest    = "invalid_request"    // not an object, unknown or missing argument, wrong type, unknown tool
	CodeInvalidArguments  = "invalid_arguments"  // a value out of its range: URL scheme, user information, limits
	CodeForbiddenAddress  = "forbidden_address"  // the destination, or a hop, is not a public address
	CodeForbiddenRedirect = "forbidden_redirect" // a redirect to a non-http(s) URL or one with user information
	CodeTooManyRedirects  = "too_many_redirects" // more than 5 redirects
	CodeNetworkError      = "network_error"      // resolution, connection, TLS or transfer failed
	CodeSearchFailed      = "search_failed"      // the search service answered with an error or an unreadable body
	CodeTimeout           = "timeout"            // Options.Timeout expired
	CodeCancelled         = "cancelled"          // the caller's context ended
	CodeInternalError     = "internal_error"
)

// Error is a failed call: a stable code and an English message for the
// model. Messages never hold the Brave key.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Refused reports whether the request itself was refused (bad arguments, a
// forbidden address or redirect) rather than failing in the network or the
// search service.
func (e *Error) Refused() bool {
	switch e.Code {
	case CodeInvalidRequest, CodeInvalidArguments, CodeForbiddenAddress, CodeForbiddenRedirect:
		return true
	}
	return false
}

// Status returns the status under which a host reports the error: rejected
// when Refused, timed_out and cancelled for those codes, failed otherwise.
func (e *Error) Status() string {
	switch {
	case e.Refused():
		return StatusRejected
	case e.Code == CodeTimeout:
		return StatusTimedOut
	case e.Code == CodeCancelled:
		return StatusCancelled
	}
	return StatusFailed
}

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Call runs one tool with its JSON arguments object and returns its output
// object as JSON. Unknown argument fields are refused (invalid_request). A
// web page answering 404 is a result, not an error. Every error is an
// *Error; neither output nor error holds the Brave key.
func (t *Tools) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	out, err := t.call(ctx, tool, args)
	if err != nil {
		err.Message = t.scrub(err.Message)
		return nil, err
	}
	return out, nil
}

func (t *Tools) call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, *Error) {
	if ctx.Err() != nil {
		return nil, newError(CodeCancelled, "%s was cancelled before it started", tool)
	}
	var (
		out any
		err *Error
	)
	switch tool {
	case Fetch:
		var a fetchRequest
		if a, err = parseFetch(args); err == nil {
			out, err = t.fetchURL(ctx, a)
		}
	case Search:
		var a searchRequest
		if a, err = parseSearch(args); err == nil {
			out, err = t.search(ctx, a)
		}
	default:
		return nil, unknownTool(tool)
	}
	if err != nil {
		return nil, err
	}
	b, merr := jsonargs.Marshal(out)
	if merr != nil {
		return nil, newError(CodeInternalError, "encode %s output: %v", tool, merr)
	}
	return []byte(t.scrub(string(b))), nil
}

// Check runs every check of Call that needs no network: the JSON shape of
// the arguments, the URL's scheme, host and user information, a literal
// address of the URL, the query and the limits. It returns nil or an *Error.
func Check(tool string, args json.RawMessage) error {
	var err *Error
	switch tool {
	case Fetch:
		_, err = parseFetch(args)
	case Search:
		_, err = parseSearch(args)
	default:
		err = unknownTool(tool)
	}
	if err != nil {
		return err
	}
	return nil
}

func unknownTool(tool string) *Error {
	return newError(CodeInvalidRequest, "unknown tool %q; the web tools are %s and %s", tool, Fetch, Search)
}

// scrub replaces the Brave key in s by redact.Marker.
func (t *Tools) scrub(s string) string {
	if t.braveKey == "" {
		return s
	}
	return strings.ReplaceAll(s, t.braveKey, redact.Marker)
}

// errTimeLimit is the cause of a call's context when Options.Timeout ends it.
var errTimeLimit = errors.New("web time limit")

// withLimit bounds ctx by the call's time limit.
func (t *Tools) withLimit(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, t.timeout, errTimeLimit)
}

// failure turns an error of a request made under limited (from withLimit
// over parent) into a tool error; what names the request in messages.
func (t *Tools) failure(parent, limited context.Context, what string, err error) *Error {
	var (
		fe *forbiddenAddressError
		re *redirectError
		de *resolveError
	)
	switch {
	case errors.As(err, &fe):
		return newError(CodeForbiddenAddress, "%s: %v", what, fe)
	case errors.As(err, &re) && re.tooMany:
		return newError(CodeTooManyRedirects, "%s: %v", what, re)
	case errors.As(err, &re):
		return newError(CodeForbiddenRedirect, "%s: %v", what, re)
	case parent.Err() != nil:
		return newError(CodeCancelled, "%s was cancelled: %v", what, context.Cause(parent))
	case errors.Is(context.Cause(limited), errTimeLimit):
		return newError(CodeTimeout, "%s did not finish within %s, the time limit", what, t.timeout)
	case errors.As(err, &de):
		return newError(CodeNetworkError, "%s: %v", what, de)
	}
	return newError(CodeNetworkError, "%s: %v", what, cause(err))
}

// cause strips the *url.Error that net/http wraps around failures: its
// message repeats the request URL, which callers name themselves.
func cause(err error) error {
	var ue *url.Error
	for errors.As(err, &ue) {
		err = ue.Err
	}
	return err
}
