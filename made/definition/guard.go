package definition

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/underpass-ai/axlr/made"
)

// stepStatuses are the statuses a step_status check may name.
var stepStatuses = map[string]bool{
	"PENDING": true, "IN_PROGRESS": true, "COMPLETED": true,
	"FAILED": true, "WAITING_FOR_HUMAN": true, "CANCELLED": true,
}

// parseGuardCheck reads a guard's type and check as made-mcp does (type
// human or check manual_approval is a human approval; all_steps_completed;
// step_status:<step>:<STATUS>) and the newer checks
// output_field:<step>:<field>=<value>, step_repeat_exhausted:<step> and
// state_repeat_exhausted:<STATE>. Anything else is refused.
func parseGuardCheck(typ, check string) (GuardCondition, error) {
	if typ == "human" || check == "manual_approval" {
		return GuardCondition{Kind: GuardHumanApproval}, nil
	}
	if check == "all_steps_completed" {
		return GuardCondition{Kind: GuardAllStepsCompleted}, nil
	}
	kind, rest, _ := strings.Cut(check, ":")
	switch GuardKind(kind) {
	case GuardStepStatus:
		return parseStepStatusCheck(rest)
	case GuardOutputField:
		return parseOutputFieldCheck(rest)
	case GuardStepRepeatExhausted:
		step, err := CheckID("step_id", rest, 0)
		return GuardCondition{Kind: GuardStepRepeatExhausted, Step: step}, err
	case GuardStateRepeatExhausted:
		state, err := CheckText("state_id", rest, 0)
		return GuardCondition{Kind: GuardStateRepeatExhausted, State: state}, err
	}
	return GuardCondition{}, unsupportedCheck()
}

func unsupportedCheck() *made.Error {
	return parseError("invariant violated: unsupported ceremony guard check")
}

func parseStepStatusCheck(rest string) (GuardCondition, error) {
	parts := strings.Split(rest, ":")
	if len(parts) != 2 {
		return GuardCondition{}, unsupportedCheck()
	}
	step, err := CheckID("step_id", parts[0], 0)
	if err != nil {
		return GuardCondition{}, err
	}
	if !stepStatuses[parts[1]] {
		return GuardCondition{}, parseError("invariant violated: unknown ceremony step status")
	}
	return GuardCondition{Kind: GuardStepStatus, Step: step, Status: parts[1]}, nil
}

func parseOutputFieldCheck(rest string) (GuardCondition, error) {
	step, fieldValue, ok := strings.Cut(rest, ":")
	if !ok {
		return GuardCondition{}, unsupportedCheck()
	}
	field, value, ok := strings.Cut(fieldValue, "=")
	if !ok || strings.TrimSpace(field) == "" {
		return GuardCondition{}, unsupportedCheck()
	}
	id, err := CheckID("step_id", step, 0)
	if err != nil {
		return GuardCondition{}, err
	}
	return GuardCondition{Kind: GuardOutputField, Step: id, Field: strings.TrimSpace(field), Value: checkValue(value)}, nil
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// checkValue types an output_field value as JSON would: true and false are
// booleans, a JSON number is a number (int64 when it is an integer that
// fits), anything else is a string.
func checkValue(s string) any {
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	if !jsonNumber.MatchString(s) {
		return s
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return f
}

// jsonEqual compares an output value (decoded from JSON or given by a
// caller) with a check value: numbers by value, booleans and strings
// exactly, so "true" never equals true.
func jsonEqual(got, want any) bool {
	gf, gNum := number(got)
	wf, wNum := number(want)
	if gNum || wNum {
		return gNum && wNum && gf == wf
	}
	switch w := want.(type) {
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case string:
		g, ok := got.(string)
		return ok && g == w
	}
	return false
}

// OutputHas reports whether a step's output holds want at field, compared
// as jsonEqual does: the test of an until condition and of an output_field
// guard.
func OutputHas(output map[string]any, field string, want any) bool {
	got, ok := output[field]
	return ok && jsonEqual(got, want)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint:
		return float64(n), true
	}
	return 0, false
}
