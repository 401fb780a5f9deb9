// Package list is axlr-tui plans list (and axlr-tui plans alone): every
// plan, newest first, whatever its status.
package list

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/plans/shared"
	domain "github.com/underpass-ai/axlr/plans"
)

// Client is what list needs of axlrd.
type Client interface {
	Plans(ctx context.Context) ([]domain.Record, error)
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
		Short: "List the plans, newest first",
		Long: `List every plan, newest first, whatever its status: its id, status, tasks
done and waves. With --json, one line: the array of plan records.
` + shared.RecordHelp() + "\n\n" + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(0, shared.Usage("list [--json]")),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmdutil.Run(cmd.Context(), opts, runF, listRun) },
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the records as JSON")
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	all, err := cmdutil.Fetch(ctx, opts.Client, func(c Client) ([]domain.Record, error) { return c.Plans(ctx) })
	if err != nil {
		return err
	}
	return cmdutil.PrintList(opts.IO.Out, opts.IO.ErrOut, opts.JSON, all, "axlr-tui: no plans yet; start one with --plan \"<brief>\"",
		"ID\tSTATUS\tTASKS\tWAVES\tUPDATED", func(r domain.Record) string {
			return fmt.Sprintf("%s\t%s\t%s\t%d\t%s", r.ID, r.Status, shared.TaskCount(r), r.Waves, r.Updated.UTC().Format(time.RFC3339))
		})
}
