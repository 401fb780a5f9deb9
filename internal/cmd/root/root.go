// Package root is axlr-tui's command tree and entry point. Main runs one
// invocation and returns its exit code: it maps the legacy flags onto the
// verbs (legacy.go, the one place that reads argv before cobra), then lets
// cobra route to the command. The root command alone opens the terminal
// UI on a terminal (tui.go); its subcommands live one package per command
// (exec, result, history, queue) or per verb (jobs/..., plans/...).
package root

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/cmd/ceremonies"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/exec"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/history"
	"github.com/underpass-ai/axlr/internal/cmd/jobs"
	"github.com/underpass-ai/axlr/internal/cmd/memory"
	"github.com/underpass-ai/axlr/internal/cmd/plans"
	"github.com/underpass-ai/axlr/internal/cmd/queue"
	"github.com/underpass-ai/axlr/internal/cmd/result"
	"github.com/underpass-ai/axlr/internal/cmd/sessions"
)

const long = `axlr-tui runs work in axlrd and watches it (start axlrd with
"go run ./cmd/axlrd" or "axlrd"). On a terminal, axlr-tui alone opens the
terminal UI on this directory; --model, --root, --mode and --approve are
the defaults of its prompts. Off a terminal it prints this help.

  axlr-tui exec "<prompt>" [--model NAME] [--root DIR] [--mode MODE]
                [--approve LEVEL] [--session ID] [--json]
  axlr-tui exec - ...                    the prompt from standard input
  axlr-tui exec --session ID --decide approve|deny [--call ID] [--json]
  axlr-tui exec --session ID --stop-ceremony [--reason TEXT] [--json]
  axlr-tui result SESSION_ID [--json]
  axlr-tui history ID [--json]
  axlr-tui jobs repair|improve "<brief or #123>" [--json] [--detach]
  axlr-tui jobs [--json]
  axlr-tui jobs show|watch|approve|deny|decline|recover|install|queue|unqueue ID
  axlr-tui queue [--json]
  axlr-tui plans new "<brief>" [--json] [--detach]
  axlr-tui plans [--json]
  axlr-tui plans show|watch|approve|return|decline|recover ID
  axlr-tui ceremonies [--json]
  axlr-tui ceremonies publish FILE.yaml [--json]
  axlr-tui memory wake ABOUT "<intent>" [--bytes N] [--json]
  axlr-tui memory list ABOUT [--kind KIND] [--json]
  axlr-tui memory show REF [--json]
  axlr-tui sessions [--json]
  axlr-tui sessions show|close ID

The runtime contract's forms and the flags of earlier releases work as
they did: --exec "<prompt>" is exec, --session ID --decide approve|deny
and --session ID --stop-ceremony are exec's, --repair and --improve are
jobs repair and jobs improve, and --plan is plans new. A prompt or a brief
that reads like a command ("axlr-tui --exec result") stays a prompt.

An execution, a job or a plan keeps running in axlrd when axlr-tui stops or
axlrd restarts: a watch reconnects and waits. Ctrl+C interrupts what it
watches; a second Ctrl+C leaves without waiting.

Exit codes: 0 ok (an execution completed, a job merged, a plan done), 3 a
call, a job or a plan waits for your decision, 1 failed, interrupted or an
error, 2 usage error, 4 axlrd unreachable, 130 left with a second Ctrl+C.
"axlr-tui COMMAND --help" says more, with the --json field lists.`

// NewCmdRoot returns axlr-tui's root command with every command.
func NewCmdRoot(f *factory.Factory) *cobra.Command {
	cmd := newCmdTUI(f, nil)
	cmd.Use = "axlr-tui"
	cmd.Short = "Run work in axlrd and watch it"
	cmd.Long = long
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.CompletionOptions = cobra.CompletionOptions{DisableDefaultCmd: true}
	cmd.SetFlagErrorFunc(cmdutil.FlagErrorFunc)
	cmdutil.AddConnectionFlags(cmd.PersistentFlags(), &f.Conn)
	cmd.AddCommand(
		exec.NewCmdExec(f, nil),
		result.NewCmdResult(f, nil),
		history.NewCmdHistory(f, nil),
		jobs.NewCmdJobs(f),
		queue.NewCmdQueue(f, nil),
		plans.NewCmdPlans(f),
		ceremonies.NewCmdCeremonies(f, nil),
		memory.NewCmdMemory(f),
		sessions.NewCmdSessions(f, nil),
	)
	return cmd
}

// Main runs axlr-tui with args and returns its exit code, having printed
// any error on f's standard error.
func Main(ctx context.Context, f *factory.Factory, args []string) int {
	if f.Getwd == nil {
		f.Getwd = os.Getwd
	}
	return cmdutil.ExitCode(execute(ctx, f, args), f.IOStreams.ErrOut)
}

func execute(ctx context.Context, f *factory.Factory, args []string) error {
	cmd := NewCmdRoot(f)
	args, err := mapLegacy(args, commandOf(cmd), valueOf(cmd))
	if err != nil {
		return err
	}
	cmd.SetArgs(args)
	cmd.SetIn(f.IOStreams.In)
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)
	_, err = cmd.ExecuteContextC(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		return cmdutil.FlagErrorWrap(err)
	}
	return err
}

// commandOf reports whether a word names one of root's commands.
func commandOf(root *cobra.Command) func(string) bool {
	return func(word string) bool {
		if word == "help" {
			return true
		}
		for _, c := range root.Commands() {
			if c.Name() == word || c.HasAlias(word) {
				return true
			}
		}
		return false
	}
}

// valueOf reports whether a flag of root, or of a verb a legacy flag
// runs, takes the next argument as its value.
func valueOf(root *cobra.Command) func(string) bool {
	cmds := []*cobra.Command{root}
	for _, l := range legacyFlags {
		if c, _, err := root.Find(l.verb); err == nil && c != root {
			cmds = append(cmds, c)
		}
	}
	return func(name string) bool {
		for _, c := range cmds {
			if fl := c.Flags().Lookup(name); fl != nil {
				return fl.NoOptDefVal == ""
			}
			if fl := c.InheritedFlags().Lookup(name); fl != nil {
				return fl.NoOptDefVal == ""
			}
		}
		return false
	}
}
