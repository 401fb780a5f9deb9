// Package jobs is axlr-tui jobs: the /repair and /improve jobs the job
// registry holds, newest first, and one job's record. It reads them with
// the registry's Query and changes nothing.
package jobs

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
)

// Client is what jobs needs of axlrd.
type Client interface {
	Jobs(ctx context.Context) ([]domain.Record, error)
	Job(ctx context.Context, id string) (domain.Record, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// Options are the dependencies and flags of jobs and jobs show.
type Options struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	// ID is the job jobs show prints; empty lists them all.
	ID   string
	JSON bool
}

// NewCmdJobs returns the jobs command with its show subcommand. Each parses
// its arguments, then calls runF, or jobsRun when runF is nil.
func NewCmdJobs(f *factory.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
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
  axlr-tui jobs show ID [--json]`,
		Args: cmdutil.ExactArgs(0, "usage: axlr-tui jobs [--json] | axlr-tui jobs show ID [--json]"),
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd.Context()) },
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the records as JSON")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Print one job's record",
		Args:  cmdutil.ExactArgs(1, "usage: axlr-tui jobs show ID [--json]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			return run(cmd.Context())
		},
	}
	show.Flags().BoolVar(&opts.JSON, "json", false, "print the record as JSON")
	cmd.AddCommand(show)
	return cmd
}

func jobsRun(ctx context.Context, opts *Options) error {
	c, err := opts.Client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if opts.ID != "" {
		rec, err := c.Job(ctx, opts.ID)
		if err != nil {
			return err
		}
		if opts.JSON {
			cmdutil.WriteJSONLine(opts.IO.Out, rec)
			return nil
		}
		printRecord(opts.IO.Out, rec)
		return nil
	}
	all, err := c.Jobs(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, all)
		return nil
	}
	if len(all) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "axlr-tui: no jobs yet; start one with --repair \"<failure brief>\" or --improve \"<improvement brief>\"")
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tSTEP\tPULL REQUEST\tUPDATED")
	for _, r := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Kind, r.Status, step(r), pull(r), r.Updated.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func step(r domain.Record) string {
	if r.Step == "" {
		return "-"
	}
	if r.StepLimit > 0 {
		return fmt.Sprintf("%s %d/%d", r.Step, r.StepAttempt, r.StepLimit)
	}
	return r.Step
}

func pull(r domain.Record) string {
	if r.PullRequest == 0 {
		return "-"
	}
	return fmt.Sprintf("#%d", r.PullRequest)
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
	line("step", strings.TrimPrefix(step(r), "-"))
	line("state", r.State)
	line("instance", r.Instance)
	if r.PullRequest != 0 {
		line("pull request", fmt.Sprintf("#%d %s", r.PullRequest, r.URL))
	}
	line("head", r.HeadSHA)
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
