// Command axlr-tui submits work to axlrd and watches it: --exec, --decide,
// result and history. See internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/underpass-ai/axlr/internal/cli"
)

func main() {
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM)
	os.Exit(cli.Main(context.Background(), os.Args[1:], cli.IO{
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Interrupts: interrupts,
	}))
}
