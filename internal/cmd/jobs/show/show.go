// Package show is axlr-tui jobs show: one job's record, as its workflow
// knows it now, and the activities it tries again.
package show

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
	domain "github.com/underpass-ai/axlr/jobs"
)

// Client is what show needs of axlrd.
type Client interface {
	Job(ctx context.Context, id string) (domain.Record, error)
	JobNow(ctx context.Context, id string) (domain.Record, error)
	JobRetries(ctx context.Context, id string) ([]client.Retry, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// ShowOptions are show's dependencies and flags.
type ShowOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Now is the clock a retry's next attempt is told against.
	Now func() time.Time

	ID   string
	JSON bool
}

// NewCmdShow returns the show command. It parses the arguments, then
// calls runF, or showRun when runF is nil.
func NewCmdShow(f *factory.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Now: time.Now}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print one job's record",
		Long: `Print one job's record, as the job's workflow knows it now (the
registry's last report once the workflow is gone), and each activity it
tries again after a failure. With --json, the record on one line.
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

// shown is what show prints: the record and the activities tried again.
type shown struct {
	rec     domain.Record
	retries []client.Retry
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	s, err := cmdutil.Fetch(ctx, opts.Client, func(c Client) (shown, error) { return look(ctx, c, opts.ID, !opts.JSON) })
	if err != nil {
		return err
	}
	cmdutil.Show(opts.IO.Out, opts.JSON, s.rec, func(out io.Writer) {
		shared.PrintRecord(out, s.rec)
		for _, r := range s.retries {
			fmt.Fprintf(out, "%-13s %s\n", "retrying:", shared.RetryText(r, opts.Now()))
		}
	})
	return nil
}

// look reads the job: its workflow knows where it stands now; the
// registry's record is its last report, or all there is once the
// workflow is gone. With retries it asks for the activities tried again.
func look(ctx context.Context, c Client, id string, retries bool) (shown, error) {
	reg, regErr := c.Job(ctx, id)
	rec, err := c.JobNow(ctx, id)
	switch {
	case err == nil && regErr == nil:
		// The queue's place is the registry's.
		rec.Queue = reg.Queue
	case regErr != nil:
		return shown{}, regErr
	default:
		return shown{rec: reg}, nil
	}
	s := shown{rec: rec}
	if retries && !rec.Terminal() {
		// What the record cannot say: an activity failing and tried
		// again. Not knowing it leaves the record as it is.
		s.retries, _ = c.JobRetries(ctx, id)
	}
	return s, nil
}
