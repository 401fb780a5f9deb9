// Package contract holds the runtime contract's shared vocabulary: the
// execution result (axlr.execution-result/v1), its statuses and exit codes,
// and the event lines of axlr-tui --exec --json. It is a leaf package: axlrd's
// workflows and activities produce these values, axlr-tui prints them, and a
// control plane can decode them.
package contract

import (
	"encoding/json"
	"fmt"
)

// Schema names the result's version; check it before the fields.
const Schema = "axlr.execution-result/v1"

// Status is how an execution ended.
type Status string

// Statuses.
const (
	// Completed: the turn ended in an answer.
	Completed Status = "completed"
	// NeedsDecision: a call waits for a decision the run was not allowed to take.
	NeedsDecision Status = "needs_decision"
	// Interrupted: the turn stopped before its end; the session can be resumed.
	Interrupted Status = "interrupted"
	// Failed: the loop returned an error.
	Failed Status = "failed"
)

// ExitCode is the axlr-tui exit code for a status: 0 completed, 3
// needs_decision, 1 interrupted or failed.
func (s Status) ExitCode() int {
	switch s {
	case Completed:
		return 0
	case NeedsDecision:
		return 3
	}
	return 1
}

// Result is the object written once when an execution ends, after the
// session is saved.
type Result struct {
	Schema    string           `json:"schema"`
	Status    Status           `json:"status"`
	SessionID string           `json:"session_id"`
	Sessions  []string         `json:"sessions"`
	Answer    string           `json:"answer"`
	Pending   *PendingCall     `json:"pending,omitempty"`
	Error     string           `json:"error,omitempty"`
	ToolCalls []ToolCallRecord `json:"tool_calls"`
	Usage     Usage            `json:"usage"`
	Artifacts []Artifact       `json:"artifacts"`
	// Ceremony is set when the execution ran a ceremony (--mode debug,
	// delivery): its MADE instance and where it stands.
	Ceremony *CeremonyOutcome `json:"ceremony,omitempty"`
	// Mode is the session's work mode when the execution ended: normal
	// once a ceremony ended or was stopped, the ceremony's while it runs.
	// A client that sends no mode (the next prompt keeps the session's)
	// shows this one. Empty in a result saved before axlrd reported it.
	Mode string `json:"mode,omitempty"`
}

// CeremonyOutcome is a ceremony's instance in a result.
type CeremonyOutcome struct {
	InstanceID string `json:"instance_id"`
	Definition string `json:"definition"`
	Version    string `json:"version"`
	// State is the instance's current state (COMPLETED or BLOCKED when it
	// ended).
	State string `json:"state"`
	// Ended: the ceremony reached a terminal state, or stopped (Stopped
	// says why) and the session is back in normal mode.
	Ended   bool   `json:"ended"`
	Stopped string `json:"stopped,omitempty"`
	// Step is the open step while the ceremony runs.
	Step  string       `json:"step,omitempty"`
	Steps []StepRecord `json:"steps"`
	// Waiting says what the ceremony waits for when it runs with no step
	// open: a guard the person grants, or something outside AXLR (a state
	// with no enabled transition and no claimable step).
	Waiting string `json:"waiting,omitempty"`
	// Unapplied are the transitions MADE enabled beside the one applied,
	// in a person's definition ("from S: applied a; also enabled b").
	Unapplied []string `json:"unapplied,omitempty"`
}

// StepRecord is one accepted hand-back of a step: what AXLR recorded in
// MADE.
type StepRecord struct {
	Step      string         `json:"step"`
	Iteration int            `json:"iteration"`
	Status    string         `json:"status"`
	Check     *CheckRecord   `json:"check,omitempty"`
	Output    map[string]any `json:"output,omitempty"`
	// Transcript is where the step's work is in the session log.
	Transcript *TranscriptSpan `json:"transcript,omitempty"`
}

// TranscriptSpan is a range of a session log's events: From is the first
// event of a step's work, To the model's hand-back.
type TranscriptSpan struct {
	SessionID string `json:"session_id"`
	From      int    `json:"from"`
	To        int    `json:"to"`
}

// CheckRecord is a check command AXLR ran, and how it ended: it exited
// (ExitCode), it could not start (StartError) or it ran out of time
// (TimedOut). ExitCode is null unless the command exited: no exit code is
// invented for a command that did not run to its end.
type CheckRecord struct {
	Program    string   `json:"program"`
	Args       []string `json:"args"`
	ExitCode   *int     `json:"exit_code"`
	OutputTail string   `json:"output_tail"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	StartError string   `json:"start_error,omitempty"`
	// Sandbox says how the command ran when axlrd confines commands:
	// "landlock ABI N", or "none: <why>". SandboxNote is AXLR's line on a
	// failure that reads as a path the sandbox refused.
	Sandbox     string `json:"sandbox,omitempty"`
	SandboxNote string `json:"sandbox_note,omitempty"`
}

// SandboxSummary is how a command ran, for its one line in events and
// history: " · sandbox: landlock ABI 7", with "refused a path" when its
// failure reads as a denial (note is set); empty when axlrd confines
// nothing (status is empty).
func SandboxSummary(status, note string) string {
	switch {
	case status == "":
		return ""
	case note != "":
		return " · sandbox: " + status + ", refused a path"
	}
	return " · sandbox: " + status
}

// Exited reports whether the command ran and exited with a code.
func (c CheckRecord) Exited() bool { return c.ExitCode != nil }

// Failed reports whether the command exited nonzero: the one outcome that
// reproduces a failure.
func (c CheckRecord) Failed() bool { return c.ExitCode != nil && *c.ExitCode != 0 }

// Passed reports whether the command exited zero.
func (c CheckRecord) Passed() bool { return c.ExitCode != nil && *c.ExitCode == 0 }

// Ending says how the command ended, for a person or a model: "exited 1",
// "timed out", "could not start: …".
func (c CheckRecord) Ending() string {
	switch {
	case c.ExitCode != nil:
		return fmt.Sprintf("exited %d", *c.ExitCode)
	case c.TimedOut:
		return "timed out"
	case c.StartError != "":
		return "could not start: " + c.StartError
	}
	return "did not run"
}

// Exit is an exit code as a CheckRecord holds it.
func Exit(code int) *int { return &code }

// PendingCall is the call a needs_decision execution waits on.
type PendingCall struct {
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// Decision on a call.
type Decision string

// Decisions.
const (
	Approve     Decision = "approve"
	AutoApprove Decision = "auto_approve"
	Deny        Decision = "deny"
)

// CallStatus is what became of a call.
type CallStatus string

// Call statuses.
const (
	CallPending   CallStatus = "pending"
	CallForbidden CallStatus = "forbidden"
	CallDenied    CallStatus = "denied"
	CallCompleted CallStatus = "completed"
	CallFailed    CallStatus = "failed"
	CallUncertain CallStatus = "uncertain"
)

// ToolCallRecord is one call of the session.
type ToolCallRecord struct {
	CallID   string     `json:"call_id"`
	Tool     string     `json:"tool"`
	Decision Decision   `json:"decision,omitempty"`
	Status   CallStatus `json:"status"`
	// DecidedBy names who decided the call through the service API.
	DecidedBy string `json:"decided_by,omitempty"`
}

// Usage is the ledgers of the spanned sessions, summed.
type Usage struct {
	Requests          int64   `json:"requests"`
	PromptTokens      int64   `json:"prompt_tokens"`
	CachedTokens      int64   `json:"cached_tokens"`
	CacheWriteTokens  int64   `json:"cache_write_tokens"`
	CompletionTokens  int64   `json:"completion_tokens"`
	ReasoningTokens   int64   `json:"reasoning_tokens"`
	CostUSD           float64 `json:"cost_usd"`
	CostRequests      int64   `json:"cost_requests"`
	UnmeteredRequests int64   `json:"unmetered_requests"`
}

// Add sums another ledger into u.
func (u *Usage) Add(o Usage) {
	u.Requests += o.Requests
	u.PromptTokens += o.PromptTokens
	u.CachedTokens += o.CachedTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CompletionTokens += o.CompletionTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.CostUSD += o.CostUSD
	u.CostRequests += o.CostRequests
	u.UnmeteredRequests += o.UnmeteredRequests
}

// Artifact is a deliverable of an execution (reserved for Phase 1; the list
// is empty until then).
type Artifact struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Ref       string `json:"ref"`
}

// EventType names an event line.
type EventType string

// Event types of axlr-tui --exec --json.
const (
	EventSession          EventType = "session"
	EventReasoning        EventType = "reasoning"
	EventText             EventType = "text"
	EventToolRequested    EventType = "tool.requested"
	EventToolCompleted    EventType = "tool.completed"
	EventSessionContinued EventType = "session.continued"
	EventDecisionRequired EventType = "decision.required"
	EventCompleted        EventType = "completed"
	EventFailed           EventType = "failed"
	EventResult           EventType = "result"
	// Ceremony events (--mode debug, delivery).
	EventStepClaimed   EventType = "step.claimed"
	EventStepCompleted EventType = "step.completed"
	EventTransition    EventType = "transition"
	// EventCeremonyStopped: the driver stopped driving a ceremony that
	// needs an operator; Reason says why.
	EventCeremonyStopped EventType = "ceremony.stopped"
	// EventCeremonyWaiting: a ceremony runs with no step open and waits
	// for a guard the person grants or for something outside AXLR;
	// Reason says which.
	EventCeremonyWaiting EventType = "ceremony.waiting"
	// EventTextDelta and EventReasoningDelta carry the provider's tokens
	// as a model request receives them: Text is what the chunk added.
	// They are live only: never in history, never replayed, and the
	// text event of the completed response stands in for them.
	EventTextDelta      EventType = "text.delta"
	EventReasoningDelta EventType = "reasoning.delta"
)

// Event is one step of a turn as it happens; the fields beside Type depend
// on it.
type Event struct {
	Type      EventType       `json:"type"`
	SessionID string          `json:"session_id,omitempty"`
	From      string          `json:"from,omitempty"`
	Text      string          `json:"text,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Decision  Decision        `json:"decision,omitempty"`
	Status    CallStatus      `json:"status,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Error     string          `json:"error,omitempty"`
	Result    *Result         `json:"result,omitempty"`
	// Ceremony events: the instance, step, iteration (of Limit at most,
	// on step.claimed), trigger and state.
	Instance  string `json:"instance,omitempty"`
	Step      string `json:"step,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Trigger   string `json:"trigger,omitempty"`
	State     string `json:"state,omitempty"`
}
