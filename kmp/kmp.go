// Package kmp is axlr's boundary with memory, KMP (the Kernel Memory
// Protocol): a wake before work, an ask, an inspect, a listing, and writes of
// what the work found and how it ended.
//
// It holds what the engines and their callers share: the Store interface,
// its requests and results in kmp-mcp's shapes and field names (so the MCP
// client sends them as they are), the error codes (*Error), the kinds and
// relation names, and reading a wake's lines and refs. It imports none of
// its subpackages and does no I/O, so workflow code may use its types:
// embedded is the SQLite store axlrd opens by default in
// <state-dir>/memory; mcp is the client for kmp-mcp over stdio; kmptest
// holds the conformance suite both pass and an in-test kmp-mcp.
package kmp

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Store is a memory: the verbs axlr uses.
type Store interface {
	// Wake recalls what the memory holds about an about for an intent,
	// within a budget. An about with no memory is a not_found *Error.
	Wake(ctx context.Context, req WakeRequest) (WakeResult, error)
	// Write records memories (or relations between existing ones) under
	// an about. The same idempotency key with the same content replays
	// the first outcome (status replayed); with other content it is a
	// conflict *Error.
	Write(ctx context.Context, req WriteRequest) (WriteResult, error)
	// Ask answers a question from the memory, or says UNKNOWN.
	Ask(ctx context.Context, req AskRequest) (AskResult, error)
	// Inspect reads one entry with its links. An unknown ref is not_found.
	Inspect(ctx context.Context, req InspectRequest) (InspectResult, error)
	// List returns an about's entries, newest first.
	List(ctx context.Context, req ListRequest) (ListResult, error)
}

// Kinds of memories, as kmp_write_memory takes them.
const (
	KindTurn          = "turn"
	KindObservation   = "observation"
	KindDecision      = "decision"
	KindFeedback      = "feedback"
	KindSemanticDelta = "semantic_delta"
	KindConstraint    = "constraint"
	KindPreference    = "preference"
	KindDerivedValue  = "derived_value"
	KindErrorPath     = "error_path"
	KindSuccessPath   = "success_path"
)

// Kinds lists every kind, in the reference's order.
var Kinds = []string{KindTurn, KindObservation, KindDecision, KindFeedback, KindSemanticDelta,
	KindConstraint, KindPreference, KindDerivedValue, KindErrorPath, KindSuccessPath}

// KnownKind reports whether k is one of Kinds.
func KnownKind(k string) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Relations lists the relation names (rel) a link may use, and whether the
// relation is structural: a structural link needs no why or evidence.
var Relations = map[string]bool{
	"follows": false, "answers": false, "uses_background": false,
	"depends_on": false, "triggers": false, "semantic_delta_from": false, "updates_state": false,
	"chosen_because": false, "authorizes": false,
	"verified_by": false, "supports": false, "supersedes": false, "contradicts": false,
	"contributes_to": false, "derived_from": false, "restates": false, "corrects": false,
	"component_of": false, "total_of": false, "same_event_as": false, "same_entity_as": false,
	"qualifies_as": false, "confirms_selection": false,
	"satisfies_constraint": false, "violates_constraint": false, "excluded_from": false,
	"checked_against": false, "matches_requirement": false,
	"contains": true, "member_of": true, "scoped_to": true,
}

// WakeRequest asks for a wake (kmp_wake).
type WakeRequest struct {
	About  string  `json:"about"`
	Intent string  `json:"intent,omitempty"`
	Role   string  `json:"role,omitempty"`
	Budget *Budget `json:"budget,omitempty"`
}

// Budget bounds a wake or an ask.
type Budget struct {
	// MaxBytes is the hard ceiling of the wake's lines; at least
	// MinBudgetBytes; 0: DefaultBudgetBytes.
	MaxBytes int `json:"max_bytes,omitempty"`
	// Tokens is advisory.
	Tokens int `json:"tokens,omitempty"`
	// MaxEntries bounds the entries a wake reads; 0: no bound beyond
	// MaxBytes.
	MaxEntries int `json:"max_entries,omitempty"`
}

// Budget limits, as kmp-mcp states them.
const (
	MinBudgetBytes     = 512
	DefaultBudgetBytes = 10000
)

// WakeResult is a wake (kmp_wake's result, the fields axlr reads).
type WakeResult struct {
	Summary    string     `json:"summary"`
	Wake       Wake       `json:"wake"`
	Proof      Proof      `json:"proof"`
	Warnings   []string   `json:"warnings,omitempty"`
	Projection Projection `json:"projection"`
}

// Wake holds the wake's sections. Each line carries its ref.
type Wake struct {
	Objective    string   `json:"objective"`
	CurrentState []string `json:"current_state"`
	CausalSpine  []Cause  `json:"causal_spine"`
	OpenLoops    []string `json:"open_loops"`
	NextActions  []string `json:"next_actions"`
	Guardrails   []string `json:"guardrails"`
}

// Cause is a line of the causal spine: a claim, why, and the ref of its
// evidence.
type Cause struct {
	Claim       string `json:"claim"`
	Because     string `json:"because"`
	EvidenceRef string `json:"evidence_ref"`
}

// Proof says what a wake or an ask matched.
type Proof struct {
	Evidence     []string `json:"evidence,omitempty"`
	MatchedTerms []string `json:"matched_terms,omitempty"`
	Confidence   string   `json:"confidence,omitempty"`
}

// Projection says how much of the budget a result used and whether more
// was left out.
type Projection struct {
	Contract string           `json:"contract,omitempty"`
	Budget   ProjectionBudget `json:"budget"`
	Page     Page             `json:"page"`
}

// ProjectionBudget is the budget a result was cut to and what it used.
type ProjectionBudget struct {
	MaxBytes  int `json:"max_bytes"`
	UsedBytes int `json:"used_bytes"`
}

// Page says which part of the matches a result holds.
type Page struct {
	Offset   int  `json:"offset"`
	Returned int  `json:"returned"`
	Total    int  `json:"total"`
	HasMore  bool `json:"has_more"`
}

// Lines returns the wake's lines in the order axlr shows them: the state,
// the causes, the open loops, the next actions and the guardrails. A cause
// reads "<evidence ref> <claim> — because <because>".
func (w Wake) Lines() []string {
	var out []string
	out = append(out, w.CurrentState...)
	for _, c := range w.CausalSpine {
		l := strings.TrimSpace(c.EvidenceRef + " " + c.Claim)
		if c.Because != "" {
			l += " — because " + c.Because
		}
		out = append(out, l)
	}
	out = append(out, w.OpenLoops...)
	out = append(out, w.NextActions...)
	out = append(out, w.Guardrails...)
	return out
}

// RefOf returns a line's ref: its first token that contains ":entry:".
func RefOf(line string) string {
	for _, f := range strings.Fields(line) {
		if strings.Contains(f, ":entry:") {
			return strings.Trim(f, "()[],;")
		}
	}
	return ""
}

// Refs returns the refs of the wake's lines, in order, each once.
func (w Wake) Refs() []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range w.Lines() {
		if r := RefOf(l); r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// WriteRequest records memories (kmp_write_memory). Exactly one of
// Memories and Relations is set.
type WriteRequest struct {
	About string `json:"about"`
	Actor string `json:"actor"`
	// SourceKind: human, agent, projection or derived; empty: agent.
	SourceKind string              `json:"source_kind,omitempty"`
	Labels     map[string][]string `json:"labels,omitempty"`
	Memories   []Memory            `json:"memories,omitempty"`
	Relations  []Relation          `json:"relations,omitempty"`
	// IdempotencyKey names the logical write; empty: "write:" and a
	// digest of the arguments.
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
	Options        *WriteOptions `json:"options,omitempty"`
}

// WriteOptions change how a write is checked.
type WriteOptions struct {
	// DryRun validates without writing (status validated).
	DryRun bool `json:"dry_run,omitempty"`
	// Strict (default true) requires every memory's evidence.
	Strict *bool `json:"strict,omitempty"`
}

// Memory is one memory of a write.
type Memory struct {
	// ID is the memory's local name in this write
	// (^[A-Za-z][A-Za-z0-9_-]*$); the result maps it to its ref.
	ID       string              `json:"id"`
	Kind     string              `json:"kind"`
	Summary  string              `json:"summary"`
	Evidence string              `json:"evidence,omitempty"`
	Labels   map[string][]string `json:"labels,omitempty"`
	// ConnectTo links the memory to another of this write (its local id
	// or @id) or to an existing entry of the same about (its ref).
	ConnectTo []Link `json:"connect_to,omitempty"`
}

// Link is a relation from a memory being written.
type Link struct {
	Ref        string `json:"ref"`
	Rel        string `json:"rel"`
	Class      string `json:"class,omitempty"`
	Why        string `json:"why,omitempty"`
	Evidence   string `json:"evidence,omitempty"`
	Confidence string `json:"confidence,omitempty"`
}

// Relation links two existing memories.
type Relation struct {
	From       string `json:"from"`
	To         string `json:"to"`
	Rel        string `json:"rel"`
	Class      string `json:"class,omitempty"`
	Why        string `json:"why"`
	Evidence   string `json:"evidence"`
	Confidence string `json:"confidence,omitempty"`
}

// Write statuses.
const (
	StatusCommitted = "committed"
	StatusReplayed  = "replayed"
	StatusValidated = "validated"
)

// WriteResult is a write's outcome (the fields axlr reads).
type WriteResult struct {
	// Accepted is true only when the write is committed (or replayed).
	Accepted bool   `json:"accepted"`
	Status   string `json:"status"`
	// LocalRefs maps each memory's local id to its ref.
	LocalRefs     map[string]string `json:"local_refs"`
	GeneratedRefs []string          `json:"generated_refs"`
	Relations     []RelationRef     `json:"relations"`
	Labels        LabelsWritten     `json:"labels"`
	Receipt       Receipt           `json:"receipt"`
	Summary       string            `json:"summary"`
	Warnings      []string          `json:"warnings,omitempty"`
}

// RelationRef is a relation as written: canonical refs on both ends.
type RelationRef struct {
	From string `json:"from"`
	Rel  string `json:"rel"`
	To   string `json:"to"`
}

// LabelsWritten lists the labels a write recorded, as key=value.
type LabelsWritten struct {
	Written []string `json:"written"`
}

// Receipt names a write's receipt.
type Receipt struct {
	Ref    string `json:"ref"`
	Action string `json:"action"`
}

// AskRequest asks a question (kmp_ask).
type AskRequest struct {
	About    string  `json:"about"`
	Question string  `json:"question"`
	Budget   *Budget `json:"budget,omitempty"`
}

// Unknown is the answer when the memory holds none.
const Unknown = "UNKNOWN"

// AskResult is an answer, or Unknown, with the memories behind it.
type AskResult struct {
	Summary string    `json:"summary"`
	Answer  string    `json:"answer"`
	Because []Because `json:"because"`
}

// Because is a memory an answer rests on.
type Because struct {
	Claim    string `json:"claim"`
	Ref      string `json:"ref"`
	Evidence string `json:"evidence,omitempty"`
}

// InspectRequest reads one entry (kmp_inspect).
type InspectRequest struct {
	About string `json:"about"`
	Ref   string `json:"ref"`
}

// InspectResult is an entry with its links and evidence.
type InspectResult struct {
	Summary  string   `json:"summary"`
	Object   Object   `json:"object"`
	Links    Links    `json:"links"`
	Evidence []string `json:"evidence"`
}

// Object is an entry: its ref, kind, text and metadata (about, actor,
// labels, observed_at, sequence).
type Object struct {
	Ref      string         `json:"ref"`
	Kind     string         `json:"kind"`
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata"`
}

// Links are an entry's relations, each naming the other end.
type Links struct {
	Incoming []LinkedRef `json:"incoming"`
	Outgoing []LinkedRef `json:"outgoing"`
}

// LinkedRef is one relation seen from an entry.
type LinkedRef struct {
	Ref string `json:"ref"`
	Rel string `json:"rel"`
	Why string `json:"why,omitempty"`
}

// ListRequest lists an about's entries, newest first.
type ListRequest struct {
	About string `json:"about"`
	// Kind keeps the entries of one kind; empty: all.
	Kind string `json:"kind,omitempty"`
	// Limit bounds the entries; 0: DefaultListLimit, at most MaxListLimit.
	Limit int `json:"limit,omitempty"`
}

// List limits.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// ListResult is a listing.
type ListResult struct {
	Entries []Object `json:"entries"`
	Page    Page     `json:"page"`
}

// Code is a failure's code, as kmp-mcp's structuredContent.error.code
// carries it.
type Code string

// Error codes.
const (
	// CodeInvalid: fix the arguments; a retry cannot help.
	CodeInvalid Code = "invalid_argument"
	// CodeNotFound: no such about or ref. For a wake of a ws: about it
	// is an empty memory (see Empty).
	CodeNotFound Code = "not_found"
	// CodeConflict: the idempotency key was used with other content.
	CodeConflict Code = "conflict"
	// CodeUnavailable: the memory cannot be reached now; retry.
	CodeUnavailable Code = "unavailable"
	// CodeUnknownTool: the server has no such tool.
	CodeUnknownTool Code = "unknown_tool"
	// CodeBackend: the store failed.
	CodeBackend Code = "backend_error"
)

// Error is a memory failure: its code and message.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns err's code; an error that is no *Error is
// backend_error, and nil is "".
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeBackend
}

// Retryable reports whether retrying may help: only unavailable.
func Retryable(err error) bool { return CodeOf(err) == CodeUnavailable }

// Empty reports whether a wake's error means an empty memory: not_found
// for a ws: about (a session's or a workspace's, which may have none yet).
func Empty(about string, err error) bool {
	return CodeOf(err) == CodeNotFound && strings.HasPrefix(about, "ws:")
}
