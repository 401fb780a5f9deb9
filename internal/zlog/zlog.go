// Package zlog builds axlr's zerolog loggers and adapts them to the Temporal
// SDK's logger, so workflows (through workflow.GetLogger) and the SDK log
// through the same writer with the same fields.
package zlog

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	sdklog "go.temporal.io/sdk/log"
)

// New returns a logger writing to w: a console format when w is a terminal,
// JSON lines otherwise.
func New(w io.Writer, level zerolog.Level) zerolog.Logger {
	out := w
	if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(out).Level(level).With().Timestamp().Logger()
}

// ParseLevel reads a level name (trace, debug, info, warn, error).
func ParseLevel(s string) (zerolog.Level, error) {
	l, err := zerolog.ParseLevel(s)
	if err != nil || s == "" {
		return zerolog.InfoLevel, fmt.Errorf("unknown log level %q: use trace, debug, info, warn or error", s)
	}
	return l, nil
}

// SDK adapts a zerolog logger to the Temporal SDK. The SDK's info lines
// (worker start and stop, poller state) are logged at debug.
type SDK struct {
	L zerolog.Logger
}

var _ sdklog.Logger = SDK{}
var _ sdklog.WithLogger = SDK{}

// Debug logs at trace level.
func (s SDK) Debug(msg string, keyvals ...any) { s.emit(s.L.Trace(), msg, keyvals) }

// Info logs at debug level.
func (s SDK) Info(msg string, keyvals ...any) { s.emit(s.L.Debug(), msg, keyvals) }

// Warn logs at warn level.
func (s SDK) Warn(msg string, keyvals ...any) { s.emit(s.L.Warn(), msg, keyvals) }

// Error logs at error level.
func (s SDK) Error(msg string, keyvals ...any) { s.emit(s.L.Error(), msg, keyvals) }

// With returns a logger with the key-value pairs added.
func (s SDK) With(keyvals ...any) sdklog.Logger {
	ctx := s.L.With()
	for i := 0; i+1 < len(keyvals); i += 2 {
		ctx = ctx.Interface(fmt.Sprint(keyvals[i]), value(keyvals[i+1]))
	}
	return SDK{L: ctx.Logger()}
}

func (s SDK) emit(e *zerolog.Event, msg string, keyvals []any) {
	if e == nil {
		return
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		e = e.Interface(fmt.Sprint(keyvals[i]), value(keyvals[i+1]))
	}
	e.Msg(msg)
}

func value(v any) any {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	return v
}
