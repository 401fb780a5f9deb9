package root

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/internal/tui"
	"github.com/underpass-ai/axlr/workflows"
)

// TUIClient is what the terminal UI needs of axlrd.
type TUIClient interface {
	tui.Client
	cmdutil.Worker
	// Settings are the settings the client read: the model, the jobs'
	// limit.
	Settings() *settings.Settings
}

var _ TUIClient = (*client.Client)(nil)

// TUIOptions are the dependencies and flags of axlr-tui alone.
type TUIOptions struct {
	IO     *factory.IOStreams
	Client func(context.Context) (TUIClient, error)
	// Getwd is the directory --root defaults to and resolves against.
	Getwd func() (string, error)
	// Run runs the terminal UI until the person leaves (tui.Run).
	Run func(ctx context.Context, c tui.Client, opts tui.Options) error

	// Model is the prompts' model (default: settings.json's model).
	Model string
	// Root is the workspace (default: the current directory).
	Root string
	// Mode is the work mode of the first prompt (default: none, so the
	// new session starts in normal mode); later prompts keep the
	// session's unless the person picks one in the terminal UI.
	Mode string
	// Approve is the prompts' approval level (default: the terminal UI's,
	// local).
	Approve string
	// Deltas follows a session's live deltas (factory.Factory.Deltas).
	Deltas func(ctx context.Context, sessionID string, fn func(contract.Event)) error
}

// newCmdTUI returns the command of axlr-tui alone. On a terminal it
// parses the flags, then calls runF, or tuiRun when runF is nil; off one
// it prints the help on stderr and exits 2.
func newCmdTUI(f *factory.Factory, runF func(context.Context, *TUIOptions) error) *cobra.Command {
	opts := &TUIOptions{IO: f.IOStreams, Client: factory.ClientFunc[TUIClient](f), Getwd: f.Getwd, Run: tui.Run, Deltas: f.Deltas}
	cmd := &cobra.Command{
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !opts.IO.IsStdinTTY() || !opts.IO.IsStdoutTTY() {
				cmd.SetOut(opts.IO.ErrOut)
				if err := cmd.Help(); err != nil {
					return err
				}
				return cmdutil.FlagErrorf("no command: the terminal UI needs a terminal; off one, name a command above")
			}
			if err := opts.complete(); err != nil {
				return err
			}
			return cmdutil.Run(cmd.Context(), opts, runF, tuiRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Model, "model", "", "the terminal UI's model `NAME` (default: settings.json's)")
	fl.StringVar(&opts.Root, "root", "", "the terminal UI's workspace `DIR` (default: the current directory)")
	fl.StringVar(&opts.Mode, "mode", "", "the work `MODE` of the terminal UI's first prompt: "+strings.Join(workflows.SupportedModes, ", ")+" (default: normal)")
	fl.StringVar(&opts.Approve, "approve", "", "the terminal UI's approval `LEVEL`: none, local or all (default local)")
	return cmd
}

func (o *TUIOptions) complete() error {
	if o.Mode != "" && !slices.Contains(workflows.SupportedModes, o.Mode) {
		return cmdutil.FlagErrorf("unknown mode %q: this axlr-tui supports %s", o.Mode, strings.Join(workflows.SupportedModes, ", "))
	}
	if o.Approve != "" {
		if _, err := policy.ParseApproval(o.Approve); err != nil {
			return cmdutil.FlagErrorf("--approve: %v", err)
		}
	}
	return nil
}

// tuiRun opens the terminal UI on axlrd, in the workspace.
func tuiRun(ctx context.Context, opts *TUIOptions) error {
	root, err := cmdutil.AbsRoot(opts.Root, opts.Getwd)
	if err != nil {
		return err
	}
	return cmdutil.WithWorker(ctx, opts.Client, func(c TUIClient) error {
		set := c.Settings()
		return opts.Run(ctx, c, tui.Options{Root: root, Model: cmp.Or(opts.Model, set.Model), Mode: opts.Mode,
			Approve: policy.Approval(opts.Approve), MaxActive: set.JobsMaxActive(), Deltas: opts.Deltas})
	})
}
