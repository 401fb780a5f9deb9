// Package cmdtest holds what the tests of axlr-tui's commands share:
// golden files and the JSON field names of a type.
package cmdtest

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
