// Package recover is axlr-tui plans recover: it runs an interrupted plan
// again from where it stood.
package recover

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/plans/shared"
	domain "github.com/underpass-ai/axlr/plans"
)

// Client is what recover needs of axlrd.
type Client interface {
	cmdutil.Worker
	RecoverPlan(ctx context.Context, id string) (domain.Record, error)
}

var _ Client = (*client.Client)(nil)

// RecoverOptions are recover's dependencies and flags.
type RecoverOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID   string
	JSON bool
}

// NewCmdRecover returns the recover command. It parses the arguments,
// then calls runF, or recoverRun when runF is nil.
func NewCmdRecover(f *factory.Factory, runF func(context.Context, *RecoverOptions) error) *cobra.Command {
	opts := &RecoverOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "recover ID",
		Short: "Run an interrupted plan again from where it stood",
		Long: `Run an interrupted plan again from where it stood: the tasks done stay
done. Only an interrupted plan is recovered; --json prints its record.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("recover ID [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, recoverRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record as JSON")
	return cmd
}

func recoverRun(ctx context.Context, opts *RecoverOptions) error {
	rec, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (domain.Record, error) { return c.RecoverPlan(ctx, opts.ID) })
	if err != nil {
		return err
	}
	cmdutil.Report(opts.IO.Out, opts.JSON, rec, fmt.Sprintf("recovered plan %s: it runs again from where it stood (axlr-tui plans watch %s follows it)", rec.ID, rec.ID))
	return nil
}
