// Package cli is axlr-tui's command line: --exec runs a prompt as a durable
// execution in axlrd and prints its result, --decide decides a pending call,
// result prints a session's last result and history its trajectory. It talks
// to axlrd only through Temporal: start, update, query and history.
//
// The interactive TUI arrives with its own issue; without a command axlr-tui
// prints its usage.
package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/hostid"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/redact"
)

// Exit codes. --exec and --decide follow the runtime contract (0, 3, 1);
// every command exits 2 for a usage error and 4 when axlrd is unreachable.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitNeedsDecide = 3
	ExitUnreachable = 4
	ExitSignal      = 130
)

// DefaultTemporalAddress is where axlrd's embedded server listens.
const DefaultTemporalAddress = "127.0.0.1:7233"

const usage = `Usage:
  axlr-tui --exec "<prompt>" [--model NAME] [--root DIR] [--mode normal|debug|delivery]
           [--approve none|local|all] [--session ID] [--policy FILE] [--json]
  axlr-tui --session ID --decide approve|deny [--call ID] [--reason TEXT]
           [--policy FILE] [--json]
  axlr-tui result SESSION_ID [--json]
  axlr-tui history ID [--json]

axlr-tui runs work in axlrd (start it with "go run ./cmd/axlrd" or "axlrd").

--exec runs the prompt as one durable execution and prints the answer; with
--json it prints the event lines and then {"type":"result","result":{...}}.
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
`

// IO holds the process's streams and environment.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Getwd          func() (string, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
}

// Main runs axlr-tui and returns its exit code.
func Main(ctx context.Context, args []string, sys IO) int {
	if sys.Getenv == nil {
		sys.Getenv = os.Getenv
	}
	if sys.Getwd == nil {
		sys.Getwd = os.Getwd
	}
	if len(args) == 0 {
		fmt.Fprint(sys.Stderr, usage)
		return ExitUsage
	}
	var err error
	cmd, rest := subcommand(args)
	switch cmd {
	case "result":
		err = runResult(ctx, rest, sys)
	case "history":
		err = runHistory(ctx, rest, sys)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(sys.Stdout, usage)
		return ExitOK
	default:
		err = runExec(ctx, args, sys)
	}
	return exitCode(err, sys.Stderr)
}

// subcommand finds result or history after the connection flags a person
// may put first ("axlr-tui --temporal-address H:P result ID") and returns it
// with the other arguments; anything else is args[0] and args[1:].
func subcommand(args []string) (string, []string) {
	i := 0
	for i < len(args) {
		switch a := args[i]; {
		case a == "--temporal-address" || a == "-temporal-address" || a == "--namespace" || a == "-namespace":
			i += 2
			continue
		case a == "--json" || a == "-json" || strings.HasPrefix(a, "--temporal-address=") || strings.HasPrefix(a, "-temporal-address=") ||
			strings.HasPrefix(a, "--namespace=") || strings.HasPrefix(a, "-namespace="):
			i++
			continue
		}
		break
	}
	if i > 0 && i < len(args) && (args[i] == "result" || args[i] == "history") {
		return args[i], append(slices.Clone(args[:i]), args[i+1:]...)
	}
	return args[0], args[1:]
}

// exitError carries an exit code and, unless silent, a message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitWith(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// statusExit ends a command with an execution's exit code, printing nothing.
func statusExit(s contract.Status) error {
	if c := s.ExitCode(); c != 0 {
		return &exitError{code: c}
	}
	return nil
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		if e.msg != "" {
			fmt.Fprintln(stderr, "axlr-tui:", e.msg)
		}
		return e.code
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintln(stderr, "axlr-tui:", err)
	return ExitFailed
}

// common are the flags every command takes.
type common struct {
	address   string
	namespace string
	settings  string
	json      bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.address, "temporal-address", "", "axlrd's Temporal frontend host:port (default 127.0.0.1:7233)")
	fs.StringVar(&c.namespace, "namespace", "", "Temporal namespace (default \"default\")")
	fs.StringVar(&c.settings, "settings", "", "settings file")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

func newFlagSet(name string, sys IO) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(sys.Stderr)
	fs.Usage = func() { fmt.Fprint(sys.Stderr, usage) }
	return fs
}

// parseInterleaved parses flags and positional arguments in any order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &exitError{code: ExitUsage, msg: err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// connect reads the settings file the daemon reads by default, then dials
// axlrd's Temporal frontend, failing fast with a message that says how to
// start it.
func (c *common) connect(ctx context.Context, sys IO) (client.Client, error) {
	path := c.settings
	if path == "" {
		p, err := settings.DefaultPath(sys.Getenv)
		if err != nil {
			return nil, err
		}
		path = p
	}
	set, err := settings.Load(path)
	if err != nil {
		return nil, exitWith(ExitUsage, "%v", err)
	}
	addr := cmp.Or(c.address, set.Daemon.TemporalAddress, DefaultTemporalAddress)
	ns := cmp.Or(c.namespace, set.Daemon.Namespace, "default")
	red := redact.New(append(append([]string(nil), set.Secrets...), redact.Secrets(os.Environ())...))
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl, err := client.DialContext(dctx, client.Options{
		HostPort:      addr,
		Namespace:     ns,
		Logger:        quietLogger{},
		DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), red.Codec()),
	})
	if err != nil {
		return nil, unreachable(addr, err)
	}
	return cl, nil
}

func unreachable(addr string, err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i > 0 {
		msg = msg[:i]
	}
	return exitWith(ExitUnreachable, "axlrd not reachable at %s: start it with \"go run ./cmd/axlrd\" (or \"axlrd\"), or pass --temporal-address (%s)", addr, msg)
}

// hostQueue is the task queue of this machine's axlrd.
func hostQueue(sys IO) (string, error) {
	id, err := hostid.Get(sys.Getenv)
	if err != nil {
		return "", exitWith(ExitUsage, "%v", err)
	}
	return "axlr-host-" + id, nil
}

func absRoot(dir string, sys IO) (string, error) {
	if dir == "" {
		wd, err := sys.Getwd()
		if err != nil {
			return "", fmt.Errorf("current directory: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", exitWith(ExitUsage, "root %s: %v", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", exitWith(ExitUsage, "root %s is not a directory", abs)
	}
	return abs, nil
}

// quietLogger drops the SDK's logs: axlr-tui reports errors itself.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
