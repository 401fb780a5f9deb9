package jobs

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
)

// LaunchOptions are the dependencies and flags of --repair and --improve.
type LaunchOptions struct {
	IO         *factory.IOStreams
	Client     func(context.Context) (Client, error)
	Interrupts <-chan os.Signal

	Kind   domain.Kind
	Brief  string
	Model  string
	JSON   bool
	Detach bool
}

// NewCmdLaunch returns the command of --repair and --improve. It parses
// the flags, then calls runF, or launchRun when runF is nil.
func NewCmdLaunch(f *factory.Factory, runF func(context.Context, *LaunchOptions) error) *cobra.Command {
	opts := &LaunchOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts}
	cmd := &cobra.Command{
		Use:   `axlr-tui --repair "<failure brief or #123>" | --improve "<improvement brief or #123>"`,
		Short: "Start a /repair or /improve job and follow it",
		Long: `Ask the job registry to admit a job, then follow it as --exec follows an
execution, through axlrd restarts, until it needs you or ends.

  axlr-tui --repair "<failure brief or #123>" [--model NAME] [--json] [--detach]
  axlr-tui --improve "<improvement brief or #123>" [--model NAME] [--json] [--detach]

A job works in its own clone of repair.repository: a repair reproduces
the failure with a check command you approve once, diagnoses and repairs
it; an improvement has its check fail first and pass after. axlrd then
commits, pushes, opens the pull request, watches its checks and asks for
your merge decision (a repair merges by itself under repair.auto_merge).
"#123" takes the brief from that issue of repair.repository.

--detach returns once the job is admitted (axlr-tui jobs watch ID follows
it later). With --json the first line is {"type":"job","job":{...}}, then
the job session's event lines, then {"type":"result","result":{...}}: the
runtime contract's result with a "job" field holding the record.

Exit codes: 0 merged and completed, 3 the job waits for you (axlr-tui jobs
approve|deny|decline ID), 1 blocked, failed, interrupted or refused, 2 usage
error, 4 axlrd unreachable, 130 left with a second Ctrl+C.`,
		DisableFlagParsing: true,
		SilenceErrors:      true,
		SilenceUsage:       true,
		RunE: func(cmd *cobra.Command, args []string) error {
			isRepair, repair, rest := cmdutil.TakeTextFlag(args, "repair")
			isImprove, improve, rest := cmdutil.TakeTextFlag(rest, "improve")
			if err := cmd.Flags().Parse(rest); err != nil {
				return cmdutil.FlagErrorWrap(err)
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			if err := opts.complete(isRepair, repair, isImprove, improve, cmd.Flags().Args()); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return launchRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Model, "model", "", "model `NAME` of the job's steps (default: settings.json's)")
	fl.BoolVar(&opts.JSON, "json", false, "print the job, its event lines and its result as JSON")
	fl.BoolVar(&opts.Detach, "detach", false, "return once the job is admitted")
	cmdutil.AddConnectionFlags(fl, &f.Conn)
	return cmd
}

func (o *LaunchOptions) complete(isRepair bool, repair string, isImprove bool, improve string, pos []string) error {
	switch {
	case isRepair && isImprove:
		return cmdutil.FlagErrorf("--repair and --improve cannot be used together")
	case isRepair:
		o.Kind, o.Brief = domain.Repair, repair
	case isImprove:
		o.Kind, o.Brief = domain.Improve, improve
	default:
		return cmdutil.FlagErrorf("nothing to do: use --repair \"<failure brief>\" or --improve \"<improvement brief>\"")
	}
	if o.Brief == "" && len(pos) > 0 {
		o.Brief, pos = pos[0], pos[1:]
	}
	if len(pos) > 0 {
		return cmdutil.FlagErrorf("unexpected argument %q", pos[0])
	}
	if strings.TrimSpace(o.Brief) == "" {
		return cmdutil.FlagErrorf("--%s needs a brief: what fails, or \"#123\" for an issue of repair.repository", o.Kind)
	}
	if len(o.Brief) > domain.MaxBrief {
		return cmdutil.FlagErrorf("--%s: the brief is %d bytes, over the limit of %d", o.Kind, len(o.Brief), domain.MaxBrief)
	}
	return nil
}

func launchRun(ctx context.Context, opts *LaunchOptions) error {
	c, err := opts.Client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.CheckWorker(ctx); err != nil {
		return err
	}
	rec, err := c.LaunchJob(ctx, client.LaunchRequest{Kind: opts.Kind, Brief: opts.Brief, Model: opts.Model})
	if err != nil {
		return err
	}
	if opts.Detach {
		if opts.JSON {
			cmdutil.WriteJSONLine(opts.IO.Out, jobLine{Type: "job", Job: rec})
		} else {
			fmt.Fprintf(opts.IO.Out, "%s\n", rec.ID)
			fmt.Fprintf(opts.IO.ErrOut, "axlr-tui: job %s admitted; axlr-tui jobs watch %s follows it\n", rec.ID, rec.ID)
		}
		return nil
	}
	return follow(ctx, opts.IO, opts.Interrupts, opts.JSON, c, rec)
}
