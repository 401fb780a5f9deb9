package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/underpass-ai/axlr/jsonargs"
)

// The host tools through which a session asks for a job or reads them.
const (
	ToolRequestRepair      = "axlr_request_repair"
	ToolRequestImprovement = "axlr_request_improvement"
	ToolRepairStatus       = "axlr_repair_status"
)

// Limits of a request's arguments.
const (
	MinDescription  = 20   // runes
	MaxText         = 2000 // bytes of description, expected and observed each
	MaxEvidence     = 8    // items
	MaxEvidenceItem = 1000 // bytes
	MaxCitedCalls   = 8
	// MinImprovementCalls is how many calls an improvement cites at least.
	MinImprovementCalls = 2
	// maxRecent bounds the citable calls a refusal names.
	maxRecent = 5
)

// Request is the arguments of axlr_request_repair and
// axlr_request_improvement, which take the same fields.
type Request struct {
	Description string   `json:"description"`
	Expected    string   `json:"expected"`
	Observed    string   `json:"observed"`
	Evidence    Evidence `json:"evidence"`
	ToolCalls   []string `json:"tool_calls"`
}

// Evidence is a request's concrete items: one JSON string with one item per
// line (blank lines skipped), or an array of strings.
type Evidence []string

// UnmarshalJSON takes a string of lines or an array of strings.
func (e *Evidence) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*e = nil
		return nil
	case len(data) > 0 && data[0] == '"':
		var text string
		if err := json.Unmarshal(data, &text); err != nil {
			return err
		}
		var items []string
		for _, line := range strings.Split(text, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				items = append(items, line)
			}
		}
		*e = items
		return nil
	case len(data) > 0 && data[0] == '[':
		var items []string
		if err := json.Unmarshal(data, &items); err != nil {
			return errors.New("evidence must be a string with one item per line, or an array of strings")
		}
		*e = items
		return nil
	}
	return errors.New("evidence must be a string with one item per line, or an array of strings")
}

// CallStatus is what became of a session's call, as the session recorded
// it: the tool result's status when the tool ran, else the runtime's.
type CallStatus string

// The outcomes of a call.
const (
	// CallPending: no outcome yet (also the empty status).
	CallPending CallStatus = "pending"
	// CallCompleted, CallRejected, CallFailed, CallCancelled and
	// CallTimedOut are the statuses of the tools' results.
	CallCompleted CallStatus = "completed"
	CallRejected  CallStatus = "rejected"
	CallFailed    CallStatus = "failed"
	CallCancelled CallStatus = "cancelled"
	CallTimedOut  CallStatus = "timed_out"
	// CallDenied: the person denied it; CallForbidden: the policy or the
	// mode refused it before it ran.
	CallDenied    CallStatus = "denied"
	CallForbidden CallStatus = "forbidden"
	// CallUncertain: the execution failed with an effect unknown (an
	// attempt interrupted after it may have run).
	CallUncertain CallStatus = "uncertain"
	// CallUnreadable: the session holds a result its envelope could not
	// be read from.
	CallUnreadable CallStatus = "unreadable"
)

// CallOutcome is one call of the session as the validation needs it, in
// the session's order. The caller fills it from the session's tool calls
// and transcript.
type CallOutcome struct {
	CallID string     `json:"call_id"`
	Tool   string     `json:"tool"`
	Status CallStatus `json:"status"`
	// Code and Message are the tool error's, when it failed or was
	// refused; Message is the uncertain outcome's text too.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// ExitCode is local_exec's, when the program exited.
	ExitCode *int `json:"exit_code,omitempty"`
	// Plugin: the call reached an MCP plugin (an alias <plugin>__<tool>, or
	// axlr_call_tool).
	Plugin bool `json:"plugin,omitempty"`
}

func (c CallOutcome) resolved() bool { return c.Status != "" && c.Status != CallPending }

// Outcome says how the call ended, in a few words: "completed, exited 1",
// "failed: filesystem_error", "timed out".
func (c CallOutcome) Outcome() string {
	var out string
	switch c.Status {
	case "", CallPending:
		return "no outcome yet"
	case CallTimedOut:
		out = "timed out"
	case CallUncertain:
		out = "effect unknown"
	case CallUnreadable:
		out = "outcome unreadable"
	default:
		out = string(c.Status)
	}
	if c.ExitCode != nil {
		out += fmt.Sprintf(", exited %d", *c.ExitCode)
	}
	if c.Code != "" {
		out += ": " + c.Code
	}
	return out
}

// ownSurface reports whether tool is axlr's own: a local_* tool or an
// axlr_* or web_* host tool.
func ownSurface(tool string) bool {
	return strings.HasPrefix(tool, "local_") || strings.HasPrefix(tool, "axlr_") || strings.HasPrefix(tool, "web_")
}

// requestTool reports whether tool is one through which a session asks for
// jobs: its refusals are answers, never failures to cite.
func requestTool(tool string) bool {
	return tool == ToolRequestRepair || tool == ToolRequestImprovement || tool == ToolRepairStatus
}

// Citable returns up to five of the most recent calls a request could
// cite, newest first: resolved calls of axlr's own surface, not a plugin's
// and not the request tools'.
func Citable(calls []CallOutcome) []CallOutcome {
	var out []CallOutcome
	for i := len(calls) - 1; i >= 0 && len(out) < maxRecent; i-- {
		if c := calls[i]; c.resolved() && !c.Plugin && ownSurface(c.Tool) && !requestTool(c.Tool) {
			out = append(out, c)
		}
	}
	return out
}

func recentText(recent []CallOutcome) string {
	if len(recent) == 0 {
		return "This session has no citable calls yet: cite calls of local_*, axlr_* or web_* tools that have ended."
	}
	parts := make([]string, len(recent))
	for i, c := range recent {
		parts[i] = fmt.Sprintf("%s %s (%s)", c.CallID, c.Tool, c.Outcome())
	}
	return "Recent citable calls of this session, newest first: " + strings.Join(parts, "; ") + "."
}

// RequestContext is the asking session as the validation needs it.
type RequestContext struct {
	// Session is the asking session's ID.
	Session string
	// Mode is its work mode; repair and improve sessions cannot ask, nor
	// plan and task sessions for an improvement.
	Mode string
	// Clone: its workspace is a job's clone.
	Clone bool
	// Repository is repair.repository; Build the axlr build that runs.
	Repository string
	Build      string
}

// Validated is a request that passed: what the registry admits and the
// job's session starts from.
type Validated struct {
	Kind Kind
	// Request has its texts, items and IDs trimmed.
	Request Request
	// Cited are the cited calls, in the request's order.
	Cited []CallOutcome
	// Failures are the distinct tool|class of a repair's cited calls,
	// sorted; empty for an improvement.
	Failures []ToolFailure
	// Signature is RepairSignature or ImprovementSignature.
	Signature string
	// Brief is the job's brief (at most MaxBrief bytes): the request, the
	// evidence and the cited calls' outcomes.
	Brief string
	// Admission is what to ask the registry (Admit).
	Admission Admission
}

// ValidateRepairRequest validates the arguments of axlr_request_repair
// against the session's calls, in the session's order. It refuses, with a
// *Refusal that names the session's most recent citable calls:
//
//   - a repair or improvement session, or a session in a job's clone;
//   - arguments that are not one JSON object, unknown or missing fields,
//     a description under MinDescription runes, a text over MaxText
//     bytes, evidence outside 1–MaxEvidence items of at most
//     MaxEvidenceItem bytes, tool_calls outside 1–MaxCitedCalls distinct
//     IDs;
//   - texts that name an external cause (a provider, credential,
//     permission or network);
//   - a cited call that is not in the session, has no outcome, is not on
//     axlr's own surface or is a plugin's, or whose outcome is not a
//     defect of axlr (denied, cancelled, timed out, rejected, a program
//     that exited nonzero, a failure of the workspace or the program, an
//     external cause, a host error about the arguments);
//   - an isolated failure: no cited tool|class occurs twice among the
//     session's calls, and fewer than two wrong results are cited.
func ValidateRepairRequest(args json.RawMessage, calls []CallOutcome, ctx RequestContext) (Validated, error) {
	fail := func(r *Refusal) (Validated, error) { return Validated{}, r.InSession(calls) }
	switch {
	case ctx.Mode == string(Repair):
		return fail(refuse(RefuseMode, "", "a repair session cannot request another repair; finish this one and report the defect to the person"))
	case ctx.Mode == string(Improve):
		return fail(refuse(RefuseMode, "", "an improvement session cannot request a repair; finish this one and report the defect to the person"))
	case ctx.Clone:
		return fail(refuse(RefuseMode, "", "this session works in a job's clone; a repair cannot start from it"))
	}
	req, r := decodeRequest(ToolRequestRepair, args, 1, "say which axlr operation fails and how", "what axlr should have done and what it did", "that show the failure")
	if r != nil {
		return fail(r)
	}
	if r := external(req, "is not a defect of axlr"); r != nil {
		return fail(r)
	}
	byID := indexCalls(calls)
	v := Validated{Kind: Repair, Request: req}
	for _, id := range req.ToolCalls {
		c, ok := byID[id]
		if !ok {
			return fail(notInSession(id))
		}
		f, r := classify(c)
		if r != nil {
			return fail(r)
		}
		v.Cited = append(v.Cited, c)
		v.Failures = append(v.Failures, f)
	}
	if !recurs(calls, v.Failures) {
		return fail(refuse(RefuseIsolated, "", "an isolated failure is not evidence of a defect: repeat the operation once; if it fails the same way, cite both calls (a wrong result needs two cited calls)"))
	}
	v.Failures = distinctFailures(v.Failures)
	v.Signature = RepairSignature(ctx.Repository, v.Failures)
	v.Brief = requestBrief(req, v.Cited, ctx, "Failing calls as the session saw them:",
		"Reproduce the defect in this clone with a check command that fails before any change; a failure that cannot be shown here ends the repair BLOCKED.")
	v.Admission = Admission{Kind: Repair, Repository: ctx.Repository, Signature: v.Signature, Brief: v.Brief, OriginSession: ctx.Session}
	return v, nil
}

// ValidateImprovementRequest validates the arguments of
// axlr_request_improvement against the session's calls, in the session's
// order. It refuses, with a *Refusal that names the session's most recent
// citable calls:
//
//   - a repair, improvement, plan or task session, or a session in a
//     job's clone;
//   - the arguments as ValidateRepairRequest does, but with
//     MinImprovementCalls to MaxCitedCalls cited calls;
//   - texts that name an external cause;
//   - a cited call that is not in the session, has no outcome, is not on
//     axlr's own surface or is a plugin's, or was denied or cancelled. A
//     program that exited nonzero counts: working around a missing
//     capability often looks like that.
//
// The limits of one improvement per session and three per build are the
// registry's (Admit), which sees every record at once.
func ValidateImprovementRequest(args json.RawMessage, calls []CallOutcome, ctx RequestContext) (Validated, error) {
	fail := func(r *Refusal) (Validated, error) { return Validated{}, r.InSession(calls) }
	switch {
	case ctx.Mode == string(Repair):
		return fail(refuse(RefuseMode, "", "a repair session cannot request an improvement; finish this one and tell the person what you would improve"))
	case ctx.Mode == string(Improve):
		return fail(refuse(RefuseMode, "", "an improvement session cannot request another improvement; finish this one and tell the person what you would improve"))
	case ctx.Mode == "plan" || ctx.Mode == "task":
		return fail(refuse(RefuseMode, "", "plan and task sessions cannot request an improvement; leave a note for the person instead"))
	case ctx.Clone:
		return fail(refuse(RefuseMode, "", "this session works in a job's clone; an improvement cannot start from it"))
	}
	req, r := decodeRequest(ToolRequestImprovement, args, MinImprovementCalls, "say what axlr should do better", "what axlr should let you do and what you had to do instead", "that show the friction")
	if r != nil {
		return fail(r)
	}
	if r := external(req, "is not something axlr can improve"); r != nil {
		return fail(r)
	}
	byID := indexCalls(calls)
	v := Validated{Kind: Improve, Request: req}
	var tools []string
	for _, id := range req.ToolCalls {
		c, ok := byID[id]
		if !ok {
			return fail(notInSession(id))
		}
		if r := friction(c); r != nil {
			return fail(r)
		}
		v.Cited = append(v.Cited, c)
		tools = append(tools, c.Tool)
	}
	v.Signature = ImprovementSignature(ctx.Repository, tools, req.Description)
	v.Brief = requestBrief(req, v.Cited, ctx, "Calls that showed the friction, as the session saw them:",
		"Show the improvement missing in this clone with a check command that fails before any change; if it already exists or cannot be made safely as a small change, hand back the brief with feasible=false and the reason.")
	v.Admission = Admission{Kind: Improve, Repository: ctx.Repository, Signature: v.Signature, Brief: v.Brief, OriginSession: ctx.Session}
	return v, nil
}

// decodeRequest decodes and checks the arguments of tool.
func decodeRequest(tool string, args json.RawMessage, minCalls int, describe, expectObserve, show string) (Request, *Refusal) {
	var syntax *json.SyntaxError
	if len(bytes.TrimSpace(args)) > 0 && errors.As(json.Unmarshal(args, new(json.RawMessage)), &syntax) {
		return Request{}, refuse(RefuseArguments, "", "the arguments of %s are not JSON: %v at byte %d, near %q", tool, syntax, syntax.Offset, near(args, syntax.Offset))
	}
	var req Request
	//workflowcheck:ignore jsonargs.Decode sorts the names it reads from a map before it uses them
	if err := jsonargs.Decode(tool, args, &req, "description", "expected", "observed", "evidence", "tool_calls"); err != nil {
		return Request{}, refuse(RefuseArguments, "", "%s", err.Error())
	}
	req.Description, req.Expected, req.Observed = strings.TrimSpace(req.Description), strings.TrimSpace(req.Expected), strings.TrimSpace(req.Observed)
	if n := utf8.RuneCountInString(req.Description); n < MinDescription {
		return Request{}, refuse(RefuseArguments, "", "description needs at least %d characters (it has %d): %s", MinDescription, n, describe)
	}
	for _, t := range []struct{ name, text string }{{"description", req.Description}, {"expected", req.Expected}, {"observed", req.Observed}} {
		if len(t.text) > MaxText {
			return Request{}, refuse(RefuseArguments, "", "description, expected and observed take at most %d bytes each (%s has %d)", MaxText, t.name, len(t.text))
		}
	}
	if req.Expected == "" || req.Observed == "" {
		return Request{}, refuse(RefuseArguments, "", "expected and observed are required: %s", expectObserve)
	}
	if n := len(req.Evidence); n == 0 || n > MaxEvidence {
		return Request{}, refuse(RefuseArguments, "", "evidence needs 1 to %d concrete items, one per line (it has %d): outputs, messages or file paths you observed", MaxEvidence, n)
	}
	for i, item := range req.Evidence {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			return Request{}, refuse(RefuseArguments, "", "evidence item %d is empty", i+1)
		case len(item) > MaxEvidenceItem:
			return Request{}, refuse(RefuseArguments, "", "evidence items take at most %d bytes each (item %d has %d)", MaxEvidenceItem, i+1, len(item))
		}
		req.Evidence[i] = item
	}
	if n := len(req.ToolCalls); n < minCalls || n > MaxCitedCalls {
		return Request{}, refuse(RefuseArguments, "", "tool_calls needs %d to %d IDs of calls from this session %s (it has %d)", minCalls, MaxCitedCalls, show, n)
	}
	seen := make(map[string]bool, len(req.ToolCalls))
	for i, id := range req.ToolCalls {
		id = strings.TrimSpace(id)
		switch {
		case id == "":
			return Request{}, refuse(RefuseArguments, "", "tool_calls item %d is empty: cite call IDs", i+1)
		case seen[id]:
			return Request{}, refuse(RefuseArguments, "", "tool_calls cites %s twice: cite distinct calls", id)
		}
		seen[id] = true
		req.ToolCalls[i] = id
	}
	return req, nil
}

// near is the text of args around offset, for a model to find where its
// arguments break.
func near(args []byte, offset int64) string {
	at := int(min(max(offset, 0), int64(len(args))))
	from, to := max(at-20, 0), min(at+20, len(args))
	return strings.ToValidUTF8(string(args[from:to]), "\uFFFD")
}

func indexCalls(calls []CallOutcome) map[string]CallOutcome {
	byID := make(map[string]CallOutcome, len(calls))
	for _, c := range calls {
		byID[c.CallID] = c
	}
	return byID
}

func notInSession(id string) *Refusal {
	return &Refusal{Code: RefuseCall, Call: id, Reason: fmt.Sprintf("call %s is not in this session; cite the IDs of calls you made here", id)}
}

// external refuses a request whose texts name an external cause.
func external(req Request, notOurs string) *Refusal {
	texts := append([]string{req.Description, req.Expected, req.Observed}, req.Evidence...)
	if w := externalCause(texts...); w != "" {
		return refuse(RefuseExternal, "", "the request names an external cause (%q): a provider, credential, permission or network problem %s; resolve it or tell the person", w, notOurs)
	}
	return nil
}

// localFaults are the failed codes by which axlr reports its own trouble;
// other codes describe the program or the workspace.
var localFaults = []string{"internal_error", "filesystem_error", "process_error"}

// argumentCodes are tool error codes about the arguments.
var argumentCodes = []string{"invalid_request", "invalid_arguments", "invalid_path", "invalid_offset", "limit_too_small"}

// argumentWords mark a host tool's error that is about the arguments.
var argumentWords = []string{"must ", "requires", "invalid", "exceeds", "unknown argument", "needs ", "not a ", "only supported", "cannot include"}

// classify decides whether a cited call of a repair request shows a defect
// of axlr. The refusal names what the failure belongs to instead.
func classify(c CallOutcome) (ToolFailure, *Refusal) {
	f := ToolFailure{Tool: c.Tool}
	no := func(format string, args ...any) (ToolFailure, *Refusal) {
		return f, &Refusal{Code: RefuseCall, Call: c.CallID, Reason: fmt.Sprintf(format, args...)}
	}
	if r := surface(c, "its failures belong to that server, not to axlr"); r != nil {
		return f, r
	}
	local := strings.HasPrefix(c.Tool, "local_")
	switch c.Status {
	case CallDenied, CallForbidden:
		return no("call %s was denied (by the person, the policy or the mode); a denial is not a defect", c.CallID)
	case CallCancelled:
		return no("call %s was cancelled; that is not proof of a defect", c.CallID)
	case CallTimedOut:
		return no("call %s timed out; that is not proof of a defect", c.CallID)
	case CallRejected:
		return no("call %s was rejected by axlr (%s: %s); correct the arguments instead of repairing axlr", c.CallID, c.Code, Bound(oneLine(c.Message), 160))
	case CallUnreadable:
		f.Class = ClassRuntimeFailure
		return f, nil
	case CallUncertain:
		if w := externalCause(c.Message); w != "" {
			return no("call %s failed for an external cause (%q), not a defect of axlr", c.CallID, w)
		}
		if strings.Contains(c.Message, "context canceled") || strings.Contains(c.Message, "deadline exceeded") {
			return no("call %s was cancelled or ran out of time; that is not proof of a defect", c.CallID)
		}
		f.Class = ClassRuntimeFailure
		return f, nil
	case CallCompleted:
		if c.ExitCode != nil && *c.ExitCode != 0 {
			return no("call %s ran a program that exited %d: a failure of that program or of the project, not of axlr", c.CallID, *c.ExitCode)
		}
		f.Class = ClassWrongResult
		return f, nil
	case CallFailed:
		if w := externalCause(c.Message); w != "" {
			return no("call %s failed for an external cause (%q), not a defect of axlr", c.CallID, w)
		}
		if local {
			if !slices.Contains(localFaults, c.Code) {
				return no("call %s failed with %s (%s): the workspace, the program or a permission, not axlr", c.CallID, c.Code, Bound(oneLine(c.Message), 160))
			}
			f.Class = ClassRuntimeFailure
			return f, nil
		}
		lower := strings.ToLower(c.Message)
		if slices.Contains(argumentCodes, c.Code) || containsAny(lower, argumentWords) {
			return no("call %s was refused for its arguments (%s); correct the call instead of repairing axlr", c.CallID, Bound(oneLine(c.Message), 160))
		}
		f.Class = ClassHostError
		return f, nil
	}
	f.Class = ClassRuntimeFailure
	return f, nil
}

// friction decides whether a cited call of an improvement request may show
// friction of axlr: any resolved call of its own surface that was neither
// denied nor cancelled.
func friction(c CallOutcome) *Refusal {
	if r := surface(c, "improving it belongs to that server, not to axlr"); r != nil {
		return r
	}
	switch c.Status {
	case CallDenied, CallForbidden:
		return &Refusal{Code: RefuseCall, Call: c.CallID, Reason: fmt.Sprintf("call %s was denied (by the person, the policy or the mode); a denial is not friction of axlr", c.CallID)}
	case CallCancelled:
		return &Refusal{Code: RefuseCall, Call: c.CallID, Reason: fmt.Sprintf("call %s was cancelled; that is not friction of axlr", c.CallID)}
	}
	return nil
}

// surface refuses a call without an outcome, a request tool's, a plugin's
// or one that is not axlr's.
func surface(c CallOutcome, plugin string) *Refusal {
	no := func(format string, args ...any) *Refusal {
		return &Refusal{Code: RefuseCall, Call: c.CallID, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case !c.resolved():
		return no("call %s has no outcome yet; cite calls that have ended", c.CallID)
	case c.Plugin:
		return no("call %s is %s, an MCP plugin tool: %s", c.CallID, c.Tool, plugin)
	case requestTool(c.Tool):
		return no("call %s is %s, a request of its own: its refusals are answers, not failures", c.CallID, c.Tool)
	case !ownSurface(c.Tool):
		return no("call %s is %s, not a tool of axlr's own (local_*, axlr_* or web_*)", c.CallID, c.Tool)
	}
	return nil
}

// recurs reports whether the cited failures are more than an isolated
// error: a cited tool failed the same way at least twice among all the
// session's calls, cited or not, or at least two cited calls are wrong
// results (which the transcript cannot show).
func recurs(calls []CallOutcome, cited []ToolFailure) bool {
	wrong := 0
	for _, f := range cited {
		if f.Class == ClassWrongResult {
			wrong++
			continue
		}
		seen := 0
		for _, c := range calls {
			if c.Tool != f.Tool {
				continue
			}
			if g, r := classify(c); r == nil && g.Class == f.Class {
				seen++
			}
		}
		if seen >= 2 {
			return true
		}
	}
	return wrong >= 2
}

func distinctFailures(failures []ToolFailure) []ToolFailure {
	keys := make([]string, len(failures))
	for i, f := range failures {
		keys[i] = f.Tool + "|" + string(f.Class)
	}
	var out []ToolFailure
	for _, k := range sortedDistinct(keys) {
		tool, class, _ := strings.Cut(k, "|")
		out = append(out, ToolFailure{Tool: tool, Class: FailureClass(class)})
	}
	return out
}

// requestBrief is the brief the job's session starts with: the request,
// the evidence and the exact outcomes of the cited calls, then the closing
// line of the kind.
func requestBrief(req Request, cited []CallOutcome, ctx RequestContext, heading, closing string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nExpected: %s\nObserved: %s\n\nEvidence from session %s (axlr build %s):\n", req.Description, req.Expected, req.Observed, ctx.Session, ctx.Build)
	for _, item := range req.Evidence {
		fmt.Fprintf(&b, "- %s\n", item)
	}
	fmt.Fprintf(&b, "\n%s\n", heading)
	for _, c := range cited {
		line := fmt.Sprintf("- %s %s → %s", c.CallID, c.Tool, c.Outcome())
		if m := oneLine(c.Message); m != "" {
			line += ": " + Bound(m, 600)
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "\n%s\n", closing)
	return Bound(b.String(), MaxBrief)
}

// externalCauses name a cause outside axlr: a provider, a credential, a
// permission or a network. Matched as whole words, case-insensitively, a
// hyphen read as a space.
var externalCauses = []string{
	"openrouter", "api key", "apikey", "credential", "credentials", "unauthorized", "unauthenticated", "forbidden",
	"401", "403", "429", "rate limit", "rate limited", "quota", "billing", "permission denied", "eacces", "eperm",
	"not logged in", "gh auth", "login required", "connection refused", "connection reset", "no such host", "dns",
	"network unreachable", "proxy", "certificate", "tls handshake", "econnrefused", "etimedout",
}

// externalCause returns the external cause the texts name first (the
// earliest in the first text that names one), or "".
func externalCause(texts ...string) string {
	for _, text := range texts {
		lower := asciiLower(text)
		best, at := "", len(lower)
		for _, cause := range externalCauses {
			if i := wordIndex(lower, cause); i >= 0 && (i < at || i == at && len(cause) > len(best)) {
				best, at = cause, i
			}
		}
		if best != "" {
			return best
		}
	}
	return ""
}

// wordIndex is the first index of word in text where neither neighbour is
// a letter, a digit or an underscore; -1 when there is none.
func wordIndex(text, word string) int {
	for from := 0; from <= len(text)-len(word); {
		i := strings.Index(text[from:], word)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(word)
		if (i == 0 || !wordByte(text[i-1])) && (end == len(text) || !wordByte(text[end])) {
			return i
		}
		from = i + 1
	}
	return -1
}

func wordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

// asciiLower lower-cases ASCII letters only, so byte offsets stay put, and
// reads a hyphen as a space ("rate-limited" is "rate limited").
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == '-':
			b[i] = ' '
		}
	}
	return string(b)
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
