package service

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"go.temporal.io/api/serviceerror"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// The error codes of the API. They never change: a client branches on
// them, and the message is for people.
const (
	CodeInvalidJSON          = "invalid_json"
	CodeUnknownField         = "unknown_field"
	CodeInvalidArgument      = "invalid_argument"
	CodeInvalidCursor        = "invalid_cursor"
	CodeUnauthenticated      = "unauthenticated"
	CodeForbidden            = "forbidden"
	CodeRootNotAllowed       = "root_not_allowed"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeConflict             = "conflict"
	CodeIdempotencyConflict  = "idempotency_conflict"
	CodeJobRefused           = "job_refused"
	CodeCursorGone           = "cursor_gone"
	CodeBodyTooLarge         = "body_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal"
)

// apiError is an answer that is not a success: its status and code, and
// a message that says what to do.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON of an error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// HeaderRequestID carries a request's id, the client's when it sent a
// valid one, else a new one.
const HeaderRequestID = "X-Request-Id"

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID returns the id of r: the client's X-Request-Id when it is
// 1–64 of [A-Za-z0-9._:-], else 16 random hex digits.
func requestID(r *http.Request) string {
	if id := r.Header.Get(HeaderRequestID); requestIDPattern.MatchString(id) {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError writes e as the error body, with the request's id.
func writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="axlr"`)
	}
	writeJSON(w, e.status, errorBody{Error: errorDetail{Code: e.code, Message: e.message, RequestID: w.Header().Get(HeaderRequestID)}})
}

// fromClient maps what the client said to an answer: axlrd's refusals
// are conflicts (the message names what waits), what it does not hold is
// not found, and a Temporal that does not answer is unavailable.
func fromClient(err error) *apiError {
	var (
		refused    *client.RefusedError
		notFound   *client.NotFoundError
		sNotFound  *serviceerror.NotFound
		jobRefused *workflows.JobRefusedError
		noWorker   *client.NoWorkerError
		bad        *client.BadCursorError
		ae         *apiError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &jobRefused):
		return errorf(http.StatusConflict, CodeJobRefused, "%s", jobRefused.Error())
	case errors.As(err, &refused):
		return errorf(http.StatusConflict, CodeConflict, "%s", refused.Message)
	case errors.As(err, &notFound), errors.As(err, &sNotFound), errors.Is(err, jobs.ErrNotFound):
		return errorf(http.StatusNotFound, CodeNotFound, "%s", firstLine(err.Error()))
	case errors.As(err, &bad):
		return errorf(http.StatusBadRequest, CodeInvalidCursor, "%s", bad.Error())
	case errors.Is(err, client.ErrCursorGone):
		return errorf(http.StatusGone, CodeCursorGone, "%s", err.Error())
	case errors.As(err, new(*client.UnreachableError)), errors.As(err, &noWorker):
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "%s", firstLine(err.Error()))
	}
	return errorf(http.StatusInternalServerError, CodeInternal, "%s", firstLine(err.Error()))
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
