// Package sessions is axlr-tui sessions: alone it lists this host's
// sessions, newest first, each with where its record stands (the MADE
// instance axlr-session-<id> of axlr_session 1.0 every session a person
// drives has: one turn per prompt, a closing turn when the person leaves
// it); its verbs show (sessions/show: the record and each turn's record)
// and close (sessions/close: leave a session, its record's closing turn).
package sessions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	sessionclose "github.com/underpass-ai/axlr/internal/cmd/sessions/close"
	"github.com/underpass-ai/axlr/internal/cmd/sessions/show"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what the listing needs of axlrd.
type Client interface {
	cmdutil.Worker
	Sessions(ctx context.Context) ([]client.SessionSummary, error)
	SessionRecord(ctx context.Context, sessionID string) (workflows.SessionRecord, error)
}

var _ Client = (*client.Client)(nil)

// ListOptions are the listing's dependencies and flags.
type ListOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	JSON   bool
}

// Row is a session of the listing with its record, as --json prints it.
// A session whose record is not known (its workflow is closed, it never
// had a prompt, or the query failed) has no instance, no turns and is not
// closed.
type Row struct {
	SessionID  string    `json:"session_id"`
	WorkflowID string    `json:"workflow_id"`
	Status     string    `json:"status"`
	Started    time.Time `json:"started"`
	Updated    time.Time `json:"updated"`
	Instance   string    `json:"instance"`
	Turns      int       `json:"turns"`
	Closed     bool      `json:"closed"`
}

// NewCmdSessions returns the sessions command with its verbs show and
// close. It lists through runF, or listRun when runF is nil.
func NewCmdSessions(f *factory.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the sessions with their records, show a record, close a session",
		Long: `List this host's sessions, newest first, each with its record: every
session a person drives is a MADE instance axlr-session-<id> of
axlr_session 1.0, one turn per prompt and a closing turn when the person
leaves it. A line shows the session, its record's instance, how many
turns it holds, whether it is closed or open, and the session workflow's
status and when it last changed. The record of a session whose workflow
no longer runs is not asked for, and shows "-", as does one that never
had a prompt or whose record axlrd did not give. --json prints one line:
the array of {session_id, workflow_id, status, started, updated,
instance, turns, closed}.

show prints a session's record and each turn's: its prompt, answer, side
effects with their decisions and exit codes, memories, reads, mode,
model, cost. close leaves a session: axlrd records its closing turn, with
the session's summary, and closes the record; a session that runs an
execution refuses it (wait for it, or interrupt it), and so does one
closed already.

  axlr-tui sessions [--json]
  axlr-tui sessions show ID [--json]
  axlr-tui sessions close ID [--reason TEXT]

` + cmdutil.ExitHelp,
		Args: cmdutil.NoCommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdutil.Run(cmd.Context(), opts, runF, listRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the sessions as a JSON array")
	cmd.AddCommand(
		show.NewCmdShow(f, nil),
		sessionclose.NewCmdClose(f, nil),
	)
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	rows, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) ([]Row, error) {
		all, err := c.Sessions(ctx)
		if err != nil {
			return nil, err
		}
		return withRecords(ctx, c, all, opts.IO), nil
	})
	if err != nil {
		return err
	}
	return cmdutil.PrintList(opts.IO.Out, opts.IO.ErrOut, opts.JSON, rows,
		`axlr-tui: no sessions on this host yet: a prompt starts one (axlr-tui exec "<prompt>", or the terminal UI)`,
		"SESSION\tINSTANCE\tTURNS\tRECORD\tSTATUS\tUPDATED", line)
}

// withRecords are the sessions, in their order, each with its record.
// Only a session whose workflow runs is asked (one query each, bounded by
// the client); a failed query is said on stderr and leaves the record
// unknown. Once axlrd does not answer, the sessions after are not asked.
func withRecords(ctx context.Context, c Client, all []client.SessionSummary, ios *factory.IOStreams) []Row {
	rows := make([]Row, 0, len(all))
	gone := false
	for _, s := range all {
		r := Row{SessionID: s.SessionID, WorkflowID: s.WorkflowID, Status: s.Status, Started: s.Started, Updated: s.Updated}
		if s.Open() && !gone {
			rec, err := c.SessionRecord(ctx, s.SessionID)
			switch {
			case err != nil:
				fmt.Fprintln(ios.ErrOut, "axlr-tui:", cmdutil.OneLine(err.Error()))
				gone = errors.As(err, new(*client.UnreachableError))
			default:
				r.Instance, r.Turns, r.Closed = rec.Instance, rec.Turns, rec.Closed
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// line is a row of the table: the record's columns are "-" when it is not
// known.
func line(r Row) string {
	instance, turns, record := "-", "-", "-"
	if r.Instance != "" {
		instance, turns, record = r.Instance, strconv.Itoa(r.Turns), "open"
		if r.Closed {
			record = "closed"
		}
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", r.SessionID, instance, turns, record, r.Status, r.Updated.UTC().Format(time.RFC3339))
}
