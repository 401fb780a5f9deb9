package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/kmp"
)

// The session record: every session a person drives is an instance of
// axlr_session 1.0 (ceremonies.SessionRecord), axlr-session-<session id>,
// which this workflow alone drives through two local activities. The
// instance opens at the first prompt; each prompt claims the turn step
// and the turn's end completes it with the turn's record, read from the
// session log by the activity (nothing of it travels in history). Leaving
// the session (UpdateCloseSession) completes a closing turn with the
// session's summary and applies closed. Its failures are logged and
// noted, and never stop a turn.

// The record's activities, local: a turn pays a local activity for each.
const (
	ActivitySessionTurn    = "ceremony.SessionTurn"
	ActivitySessionTurnEnd = "ceremony.SessionTurnEnd"
)

// versionSessionRecord guards the record in sessions that ran before it.
const versionSessionRecord = "session-record"

// UpdateCloseSession leaves a session: its record's closing turn.
const UpdateCloseSession = "close"

// QuerySessionRecord answers where a session's record stands.
const QuerySessionRecord = "record"

// SessionRecordOptions: MADE answers in milliseconds; a failure is noted,
// not retried for long.
var SessionRecordOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
}

// SessionRecord is where a session's record stands.
type SessionRecord struct {
	// Instance is the current instance: axlr-session-<id>, then
	// axlr-session-<id>-<part> past ceremonies.SessionTurns turns.
	Instance string `json:"instance,omitempty"`
	Part     int    `json:"part,omitempty"`
	// Iteration is the claimed turn's round in Instance; Claimed says a
	// turn is claimed and not completed yet.
	Iteration int  `json:"iteration,omitempty"`
	Claimed   bool `json:"claimed,omitempty"`
	// Turns counts the turns recorded, over every part.
	Turns int `json:"turns,omitempty"`
	// Closed: the person left the session, and the instance is CLOSED.
	Closed bool `json:"closed,omitempty"`
	// Note is the last failure, logged.
	Note string `json:"note,omitempty"`
}

// SessionRecordID is the instance id of a session's record's part
// (1 for the first).
func SessionRecordID(session string, part int) string {
	if part <= 1 {
		return "axlr-session-" + session
	}
	return fmt.Sprintf("axlr-session-%s-%d", session, part)
}

// SessionTurnInput claims a turn: the record opens (or its next part
// does) when needed, and a turn an interruption left claimed is completed
// as interrupted first.
type SessionTurnInput struct {
	SessionID string        `json:"session_id"`
	Workspace string        `json:"workspace"`
	About     string        `json:"about,omitempty"`
	Record    SessionRecord `json:"record"`
}

// SessionTurnEndInput completes the claimed turn with its record, read
// from the execution's sessions' logs.
type SessionTurnEndInput struct {
	SessionID   string        `json:"session_id"`
	Sessions    []string      `json:"sessions"`
	ExecutionID string        `json:"execution_id"`
	Record      SessionRecord `json:"record"`
	Mode        string        `json:"mode,omitempty"`
	Model       string        `json:"model,omitempty"`
	About       string        `json:"about,omitempty"`
	// Status is how the execution ended.
	Status string `json:"status"`
	// The turn's requests and cost, and the session's so far.
	Requests        int64   `json:"requests"`
	CostUSD         float64 `json:"cost_usd"`
	SessionRequests int64   `json:"session_requests"`
	SessionCostUSD  float64 `json:"session_cost_usd"`
	// Closing completes the closing turn (summary) and applies closed.
	Closing bool   `json:"closing,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// SessionTurnResult is the record after the call.
type SessionTurnResult struct {
	Record SessionRecord `json:"record"`
}

// TurnRecord is one turn's record as the session log keeps a copy of it:
// the instance, the turn step's round, and what the step's output holds.
type TurnRecord struct {
	Instance  string         `json:"instance"`
	Iteration int            `json:"iteration"`
	Record    map[string]any `json:"record"`
}

// SessionTurnsInput reads a session's turn records.
type SessionTurnsInput struct {
	SessionID string `json:"session_id"`
}

// ActivitySessionTurns reads them; SessionTurnsWorkflow runs it for an
// operator (axlr-tui sessions show).
const (
	ActivitySessionTurns = "ceremony.SessionTurns"
	SessionTurnsWorkflow = "axlr.SessionTurns"
)

// SessionTurnsRead reads a session's turn records, for an operator.
func SessionTurnsRead(ctx workflow.Context, in SessionTurnsInput) ([]TurnRecord, error) {
	var out []TurnRecord
	if err := executeActivity(ctx, DefinitionOptions, ActivitySessionTurns, in, &out); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(failureMessage(err), ErrTypeBadRequest, nil)
	}
	return out, nil
}

// CloseSessionRequest leaves a session.
type CloseSessionRequest struct {
	// RequestID makes a retried close one.
	RequestID string `json:"request_id"`
	// Reason says why (the TUI's /exit, /new, the picker; sessions close).
	Reason string `json:"reason,omitempty"`
}

// recordID is the person's session: the workflow's first session, which
// names the record whatever successors the context cap opened.
func (s *sessionRun) recordID() string { return s.st.SessionIDs[0] }

// claimTurn claims the prompt's turn in the session's record; the turn's
// first execution reads its record from its prompt on.
func (s *sessionRun) claimTurn(ctx workflow.Context, executionID string) {
	if workflow.GetVersion(ctx, versionSessionRecord, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	about := ""
	if snap := s.st.Snapshot; snap != nil {
		about = snap.About
	}
	var res SessionTurnResult
	if err := executeLocal(ctx, SessionRecordOptions, ActivitySessionTurn,
		SessionTurnInput{SessionID: s.recordID(), Workspace: s.st.Root, About: about, Record: s.st.Record}).Get(ctx, &res); err != nil {
		workflow.GetLogger(ctx).Warn("the session's record did not take the turn", "session", s.recordID(), "error", err)
		return
	}
	s.st.Record = res.Record
	if res.Record.Claimed {
		s.st.RecordTurn, s.st.RecordFrom = executionID, s.usage()
	}
}

// usage is the session's requests and cost so far, over its sessions.
func (s *sessionRun) usage() contract.Usage {
	var u contract.Usage
	for _, l := range s.st.Ledgers {
		u.Requests += l.Requests
		u.CostUSD += l.CostUSD
	}
	return u
}

// endTurn completes the claimed turn once its execution ended without a
// decision waiting: the turn's record, from its prompt to now.
func (s *sessionRun) endTurn(ctx workflow.Context, ex *ExecutionState, closing bool, summary string) {
	if !s.st.Record.Claimed || ex == nil || ex.Result == nil || ex.Result.Status == contract.NeedsDecision && !closing {
		return
	}
	total := s.usage()
	in := SessionTurnEndInput{SessionID: s.recordID(), Sessions: slices.Clone(s.st.SessionIDs), ExecutionID: cmp.Or(s.st.RecordTurn, ex.ID),
		Record: s.st.Record, Mode: cmp.Or(s.st.Mode, "normal"), Model: s.st.Model, Status: string(ex.Result.Status),
		Requests: total.Requests - s.st.RecordFrom.Requests, CostUSD: total.CostUSD - s.st.RecordFrom.CostUSD,
		SessionRequests: total.Requests, SessionCostUSD: total.CostUSD, Closing: closing, Summary: summary}
	if snap := s.st.Snapshot; snap != nil {
		in.About = snap.About
		in.Model = cmp.Or(snap.Model, in.Model)
	}
	var res SessionTurnResult
	if err := executeLocal(ctx, SessionRecordOptions, ActivitySessionTurnEnd, in).Get(ctx, &res); err != nil {
		workflow.GetLogger(ctx).Warn("the session's record did not take the turn's end", "session", s.recordID(), "error", err)
		return
	}
	s.st.Record, s.st.RecordTurn = res.Record, ""
}

func (s *sessionRun) validateClose(ctx workflow.Context, req CloseSessionRequest) error {
	if s.applied(req.RequestID) {
		return nil
	}
	if strings.TrimSpace(req.RequestID) == "" {
		return errors.New("close: request_id is empty")
	}
	if s.st.Record.Closed {
		return fmt.Errorf("close: session %s is closed already (%s)", s.recordID(), s.st.Record.Instance)
	}
	return s.busyError()
}

func (s *sessionRun) closeSession(ctx workflow.Context, req CloseSessionRequest) (Accepted, error) {
	return s.admit(req.RequestID, "", &queuedRequest{Close: &req}), nil
}

// close leaves the session: its record's closing turn, with the
// session's summary, applies closed; memory keeps one observation
// labelled event=closed under ws:<session id> and writes what waits in
// the sidecar. A session that never received a prompt has no record.
func (s *sessionRun) close(ctx workflow.Context, req *CloseSessionRequest) error {
	if s.st.Record.Instance == "" {
		return nil
	}
	// A turn still claimed (a decision never taken) is completed as
	// interrupted before the closing turn is claimed.
	s.claimTurn(ctx, req.RequestID)
	session := s.recordID()
	if s.st.Record.Turns > 0 {
		var res MemoryWriteResult
		note := fmt.Sprintf("session %s closed after %d turns: %s", session, s.st.Record.Turns, cmp.Or(req.Reason, "the person left it"))
		if err := executeActivity(ctx, MemoryOptions, ActivityMemoryWrite, MemoryWriteInput{SessionID: session, Request: kmp.WriteRequest{
			About: SessionAbout(session), Actor: memoryActor, SourceKind: "projection", IdempotencyKey: memoryKey(ctx, "closed", 1),
			Labels:   map[string][]string{"event": {"closed"}, "session": {session}, "ws": {SessionAbout(session)}},
			Memories: []kmp.Memory{{ID: "closed", Kind: kmp.KindObservation, Summary: note, Evidence: "session record " + s.st.Record.Instance}},
		}}, &res); err != nil {
			workflow.GetLogger(ctx).Warn("the close was not recorded in memory", "session", session, "error", err)
		}
	}
	return nil
}

// closingSummary is the session's summary for its closing turn.
func (s *sessionRun) closingSummary(reason string) string {
	answer := ""
	for i := len(s.st.Recent) - 1; i >= 0; i-- {
		if r := s.st.Recent[i].Result; r != nil && r.Answer != "" {
			answer = r.Answer
			break
		}
	}
	out := fmt.Sprintf("%d turns; closed: %s", s.st.Record.Turns, cmp.Or(reason, "the person left the session"))
	if answer != "" {
		out += "; the last answer: " + jobs.Bound(answer, 300)
	}
	return out
}
