// Package queue is axlr-tui jobs queue: it queues a job's merge in its
// repository's merge queue, which lands it in its turn.
package queue

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what queue needs of axlrd.
type Client interface {
	cmdutil.Worker
	QueueJob(ctx context.Context, id string) (workflows.QueueView, error)
}

var _ Client = (*client.Client)(nil)

// QueueOptions are queue's dependencies and flags.
type QueueOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID   string
	JSON bool
}

// NewCmdQueue returns the queue command. It parses the arguments, then
// calls runF, or queueRun when runF is nil.
func NewCmdQueue(f *factory.Factory, runF func(context.Context, *QueueOptions) error) *cobra.Command {
	opts := &QueueOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "queue ID",
		Short: "Queue the job's merge: the merge queue lands it in its turn, as jobs approve would",
		Long: `Queue the merge of a job that waits for its merge decision: the merge
queue of its repository and base updates its branch, waits for its checks
and merges it in its turn (axlr-tui queue lists the queues). With --json,
the queue on one line.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("queue ID [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, queueRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the queue as JSON")
	return cmd
}

func queueRun(ctx context.Context, opts *QueueOptions) error {
	view, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (workflows.QueueView, error) { return c.QueueJob(ctx, opts.ID) })
	if err != nil {
		return err
	}
	said := fmt.Sprintf("queued job %s in the merge queue of %s (%s)", opts.ID, view.Repository, view.Base)
	for i, e := range view.Entries {
		if e.Job == opts.ID {
			said = fmt.Sprintf("queued job %s: #%d in the merge queue of %s (%s)", opts.ID, i+1, view.Repository, view.Base)
			break
		}
	}
	cmdutil.Report(opts.IO.Out, opts.JSON, view, said)
	return nil
}
