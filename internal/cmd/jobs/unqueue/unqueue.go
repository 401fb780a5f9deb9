// Package unqueue is axlr-tui jobs unqueue: it takes a job off its merge
// queue; the job goes on waiting for its merge decision.
package unqueue

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

// Client is what unqueue needs of axlrd.
type Client interface {
	cmdutil.Worker
	UnqueueJob(ctx context.Context, id, reason string) (workflows.QueueView, error)
}

var _ Client = (*client.Client)(nil)

// UnqueueOptions are unqueue's dependencies and flags.
type UnqueueOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID     string
	Reason string
	JSON   bool
}

// NewCmdUnqueue returns the unqueue command. It parses the arguments,
// then calls runF, or unqueueRun when runF is nil.
func NewCmdUnqueue(f *factory.Factory, runF func(context.Context, *UnqueueOptions) error) *cobra.Command {
	opts := &UnqueueOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "unqueue ID",
		Short: "Take the job off its merge queue; it goes on waiting for its merge decision",
		Long: `Take a job off its repository's merge queue, with an optional reason:
the job goes on waiting for your merge decision. With --json, the queue on
one line.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("unqueue ID [--reason TEXT] [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, unqueueRun)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the queue as JSON")
	return cmd
}

func unqueueRun(ctx context.Context, opts *UnqueueOptions) error {
	view, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (workflows.QueueView, error) {
		return c.UnqueueJob(ctx, opts.ID, opts.Reason)
	})
	if err != nil {
		return err
	}
	cmdutil.Report(opts.IO.Out, opts.JSON, view, fmt.Sprintf("took job %s off the merge queue of %s (%s); it waits for your merge decision", opts.ID, view.Repository, view.Base))
	return nil
}
