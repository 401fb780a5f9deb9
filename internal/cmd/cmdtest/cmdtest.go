// Package cmdtest holds what the tests of axlr-tui's commands share:
// golden files, the JSON field names of a type, Execute, which runs a
// command as axlr-tui's root would, and fakes of axlrd for the jobs and
// plans commands (jobs.go, plans.go).
package cmdtest

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
)

// Golden compares got byte for byte with testdata/<test name>.json (a
// subtest's file is testdata/<Test>/<case>.json). With update it writes
// got there first, for review.
func Golden(t *testing.T, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(t.Name())+".json")
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (go test -update writes it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// JSONFields returns the JSON names of the fields of v's struct type, in
// order, as encoding/json names them.
func JSONFields(v any) []string {
	typ := reflect.TypeOf(v)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	var names []string
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// Execute runs cmd with args, its help and usage discarded, as
// axlr-tui's root runs it: a flag pflag refuses is a usage error.
func Execute(cmd *cobra.Command, args ...string) error {
	cmd.SetFlagErrorFunc(cmdutil.FlagErrorFunc)
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	_, err := cmd.ExecuteC()
	return err
}

// JSON is v as encoding/json writes it.
func JSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
