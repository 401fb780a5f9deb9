package workflows

import (
	"slices"

	"github.com/underpass-ai/axlr/contract"
)

// Journal is a workflow's recent events for its watchers: Events holds
// the events from cursor EventBase on, at most MaxEvents of them.
type Journal struct {
	Events    []contract.Event `json:"events,omitempty"`
	EventBase int              `json:"event_base"`
}

// cursor is the cursor of the next event.
func (j *Journal) cursor() int { return j.EventBase + len(j.Events) }

func (j *Journal) emit(ev contract.Event) {
	j.Events = append(j.Events, ev)
	if over := len(j.Events) - MaxEvents; over > 0 {
		j.Events = slices.Clone(j.Events[over:])
		j.EventBase += over
	}
}

// page answers a progress query on execution ex from cursor after: at
// most MaxEventsPerQuery events, and the result with the last page.
func (j *Journal) page(ex *ExecutionState, sessionID string, after int) Progress {
	e := j.eventsPage(max(after, ex.EventFrom))
	p := Progress{ExecutionID: ex.ID, SessionID: sessionID, Running: ex.Result == nil, Next: e.Next, Result: ex.Result}
	if len(e.Events) > 0 {
		p.Events = e.Events
		if e.Next < j.cursor() {
			// The rest comes with the next query; so does the result.
			p.Running, p.Result = true, nil
		}
	}
	return p
}
