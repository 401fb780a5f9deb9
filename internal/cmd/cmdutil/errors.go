// Package cmdutil holds what axlr-tui's commands share: the errors that
// carry exit codes and ExitCode that maps them, the connection flags, and
// the result's JSON and text output with its declared field lists.
package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"strings"

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
	fs.StringVar(&o.Address, "temporal-address", "", "axlrd's Temporal frontend at `HOST:PORT` (default "+client.DefaultAddress+")")
	fs.StringVar(&o.Namespace, "namespace", "", "Temporal namespace `NAME` (default \""+client.DefaultNamespace+"\")")
	fs.StringVar(&o.SettingsPath, "settings", "", "settings `FILE` (default $XDG_CONFIG_HOME/axlr/settings.json)")
}

// TakeTextFlag takes the flag --name, whose value is a text (a prompt, a
// brief), out of args before pflag sees them: pflag would take the
// argument after it as its value even when that is another flag. Its
// value is --name=value, or the next argument when that is not a flag,
// else empty: the command then takes its first positional argument.
// Arguments after "--" are left as they are.
func TakeTextFlag(args []string, name string) (found bool, value string, rest []string) {
	flag := "--" + name
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return found, value, append(rest, args[i:]...)
		case a == flag:
			found = true
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
				i++
			}
		case strings.HasPrefix(a, flag+"="):
			found = true
			value = strings.TrimPrefix(a, flag+"=")
		default:
			rest = append(rest, a)
		}
	}
	return found, value, rest
}

// IDCommand is a subcommand that acts on one ID ("axlr-tui jobs approve
// ID"); with Reason it takes --reason TEXT and refuses to run without one.
type IDCommand struct {
	Name, Usage, Short string
	Reason             bool
}

// AddIDCommands adds subs to parent, each with --json (into asJSON) and,
// where it takes one, --reason (into reason). act runs with the command's
// name and ID; keeps says who keeps a reason, for the refusal of an empty
// one. It returns the commands by name, for flags of their own.
func AddIDCommands(parent *cobra.Command, subs []IDCommand, asJSON *bool, reason *string, keeps string,
	act func(cmd *cobra.Command, name, id string) error) map[string]*cobra.Command {
	out := map[string]*cobra.Command{}
	for _, sub := range subs {
		c := &cobra.Command{
			Use:   sub.Usage,
			Short: sub.Short,
			Args:  ExactArgs(1, "usage: axlr-tui "+parent.Name()+" "+sub.Usage),
			RunE: func(cmd *cobra.Command, args []string) error {
				if sub.Reason && strings.TrimSpace(*reason) == "" {
					return FlagErrorf("%s %s needs --reason TEXT: %s", parent.Name(), sub.Name, keeps)
				}
				return act(cmd, sub.Name, args[0])
			},
		}
		c.Flags().BoolVar(asJSON, "json", false, "print JSON")
		if sub.Reason {
			c.Flags().StringVar(reason, "reason", "", "why (required)")
		}
		parent.AddCommand(c)
		out[sub.Name] = c
	}
	return out
}
