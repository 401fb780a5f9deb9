// Package watch is axlr-tui jobs watch: it follows a job until it next
// needs the person, or ends, and exits with the job's code.
package watch

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
	domain "github.com/underpass-ai/axlr/jobs"
)

// Client is what watch needs of axlrd.
type Client interface {
	cmdutil.Worker
	shared.Watcher
	Job(ctx context.Context, id string) (domain.Record, error)
	JobNow(ctx context.Context, id string) (domain.Record, error)
}

var _ Client = (*client.Client)(nil)

// WatchOptions are watch's dependencies and flags.
type WatchOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
	// Now is the clock a retry's next attempt is told against.
	Now func() time.Time

	ID   string
	JSON bool
}

// NewCmdWatch returns the watch command. It parses the arguments, then
// calls runF, or watchRun when runF is nil.
func NewCmdWatch(f *factory.Factory, runF func(context.Context, *WatchOptions) error) *cobra.Command {
	opts := &WatchOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a job until it next needs the person, or ends",
		Long: `Follow a job as exec follows an execution, through axlrd restarts, until
it next needs you or ends, and say what you can do then. Ctrl+C interrupts
the job (axlr-tui jobs recover ID runs it again); a second Ctrl+C leaves
without waiting.

With --json the first line is {"type":"job","job":{...}}, then the job
session's event lines, then {"type":"result","result":{...}}: the runtime
contract's result with a "job" field holding the record.
` + shared.RecordHelp() + `

Exit codes: 0 merged and completed, 3 the job waits for you (approve,
deny or decline it), 1 blocked, failed or interrupted, 2 usage error, 4
axlrd unreachable, 130 left with a second Ctrl+C.`,
		Args: cmdutil.ExactArgs(1, shared.Usage("watch ID [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, watchRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the job, its event lines and its result as JSON")
	return cmd
}

func watchRun(ctx context.Context, opts *WatchOptions) error {
	fo := shared.FollowOptions{IO: opts.IO, Interrupts: opts.Interrupts, Now: opts.Now, JSON: opts.JSON}
	return cmdutil.WithWorker(ctx, opts.Client, func(c Client) error {
		rec, err := c.JobNow(ctx, opts.ID)
		if err != nil {
			// The job's workflow is gone (its history retired) or never
			// started: an ended job is the registry's record.
			reg, rerr := c.Job(ctx, opts.ID)
			if rerr != nil || !reg.Terminal() {
				return err
			}
			return shared.Ended(fo, reg)
		}
		return shared.Follow(ctx, fo, c, rec)
	})
}
