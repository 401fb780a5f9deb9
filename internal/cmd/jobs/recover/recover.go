// Package recover is axlr-tui jobs recover: it runs an interrupted job
// again, in its session and clone.
package recover

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
	domain "github.com/underpass-ai/axlr/jobs"
)

// Client is what recover needs of axlrd.
type Client interface {
	cmdutil.Worker
	RecoverJob(ctx context.Context, id, model string) (domain.Record, error)
}

var _ Client = (*client.Client)(nil)

// RecoverOptions are recover's dependencies and flags.
type RecoverOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	ID string
	// Model runs the job's steps (default: settings.json's).
	Model string
	JSON  bool
}

// NewCmdRecover returns the recover command. It parses the arguments,
// then calls runF, or recoverRun when runF is nil.
func NewCmdRecover(f *factory.Factory, runF func(context.Context, *RecoverOptions) error) *cobra.Command {
	opts := &RecoverOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "recover ID",
		Short: "Run an interrupted job again, in its session and clone",
		Long: `Run an interrupted job again from where it stood, in its session and
clone; only an interrupted job is recovered. axlr-tui jobs watch ID follows
it then; --json prints its record.` + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(1, shared.Usage("recover ID [--model NAME] [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, recoverRun)
		},
	}
	cmd.Flags().StringVar(&opts.Model, "model", "", "model `NAME` of the job's steps (default: settings.json's)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record as JSON")
	return cmd
}

func recoverRun(ctx context.Context, opts *RecoverOptions) error {
	rec, err := cmdutil.FetchWorked(ctx, opts.Client, func(c Client) (domain.Record, error) { return c.RecoverJob(ctx, opts.ID, opts.Model) })
	if err != nil {
		return err
	}
	cmdutil.Report(opts.IO.Out, opts.JSON, rec, fmt.Sprintf("recovered job %s: it goes on in session %s and clone %s from what MADE and the forge recorded (axlr-tui jobs watch %s follows it)", rec.ID, rec.Session, rec.Clone, rec.ID))
	return nil
}
