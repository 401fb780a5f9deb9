package embedded

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

// The argument checks made-mcp makes before reaching the engine, worded as
// made-mcp words them for the arguments the MCP client sends: a required
// string left empty arrives empty, so it "must not be blank"; an optional
// one left empty is not sent.

const (
	defaultLeaseOwner = "made-mcp-external-host"
	defaultLeaseTTL   = 5 * time.Minute
)

func required(field, value string) (string, *made.Error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", invalidArg("field `%s` must not be blank", field)
	}
	return v, nil
}

func optional(field, value string) (string, *made.Error) {
	if value == "" {
		return "", nil
	}
	return required(field, value)
}

func actorKind(field string, k made.ActorKind) *made.Error {
	v, err := required(field, string(k))
	if err != nil {
		return err
	}
	switch made.ActorKind(v) {
	case made.ActorHuman, made.ActorAgent, made.ActorService, made.ActorEngine:
		return nil
	}
	return invalidArg("`%s` must be human, agent, service or engine, not %s", field, v)
}

// asInvalid turns an identifier check's failure into an argument error.
func asInvalid(err error) *made.Error {
	var e *made.Error
	if errors.As(err, &e) {
		return invalidArg("%s", e.Message)
	}
	return invalidArg("%s", err.Error())
}

func ceremonyID(value string) (string, *made.Error) {
	id, err := required("ceremony_id", value)
	if err != nil {
		return "", err
	}
	if _, err := definition.CheckText("ceremony_id", id, 256); err != nil {
		return "", asInvalid(err)
	}
	return id, nil
}

// checked reads a required argument and checks it as an identifier.
func checked(field, value string, check func(string) (string, error)) (string, *made.Error) {
	v, err := required(field, value)
	if err != nil {
		return "", err
	}
	out, cerr := check(v)
	if cerr != nil {
		return "", asInvalid(cerr)
	}
	return out, nil
}

func stepIDArg(v string) (string, error)    { return definition.CheckID("step_id", v, 0) }
func guardNameArg(v string) (string, error) { return definition.CheckID("guard_name", v, 0) }
func triggerArg(v string) (string, error)   { return definition.CheckText("transition_trigger", v, 0) }
func roleIDArg(v string) (string, error)    { return definition.CheckText("role_id", v, 0) }

// jsonObject copies a caller's object through JSON, as made-mcp receives
// it: numbers become float64. A nil object is empty.
func jsonObject(field string, m map[string]any) (map[string]any, *made.Error) {
	out := map[string]any{}
	if m == nil {
		return out, nil
	}
	b, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return nil, invalidArg("invalid `%s`: %v", field, err)
	}
	return out, nil
}

// stepResult checks a completion's status, output and error message.
func stepResult(req made.CompleteRequest) (made.StepStatus, map[string]any, *string, *made.Error) {
	raw, err := required("status", string(req.Status))
	if err != nil {
		return "", nil, nil, err
	}
	status := made.StepStatus(raw)
	switch status {
	case made.StepCompleted, made.StepFailed, made.StepWaitingForHuman, made.StepCancelled:
	default:
		return "", nil, nil, invalidArg("`status` must be completed, failed, waiting_for_human or cancelled, not %s", raw)
	}
	output, err := jsonObject("output", req.Output)
	if err != nil {
		return "", nil, nil, err
	}
	var message *string
	if req.Error != "" {
		m, err := stepErrorMessage(req.Error)
		if err != nil {
			return "", nil, nil, err
		}
		message = &m
	}
	switch {
	case status == made.StepFailed && message == nil:
		return "", nil, nil, invalidArg("field `step_result.error_message` must not be empty")
	case status != made.StepFailed && message != nil:
		return "", nil, nil, invalidArg("%s", msgErrorOnlyIfFailed)
	}
	return status, output, message, nil
}

func stepErrorMessage(raw string) (string, *made.Error) {
	if strings.TrimSpace(raw) == "" {
		return "", invalidArg("field `error` must not be blank")
	}
	m, err := definition.CheckText("step_error_message", raw, 2048)
	if err != nil {
		return "", asInvalid(err)
	}
	return m, nil
}

// leaseTTL is the claim's lease duration in whole milliseconds (rounded
// up), as made-mcp's lease_ttl_ms; zero means five minutes.
func leaseTTL(ttl time.Duration) (time.Duration, *made.Error) {
	switch {
	case ttl < 0:
		return 0, invalidArg("field `lease_ttl_ms` must be a non-negative integer")
	case ttl == 0:
		return defaultLeaseTTL, nil
	case ttl%time.Millisecond != 0:
		return ttl.Truncate(time.Millisecond) + time.Millisecond, nil
	}
	return ttl, nil
}

// deferralContent checks a deferral's statement, reason and conditions.
func deferralContent(req made.DeferRequest) (statement, reason string, when []string, err *made.Error) {
	if statement, err = required("statement", req.Statement); err != nil {
		return "", "", nil, err
	}
	if reason, err = required("reason", req.Reason); err != nil {
		return "", "", nil, err
	}
	for _, c := range req.ReconsiderWhen {
		if strings.TrimSpace(c) == "" {
			return "", "", nil, invalidArg("field `reconsider_when` must not contain blank strings")
		}
		when = append(when, strings.TrimSpace(c))
	}
	if len(when) == 0 {
		return "", "", nil, invalidArg("collection `ceremony_guard_deferral.reconsider_when` must contain at least one element")
	}
	for _, t := range []struct {
		field, value string
		limit        int
	}{
		{"ceremony_guard_deferral.statement", statement, 4096},
		{"ceremony_guard_deferral.reason", reason, 4096},
	} {
		if err := deferralText(t.field, t.value, t.limit); err != nil {
			return "", "", nil, err
		}
	}
	for _, c := range when {
		if err := deferralText("ceremony_guard_deferral.reconsider_when", c, 1024); err != nil {
			return "", "", nil, err
		}
	}
	return statement, reason, when, nil
}

// deferralText allows newlines and tabs, unlike identifiers.
func deferralText(field, s string, limit int) *made.Error {
	if len(s) > limit {
		return invalidArg("field `%s` exceeds maximum length: %d > %d", field, len(s), limit)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && !strings.ContainsRune("\n\r\t", r) }) >= 0 {
		return invalidArg("field `%s` contains invalid characters", field)
	}
	return nil
}
