// Package decline is axlr-tui plans decline: it declines a plan, with a
// reason: the plan ends declined.
package decline

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/plans/shared"
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
		Short: "Decline the plan: it ends declined",
		Long: `Decline the plan with your reason: it ends declined and none of its
tasks runs. --json prints the record after the decision.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("decline ID --reason TEXT [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := cmdutil.NeedReason(opts.Reason, "plans decline", "the planner and the record keep it"); err != nil {
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
