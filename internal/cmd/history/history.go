// Package history is axlr-tui history: it prints a workflow's trajectory
// (every run, following continue-as-new, and its updates, activities and
// local activities with their outcomes) from Temporal's history. On a
// terminal it prints a table in local time; elsewhere tab-separated lines
// with RFC 3339 times; with --json the trajectory object.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/session"
)

// TrajectoryFields are the fields of --json's object (client.Trajectory),
// in order; a test pins them to the type.
var TrajectoryFields = []string{"workflow_id", "runs", "steps"}

// StepFields are the fields of each of its steps (client.Step), in order;
// a test pins them to the type.
var StepFields = []string{"time", "run_id", "kind", "name", "detail", "attempt", "duration_ms", "outcome", "error"}

// Client is what history needs of axlrd.
type Client interface {
	History(ctx context.Context, id string) (*client.Trajectory, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// HistoryOptions are history's dependencies and flags.
type HistoryOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Now is the clock a terminal's relative times count from; its
	// location is the one times print in there.
	Now func() time.Time

	// ID is a session id or a workflow id ("axlr-…").
	ID   string
	JSON bool
}

// NewCmdHistory returns the history command. It parses and validates the
// arguments, then calls runF, or historyRun when runF is nil.
func NewCmdHistory(f *factory.Factory, runF func(context.Context, *HistoryOptions) error) *cobra.Command {
	opts := &HistoryOptions{
		IO:     f.IOStreams,
		Now:    time.Now,
		Client: factory.ClientFunc[Client](f),
	}
	cmd := &cobra.Command{
		Use:   "history ID",
		Short: "Print a session's or a workflow's trajectory",
		Long: fmt.Sprintf(`Print the trajectory of a session (by its id) or of a workflow (by an id
that starts with "axlr-"): each run of the workflow, and its updates,
activities and local activities with their outcomes, oldest first.

On a terminal it prints a table in local time. Elsewhere it prints
tab-separated lines (time in RFC 3339, step, detail, attempt, duration,
outcome). With --json it prints the trajectory object.
Trajectory fields:
%s
Step fields:
%s

Exit codes: 0 ok, 1 error, 2 usage error, 4 axlrd unreachable.`, cmdutil.FieldsHelp(TrajectoryFields), cmdutil.FieldsHelp(StepFields)),
		Args: cmdutil.ExactArgs(1, "usage: axlr-tui history ID [--json] (a session id or a workflow id)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if !strings.HasPrefix(opts.ID, "axlr-") && !session.ValidID(opts.ID) {
				return cmdutil.FlagErrorf("%q is neither a session id (a lowercase UUID) nor a workflow id (axlr-…)", opts.ID)
			}
			return cmdutil.Run(cmd.Context(), opts, runF, historyRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the trajectory object")
	return cmd
}

func historyRun(ctx context.Context, opts *HistoryOptions) error {
	t, err := cmdutil.Fetch(ctx, opts.Client, func(c Client) (*client.Trajectory, error) { return c.History(ctx, opts.ID) })
	if err != nil {
		return err
	}
	switch {
	case opts.JSON:
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	case opts.IO.IsStdoutTTY():
		printTable(opts.IO.Out, t, opts.Now())
	default:
		printLines(opts.IO.Out, t)
	}
	return nil
}

// printTable prints the trajectory for a person: a heading, then a table
// with times in now's location.
func printTable(out io.Writer, t *client.Trajectory, now time.Time) {
	heading := fmt.Sprintf("workflow %s · %d run(s)", t.WorkflowID, len(t.Runs))
	if len(t.Steps) > 0 {
		heading += " · started " + ago(now, t.Steps[0].Time)
	}
	fmt.Fprintln(out, heading)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSTEP\tDETAIL\tATTEMPT\tTOOK\tOUTCOME")
	for _, s := range t.Steps {
		fmt.Fprintln(tw, s.Time.In(now.Location()).Format("15:04:05.000")+"\t"+columns(s))
	}
	tw.Flush()
}

// printLines prints the trajectory for a program: one tab-separated line
// per step, its time in RFC 3339.
func printLines(out io.Writer, t *client.Trajectory) {
	for _, s := range t.Steps {
		fmt.Fprintln(out, s.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00")+"\t"+columns(s))
	}
}

// columns are a step's columns after its time, tab-separated.
func columns(s client.Step) string {
	c := client.StepCells(s)
	return strings.Join([]string{c.Step, tabless(c.Detail), c.Attempt, c.Took, tabless(c.Outcome)}, "\t")
}

// tabless keeps a column's text on its column.
func tabless(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }

// ago is how long before now t was, roughly.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "less than a minute ago"
	case d < 2*time.Minute:
		return "about 1 minute ago"
	case d < time.Hour:
		return fmt.Sprintf("%d minutes ago", int(d.Minutes()))
	case d < 2*time.Hour:
		return "about 1 hour ago"
	case d < 24*time.Hour:
		return fmt.Sprintf("%d hours ago", int(d.Hours()))
	case d < 48*time.Hour:
		return "about 1 day ago"
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}
