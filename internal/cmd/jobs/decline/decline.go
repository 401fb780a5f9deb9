// Package decline is axlr-tui jobs decline: it declines a job's merge,
// with a reason: the job ends blocked.
package decline

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
)

// Client is what decline needs of axlrd.
type Client interface {
	shared.Decider
	Close()
}

var _ Client = (*client.Client)(nil)

// DeclineOptions are decline's dependencies and flags.
type DeclineOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID     string
	Reason string
	JSON   bool
}

// NewCmdDecline returns the decline command. It parses the arguments, then calls
// runF, or declineRun when runF is nil.
func NewCmdDecline(f *factory.Factory, runF func(context.Context, *DeclineOptions) error) *cobra.Command {
	opts := &DeclineOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "decline ID --reason TEXT",
		Short: "Decline the job's merge: it ends blocked, the pull request left open",
		Long: `Decline the merge of the job's green pull request: the job ends blocked
with your reason and the pull request is left open. It returns once the
job's workflow has taken the decision; --json prints the record then.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("decline ID --reason TEXT [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := cmdutil.NeedReason(opts.Reason, "jobs decline", "the job's record and the model keep it"); err != nil {
				return err
			}
			return cmdutil.Run(cmd.Context(), opts, runF, declineRun)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why (required)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record after the decision")
	return cmd
}

func declineRun(ctx context.Context, opts *DeclineOptions) error {
	return cmdutil.With(ctx, opts.Client, func(c Client) error {
		return shared.Decide(ctx, c, opts.IO.Out, opts.JSON, "decline", opts.ID, opts.Reason)
	})
}
