// Command axlr is the one-request worker: it reads one JSON request on stdin,
// runs one workspace tool of package tools under --root, or lists or calls
// the tools of the MCP plugins given with --plugin (plugins.list,
// plugins.call), and writes one JSON response on stdout. See run for the
// protocol and the exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	// With SIGPIPE notified, a write to a closed stdout fails (exit 1)
	// instead of killing the process; children still get the default.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, time.Now)
	stop()
	os.Exit(code)
}
