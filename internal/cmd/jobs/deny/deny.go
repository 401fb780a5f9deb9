// Package deny is axlr-tui jobs deny: it denies the check command a job
// waits on, with a reason.
package deny

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
)

// Client is what deny needs of axlrd.
type Client interface {
	shared.Decider
	Close()
}

var _ Client = (*client.Client)(nil)

// DenyOptions are deny's dependencies and flags.
type DenyOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID     string
	Reason string
	JSON   bool
}

// NewCmdDeny returns the deny command. It parses the arguments, then calls
// runF, or denyRun when runF is nil.
func NewCmdDeny(f *factory.Factory, runF func(context.Context, *DenyOptions) error) *cobra.Command {
	opts := &DenyOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "deny ID --reason TEXT",
		Short: "Deny the check command the job waits on",
		Long: `Deny the check command the job asks to run: the model is sent back with
your reason. It returns once the job's workflow has taken the decision;
--json prints the record then.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("deny ID --reason TEXT [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := cmdutil.NeedReason(opts.Reason, "jobs deny", "the job's record and the model keep it"); err != nil {
				return err
			}
			return cmdutil.Run(cmd.Context(), opts, runF, denyRun)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why (required)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record after the decision")
	return cmd
}

func denyRun(ctx context.Context, opts *DenyOptions) error {
	return cmdutil.With(ctx, opts.Client, func(c Client) error {
		return shared.Decide(ctx, c, opts.IO.Out, opts.JSON, "deny", opts.ID, opts.Reason)
	})
}
