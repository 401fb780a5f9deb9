// Package show is axlr-tui sessions show: a session's record (its MADE
// instance axlr-session-<id>, how many turns it holds, whether it is
// closed) and each turn's record, oldest first, as the session's log
// keeps them.
package show

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// Usage is show's usage line.
const Usage = "usage: axlr-tui sessions show ID [--json]"

// Client is what show needs of axlrd.
type Client interface {
	cmdutil.Worker
	SessionRecord(ctx context.Context, sessionID string) (workflows.SessionRecord, error)
	SessionTurns(ctx context.Context, sessionID string) ([]workflows.TurnRecord, error)
}

var _ Client = (*client.Client)(nil)

// ShowOptions are show's dependencies and flags.
type ShowOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	SessionID string
	JSON      bool
}

// Shown is what --json prints: the record and its turns, oldest first.
type Shown struct {
	Record workflows.SessionRecord `json:"record"`
	Turns  []workflows.TurnRecord  `json:"turns"`
}

// NewCmdShow returns the show command. It parses and validates the
// arguments, then calls runF, or showRun when runF is nil.
func NewCmdShow(f *factory.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's record and each turn's record",
		Long: `Print the record of session ID: its MADE instance (axlr-session-<id>,
then -2, -3… past a part's turns), how many turns it holds and whether it
is closed; then each turn's record, oldest first: a line
"turn N (round R of <instance>) — <status>", with ", interrupted" for a
turn whose end was never recorded (completed at the next prompt) and
", closing" for the turn that closed the session, then its prompt, its
answer, its side effects, one a line as "<tool> <what> — <status>,
<decision>, exit <code>" with their why and the tail of their output
under them, its decisions, the memories it recorded, how many reads it
made, its mode, model, about, requests and cost, and the summary of a
closing or interrupted turn. A session that never had a prompt has no
record. --json prints {record, turns}, indented: the record as axlrd
keeps it, each turn {instance, iteration, record}.

  axlr-tui sessions show ID [--json]

` + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, Usage),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.SessionID = args[0]
			if !session.ValidID(opts.SessionID) {
				return cmdutil.FlagErrorf("sessions show: %q is not a session id (a lowercase UUID, as axlr-tui sessions lists them)", opts.SessionID)
			}
			return cmdutil.Run(cmd.Context(), opts, runF, showRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record and its turns as JSON")
	return cmd
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	shown, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (Shown, error) {
		rec, err := c.SessionRecord(ctx, opts.SessionID)
		if err != nil || rec.Instance == "" {
			return Shown{Record: rec, Turns: []workflows.TurnRecord{}}, err
		}
		turns, err := c.SessionTurns(ctx, opts.SessionID)
		if turns == nil {
			turns = []workflows.TurnRecord{}
		}
		return Shown{Record: rec, Turns: turns}, err
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(shown)
	}
	if shown.Record.Instance == "" {
		fmt.Fprintf(opts.IO.Out, "session %s has no record: its first prompt opens it\n", opts.SessionID)
		return nil
	}
	printShown(opts.IO.Out, shown)
	return nil
}

// printShown prints the record, then each turn after a blank line.
func printShown(out io.Writer, s Shown) {
	r := s.Record
	closed := "no"
	if r.Closed {
		closed = "yes"
	}
	fmt.Fprintf(out, "instance: %s\nturns:    %d\nclosed:   %s\n", r.Instance, r.Turns, closed)
	if r.Note != "" {
		fmt.Fprintf(out, "note:     %s\n", r.Note)
	}
	for _, t := range s.Turns {
		fmt.Fprintln(out)
		printTurn(out, t)
	}
}

// printTurn prints a turn's record: its header, then one field a line,
// indented; a field of several lines goes on under its first, and an
// empty one is left out.
func printTurn(out io.Writer, t workflows.TurnRecord) {
	rec := t.Record
	where := fmt.Sprintf("round %d of %s", t.Iteration, t.Instance)
	header := where
	if n := text(rec, "turn"); n != "" {
		header = fmt.Sprintf("turn %s (%s)", n, where)
	}
	status := text(rec, "status")
	if status == "" {
		status = "-"
	}
	header += " — " + status
	if flag(rec, "interrupted") && status != "interrupted" {
		header += ", interrupted"
	}
	if flag(rec, "closing") {
		header += ", closing"
	}
	fmt.Fprintln(out, header)
	field := func(name string, values ...string) {
		for i, l := range values {
			if i > 0 {
				name = ""
			}
			fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("  %-12s%s", name, l), " "))
		}
	}
	field("prompt:", lines(text(rec, "prompt"))...)
	field("answer:", lines(text(rec, "answer"))...)
	field("effects:", effects(rec["side_effects"])...)
	field("decisions:", decisions(rec["decisions"])...)
	field("memories:", strs(rec["memories"])...)
	for _, k := range []string{"reads", "mode", "model", "about"} {
		if v := text(rec, k); v != "" {
			field(k+":", v)
		}
	}
	share, _ := rec["share"].(map[string]any)
	if v := text(rec, "requests"); v != "" {
		if all := text(share, "session_requests"); all != "" {
			v += " of " + all + " in the session"
		}
		field("requests:", v)
	}
	if v := text(rec, "cost_usd"); v != "" {
		v = "$" + v
		if all := text(share, "session_cost_usd"); all != "" {
			v += " of $" + all + " in the session"
		}
		field("cost:", v)
	}
	field("summary:", lines(text(rec, "summary"))...)
}

// effects are a turn's side effects, each a line "<tool> <what> —
// <status>[, <decision>][, exit <code>]", its why and the tail of its
// output indented under it.
func effects(v any) []string {
	var out []string
	for _, e := range objects(v) {
		line := strings.TrimSpace(text(e, "tool")+" "+oneLine(text(e, "what"))) + " — " + text(e, "status")
		if d := text(e, "decision"); d != "" {
			line += ", " + d
		}
		if code := text(e, "exit_code"); code != "" {
			line += ", exit " + code
		}
		out = append(out, line)
		out = append(out, under("why: ", text(e, "why"))...)
		out = append(out, under("tail: ", text(e, "tail"))...)
	}
	return out
}

// decisions are a turn's decisions on calls, each a line "<tool> <what>
// — <decision>[, <outcome>]".
func decisions(v any) []string {
	var out []string
	for _, d := range objects(v) {
		line := strings.TrimSpace(text(d, "tool")+" "+oneLine(text(d, "what"))) + " — " + text(d, "decision")
		if o := text(d, "outcome"); o != "" {
			line += ", " + o
		}
		out = append(out, line)
	}
	return out
}

// under is s's lines under a side effect, indented, the first after
// label and the others under it; none when s is empty.
func under(label, s string) []string {
	var out []string
	for i, l := range lines(s) {
		if i == 0 {
			out = append(out, "  "+label+l)
			continue
		}
		out = append(out, "  "+strings.Repeat(" ", len(label))+l)
	}
	return out
}

// objects are the objects of a JSON array as it decodes into any.
func objects(v any) []map[string]any {
	xs, _ := v.([]any)
	var out []map[string]any
	for _, x := range xs {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// strs are the values of a JSON array as text.
func strs(v any) []string {
	xs, _ := v.([]any)
	var out []string
	for _, x := range xs {
		if s := format(x); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// text is m's value of key as text: "" when absent or null. A number is
// written as JSON writes it (an integer without a fraction).
func text(m map[string]any, key string) string {
	return format(m[key])
}

func format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	}
	return fmt.Sprint(v)
}

// flag reports whether m's key is true.
func flag(m map[string]any, key string) bool {
	b, _ := m[key].(bool)
	return b
}

// lines are s's lines; none when s is empty.
func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// oneLine keeps a side effect's what on its line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
