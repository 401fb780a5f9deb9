// Package queue is axlr-tui queue: every merge queue, its entries in
// order and what it does with each, and the jobs it gave up and why. It
// reads the queues with their Query and changes nothing.
package queue

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/workflows"
)

// QueueFields are the fields of a queue (workflows.QueueView) that --json
// prints, in order; a test pins them to the type.
var QueueFields = []string{"repository", "base", "entries", "ejected"}

// Client is what queue needs of axlrd.
type Client interface {
	Queues(ctx context.Context) ([]workflows.QueueView, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// Options are the dependencies and flags of queue.
type Options struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	JSON   bool
}

// NewCmdQueue returns the queue command. It parses its flags, then calls
// runF, or queueRun when runF is nil.
func NewCmdQueue(f *factory.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Client: factory.ClientFunc[Client](f)}
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List the merge queues, their entries in order and what each waits for",
		Long: `List every merge queue (one per repository and base branch): its entries
in order, the head first, with what the queue is doing with each, and the
jobs it gave up with their reasons. With --json, one line: the array of
queues.
Queue fields:
` + cmdutil.FieldsHelp(QueueFields) + `

  axlr-tui queue [--json]

Queue a job's merge with axlr-tui jobs queue ID; take it back with
axlr-tui jobs unqueue ID.

` + cmdutil.ExitHelp,
		Args: cmdutil.ExactArgs(0, "usage: axlr-tui queue [--json]"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmdutil.Run(cmd.Context(), opts, runF, queueRun) },
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the queues as JSON")
	return cmd
}

func queueRun(ctx context.Context, opts *Options) error {
	all, err := cmdutil.Fetch(ctx, opts.Client, func(c Client) ([]workflows.QueueView, error) { return c.Queues(ctx) })
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, all)
		return nil
	}
	if len(all) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "axlr-tui: no merge queue yet; queue a job's merge with axlr-tui jobs queue ID")
		return nil
	}
	for i, q := range all {
		if i > 0 {
			fmt.Fprintln(opts.IO.Out)
		}
		print(opts.IO.Out, q)
	}
	return nil
}

// print writes one queue: a title line, its entries, its ejections.
func print(out io.Writer, q workflows.QueueView) {
	fmt.Fprintf(out, "%s (%s): %d queued\n", q.Repository, q.Base, len(q.Entries))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for i, e := range q.Entries {
		fmt.Fprintf(tw, "  #%d\t%s\t#%d\t%s\t%s\n", i+1, e.Job, e.PullRequest, e.State, cmdutil.OneLine(e.Note))
	}
	tw.Flush()
	for _, e := range q.Ejected {
		fmt.Fprintf(out, "  off the queue %s: %s #%d (%s): %s\n", e.At.UTC().Format(time.RFC3339), e.Job, e.PullRequest, e.Code, cmdutil.OneLine(e.Reason))
	}
}
