// Package launch is axlr-tui plans new (and the --plan that root maps
// onto it): it asks the planner to decompose a brief into a plan, and
// follows the plan.
package launch

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/plans/shared"
	domain "github.com/underpass-ai/axlr/plans"
)

// MaxBrief bounds a plan's brief.
const MaxBrief = 8 << 10

// Client is what new needs of axlrd.
type Client interface {
	cmdutil.Worker
	shared.Watcher
	LaunchPlan(ctx context.Context, in client.PlanLaunch) (domain.Record, error)
}

var _ Client = (*client.Client)(nil)

// NewOptions are new's dependencies and flags.
type NewOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
	// Getwd is the directory --root defaults to and resolves against.
	Getwd func() (string, error)

	Brief string
	// Model is the planner session's (default: settings.json's).
	Model  string
	Root   string
	JSON   bool
	Detach bool
}

// NewCmdNew returns the new command. It parses the arguments, then calls
// runF, or newRun when runF is nil.
func NewCmdNew(f *factory.Factory, runF func(context.Context, *NewOptions) error) *cobra.Command {
	opts := &NewOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts, Getwd: f.Getwd}
	cmd := &cobra.Command{
		Use:   `new [flags] "<brief>"`,
		Short: "Plan a change as small tasks, and run them in waves in the background",
		Long: `Ask the planner model to decompose the brief into 1 to 12 small tasks with
an end-to-end check, verify the plan without a model, run the commands it
names once as a baseline (after you approve them), and, once you approve the
plan, run its tasks in waves in the background, each in a fresh worker,
with a sync after each wave.

  axlr-tui plans new "<brief>" [--model NAME] [--root DIR] [--json] [--detach]
  axlr-tui --plan "<brief>" ...      (the same)

--detach returns once the plan started (axlr-tui plans watch ID follows it).
With --json the first line is {"type":"plan","plan":{...}}, then the
planner session's event lines, then {"type":"result","result":{...}} with
a "plan" field holding the record.
` + shared.RecordHelp() + `

Exit codes: 0 done, 3 the plan's card or a command waits for you (axlr-tui
plans approve|return|decline ID), 1 blocked, partial, declined, failed or
interrupted, 2 usage error, 4 axlrd unreachable, 130 left with a second
Ctrl+C.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.complete(args); err != nil {
				return err
			}
			return cmdutil.Run(cmd.Context(), opts, runF, newRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Model, "model", "", "model `NAME` of the session (default: settings.json's); the planner's is plan.model")
	fl.StringVar(&opts.Root, "root", "", "workspace `DIR` (default: the current directory)")
	fl.BoolVar(&opts.JSON, "json", false, "print the plan, its event lines and its result as JSON")
	fl.BoolVar(&opts.Detach, "detach", false, "return once the plan started")
	return cmd
}

// complete takes the brief from the arguments and checks it.
func (o *NewOptions) complete(args []string) error {
	if len(args) > 0 {
		o.Brief, args = args[0], args[1:]
	}
	switch {
	case len(args) > 0:
		return cmdutil.FlagErrorf("unexpected argument %q", args[0])
	case strings.TrimSpace(o.Brief) == "":
		return cmdutil.FlagErrorf("plans new needs a brief: the change to plan")
	case len(o.Brief) > MaxBrief:
		return cmdutil.FlagErrorf("plans new: the brief is %d bytes, over the limit of %d", len(o.Brief), MaxBrief)
	}
	return nil
}

func newRun(ctx context.Context, opts *NewOptions) error {
	root, err := cmdutil.AbsRoot(opts.Root, opts.Getwd)
	if err != nil {
		return err
	}
	return cmdutil.WithWorker(ctx, opts.Client, func(c Client) error {
		rec, err := c.LaunchPlan(ctx, client.PlanLaunch{Brief: opts.Brief, Root: root, Model: opts.Model})
		if err != nil {
			return err
		}
		if !opts.Detach {
			return shared.Follow(ctx, shared.FollowOptions{IO: opts.IO, Interrupts: opts.Interrupts, JSON: opts.JSON}, c, rec)
		}
		cmdutil.Detached(opts.IO, opts.JSON, shared.PlanLine{Type: "plan", Plan: rec}, rec.ID,
			fmt.Sprintf("axlr-tui: plan %s started; axlr-tui plans watch %s follows it", rec.ID, rec.ID))
		return nil
	})
}
