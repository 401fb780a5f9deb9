package cmdutil

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.temporal.io/api/serviceerror"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
)

// printer writes what a watch sees: with --json each event as a line on
// stdout, else a progress line on stderr (stdout is the answer alone).
type printer struct {
	out, errOut io.Writer
	json        bool
	// failed: the last Unreachable was axlrd's worker failing to answer,
	// not axlrd gone.
	failed bool
}

var _ client.Watcher = (*printer)(nil)

// NewPrinter returns the watcher a watch prints with: with json each event
// as a line on out, else a progress line on errOut.
func NewPrinter(out, errOut io.Writer, json bool) client.Watcher {
	return &printer{out: out, errOut: errOut, json: json}
}

func (p *printer) Event(ev contract.Event) {
	if p.json {
		WriteJSONLine(p.out, ev)
		return
	}
	switch ev.Type {
	case contract.EventSession:
		fmt.Fprintf(p.errOut, "· session %s\n", ev.SessionID)
	case contract.EventToolRequested:
		fmt.Fprintf(p.errOut, "→ %s %s\n", ev.Tool, compactArgs(ev.Arguments))
	case contract.EventToolCompleted:
		detail := cmp.Or(ev.Text, ev.Reason, ev.Error)
		if detail != "" {
			detail = ": " + detail
		}
		fmt.Fprintf(p.errOut, "  %s %s%s\n", ev.Tool, ev.Status, OneLine(detail))
	case contract.EventSessionContinued:
		fmt.Fprintf(p.errOut, "· context cap reached: continuing in session %s\n", ev.SessionID)
	case contract.EventDecisionRequired:
		fmt.Fprintf(p.errOut, "? %s (call %s) waits for a decision: %s %s\n", ev.Tool, ev.CallID, ev.Reason, compactArgs(ev.Arguments))
	case contract.EventStepClaimed:
		fmt.Fprintf(p.errOut, "▸ step %s (iteration %d) in %s\n", ev.Step, ev.Iteration, ev.State)
	case contract.EventStepCompleted:
		fmt.Fprintf(p.errOut, "✓ step %s %s %s\n", ev.Step, ev.Status, ev.Reason)
	case contract.EventTransition:
		fmt.Fprintf(p.errOut, "→ %s: now %s\n", ev.Trigger, ev.State)
	case contract.EventCeremonyStopped:
		fmt.Fprintf(p.errOut, "■ ceremony %s stopped in %s: %s\n", ev.Instance, ev.State, ev.Reason)
	case contract.EventReasoning:
		fmt.Fprintf(p.errOut, "  … %s\n", strings.TrimRight(ev.Text, "\n"))
	}
}

func (p *printer) Unreachable(err error) {
	p.failed = errors.As(err, new(*serviceerror.QueryFailed))
	if p.failed {
		// axlrd answered, but its worker could not: a replay that failed.
		fmt.Fprintf(p.errOut, "axlr-tui: axlrd failed to answer (%s); asking again\n", OneLine(err.Error()))
		return
	}
	fmt.Fprintf(p.errOut, "axlr-tui: axlrd unreachable (%s); waiting for it to come back\n", OneLine(err.Error()))
}

func (p *printer) Back() {
	if p.failed {
		fmt.Fprintln(p.errOut, "axlr-tui: axlrd answers again")
		return
	}
	fmt.Fprintln(p.errOut, "axlr-tui: axlrd is back")
}

func compactArgs(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return OneLine(s)
}
