// Package result is axlr-tui result: it prints a session's last execution
// result (the answer, or the result object with --json) and exits with the
// result's code, as --exec would have.
package result

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/session"
)

// Client is what result needs of axlrd.
type Client interface {
	Result(ctx context.Context, sessionID string) (*contract.Result, error)
	Close()
}

var _ Client = (*client.Client)(nil)

// ResultOptions are result's dependencies and flags.
type ResultOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (Client, error)

	SessionID string
	JSON      bool
}

// NewCmdResult returns the result command. It parses and validates the
// arguments, then calls runF, or resultRun when runF is nil.
func NewCmdResult(f *factory.Factory, runF func(context.Context, *ResultOptions) error) *cobra.Command {
	opts := &ResultOptions{
		IO:     f.IOStreams,
		Client: factory.ClientFunc[Client](f),
	}
	cmd := &cobra.Command{
		Use:   "result SESSION_ID",
		Short: "Print a session's last execution result",
		Long: fmt.Sprintf(`Print the result of a session's last execution: the answer on stdout and
what to act on on stderr, or with --json the result object on one line.
Result fields:
%s

Exit codes: the result's, as --exec's (0 completed, 3 a call waits for a
decision, 1 interrupted or failed); 1 for an error, 2 usage error, 4 axlrd
unreachable.`, cmdutil.FieldsHelp(cmdutil.ResultFields)),
		Args: cmdutil.ExactArgs(1, "usage: axlr-tui result SESSION_ID [--json]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.SessionID = args[0]
			if !session.ValidID(opts.SessionID) {
				return cmdutil.FlagErrorf("%q is not a session id (a lowercase UUID)", opts.SessionID)
			}
			return cmdutil.Run(cmd.Context(), opts, runF, resultRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result object")
	return cmd
}

func resultRun(ctx context.Context, opts *ResultOptions) error {
	r, err := cmdutil.Fetch(ctx, opts.Client, func(c Client) (*contract.Result, error) { return c.Result(ctx, opts.SessionID) })
	if err != nil {
		return err
	}
	if opts.JSON {
		cmdutil.WriteJSONLine(opts.IO.Out, r)
	} else {
		cmdutil.PrintResult(opts.IO.Out, opts.IO.ErrOut, r)
	}
	return cmdutil.StatusExit(r.Status)
}
