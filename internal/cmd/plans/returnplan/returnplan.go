// Package returnplan is axlr-tui plans return (return is a Go keyword,
// hence the name): it sends a plan back to the planner with a reason.
package returnplan

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/plans/shared"
)

// Client is what return needs of axlrd.
type Client interface {
	shared.Decider
	Close()
}

var _ Client = (*client.Client)(nil)

// ReturnOptions are return's dependencies and flags.
type ReturnOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID     string
	Reason string
	JSON   bool
}

// NewCmdReturn returns the return command. It parses the arguments, then calls
// runF, or returnRun when runF is nil.
func NewCmdReturn(f *factory.Factory, runF func(context.Context, *ReturnOptions) error) *cobra.Command {
	opts := &ReturnOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "return ID --reason TEXT",
		Short: "Send the plan back to the planner with a reason (twice at most)",
		Long: `Send the plan back to the planner with your reason, at most twice: it
plans again. While the plan waits for its commands, return denies them and
sends the planner back. --json prints the record after the decision.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("return ID --reason TEXT [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := cmdutil.NeedReason(opts.Reason, "plans return", "the planner and the record keep it"); err != nil {
				return err
			}
			return cmdutil.Run(cmd.Context(), opts, runF, returnRun)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why (required)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record after the decision")
	return cmd
}

func returnRun(ctx context.Context, opts *ReturnOptions) error {
	return cmdutil.With(ctx, opts.Client, func(c Client) error {
		return shared.Decide(ctx, c, opts.IO.Out, opts.JSON, "return", opts.ID, opts.Reason)
	})
}
