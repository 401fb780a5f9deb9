// Package launch is axlr-tui jobs repair and axlr-tui jobs improve (and
// the --repair and --improve that root maps onto them): each asks the job
// registry to admit a job of its kind and follows it. The two verbs
// differ only in the kind, so they share this package.
package launch

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what repair and improve need of axlrd.
type Client interface {
	cmdutil.Worker
	shared.Watcher
	LaunchJob(ctx context.Context, req workflows.LaunchRequest) (domain.Record, error)
}

var _ Client = (*client.Client)(nil)

// LaunchOptions are the dependencies and flags of repair and improve.
type LaunchOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
	// Now is the clock a retry's next attempt is told against.
	Now func() time.Time

	Kind  domain.Kind
	Brief string
	// Model runs the job's steps (default: settings.json's).
	Model  string
	JSON   bool
	Detach bool
}

// NewCmdRepair returns the repair command. It parses the arguments, then
// calls runF, or launchRun when runF is nil.
func NewCmdRepair(f *factory.Factory, runF func(context.Context, *LaunchOptions) error) *cobra.Command {
	return newCmd(f, runF, domain.Repair, "Start a /repair job and follow it", `"<failure brief or #123>"`,
		`A repair works in its own clone of repair.repository: it reproduces the
failure with a check command you approve once, diagnoses and repairs it.`)
}

// NewCmdImprove returns the improve command. It parses the arguments,
// then calls runF, or launchRun when runF is nil.
func NewCmdImprove(f *factory.Factory, runF func(context.Context, *LaunchOptions) error) *cobra.Command {
	return newCmd(f, runF, domain.Improve, "Start an /improve job and follow it", `"<improvement brief or #123>"`,
		`An improvement works in its own clone of repair.repository: its check
command (you approve it once) fails first and passes after.`)
}

func newCmd(f *factory.Factory, runF func(context.Context, *LaunchOptions) error, kind domain.Kind, short, brief, about string) *cobra.Command {
	opts := &LaunchOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts, Now: time.Now, Kind: kind}
	cmd := &cobra.Command{
		Use:   fmt.Sprintf("%s [flags] %s", kind, brief),
		Short: short,
		Long: fmt.Sprintf(`Ask the job registry to admit a job, then follow it as exec follows an
execution, through axlrd restarts, until it needs you or ends.

  axlr-tui jobs %[1]s %[2]s [--model NAME] [--json] [--detach]
  axlr-tui --%[1]s %[2]s ...      (the same)

%[3]s axlrd then commits, pushes, opens the pull request, watches its checks
and asks for your merge decision (a repair merges by itself under
repair.auto_merge). "#123" takes the brief from that issue of
repair.repository.

--detach returns once the job is admitted (axlr-tui jobs watch ID follows
it later). With --json the first line is {"type":"job","job":{...}}, then
the job session's event lines, then {"type":"result","result":{...}}: the
runtime contract's result with a "job" field holding the record.
%[4]s

Exit codes: 0 merged and completed, 3 the job waits for you (axlr-tui jobs
approve|deny|decline ID), 1 blocked, failed, interrupted or refused, 2 usage
error, 4 axlrd unreachable, 130 left with a second Ctrl+C.`, kind, brief, about, shared.RecordHelp()),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.complete(args); err != nil {
				return err
			}
			return cmdutil.Run(cmd.Context(), opts, runF, launchRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Model, "model", "", "model `NAME` of the job's steps (default: settings.json's)")
	fl.BoolVar(&opts.JSON, "json", false, "print the job, its event lines and its result as JSON")
	fl.BoolVar(&opts.Detach, "detach", false, "return once the job is admitted")
	return cmd
}

// complete takes the brief from the arguments and checks it.
func (o *LaunchOptions) complete(args []string) error {
	if len(args) > 0 {
		o.Brief, args = args[0], args[1:]
	}
	switch {
	case len(args) > 0:
		return cmdutil.FlagErrorf("unexpected argument %q", args[0])
	case strings.TrimSpace(o.Brief) == "":
		return cmdutil.FlagErrorf("jobs %s needs a brief: what fails, or \"#123\" for an issue of repair.repository", o.Kind)
	case len(o.Brief) > domain.MaxBrief:
		return cmdutil.FlagErrorf("jobs %s: the brief is %d bytes, over the limit of %d", o.Kind, len(o.Brief), domain.MaxBrief)
	}
	return nil
}

func launchRun(ctx context.Context, opts *LaunchOptions) error {
	return cmdutil.WithWorker(ctx, opts.Client, func(c Client) error {
		rec, err := c.LaunchJob(ctx, workflows.LaunchRequest{Kind: opts.Kind, Brief: opts.Brief, Model: opts.Model, Person: true})
		if err != nil {
			return err
		}
		if !opts.Detach {
			return shared.Follow(ctx, shared.FollowOptions{IO: opts.IO, Interrupts: opts.Interrupts, Now: opts.Now, JSON: opts.JSON}, c, rec)
		}
		cmdutil.Detached(opts.IO, opts.JSON, shared.JobLine{Type: "job", Job: rec}, rec.ID,
			fmt.Sprintf("axlr-tui: job %s admitted; axlr-tui jobs watch %s follows it", rec.ID, rec.ID))
		return nil
	})
}
