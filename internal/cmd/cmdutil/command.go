package cmdutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/underpass-ai/axlr/internal/cmd/factory"
)

// Closer is the client of a command, which closes it once done.
type Closer interface{ Close() }

// Worker is a client that can say whether axlrd's worker serves this
// host.
type Worker interface {
	Closer
	CheckWorker(ctx context.Context) error
}

// Run hands opts to runF, a test's, or else to run: the end of every
// command's RunE.
func Run[O any](ctx context.Context, opts O, runF, run func(context.Context, O) error) error {
	if runF != nil {
		return runF(ctx, opts)
	}
	return run(ctx, opts)
}

// Fetch dials axlrd with dial, returns what get does with the client, and
// closes it.
func Fetch[C Closer, T any](ctx context.Context, dial func(context.Context) (C, error), get func(C) (T, error)) (T, error) {
	c, err := dial(ctx)
	if err != nil {
		var none T
		return none, err
	}
	defer c.Close()
	return get(c)
}

// FetchWorked is Fetch for what axlrd's worker must do: it makes sure a
// worker serves this host first, so the request does not wait for none.
func FetchWorked[C Worker, T any](ctx context.Context, dial func(context.Context) (C, error), get func(C) (T, error)) (T, error) {
	return Fetch(ctx, dial, func(c C) (T, error) {
		if err := c.CheckWorker(ctx); err != nil {
			var none T
			return none, err
		}
		return get(c)
	})
}

// Report prints what a command did: with asJSON v as a JSON line, else
// the sentence that says it.
func Report(out io.Writer, asJSON bool, v any, sentence string) {
	if asJSON {
		WriteJSONLine(out, v)
		return
	}
	fmt.Fprintln(out, sentence)
}

// NeedReason refuses an empty --reason: command names the command ("jobs
// deny"), keeps who keeps the reason.
func NeedReason(reason, command, keeps string) error {
	if strings.TrimSpace(reason) == "" {
		return FlagErrorf("%s needs --reason TEXT: %s", command, keeps)
	}
	return nil
}

// AbsRoot is a workspace's absolute path: dir resolved against the
// current directory, which it defaults to; it must be a directory.
func AbsRoot(dir string, getwd func() (string, error)) (string, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		wd, err := getwd()
		if err != nil {
			return "", fmt.Errorf("current directory: %w", err)
		}
		dir = filepath.Join(wd, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return "", FlagErrorf("root %s is not a directory", dir)
	}
	return filepath.Clean(dir), nil
}

// With dials axlrd with dial and runs use with the client, closing it
// after.
func With[C Closer](ctx context.Context, dial func(context.Context) (C, error), use func(C) error) error {
	_, err := Fetch(ctx, dial, func(c C) (struct{}, error) { return struct{}{}, use(c) })
	return err
}

// WithWorker is With for what axlrd's worker must do (FetchWorked).
func WithWorker[C Worker](ctx context.Context, dial func(context.Context) (C, error), use func(C) error) error {
	_, err := FetchWorked(ctx, dial, func(c C) (struct{}, error) { return struct{}{}, use(c) })
	return err
}

// Show prints what a show command shows: with asJSON v as a JSON line,
// else what print writes.
func Show(out io.Writer, asJSON bool, v any, print func(io.Writer)) {
	if asJSON {
		WriteJSONLine(out, v)
		return
	}
	print(out)
}

// Detached says what a launch with --detach started: with asJSON its
// first line, else its id on stdout and note on stderr.
func Detached(ios *factory.IOStreams, asJSON bool, first any, id, note string) {
	if asJSON {
		WriteJSONLine(ios.Out, first)
		return
	}
	fmt.Fprintln(ios.Out, id)
	fmt.Fprintln(ios.ErrOut, note)
}
