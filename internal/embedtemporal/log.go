package embedtemporal

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// zlog adapts zerolog to the server's log.Logger. The server is chatty at
// info level, so its info lines are logged at debug; warnings and errors keep
// their level.
//
// The server calls Fatal where it gives up, and zerolog's Fatal would end
// the whole process with os.Exit(1): silently when the log goes to a buffer,
// as it does for an axlrd run inside a test. Here Fatal logs the line and
// panics with the message instead, so the failure surfaces with its reason:
// Start turns a panic while the server is built into an error, and anywhere
// else the panic names the message and the goroutine. While the server
// stops, services that lose each other may call Fatal; that is logged as an
// error and nothing more.
type zlog struct {
	l zerolog.Logger
	// quiet drops warnings: set while the server stops, when its services
	// complain about each other going away.
	quiet *atomic.Bool
}

// FatalError is what the server's Fatal panics with.
type FatalError struct {
	Message string
	Tags    []tag.Tag
}

func (e *FatalError) Error() string {
	var b strings.Builder
	b.WriteString("temporal server: ")
	b.WriteString(e.Message)
	for _, t := range e.Tags {
		fmt.Fprintf(&b, " %s=%v", t.Key(), tagValue(t))
	}
	return b.String()
}

func newTemporalLogger(l zerolog.Logger, quiet *atomic.Bool) log.Logger {
	return zlog{l: l.With().Str("component", "temporal").Logger(), quiet: quiet}
}

var _ log.WithLogger = zlog{}

func (z zlog) With(tags ...tag.Tag) log.Logger {
	ctx := z.l.With()
	for _, t := range tags {
		ctx = ctx.Interface(t.Key(), tagValue(t))
	}
	return zlog{l: ctx.Logger(), quiet: z.quiet}
}

func (z zlog) Debug(msg string, tags ...tag.Tag) { z.emit(z.l.Trace(), msg, tags) }
func (z zlog) Info(msg string, tags ...tag.Tag)  { z.emit(z.l.Debug(), msg, tags) }
func (z zlog) Warn(msg string, tags ...tag.Tag) {
	if z.quiet.Load() {
		return
	}
	if slices.ContainsFunc(byDesign, func(p string) bool { return strings.HasPrefix(msg, p) }) {
		z.emit(z.l.Debug(), msg, tags)
		return
	}
	z.emit(z.l.Warn(), msg, tags)
}

// byDesign are the server's warnings about what axlrd leaves out on
// purpose (the HTTP API, so Nexus's HTTP endpoints): debug lines, not a
// warning at every start.
var byDesign = []string{"HTTP API port has not been set"}

func (z zlog) Error(msg string, tags ...tag.Tag) { z.emit(z.l.Error(), msg, tags) }
func (z zlog) DPanic(msg string, tags ...tag.Tag) {
	z.emit(z.l.Error(), msg, tags)
}
func (z zlog) Panic(msg string, tags ...tag.Tag) {
	z.emit(z.l.Error(), msg, tags)
	panic(msg)
}
func (z zlog) Fatal(msg string, tags ...tag.Tag) {
	if z.quiet.Load() {
		z.emit(z.l.Error(), msg, tags)
		return
	}
	z.emit(z.l.WithLevel(zerolog.FatalLevel), msg, tags)
	panic(&FatalError{Message: msg, Tags: tags})
}

func (z zlog) emit(e *zerolog.Event, msg string, tags []tag.Tag) {
	if e == nil {
		return
	}
	for _, t := range tags {
		e = e.Interface(t.Key(), tagValue(t))
	}
	e.Msg(msg)
}

func tagValue(t tag.Tag) any {
	switch v := t.Value().(type) {
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	default:
		return v
	}
}
