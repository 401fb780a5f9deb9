package workflows

import (
	"encoding/json"
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
)

// What the service API reads of a session: its view and its events from
// a cursor. Both are queries: they add nothing to history, and a session
// that ran before they existed answers them as well.
const (
	// QuerySession answers the session's SessionView.
	QuerySession = "session"
	// QueryEvents answers the session's events from a cursor (EventsQuery),
	// across its executions.
	QueryEvents = "events"
)

// SessionDefaults are what a session the service API created was created
// with: its turns take them when they name none.
type SessionDefaults struct {
	Model  string         `json:"model,omitempty"`
	Root   string         `json:"root,omitempty"`
	Mode   string         `json:"mode,omitempty"`
	Policy *policy.Policy `json:"policy,omitempty"`
	Web    *bool          `json:"web,omitempty"`
	// By is the identity that created the session.
	By string `json:"by,omitempty"`
}

// The states of a session, as SessionView gives them.
const (
	SessionIdle          = "idle"
	SessionRunning       = "running"
	SessionNeedsDecision = "needs_decision"
)

// SessionView is a session as the service API shows it.
type SessionView struct {
	// SessionID is the session's first id, which names its workflow;
	// Current the session it works in now (a successor past the
	// context cap), and Sessions every one.
	SessionID string   `json:"session_id"`
	Current   string   `json:"current"`
	Sessions  []string `json:"sessions"`
	State     string   `json:"state"`
	// Revision is the length of the current session's log: a decision
	// names the revision it was taken at.
	Revision int    `json:"revision"`
	Model    string `json:"model,omitempty"`
	Root     string `json:"root,omitempty"`
	Mode     string `json:"mode,omitempty"`
	// Execution is the current or last execution's id.
	Execution string `json:"execution,omitempty"`
	// Pending is the call that waits for a decision.
	Pending *contract.PendingCall `json:"pending,omitempty"`
	// Result is the last execution's result.
	Result *contract.Result `json:"result,omitempty"`
	// Executions are the recent executions, oldest first, each with the
	// digest of the request that started it.
	Executions []ExecutionRef   `json:"executions,omitempty"`
	Defaults   *SessionDefaults `json:"defaults,omitempty"`
	// Cursor is the cursor of the session's next event.
	Cursor int `json:"cursor"`
}

// ExecutionRef names a recent execution and the digest of its request.
type ExecutionRef struct {
	ID     string `json:"id"`
	Digest string `json:"digest,omitempty"`
}

// EventsQuery asks for a session's events after cursor After: the event
// at cursor n is the session's (n+1)th.
type EventsQuery struct {
	After int `json:"after"`
}

// EventsPage answers QueryEvents: at most MaxEventsPerQuery events from
// cursor From on, and Next, the cursor after the last. Base is the oldest
// cursor this run still holds: a query from before it gets the events
// from Base on, and the ones before are in the runs before this one (or
// gone, past the journal's bound).
type EventsPage struct {
	Events []contract.Event `json:"events"`
	From   int              `json:"from"`
	Next   int              `json:"next"`
	Base   int              `json:"base"`
}

// eventsPage answers an events query from the journal.
func (j *Journal) eventsPage(after int) EventsPage {
	from := max(after, j.EventBase)
	p := EventsPage{From: from, Next: j.cursor(), Base: j.EventBase, Events: []contract.Event{}}
	if from < j.cursor() {
		end := min(j.cursor(), from+MaxEventsPerQuery)
		p.Events = slices.Clone(j.Events[from-j.EventBase : end-j.EventBase])
		p.Next = end
	}
	if from > j.cursor() {
		p.From = j.cursor()
	}
	return p
}

// registerAPI registers the service API's queries.
func (s *sessionRun) registerAPI(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QuerySession, s.view); err != nil {
		return err
	}
	return workflow.SetQueryHandler(ctx, QueryEvents, func(q EventsQuery) (EventsPage, error) {
		page := s.st.eventsPage(q.After)
		s.st.attachResults(&page)
		return page, nil
	})
}

// attachResults puts each execution's result in the event that ended it
// (completed, decision.required, failed), as the runtime contract has the
// service do: the page's events are copies, the journal keeps none.
func (st *SessionState) attachResults(p *EventsPage) {
	execs := st.executions()
	for i := range p.Events {
		switch p.Events[i].Type {
		case contract.EventCompleted, contract.EventDecisionRequired, contract.EventFailed:
		default:
			continue
		}
		at := p.From + i
		for j := len(execs) - 1; j >= 0; j-- {
			if execs[j].EventFrom <= at {
				if execs[j].Result != nil {
					p.Events[i].Result = st.resultOf(execs[j])
				}
				break
			}
		}
	}
}

// view is the session's SessionView.
func (s *sessionRun) view() (SessionView, error) {
	st := &s.st
	v := SessionView{SessionID: st.SessionIDs[0], Current: st.Current(), Sessions: slices.Clone(st.SessionIDs),
		State: SessionIdle, Revision: st.Revision, Model: st.Model, Root: st.Root, Mode: st.Mode,
		Defaults: st.Defaults, Cursor: st.cursor()}
	switch {
	case !s.idle():
		v.State = SessionRunning
	case st.Pending != nil:
		v.State = SessionNeedsDecision
		v.Pending = &contract.PendingCall{CallID: st.Pending.Call.CallID, Tool: pendingTool(st.Pending), Arguments: st.Pending.Call.Preview}
		if v.Pending.Arguments == nil {
			v.Pending.Arguments = json.RawMessage("{}")
		}
	}
	if ex := st.Execution; ex != nil {
		v.Execution = ex.ID
	}
	for _, r := range st.executions() {
		v.Executions = append(v.Executions, ExecutionRef{ID: r.ID, Digest: r.Digest})
	}
	if len(st.Recent) > 0 {
		v.Result = st.resultOf(st.Recent[len(st.Recent)-1])
	}
	return v, nil
}

// IdempotencyConflict opens the refusal of a request whose execution id
// an earlier request, with another digest, started.
const IdempotencyConflict = "idempotency conflict"

// sameRequest refuses a request for an execution that another request
// started: the same execution id (the same idempotency key) with another
// digest. An execution too old to hold its digest is taken as the same.
func (s *sessionRun) sameRequest(id, digest string) error {
	if digest == "" {
		return nil
	}
	for _, e := range s.st.executions() {
		if e.ID == id && e.Digest != "" && e.Digest != digest {
			return fmt.Errorf("%s: execution %s was started by another request under the same key", IdempotencyConflict, id)
		}
	}
	return nil
}

// executions are the recent executions and the current one, oldest
// first: the current one is the last of Recent once it has ended.
func (st *SessionState) executions() []ExecutionState {
	out := slices.Clone(st.Recent)
	if ex := st.Execution; ex != nil && (len(out) == 0 || out[len(out)-1].ID != ex.ID) {
		out = append(out, *ex)
	}
	return out
}

// decidedBy records who decided call id: the identity the service API
// named, in the call's state and so in the execution's result.
func (t *TurnState) decidedBy(callID, by string) {
	if by == "" {
		return
	}
	for i := len(t.Calls) - 1; i >= 0; i-- {
		if t.Calls[i].CallID == callID {
			t.Calls[i].DecidedBy = by
			return
		}
	}
}
