// Package jobs is axlr-tui's /repair and /improve: --repair and --improve
// admit a job and follow it, and axlr-tui jobs lists the jobs the job
// registry holds, shows one, watches one until it next needs the person,
// and takes the person's decisions (approve, deny, decline), recovery and
// install. Every decision is an Update of the job's workflow; the list
// and the records are Queries.
package jobs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what jobs needs of axlrd.
type Client interface {
	CheckWorker(ctx context.Context) error
	Jobs(ctx context.Context) ([]domain.Record, error)
	Job(ctx context.Context, id string) (domain.Record, error)
	JobNow(ctx context.Context, id string) (domain.Record, error)
	JobRetries(ctx context.Context, id string) ([]client.Retry, error)
	LaunchJob(ctx context.Context, req client.LaunchRequest) (domain.Record, error)
	WatchJob(ctx context.Context, id string, w client.Watcher) (client.JobEnd, error)
	InterruptJob(ctx context.Context, id string) error
	DecideJob(ctx context.Context, dec workflows.JobDecision) (domain.Record, error)
	RecoverJob(ctx context.Context, id, model string) (domain.Record, error)
	InstallJob(ctx context.Context, id, tuiPath string) (domain.Record, error)
	QueueJob(ctx context.Context, id string) (workflows.QueueView, error)
	UnqueueJob(ctx context.Context, id, reason string) (workflows.QueueView, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// Options are the dependencies and flags of jobs and jobs show.
type Options struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	// Interrupts delivers Ctrl+C to a watch; nil never interrupts.
	Interrupts <-chan os.Signal
	// Executable is axlr-tui's own path, which jobs install replaces too.
	Executable func() (string, error)

	// Action is what a jobs subcommand does with the job ID: show, watch,
	// approve, deny or decline; empty lists every job.
	Action string
	ID     string
	Reason string
	// Model runs a recovered job's steps (default: settings.json's).
	Model string
	JSON  bool
}

// NewCmdJobs returns the jobs command with its show subcommand. Each parses
// its arguments, then calls runF, or jobsRun when runF is nil.
func NewCmdJobs(f *factory.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts, Executable: os.Executable}
	run := func(ctx context.Context) error {
		if runF != nil {
			return runF(ctx, opts)
		}
		return jobsRun(ctx, opts)
	}
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List the /repair and /improve jobs, newest first",
		Long: `List every job the job registry holds, newest first: its id, kind,
status, step, pull request and when it last changed. With --json, one line:
the array of job records.

  axlr-tui jobs [--json]
  axlr-tui jobs show ID [--json]
  axlr-tui jobs watch ID [--json]          until the job next needs you, or ends
  axlr-tui jobs approve ID [--json]        the check command that waits, or the merge
  axlr-tui jobs deny ID --reason TEXT      the check command
  axlr-tui jobs decline ID --reason TEXT   the merge
  axlr-tui jobs recover ID [--model NAME]  run an interrupted job again
  axlr-tui jobs install ID                 install a merged job's candidate build
  axlr-tui jobs queue ID                   queue the merge in the repository's merge queue
  axlr-tui jobs unqueue ID [--reason TEXT] take it back

watch exits 0 when the job merged and completed, 3 when it waits for you
(approve, deny or decline it), 1 when it ended blocked, failed or
interrupted. approve, deny and decline return once the job's workflow has
taken the decision; --json prints the record then.`,
		Args: cmdutil.ExactArgs(0, "usage: axlr-tui jobs [--json] | axlr-tui jobs show|watch|approve|deny|decline ID"),
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd.Context()) },
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the records as JSON")
	subs := cmdutil.AddIDCommands(cmd, []cmdutil.IDCommand{
		{Name: "show", Usage: "show ID [--json]", Short: "Print one job's record"},
		{Name: "watch", Usage: "watch ID [--json]", Short: "Follow a job until it next needs the person, or ends"},
		{Name: "approve", Usage: "approve ID [--json]", Short: "Approve what the job waits for: its check command, or its merge"},
		{Name: "deny", Usage: "deny ID --reason TEXT [--json]", Short: "Deny the check command the job waits on", Reason: true},
		{Name: "decline", Usage: "decline ID --reason TEXT [--json]", Short: "Decline the job's merge: it ends blocked, the pull request left open", Reason: true},
		{Name: "recover", Usage: "recover ID [--model NAME] [--json]", Short: "Run an interrupted job again, in its session and clone"},
		{Name: "install", Usage: "install ID [--json]", Short: "Install a merged job's candidate over axlrd and axlr-tui (restart axlrd after)"},
		{Name: "queue", Usage: "queue ID [--json]", Short: "Queue the job's merge: the merge queue lands it in its turn, as jobs approve would"},
		{Name: "unqueue", Usage: "unqueue ID [--reason TEXT] [--json]", Short: "Take the job off its merge queue; it goes on waiting for its merge decision"},
	}, &opts.JSON, &opts.Reason, "the job's record and the model keep it", func(c *cobra.Command, name, id string) error {
		opts.Action, opts.ID = name, id
		return run(c.Context())
	})
	subs["unqueue"].Flags().StringVar(&opts.Reason, "reason", "", "why")
	subs["recover"].Flags().StringVar(&opts.Model, "model", "", "model `NAME` of the job's steps (default: settings.json's)")
	return cmd
}

func jobsRun(ctx context.Context, opts *Options) error {
	c, err := opts.Client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	switch opts.Action {
	case "watch":
		if err := c.CheckWorker(ctx); err != nil {
			return err
		}
		rec, err := c.JobNow(ctx, opts.ID)
		if err != nil {
			// The job's workflow is gone (its history retired) or never
			// started: an ended job is the registry's record.
			reg, rerr := c.Job(ctx, opts.ID)
			if rerr != nil || !reg.Terminal() {
				return err
			}
			return printEnded(opts, reg)
		}
		return follow(ctx, opts.IO, opts.Interrupts, opts.JSON, c, rec)
	case "approve", "deny", "decline":
		return decideRun(ctx, opts, c)
	case "recover":
		if err := c.CheckWorker(ctx); err != nil {
			return err
		}
		rec, err := c.RecoverJob(ctx, opts.ID, opts.Model)
		if err != nil {
			return err
		}
		if opts.JSON {
			cmdutil.WriteJSONLine(opts.IO.Out, rec)
			return nil
		}
		fmt.Fprintf(opts.IO.Out, "recovered job %s: it runs again in session %s and clone %s (axlr-tui jobs watch %s follows it)\n", rec.ID, rec.Session, rec.Clone, rec.ID)
		return nil
	case "install":
		return installRun(ctx, opts, c)
	case "queue", "unqueue":
		return queueRun(ctx, opts, c)
	}
	if opts.ID != "" {
		// The job's workflow knows where it stands now; the registry's
		// record is its last report, or all there is once the workflow is
		// gone.
		reg, regErr := c.Job(ctx, opts.ID)
		rec, err := c.JobNow(ctx, opts.ID)
		switch {
		case err == nil && regErr == nil:
			// The queue's place is the registry's.
			rec.Queue = reg.Queue
		case regErr != nil:
			return regErr
		default:
			rec = reg
		}
		if opts.JSON {
			cmdutil.WriteJSONLine(opts.IO.Out, rec)
			return nil
		}
		printRecord(opts.IO.Out, rec)
		if err == nil && !rec.Terminal() {
			// What the record cannot say: an activity failing and tried
			// again. Not knowing it leaves the record as it is.
			retries, _ := c.JobRetries(ctx, opts.ID)
			for _, r := range retries {
				fmt.Fprintf(opts.IO.Out, "%-13s %s\n", "retrying:", retryText(r, time.Now()))
			}
		}
		return nil
	}
	all, err := c.Jobs(ctx)
	if err != nil {
		return err
	}
	return cmdutil.PrintList(opts.IO.Out, opts.IO.ErrOut, opts.JSON, all,
		"axlr-tui: no jobs yet; start one with --repair \"<failure brief>\" or --improve \"<improvement brief>\"",
		"ID\tKIND\tSTATUS\tSTEP\tPULL REQUEST\tQUEUE\tUPDATED", func(r domain.Record) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", r.ID, r.Kind, r.Status, r.StepText(), pull(r), queued(r), r.Updated.UTC().Format(time.RFC3339))
		})
}

// queueRun queues the job's merge, or takes it back, and prints the queue.
func queueRun(ctx context.Context, opts *Options, c Client) error {
	if err := c.CheckWorker(ctx); err != nil {
		return err
	}
	var view workflows.QueueView
	var err error
	if opts.Action == "queue" {
		view, err = c.QueueJob(ctx, opts.ID)
	} else {
		view, err = c.UnqueueJob(ctx, opts.ID, opts.Reason)
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, view)
		return nil
	}
	if opts.Action == "unqueue" {
		fmt.Fprintf(opts.IO.Out, "took job %s off the merge queue of %s (%s); it waits for your merge decision\n", opts.ID, view.Repository, view.Base)
		return nil
	}
	for i, e := range view.Entries {
		if e.Job == opts.ID {
			fmt.Fprintf(opts.IO.Out, "queued job %s: #%d in the merge queue of %s (%s)\n", opts.ID, i+1, view.Repository, view.Base)
			return nil
		}
	}
	fmt.Fprintf(opts.IO.Out, "queued job %s in the merge queue of %s (%s)\n", opts.ID, view.Repository, view.Base)
	return nil
}

// installRun installs a merged job's candidate over axlrd's executable
// and this axlr-tui's.
func installRun(ctx context.Context, opts *Options, c Client) error {
	if err := c.CheckWorker(ctx); err != nil {
		return err
	}
	self, err := opts.Executable()
	if err != nil {
		return fmt.Errorf("jobs install: find axlr-tui's own executable: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	rec, err := c.InstallJob(ctx, opts.ID, self)
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, rec)
		return nil
	}
	version := ""
	if rec.Candidate != nil {
		version = rec.Candidate.Version
	}
	var installed []domain.Installed
	if rec.Installed != nil {
		installed = append(installed, *rec.Installed)
	}
	fmt.Fprintln(opts.IO.Out, workflows.InstallNote(version, installed))
	return nil
}

// queued is a job's place in its merge queue: "#2 queued", "ejected".
func queued(r domain.Record) string {
	switch q := r.Queue; {
	case q == nil:
		return "-"
	case q.Position > 0:
		return fmt.Sprintf("#%d %s", q.Position, q.State)
	}
	return string(r.Queue.State)
}

func pull(r domain.Record) string {
	if r.PullRequest == 0 {
		return "-"
	}
	return fmt.Sprintf("#%d", r.PullRequest)
}

// retryText is an activity tried again, as jobs show prints it:
// "forge.Prepare, attempt 3 of 6 in 4s; the last failed: …".
func retryText(r client.Retry, now time.Time) string {
	of := ""
	if r.MaxAttempts > 0 {
		of = fmt.Sprintf(" of %d", r.MaxAttempts)
	}
	when := "running"
	switch d := r.Next.Sub(now); {
	case r.Next.IsZero():
	case d > 0:
		when = "in " + d.Round(time.Second).String()
	default:
		when = "due"
	}
	return fmt.Sprintf("%s, attempt %d%s %s; the last failed: %s", r.Activity, r.Attempt, of, when, cmdutil.OneLine(r.Failure))
}

// printRecord prints a record's fields that are set, one per line.
func printRecord(out io.Writer, r domain.Record) {
	line := func(k, v string) {
		if strings.TrimSpace(v) != "" {
			fmt.Fprintf(out, "%-13s %s\n", k+":", v)
		}
	}
	line("id", r.ID)
	line("kind", string(r.Kind))
	line("status", string(r.Status))
	line("repository", r.Repository)
	line("step", strings.TrimPrefix(r.StepText(), "-"))
	line("state", r.State)
	line("instance", r.Instance)
	if r.PullRequest != 0 {
		line("pull request", fmt.Sprintf("#%d %s", r.PullRequest, r.URL))
	}
	line("head", r.HeadSHA)
	if q := r.Queue; q != nil {
		line("queue", strings.TrimSpace(strings.TrimPrefix(queued(r), "-")+": "+q.Note))
	}
	line("merged as", r.MergeSHA)
	line("reason", r.Reason)
	line("session", r.Session)
	line("origin", r.OriginSession)
	line("clone", r.Clone)
	if r.Attempt > 0 {
		line("attempt", fmt.Sprint(r.Attempt))
	}
	line("created", r.Created.UTC().Format(time.RFC3339))
	line("updated", r.Updated.UTC().Format(time.RFC3339))
	line("brief", cmdutil.OneLine(r.Brief))
}
