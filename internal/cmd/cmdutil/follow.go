package cmdutil

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

// Follow is the watch of an execution, a job or a plan: it follows it
// until it next needs the person or ends, through axlrd restarts, and
// prints how it stands. The first Ctrl+C interrupts it, the second leaves
// the watch (ErrLeft). E is what the watch ends with.
type Follow[E any] struct {
	IO *factory.IOStreams
	// Interrupts delivers Ctrl+C; nil never interrupts.
	Interrupts <-chan os.Signal
	JSON       bool

	// First is the first line with --json ({"type":"job","job":{…}}) and
	// Started the first line on stderr without it; nil and empty print
	// nothing.
	First   any
	Started string
	// Notice is said on stderr at the first Ctrl+C, before Interrupt.
	Notice    string
	Interrupt func(context.Context) error
	// Watch follows, telling w each event it sees.
	Watch func(ctx context.Context, w client.Watcher) (E, error)
	// Beside, when set, runs beside a watch without --json until ctx
	// ends, writing to stderr, and closes the channel it returns once it
	// stopped.
	Beside func(ctx context.Context, stderr io.Writer) <-chan struct{}
	// End is what came of the watch.
	End func(E) End
}

// End is how a watch ended: the last line with --json, the status the
// exit code is, and what people read without --json.
type End struct {
	Line   any
	Status contract.Status
	Print  func(stdout, stderr io.Writer)
}

// Run follows and prints the end; its error carries the exit code.
func (f *Follow[E]) Run(ctx context.Context) error {
	stderr := NewLockedWriter(f.IO.ErrOut)
	switch {
	case f.JSON && f.First != nil:
		WriteJSONLine(f.IO.Out, f.First)
	case !f.JSON && f.Started != "":
		fmt.Fprintln(stderr, f.Started)
	}
	wctx, stop := OnInterrupt(ctx, f.Interrupts, stderr, f.Notice, f.Interrupt)
	bctx, stopBeside := context.WithCancel(wctx)
	var beside <-chan struct{}
	if f.Beside != nil && !f.JSON {
		beside = f.Beside(bctx, stderr)
	}
	end, err := f.Watch(wctx, NewPrinter(f.IO.Out, stderr, f.JSON))
	stopBeside()
	if beside != nil {
		<-beside
	}
	if left := stop(); err != nil {
		if left {
			return ErrLeft
		}
		return err
	}
	return f.finish(end, stderr)
}

// Ended prints an end no watch saw (a job whose workflow is gone) as a
// watch that ended there would.
func (f *Follow[E]) Ended(end E) error {
	if f.JSON && f.First != nil {
		WriteJSONLine(f.IO.Out, f.First)
	}
	return f.finish(end, f.IO.ErrOut)
}

func (f *Follow[E]) finish(end E, stderr io.Writer) error {
	e := f.End(end)
	if f.JSON {
		WriteJSONLine(f.IO.Out, e.Line)
	} else {
		e.Print(f.IO.Out, stderr)
	}
	return StatusExit(e.Status)
}
