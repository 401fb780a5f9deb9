// Package root is axlr-tui's command tree: --exec and --decide, result
// and history, and the usage that lists them. Execute routes an
// invocation: one that holds --exec or --decide goes whole to the exec
// command, without cobra's subcommand lookup, so a prompt that reads
// "result" stays a prompt; anything else goes to the root command and its
// subcommands.
package root

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/exec"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/history"
	"github.com/underpass-ai/axlr/internal/cmd/jobs"
	"github.com/underpass-ai/axlr/internal/cmd/plans"
	"github.com/underpass-ai/axlr/internal/cmd/queue"
	"github.com/underpass-ai/axlr/internal/cmd/result"
	"github.com/underpass-ai/axlr/internal/tui"
)

// Usage is axlr-tui's help.
const Usage = `Usage:
  axlr-tui --exec "<prompt>" [--model NAME] [--root DIR]
           [--mode normal|review|writer|research|debug|delivery]
           [--approve none|local|all] [--session ID] [--policy FILE] [--json]
  axlr-tui --session ID --decide approve|deny [--call ID] [--reason TEXT]
           [--policy FILE] [--json]
  axlr-tui --session ID --stop-ceremony [--reason TEXT] [--json]
  axlr-tui result SESSION_ID [--json]
  axlr-tui history ID [--json]
  axlr-tui --repair "<failure brief or #123>" [--model NAME] [--json] [--detach]
  axlr-tui --improve "<improvement brief or #123>" [--model NAME] [--json] [--detach]
  axlr-tui jobs [--json] | axlr-tui jobs show|watch ID [--json]
  axlr-tui jobs approve ID | deny ID --reason TEXT | decline ID --reason TEXT
  axlr-tui jobs recover ID [--model NAME] | install ID
  axlr-tui jobs queue ID | unqueue ID [--reason TEXT]
  axlr-tui queue [--json]
  axlr-tui --plan "<brief>" [--model NAME] [--root DIR] [--json] [--detach]
  axlr-tui plans [--json] | show|watch|approve|recover ID | return|decline ID --reason TEXT

axlr-tui runs work in axlrd (start it with "go run ./cmd/axlrd" or "axlrd").
On a terminal, axlr-tui alone opens the terminal UI.

--exec runs the prompt as one durable execution and prints the answer; with
--json it prints the event lines and then {"type":"result","result":{...}}.
--exec - reads the prompt from standard input. --decide decides the call
--call names, or the one the session waits on (axlr-tui says which).
--stop-ceremony stops the /debug or /delivery the session runs: its MADE
instance ends CANCELLED and the session is back in normal mode.
--repair and --improve start a job: axlrd works in a clone of
repair.repository, opens the pull request, watches its checks and asks for
your merge decision; "axlr-tui jobs" lists the jobs and takes decisions.
An execution keeps running in axlrd when axlr-tui stops or axlrd restarts:
axlr-tui reconnects and waits for its result. Ctrl+C interrupts the
execution; a second Ctrl+C leaves without waiting.

Exit codes: 0 completed, 3 a call waits for a decision (decide it with
--session ID --decide approve|deny), 1 interrupted or failed, 2 usage error,
4 axlrd unreachable.

Common flags:
  --temporal-address HOST:PORT  axlrd's Temporal frontend (default 127.0.0.1:7233)
  --namespace NAME              Temporal namespace (default "default")
  --settings FILE               settings file (default $XDG_CONFIG_HOME/axlr/settings.json)

"axlr-tui --exec --help", "axlr-tui --repair --help", "axlr-tui result --help",
"axlr-tui history --help" and "axlr-tui jobs --help" say more.
`

// NewCmdRoot returns the root command with result and history.
func NewCmdRoot(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:               "axlr-tui",
		Short:             "Run work in axlrd and watch it",
		Long:              Usage,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 || !f.IOStreams.IsStdoutTTY() {
				return cmdutil.FlagErrorf("nothing to do: use --exec \"<prompt>\", --decide, --stop-ceremony, --repair, --improve, --plan, result, history, jobs, queue or plans (see --help); on a terminal, axlr-tui alone opens the terminal UI")
			}
			return runTUI(cmd.Context(), f)
		},
	}
	defaultHelp := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c.HasParent() {
			defaultHelp(c, args)
			return
		}
		fmt.Fprint(c.OutOrStdout(), Usage)
	})
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.FlagErrorWrap(err) })
	cmdutil.AddConnectionFlags(cmd.PersistentFlags(), &f.Conn)
	cmd.AddCommand(result.NewCmdResult(f, nil), history.NewCmdHistory(f, nil), jobs.NewCmdJobs(f, nil), queue.NewCmdQueue(f, nil), plans.NewCmdPlans(f, nil))
	return cmd
}

// runTUI opens the terminal UI on axlrd, in the current directory.
func runTUI(ctx context.Context, f *factory.Factory) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.CheckWorker(ctx); err != nil {
		return err
	}
	wd, err := f.Getwd()
	if err != nil {
		return fmt.Errorf("current directory: %w", err)
	}
	set := c.Settings()
	return tui.Run(ctx, c, tui.Options{Root: wd, Model: set.Model, MaxActive: set.JobsMaxActive()})
}

// Execute runs one invocation of axlr-tui.
func Execute(ctx context.Context, f *factory.Factory, args []string) error {
	var cmd *cobra.Command
	name, rest := subcommand(args)
	switch {
	case holdsExec(args):
		cmd = exec.NewCmdExec(f, nil)
	case holdsJob(args):
		cmd = jobs.NewCmdLaunch(f, nil)
	case holdsFlag(args, "plan"):
		cmd = plans.NewCmdLaunch(f, nil)
	case slices.Contains(subcommands, name):
		cmd = NewCmdRoot(f)
		args = append([]string{name}, rest...)
	default:
		cmd = NewCmdRoot(f)
	}
	cmd.SetArgs(append([]string{}, args...))
	cmd.SetIn(f.IOStreams.In)
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)
	_, err := cmd.ExecuteContextC(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		return cmdutil.FlagErrorWrap(err)
	}
	return err
}

// holdsExec reports whether args run --exec, --decide or --stop-ceremony.
func holdsExec(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--exec" || a == "--decide" || a == "--stop-ceremony" || strings.HasPrefix(a, "--exec=") || strings.HasPrefix(a, "--decide="):
			return true
		}
	}
	return false
}

// subcommands are axlr-tui's commands by name.
var subcommands = []string{"result", "history", "jobs", "queue", "plans"}

// holdsJob reports whether args start a job: --repair or --improve.
func holdsJob(args []string) bool { return holdsFlag(args, "repair") || holdsFlag(args, "improve") }

// holdsFlag reports whether args hold --name or --name=value before "--".
func holdsFlag(args []string, name string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--"+name || strings.HasPrefix(a, "--"+name+"="):
			return true
		}
	}
	return false
}

// subcommand finds result or history after the flags a person may put
// first ("axlr-tui --json --temporal-address H:P result ID") and returns
// it with the other arguments, for the subcommand to parse them all;
// anything else is args[0] and args[1:].
func subcommand(args []string) (string, []string) {
	i := 0
	for i < len(args) {
		switch a := args[i]; {
		case a == "--temporal-address" || a == "--namespace" || a == "--settings":
			i += 2
			continue
		case a == "--json" || strings.HasPrefix(a, "--temporal-address=") || strings.HasPrefix(a, "--namespace=") || strings.HasPrefix(a, "--settings="):
			i++
			continue
		}
		break
	}
	if i > 0 && i < len(args) && slices.Contains(subcommands, args[i]) {
		return args[i], append(slices.Clone(args[:i]), args[i+1:]...)
	}
	if len(args) == 0 {
		return "", nil
	}
	return args[0], args[1:]
}
