// Package close is axlr-tui sessions close: it leaves a session as the
// terminal UI's /exit does. axlrd runs the close as the session's next
// execution: its record's closing turn, with the session's summary, and
// the record closed. The command waits for that execution to end, then
// says where the record stands.
package close

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// Usage is close's usage line.
const Usage = "usage: axlr-tui sessions close ID [--reason TEXT]"

// Notice is said at the first Ctrl+C: a close is not interrupted.
const Notice = "axlr-tui: the close goes on in axlrd (Ctrl+C again to leave without waiting)"

// Client is what close needs of axlrd.
type Client interface {
	cmdutil.Worker
	CloseSession(ctx context.Context, sessionID, reason string) (client.Execution, error)
	Watch(ctx context.Context, ex client.Execution, w client.Watcher) (*contract.Result, error)
	SessionRecord(ctx context.Context, sessionID string) (workflows.SessionRecord, error)
}

var _ Client = (*client.Client)(nil)

// CloseOptions are close's dependencies and flags.
type CloseOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal

	SessionID string
	// Reason is why, for the closing turn's summary (default: axlrd's,
	// "the person left the session").
	Reason string
}

// NewCmdClose returns the close command. It parses and validates the
// arguments, then calls runF, or closeRun when runF is nil.
func NewCmdClose(f *factory.Factory, runF func(context.Context, *CloseOptions) error) *cobra.Command {
	opts := &CloseOptions{IO: f.IOStreams, Client: factory.ClientFunc[Client](f), Interrupts: f.Interrupts}
	cmd := &cobra.Command{
		Use:   "close ID",
		Short: "Leave a session: its record's closing turn, and the record closed",
		Long: `Leave session ID, as the terminal UI's /exit does: axlrd records the
closing turn of its record, with the session's summary and --reason, and
closes the record (its MADE instance ends CLOSED). close waits for the
closing execution to end, then prints

  session <ID> closed: <instance>, <N> turns

A session that runs an execution refuses the close (wait for its answer,
or interrupt it), and so does a session closed already; the refusal is
printed in axlrd's words and exits 1. A session that never had a prompt
has no record: it closes with none. Ctrl+C does not stop the close; a
second Ctrl+C leaves without waiting for it (exit 130).

  axlr-tui sessions close ID [--reason TEXT]

Exit codes: 0 closed, 1 refused or an error, 2 usage error, 4 axlrd
unreachable, 130 left with a second Ctrl+C.`,
		Args: cmdutil.ExactArgs(1, Usage),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.SessionID = args[0]
			if !session.ValidID(opts.SessionID) {
				return cmdutil.FlagErrorf("sessions close: %q is not a session id (a lowercase UUID, as axlr-tui sessions lists them)", opts.SessionID)
			}
			return cmdutil.Run(cmd.Context(), opts, runF, closeRun)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why you leave the session, for its closing turn's summary")
	return cmd
}

func closeRun(ctx context.Context, opts *CloseOptions) error {
	return cmdutil.WithWorker(ctx, opts.Client, func(c Client) error {
		ex, err := c.CloseSession(ctx, opts.SessionID, opts.Reason)
		if err != nil {
			return err
		}
		if err := wait(ctx, opts, c, ex); err != nil {
			return err
		}
		rec, err := c.SessionRecord(ctx, opts.SessionID)
		if err != nil {
			return err
		}
		printClosed(opts.IO.Out, opts.SessionID, rec)
		return nil
	})
}

// wait follows the closing execution to its end, as exec follows one:
// through axlrd restarts, its progress on stderr. The first Ctrl+C says
// the close goes on; the second leaves (cmdutil.ErrLeft).
func wait(ctx context.Context, opts *CloseOptions, c Client, ex client.Execution) error {
	stderr := cmdutil.NewLockedWriter(opts.IO.ErrOut)
	wctx, stop := cmdutil.OnInterrupt(ctx, opts.Interrupts, stderr, Notice, func(context.Context) error { return nil })
	res, err := c.Watch(wctx, ex, cmdutil.NewPrinter(io.Discard, stderr, false))
	if left := stop(); err != nil {
		if left {
			return cmdutil.ErrLeft
		}
		return fmt.Errorf("close session %s: %w", opts.SessionID, err)
	}
	if res.Status != contract.Completed {
		return fmt.Errorf("close session %s: the closing execution %s ended %s: %s", opts.SessionID, ex.ExecutionID, res.Status, res.Error)
	}
	return nil
}

// printClosed says where the record stands once closed.
func printClosed(out io.Writer, id string, rec workflows.SessionRecord) {
	if rec.Instance == "" {
		fmt.Fprintf(out, "session %s closed: it never had a prompt, so it has no record\n", id)
		return
	}
	turns := "turns"
	if rec.Turns == 1 {
		turns = "turn"
	}
	fmt.Fprintf(out, "session %s closed: %s, %d %s\n", id, rec.Instance, rec.Turns, turns)
}
