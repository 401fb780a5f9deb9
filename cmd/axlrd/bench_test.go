package main

import (
	"encoding/json"
	"testing"

	"github.com/underpass-ai/axlr/sandbox"
	"github.com/underpass-ai/axlr/tools"
)

// BenchmarkExecTrue is local_exec of true, unconfined and confined: what
// the sandbox adds to a command. It runs here, not in tools, because the
// launcher is the running binary, and this test binary links what axlrd
// links: the Go runtime's start grows with the binary (its interface
// tables), so a small launcher would measure less than axlrd pays.
func BenchmarkExecTrue(b *testing.B) {
	abi, _ := sandbox.ABI()
	call, err := json.Marshal(tools.ExecArgs{Program: "/bin/true"})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		box  *tools.Sandbox
	}{{"unconfined", nil}, {"landlock", &tools.Sandbox{Plan: sandbox.Plan{ABI: abi}}}} {
		b.Run(c.name, func(b *testing.B) {
			if c.box != nil && abi < 1 {
				b.Skip("the kernel offers no Landlock")
			}
			w, err := tools.Open(b.TempDir(), tools.Options{Sandbox: c.box})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			for b.Loop() {
				if _, err := w.Call(b.Context(), tools.Exec, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
