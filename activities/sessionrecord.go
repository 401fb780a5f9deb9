package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// evTurnRecord is a copy of a turn's record in the session log.
const evTurnRecord = "session.turn"

// SessionTurns reads the turn records a session's log keeps, oldest
// first (workflows.SessionTurnsRead).
func (a *Ceremony) SessionTurns(ctx context.Context, in workflows.SessionTurnsInput) ([]workflows.TurnRecord, error) {
	log, err := openLog(a.Store, in.SessionID)
	if err != nil {
		return nil, err
	}
	out := []workflows.TurnRecord{}
	for _, ev := range log.Events(0) {
		if ev.Type != evTurnRecord {
			continue
		}
		r, err := decode[workflows.TurnRecord](ev)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// SessionLease is a turn claim's lease: a turn longer than this lets
// another owner claim it.
const SessionLease = time.Hour

// SessionTurn claims a session's turn in its record
// (workflows.SessionTurnInput). It never fails the turn: a MADE that
// refuses or cannot be reached is logged and noted in the record.
func (a *Ceremony) SessionTurn(ctx context.Context, in workflows.SessionTurnInput) (workflows.SessionTurnResult, error) {
	rec, err := a.sessionTurn(ctx, in)
	if err != nil {
		a.Log.Warn().Str("session", in.SessionID).Err(err).Msg("the session's record did not take the turn")
		rec = in.Record
		rec.Claimed, rec.Note = false, err.Error()
	}
	return workflows.SessionTurnResult{Record: rec}, nil
}

func (a *Ceremony) sessionTurn(ctx context.Context, in workflows.SessionTurnInput) (workflows.SessionRecord, error) {
	rec := in.Record
	rec.Note = ""
	if rec.Part == 0 || rec.Instance == "" || rec.Closed {
		predecessor := ""
		if rec.Instance != "" {
			predecessor = rec.Instance
		}
		rec.Part++
		if err := a.openRecord(ctx, in, &rec, predecessor); err != nil {
			return rec, err
		}
	}
	for range 2 { // the current part, then the next when it is full
		inst, err := a.Made.Get(ctx, rec.Instance)
		if err != nil {
			return rec, fmt.Errorf("read session record %s: %w", rec.Instance, err)
		}
		st, _ := inst.Step(ceremonies.SessionTurnStep)
		if st.Status == made.StepInProgress && !rec.Claimed {
			// The workflow holds no claim: this is a retried attempt whose
			// earlier one claimed the turn. Take it, as ClaimOnce does.
			rec.Iteration, rec.Claimed = st.Iteration, true
			return rec, nil
		}
		if st.Status == made.StepInProgress {
			// The last turn never reached its end: a crash, a cancelled
			// execution, a decision never taken.
			if inst, err = a.Made.Complete(ctx, made.CompleteRequest{CeremonyID: rec.Instance, StepID: ceremonies.SessionTurnStep,
				ActorKind: made.ActorService, Status: made.StepCompleted, Output: map[string]any{
					"turn": rec.Turns + 1, "interrupted": true, "status": "interrupted",
					"summary": "the turn was interrupted before its end was recorded"}}); err != nil {
				return rec, fmt.Errorf("complete the interrupted turn of %s: %w", rec.Instance, err)
			}
			rec.Turns++
			st, _ = inst.Step(ceremonies.SessionTurnStep)
		}
		if !inst.Completed && !st.RepeatExhausted && st.Status == made.StepPending {
			claimed, err := made.ClaimOnce(ctx, a.Made, made.ClaimRequest{CeremonyID: rec.Instance, StepID: ceremonies.SessionTurnStep,
				ActorKind: made.ActorService, LeaseOwnerID: a.Owner, LeaseTTL: SessionLease,
				IdempotencyKey: fmt.Sprintf("%s:%s:%d", rec.Instance, ceremonies.SessionTurnStep, max(st.Iteration, 1))})
			if err == nil {
				st, _ = claimed.Step(ceremonies.SessionTurnStep)
				rec.Iteration, rec.Claimed = st.Iteration, true
				return rec, nil
			}
			if !errors.Is(err, made.ErrRetryExhausted) && !errors.Is(err, made.ErrLimit) {
				return rec, fmt.Errorf("claim the turn of %s: %w", rec.Instance, err)
			}
		}
		// Full (MADE's 1,000 rounds), or ended outside: the next part.
		predecessor := rec.Instance
		rec.Part++
		if err := a.openRecord(ctx, in, &rec, predecessor); err != nil {
			return rec, err
		}
	}
	return rec, fmt.Errorf("session record %s: no turn can be claimed", rec.Instance)
}

// openRecord opens the record's part rec.Part (a retried open finds it).
func (a *Ceremony) openRecord(ctx context.Context, in workflows.SessionTurnInput, rec *workflows.SessionRecord, predecessor string) error {
	rec.Instance, rec.Closed = workflows.SessionRecordID(in.SessionID, rec.Part), false
	input := map[string]any{"session": in.SessionID, "workspace": in.Workspace}
	if in.About != "" {
		input["memory_about"] = in.About
	}
	if predecessor != "" {
		input["predecessor"] = predecessor
	}
	_, err := a.Made.StartPublished(ctx, made.StartRequest{Ceremony: ceremonies.SessionRecord, Version: ceremonies.SessionRecordVersion,
		CeremonyID: rec.Instance, ActorID: "axlr", ActorKind: made.ActorService, Context: input})
	if err != nil && !errors.Is(err, made.ErrExists) {
		return fmt.Errorf("open session record %s: %w", rec.Instance, err)
	}
	a.Log.Info().Str("session", in.SessionID).Str("instance", rec.Instance).Msg("session record opened")
	return nil
}

// SessionTurnEnd completes the claimed turn with its record
// (workflows.SessionTurnEndInput), and for the closing turn applies
// closed. It never fails the turn.
func (a *Ceremony) SessionTurnEnd(ctx context.Context, in workflows.SessionTurnEndInput) (workflows.SessionTurnResult, error) {
	rec, err := a.sessionTurnEnd(ctx, in)
	if err != nil {
		a.Log.Warn().Str("session", in.SessionID).Err(err).Msg("the session's record did not take the turn's end")
		rec.Note = err.Error()
	}
	return workflows.SessionTurnResult{Record: rec}, nil
}

func (a *Ceremony) sessionTurnEnd(ctx context.Context, in workflows.SessionTurnEndInput) (workflows.SessionRecord, error) {
	rec := in.Record
	rec.Note = ""
	if !rec.Claimed {
		return rec, errors.New("no turn of the session's record is claimed")
	}
	var logs []*session.Log
	for _, id := range in.Sessions {
		log, err := openLog(a.Store, id)
		if err != nil {
			return rec, err
		}
		logs = append(logs, log)
	}
	f, err := readTurn(logs, in.ExecutionID)
	if err != nil {
		return rec, err
	}
	out := turnRecord(f, in, rec.Turns+1)
	_, err = a.Made.Complete(ctx, made.CompleteRequest{CeremonyID: rec.Instance, StepID: ceremonies.SessionTurnStep,
		ActorKind: made.ActorService, Status: made.StepCompleted, Output: out})
	if err != nil && !a.completedAlready(ctx, rec) {
		return rec, fmt.Errorf("complete turn %d of %s: %w", rec.Iteration, rec.Instance, err)
	}
	// MADE keeps the last round's output in its projection: the session
	// log keeps every turn's, for sessions show.
	key := fmt.Sprintf("record:%s:%d", rec.Instance, rec.Iteration)
	if _, ok := logs[0].ByKey(key); !ok {
		if _, err := appendEvent(logs[0], evTurnRecord, key, workflows.TurnRecord{Instance: rec.Instance, Iteration: rec.Iteration, Record: out}); err != nil {
			return rec, err
		}
	}
	rec.Claimed = false
	rec.Turns++
	if in.Closing {
		if _, err := a.Made.ApplyTransition(ctx, made.TransitionRequest{CeremonyID: rec.Instance, Trigger: ceremonies.SessionClosed,
			ActorKind: made.ActorService}); err != nil && !a.closedAlready(ctx, rec) {
			return rec, fmt.Errorf("close %s: %w", rec.Instance, err)
		}
		rec.Closed = true
		a.Log.Info().Str("session", in.SessionID).Str("instance", rec.Instance).Int("turns", rec.Turns).Msg("session record closed")
	}
	return rec, nil
}

// completedAlready reports whether a retried completion found the turn
// completed by its earlier attempt.
func (a *Ceremony) completedAlready(ctx context.Context, rec workflows.SessionRecord) bool {
	inst, err := a.Made.Get(ctx, rec.Instance)
	if err != nil {
		return false
	}
	st, ok := inst.Step(ceremonies.SessionTurnStep)
	return ok && (st.Iteration > rec.Iteration || st.Status == made.StepCompleted || inst.Completed)
}

func (a *Ceremony) closedAlready(ctx context.Context, rec workflows.SessionRecord) bool {
	inst, err := a.Made.Get(ctx, rec.Instance)
	return err == nil && inst.CurrentState == "CLOSED"
}

// turnRecord is a turn's record as the step's output holds it.
func turnRecord(f turnFacts, in workflows.SessionTurnEndInput, turn int) map[string]any {
	var effects, decisions []map[string]any
	for _, a := range f.Actions {
		e := map[string]any{"tool": a.Tool, "what": a.What, "status": string(a.Status)}
		if a.Why != "" {
			e["why"] = a.Why
		}
		if a.Decision != "" {
			e["decision"] = string(a.Decision)
			d := map[string]any{"tool": a.Tool, "what": a.What, "decision": string(a.Decision), "outcome": string(a.Status)}
			if a.Reason != "" {
				d["reason"] = a.Reason
			}
			decisions = append(decisions, d)
		}
		if a.ExitCode != nil {
			e["exit_code"] = *a.ExitCode
		}
		if a.Tail != "" {
			e["tail"] = a.Tail
		}
		if a.Reason != "" {
			e["reason"] = a.Reason
		}
		effects = append(effects, e)
	}
	out := map[string]any{
		"turn": turn, "prompt": f.Prompt, "answer": f.Answer, "side_effects": orEmpty(effects), "decisions": orEmpty(decisions),
		"memories": orEmptyStrings(f.Memories), "reads": f.Reads, "mode": in.Mode, "model": in.Model, "about": in.About,
		"status": in.Status, "requests": in.Requests, "cost_usd": fmt.Sprintf("%.6f", in.CostUSD),
		"share": map[string]any{"requests": in.Requests, "session_requests": in.SessionRequests,
			"cost_usd": fmt.Sprintf("%.6f", in.CostUSD), "session_cost_usd": fmt.Sprintf("%.6f", in.SessionCostUSD)},
	}
	if in.Closing {
		out["closing"], out["summary"] = true, in.Summary
	}
	return out
}

func orEmpty(xs []map[string]any) []map[string]any {
	if xs == nil {
		return []map[string]any{}
	}
	return xs
}

func orEmptyStrings(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
