// Package approve is axlr-tui jobs approve: it approves what a job waits
// for, its check command or its merge.
package approve

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
)

// Client is what approve needs of axlrd.
type Client interface {
	shared.Decider
	Close()
}

var _ Client = (*client.Client)(nil)

// ApproveOptions are approve's dependencies and flags.
type ApproveOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID   string
	JSON bool
}

// NewCmdApprove returns the approve command. It parses the arguments,
// then calls runF, or approveRun when runF is nil.
func NewCmdApprove(f *factory.Factory, runF func(context.Context, *ApproveOptions) error) *cobra.Command {
	opts := &ApproveOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve what the job waits for: its check command, or its merge",
		Long: `Approve what the job waits for: the check command it asks to run once,
or the merge of its green pull request. It returns once the job's workflow
has taken the decision; --json prints the record then (axlr-tui jobs watch
ID follows the job on).` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("approve ID [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, approveRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record after the decision")
	return cmd
}

func approveRun(ctx context.Context, opts *ApproveOptions) error {
	return cmdutil.With(ctx, opts.Client, func(c Client) error {
		return shared.Decide(ctx, c, opts.IO.Out, opts.JSON, "approve", opts.ID, "")
	})
}
