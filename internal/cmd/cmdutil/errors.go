// Package cmdutil holds what axlr-tui's commands share: the errors that
// carry exit codes and ExitCode that maps them, the connection flags, the
// result's JSON and text output with its declared field lists, the
// printer of a watch's events and Follow, the watch of an execution, a job
// or a plan to where it next needs the person.
package cmdutil

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
)

// Exit codes. --exec, --decide and result follow the runtime contract (0
// completed, 3 needs_decision, 1 interrupted or failed); every command
// exits 1 for an error, 2 for a usage error, 4 when axlrd is unreachable
// and 130 when a second Ctrl+C leaves a watch.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitNeedsDecide = 3
	ExitUnreachable = 4
	ExitSignal      = 130
)

// ExitHelp is the exit codes of a command that is not a watch, for its
// Long help.
const ExitHelp = "Exit codes: 0 ok, 1 error, 2 usage error, 4 axlrd unreachable."

// ErrLeft: the person left a watch with a second Ctrl+C.
var ErrLeft = errors.New("left without waiting; the execution goes on in axlrd")

// FlagError is a usage error: a flag or an argument the command cannot
// take.
type FlagError struct{ err error }

func (e *FlagError) Error() string { return e.err.Error() }

func (e *FlagError) Unwrap() error { return e.err }

// FlagErrorf returns a usage error.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{err: fmt.Errorf(format, args...)}
}

// FlagErrorWrap makes a flag parser's error a usage error. An unknown
// flag reads as Go's flag package wrote it, as axlr-tui did before pflag.
func FlagErrorWrap(err error) error {
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() == "" {
		err = fmt.Errorf("flag provided but not defined: -%s", unknown.GetSpecifiedName())
	}
	return &FlagError{err: err}
}

// FlagErrorFunc is the root's cobra.FlagErrorFunc: a flag pflag refuses
// is a usage error (FlagErrorWrap).
func FlagErrorFunc(_ *cobra.Command, err error) error { return FlagErrorWrap(err) }

// ExactArgs requires n positional arguments; usage is the message
// otherwise.
func ExactArgs(n int, usage string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return FlagErrorf("%s", usage)
		}
		return nil
	}
}

// NoCommand refuses the arguments of a command that groups others
// ("axlr-tui jobs bogus"): it takes none of its own.
func NoCommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return FlagErrorf("unknown command %q for %q (%s --help lists its commands)", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return nil
}

// StatusError ends a command with an execution's exit code, printing
// nothing: the result said it all.
type StatusError struct{ Status contract.Status }

func (e *StatusError) Error() string { return "execution " + string(e.Status) }

// StatusExit is nil for a completed execution, else its *StatusError.
func StatusExit(s contract.Status) error {
	if s.ExitCode() == ExitOK {
		return nil
	}
	return &StatusError{Status: s}
}

// ExitCode maps a command's error to its exit code and prints it on
// stderr, unless it is a *StatusError.
func ExitCode(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var status *StatusError
	if errors.As(err, &status) {
		return status.Status.ExitCode()
	}
	code := ExitFailed
	switch {
	case errors.As(err, new(*FlagError)), errors.As(err, new(*client.ConfigError)):
		code = ExitUsage
	case errors.As(err, new(*client.UnreachableError)), errors.As(err, new(*client.NoWorkerError)):
		code = ExitUnreachable
	case errors.Is(err, ErrLeft):
		code = ExitSignal
	}
	fmt.Fprintln(stderr, "axlr-tui:", err)
	return code
}

// AddConnectionFlags adds --temporal-address, --namespace and --settings,
// which fill o.
func AddConnectionFlags(fs *pflag.FlagSet, o *client.Options) {
	fs.StringVar(&o.Address, "temporal-address", "", "axlrd's Temporal frontend at `HOST:PORT` (default: settings.json's daemon, else "+client.DefaultAddress+")")
	fs.StringVar(&o.Namespace, "namespace", "", "Temporal namespace `NAME` (default \""+client.DefaultNamespace+"\")")
	fs.StringVar(&o.SettingsPath, "settings", "", "settings `FILE` (default $XDG_CONFIG_HOME/axlr/settings.json)")
}
