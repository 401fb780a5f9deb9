// Package cli is axlr-tui's entry point: Main runs one invocation and
// returns its exit code. --exec runs a prompt as a durable execution in
// axlrd and prints its result, --decide decides a pending call, result
// prints a session's last result and history its trajectory. The commands
// live in internal/cmd (one package each, on cobra) and reach axlrd
// through internal/client; this package keeps the names other packages
// and the end-to-end tests use.
//
// The interactive TUI arrives with its own issue; without a command
// axlr-tui prints its usage.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/root"
)

// Exit codes. --exec and --decide follow the runtime contract (0, 3, 1);
// every command exits 2 for a usage error and 4 when axlrd is unreachable.
const (
	ExitOK          = cmdutil.ExitOK
	ExitFailed      = cmdutil.ExitFailed
	ExitUsage       = cmdutil.ExitUsage
	ExitNeedsDecide = cmdutil.ExitNeedsDecide
	ExitUnreachable = cmdutil.ExitUnreachable
	ExitSignal      = cmdutil.ExitSignal
)

// IO holds the process's streams and environment.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Getwd          func() (string, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
}

// Trajectory is a workflow's history, readable (history --json).
type Trajectory = client.Trajectory

// LoadTrajectory reads every run of a workflow, following continue-as-new
// back to the first, and returns its steps oldest first.
func LoadTrajectory(ctx context.Context, c sdkclient.Client, workflowID string) (*Trajectory, error) {
	return client.LoadTrajectory(ctx, c, workflowID)
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
		fmt.Fprint(sys.Stderr, root.Usage)
		return ExitUsage
	}
	f := &factory.Factory{
		IOStreams:  factory.NewIOStreams(sys.Stdin, sys.Stdout, sys.Stderr),
		Getwd:      sys.Getwd,
		Interrupts: sys.Interrupts,
		Conn:       client.Options{Getenv: sys.Getenv},
	}
	return cmdutil.ExitCode(root.Execute(ctx, f, args), sys.Stderr)
}
