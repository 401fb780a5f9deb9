package workflows

import (
	"go/build"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/underpass-ai/axlr"

// noIO are the standard packages that reach files, processes, the network
// or the machine. io/fs is not among them: it only declares a file
// system's interfaces (package plans verifies a workspace through one that
// its caller, an activity, opens).
var noIO = []string{"os", "net", "syscall", "io/ioutil", "database/sql", "plugin", "runtime/cgo", "unsafe", "log", "log/slog", "math/rand", "crypto/rand"}

// thirdParty are the modules outside the standard library that workflow
// code and the project packages it imports may use: Temporal's SDK and
// API, deterministic id digests, and a shell parser.
var thirdParty = []string{"go.temporal.io/sdk", "go.temporal.io/api", "github.com/google/uuid", "mvdan.cc/sh/v3/syntax"}

// TestImportsNoIO holds what doc.go says: workflows imports no I/O, nor
// does any project package it imports, directly or through another. It
// reads the imports of the non-test files, as go list does.
func TestImportsNoIO(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	queue := []string{module + "/workflows"}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if seen[path] {
			continue
		}
		seen[path] = true
		pkg, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(path, module)), 0)
		if err != nil {
			t.Fatalf("read the imports of %s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			switch {
			case imp == module || strings.HasPrefix(imp, module+"/"):
				queue = append(queue, imp)
			case ioImport(imp):
				t.Errorf("%s imports %s, which does I/O", path, imp)
			case !standard(imp) && !slices.ContainsFunc(thirdParty, func(m string) bool { return imp == m || strings.HasPrefix(imp, m+"/") }):
				t.Errorf("%s imports %s, which is not among the modules workflow code may use (thirdParty)", path, imp)
			}
		}
	}
	if !seen[module+"/forge/pull"] || seen[module+"/forge"] {
		t.Errorf("workflows should reach the forge's vocabulary (forge/pull) and not the forge: read %v", slices.Sorted(maps.Keys(seen)))
	}
}

func ioImport(imp string) bool {
	return slices.ContainsFunc(noIO, func(p string) bool { return imp == p || strings.HasPrefix(imp, p+"/") })
}

// standard reports whether an import path is the standard library's: its
// first element has no dot.
func standard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}
