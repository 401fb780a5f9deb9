// Package show is axlr-tui plans show: one plan with its tasks, waves,
// task sessions, syncs, changed files, the questions its workers asked and
// what was put back and left of a task that did not finish.
package show

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/plans/shared"
	domain "github.com/underpass-ai/axlr/plans"
)

// Client is what show needs of axlrd.
type Client interface {
	Plan(ctx context.Context, id string) (domain.Record, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// ShowOptions are show's dependencies and flags.
type ShowOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID   string
	JSON bool
}

// NewCmdShow returns the show command. It parses the arguments, then
// calls runF, or showRun when runF is nil.
func NewCmdShow(f *factory.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print one plan: its tasks, waves, task sessions, syncs and changed files",
		Long: `Print one plan: its fields, each task with its wave, status, session and
changed files, the questions its task workers asked, the scope files put
back as they were for a task that did not finish and the files it created,
left in place, and each sync. With --json, the record on one line.
` + shared.RecordHelp() + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("show ID [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, showRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record as JSON")
	return cmd
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	rec, err := cmdutil.Fetch(ctx, opts.Client, func(c Client) (domain.Record, error) { return c.Plan(ctx, opts.ID) })
	if err != nil {
		return err
	}
	cmdutil.Show(opts.IO.Out, opts.JSON, rec, func(out io.Writer) { shared.PrintRecord(out, rec) })
	return nil
}
