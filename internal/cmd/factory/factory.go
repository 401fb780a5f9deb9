// Package factory holds what axlr-tui's commands depend on: the IO
// streams, the working directory, Ctrl+C, and the constructor of the axlrd
// client for the connection the flags name. A command copies what it needs
// into its Options, so its tests replace each piece.
package factory

import (
	"bytes"
	"context"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/apiclient"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/settings"
)

// Factory is built once per invocation.
type Factory struct {
	IOStreams *IOStreams
	// Getwd returns the current directory, --root's default.
	Getwd func() (string, error)
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
	// Conn is the connection Client dials; the connection flags
	// (--temporal-address, --namespace, --settings) fill it.
	Conn client.Options
}

// New is the factory of the process: its standard streams, its working
// directory and environment, and interrupts as Ctrl+C.
func New(interrupts <-chan os.Signal) *Factory {
	return &Factory{
		IOStreams:  NewIOStreams(os.Stdin, os.Stdout, os.Stderr),
		Getwd:      os.Getwd,
		Interrupts: interrupts,
	}
}

// Client dials axlrd with f.Conn.
func (f *Factory) Client(ctx context.Context) (*client.Client, error) {
	return client.Dial(ctx, f.Conn)
}

// ClientFunc adapts Client to C, the few methods a command declares it
// needs; *client.Client must satisfy C (each command asserts it with
// var _ C = (*client.Client)(nil)).
func ClientFunc[C any](f *Factory) func(context.Context) (C, error) {
	return func(ctx context.Context) (C, error) {
		c, err := f.Client(ctx)
		if err != nil {
			var none C
			return none, err
		}
		return any(c).(C), nil
	}
}

// IOStreams are a command's standard input, output and error.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// stdinTTY, stdoutTTY: In, Out is a terminal, used by a person rather
	// than a program.
	stdinTTY, stdoutTTY bool
}

// NewIOStreams wraps the process's streams; a nil in reads as empty. In
// and Out are terminals when they are *os.File on one.
func NewIOStreams(in io.Reader, out, errOut io.Writer) *IOStreams {
	if in == nil {
		in = bytes.NewReader(nil)
	}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, stdinTTY: isTerminal(in), stdoutTTY: isTerminal(out)}
}

func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// IsStdoutTTY reports whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// SetStdoutTTY says whether standard output is a terminal.
func (s *IOStreams) SetStdoutTTY(tty bool) { s.stdoutTTY = tty }

// IsStdinTTY reports whether standard input is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// SetStdinTTY says whether standard input is a terminal.
func (s *IOStreams) SetStdinTTY(tty bool) { s.stdinTTY = tty }

// Test returns streams over buffers, neither standard input nor output a
// terminal, and the buffers: standard input, output and error.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// Deltas hands fn the live deltas (text.delta, reasoning.delta) of a
// session's model requests, from the service API of the axlrd on this
// host, until ctx ends. It returns at once with an error when that axlrd
// serves no API (apiclient.ErrNoService): its sessions' answers then
// arrive whole.
func (f *Factory) Deltas(ctx context.Context, sessionID string, fn func(contract.Event)) error {
	getenv := f.Conn.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	set, err := settings.Open(f.Conn.SettingsPath, getenv)
	if err != nil {
		return err
	}
	dir, err := set.Daemon.StateDirOr(getenv)
	if err != nil {
		return err
	}
	api, err := apiclient.FindLocal(dir)
	if err != nil {
		return err
	}
	return api.Deltas(ctx, sessionID, fn)
}
