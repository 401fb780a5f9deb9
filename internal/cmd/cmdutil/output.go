package cmdutil

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"

	"github.com/underpass-ai/axlr/contract"
)

// ResultFields are the fields of the result object (contract.Result)
// that --json prints, in order; a test pins them to the type.
var ResultFields = []string{
	"schema", "status", "session_id", "sessions", "answer", "pending", "error",
	"tool_calls", "usage", "artifacts", "ceremony", "mode",
}

// EventFields are the fields of an event line (contract.Event) of --exec
// --json, in order; a test pins them to the type.
var EventFields = []string{
	"type", "session_id", "from", "text", "call_id", "tool", "arguments", "decision",
	"status", "reason", "error", "result", "instance", "step", "iteration", "limit", "trigger", "state",
}

// FieldsHelp lists fields for a command's help: indented lines of at
// most 76 characters.
func FieldsHelp(fields []string) string {
	var lines []string
	line := " "
	for i, f := range fields {
		if i < len(fields)-1 {
			f += ","
		}
		if len(line)+1+len(f) > 76 && line != " " {
			lines = append(lines, line)
			line = " "
		}
		line += " " + f
	}
	return strings.Join(append(lines, line), "\n")
}

// WriteJSONLine writes v as one line of JSON. A value that cannot be
// encoded becomes a failed event line, so the output stays JSON lines.
func WriteJSONLine(out io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(contract.Event{Type: contract.EventFailed, Error: "encode output: " + err.Error()})
	}
	out.Write(append(b, '\n'))
}

// PrintResult prints a result for people: the answer on stdout and, on
// stderr, what they need to act on (the ceremony's state, the call that
// waits and how to decide it, why the execution failed).
func PrintResult(stdout, stderr io.Writer, r *contract.Result) {
	if r.Answer != "" {
		fmt.Fprintln(stdout, r.Answer)
	}
	if c := r.Ceremony; c != nil {
		where := c.State
		switch {
		case c.Stopped != "":
			where += " (stopped: " + c.Stopped + ")"
		case !c.Ended && c.Step != "":
			where += ", step " + c.Step + " open"
		case !c.Ended && c.Waiting != "":
			where += ", waiting: " + c.Waiting
		}
		fmt.Fprintf(stderr, "axlr-tui: ceremony %s %s (instance %s): %s\n", c.Definition, c.Version, c.InstanceID, where)
		for _, u := range c.Unapplied {
			fmt.Fprintf(stderr, "axlr-tui: transition %s\n", u)
		}
		if path := publishedPath(c); path != "" {
			fmt.Fprintln(stdout, "published: "+path)
		}
	}
	switch r.Status {
	case contract.NeedsDecision:
		if p := r.Pending; p != nil {
			fmt.Fprintf(stderr, "axlr-tui: %s (call %s) waits for a decision: axlr-tui --session %s --decide approve|deny --call %s\n", p.Tool, p.CallID, r.SessionID, p.CallID)
		}
	case contract.Failed, contract.Interrupted:
		fmt.Fprintf(stderr, "axlr-tui: execution %s: %s (session %s)\n", r.Status, r.Error, r.SessionID)
	}
}

// publishedPath is the path an ended incident published its postmortem
// to, if it did.
func publishedPath(c *contract.CeremonyOutcome) string {
	for i := len(c.Steps) - 1; i >= 0; i-- {
		if s := c.Steps[i]; s.Step == "publish" && s.Status == "completed" {
			p, _ := s.Output["path"].(string)
			return p
		}
	}
	return ""
}

// OneLine is the first line of s.
func OneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// LockedWriter serializes the writes of a watch and of what runs beside
// it (an interrupt's messages).
type LockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLockedWriter returns a LockedWriter of w.
func NewLockedWriter(w io.Writer) *LockedWriter { return &LockedWriter{w: w} }

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// OnInterrupt turns Ctrl+C during a watch into the command's interrupt:
// the first calls interrupt, after saying notice on stderr; the second
// cancels the context it returns, which the watch runs under. stop ends
// it and reports whether the person left with the second.
func OnInterrupt(ctx context.Context, interrupts <-chan os.Signal, stderr io.Writer, notice string, interrupt func(context.Context) error) (wctx context.Context, stop func() (left bool)) {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var left atomic.Bool
	wg.Go(func() {
		asked := false
		for {
			select {
			case <-wctx.Done():
				return
			case <-interrupts:
				if asked {
					left.Store(true)
					cancel()
					return
				}
				asked = true
				fmt.Fprintln(stderr, notice)
				wg.Go(func() {
					if err := interrupt(wctx); err != nil && wctx.Err() == nil {
						fmt.Fprintln(stderr, "axlr-tui: interrupt:", OneLine(err.Error()))
					}
				})
			}
		}
	})
	return wctx, func() bool {
		cancel()
		wg.Wait()
		return left.Load()
	}
}

// PrintList prints what a list command lists: with asJSON one line of
// rows; with no rows the note empty on errOut; else a table of header and
// each row's tab-separated cells.
func PrintList[T any](out, errOut io.Writer, asJSON bool, rows []T, empty, header string, row func(T) string) error {
	if asJSON {
		WriteJSONLine(out, rows)
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(errOut, empty)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, row(r))
	}
	return tw.Flush()
}
