// Command axlr-tui runs work in axlrd and watches it: the terminal UI,
// exec, jobs, plans, result, history and queue. See internal/cmd/root.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/root"
)

func main() {
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM)
	os.Exit(root.Main(context.Background(), factory.New(interrupts), os.Args[1:]))
}
