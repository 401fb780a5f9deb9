// Package list is axlr-tui jobs list (and axlr-tui jobs alone): every job
// the job registry holds, newest first.
package list

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/jobs/shared"
	domain "github.com/underpass-ai/axlr/jobs"
)

// Client is what list needs of axlrd.
type Client interface {
	Jobs(ctx context.Context) ([]domain.Record, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// ListOptions are list's dependencies and flags.
type ListOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	JSON bool
}

// NewCmdList returns the list command. It parses the flags, then calls
// runF, or listRun when runF is nil.
func NewCmdList(f *factory.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the /repair and /improve jobs, newest first",
		Long: `List every job the job registry holds, newest first: its id, kind,
status, step, pull request, place in its merge queue and when it last
changed. With --json, one line: the array of job records.
` + shared.RecordHelp() + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(0, shared.Usage("list [--json]")),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmdutil.Run(cmd.Context(), opts, runF, listRun) },
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the records as JSON")
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	all, err := cmdutil.Fetch(ctx, opts.Client, func(c Client) ([]domain.Record, error) { return c.Jobs(ctx) })
	if err != nil {
		return err
	}
	return cmdutil.PrintList(opts.IO.Out, opts.IO.ErrOut, opts.JSON, all,
		"axlr-tui: no jobs yet; start one with --repair \"<failure brief>\" or --improve \"<improvement brief>\"",
		"ID\tKIND\tSTATUS\tSTEP\tPULL REQUEST\tQUEUE\tUPDATED", func(r domain.Record) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", r.ID, r.Kind, r.Status, r.StepText(), shared.Pull(r), shared.Queued(r), r.Updated.UTC().Format(time.RFC3339))
		})
}
