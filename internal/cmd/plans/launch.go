package plans

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

// MaxBrief bounds a plan's brief.
const MaxBrief = 8 << 10

// NewCmdLaunch returns the command of --plan. It parses the flags, then
// calls runF, or plansRun when runF is nil.
func NewCmdLaunch(f *factory.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts, Getwd: f.Getwd, Action: "launch"}
	cmd := &cobra.Command{
		Use:   `axlr-tui --plan "<brief>"`,
		Short: "Plan a change as small tasks, and run them in waves in the background",
		Long: `Ask the planner model to decompose the brief into 1 to 12 small tasks with
an end-to-end check, verify the plan without a model, run the commands it
names once as a baseline (after you approve them), and, once you approve the
plan, run its tasks in waves in the background, each in a fresh worker,
with a sync after each wave.

  axlr-tui --plan "<brief>" [--model NAME] [--root DIR] [--json] [--detach]

--detach returns once the plan started (axlr-tui plans watch ID follows it).
With --json the first line is {"type":"plan","plan":{...}}, then the
planner session's event lines, then {"type":"result","result":{...}} with
a "plan" field holding the record.

Exit codes: 0 done, 3 the plan's card or a command waits for you (axlr-tui
plans approve|return|decline ID), 1 blocked, partial, declined, failed or
interrupted, 2 usage error, 4 axlrd unreachable, 130 left with a second
Ctrl+C.`,
		DisableFlagParsing: true,
		SilenceErrors:      true,
		SilenceUsage:       true,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, brief, rest := cmdutil.TakeTextFlag(args, "plan")
			if err := cmd.Flags().Parse(rest); err != nil {
				return cmdutil.FlagErrorWrap(err)
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			pos := cmd.Flags().Args()
			if brief == "" && len(pos) > 0 {
				brief, pos = pos[0], pos[1:]
			}
			switch {
			case len(pos) > 0:
				return cmdutil.FlagErrorf("unexpected argument %q", pos[0])
			case strings.TrimSpace(brief) == "":
				return cmdutil.FlagErrorf("--plan needs a brief: the change to plan")
			case len(brief) > MaxBrief:
				return cmdutil.FlagErrorf("--plan: the brief is %d bytes, over the limit of %d", len(brief), MaxBrief)
			}
			opts.Brief = brief
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return plansRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Model, "model", "", "model `NAME` of the session (default: settings.json's); the planner's is plan.model")
	fl.StringVar(&opts.Root, "root", "", "workspace `DIR` (default: the current directory)")
	fl.BoolVar(&opts.JSON, "json", false, "print the plan, its event lines and its result as JSON")
	fl.BoolVar(&opts.Detach, "detach", false, "return once the plan started")
	cmdutil.AddConnectionFlags(fl, &f.Conn)
	return cmd
}

func launchRun(ctx context.Context, opts *Options, c Client) error {
	root := opts.Root
	if root == "" || !filepath.IsAbs(root) {
		wd, err := opts.Getwd()
		if err != nil {
			return fmt.Errorf("current directory: %w", err)
		}
		root = filepath.Join(wd, root)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return cmdutil.FlagErrorf("root %s is not a directory", root)
	}
	if err := c.CheckWorker(ctx); err != nil {
		return err
	}
	rec, err := c.LaunchPlan(ctx, client.PlanLaunch{Brief: opts.Brief, Root: filepath.Clean(root), Model: opts.Model})
	if err != nil {
		return err
	}
	if opts.Detach {
		if opts.JSON {
			cmdutil.WriteJSONLine(opts.IO.Out, struct {
				Type string `json:"type"`
				Plan any    `json:"plan"`
			}{"plan", rec})
		} else {
			fmt.Fprintln(opts.IO.Out, rec.ID)
			fmt.Fprintf(opts.IO.ErrOut, "axlr-tui: plan %s started; axlr-tui plans watch %s follows it\n", rec.ID, rec.ID)
		}
		return nil
	}
	return follow(ctx, opts, c, rec)
}
