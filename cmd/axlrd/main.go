// Command axlrd runs axlr's durable workflows: an embedded Temporal server
// (or an existing cluster), its Web UI, and the worker. See internal/daemon.
package main

import (
	"os"

	"github.com/underpass-ai/axlr/internal/daemon"
)

func main() {
	os.Exit(daemon.Main(os.Args[1:], os.Stdout, os.Stderr))
}
