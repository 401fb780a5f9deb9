// Package watch is axlr-tui plans watch: it follows a plan until it next
// needs the person, or ends, and exits with the plan's code.
package watch

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/plans/shared"
	domain "github.com/underpass-ai/axlr/plans"
)

// Client is what watch needs of axlrd.
type Client interface {
	cmdutil.Worker
	shared.Watcher
	Plan(ctx context.Context, id string) (domain.Record, error)
}

var _ Client = (*client.Client)(nil)

// WatchOptions are watch's dependencies and flags.
type WatchOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal

	ID   string
	JSON bool
}

// NewCmdWatch returns the watch command. It parses the arguments, then
// calls runF, or watchRun when runF is nil.
func NewCmdWatch(f *factory.Factory, runF func(context.Context, *WatchOptions) error) *cobra.Command {
	opts := &WatchOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts}
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a plan until it next needs the person, or ends",
		Long: `Follow a plan through axlrd restarts until it next needs you (its
commands or its card) or ends. Ctrl+C interrupts the plan (axlr-tui plans
recover ID runs it again); a second Ctrl+C leaves without waiting.

With --json the first line is {"type":"plan","plan":{...}}, then the
planner session's event lines, then {"type":"result","result":{...}} with
a "plan" field holding the record.
` + shared.RecordHelp() + `

Exit codes: 0 done, 3 the plan waits for you, 1 partial, blocked, declined,
failed or interrupted, 2 usage error, 4 axlrd unreachable, 130 left with a
second Ctrl+C.`,
		Args: cmdutil.ExactArgs(1, shared.Usage("watch ID [--json]")),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return cmdutil.Run(cmd.Context(), opts, runF, watchRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the plan, its event lines and its result as JSON")
	return cmd
}

func watchRun(ctx context.Context, opts *WatchOptions) error {
	return cmdutil.WithWorker(ctx, opts.Client, func(c Client) error {
		rec, err := c.Plan(ctx, opts.ID)
		if err != nil {
			return err
		}
		return shared.Follow(ctx, shared.FollowOptions{IO: opts.IO, Interrupts: opts.Interrupts, JSON: opts.JSON}, c, rec)
	})
}
