package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// assertNoTemp fails if a temporary file of write was left in dir.
func assertNoTemp(t testing.TB, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".axlr-tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriteCreate(t *testing.T) {
	w, dir := newWorkspace(t)
	tests := []struct {
		name, path, content string
	}{
		{"new file", "a.txt", "hello\n"},
		{"missing parents", "new/deep/f.txt", "deep"},
		{"empty content", "empty", ""},
		{"unicode", "ü.txt", "grüße ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustCall[WriteOutput](t, w, Write, map[string]any{"path": tt.path, "content": tt.content, "mode": "create"})
			if out.WrittenBytes != int64(len(tt.content)) || out.ContentSHA256 != digestOf(tt.content) {
				t.Errorf("output = %+v", out)
			}
			if got := readFile(t, filepath.Join(dir, tt.path)); got != tt.content {
				t.Errorf("file holds %q, want %q", got, tt.content)
			}
		})
	}
	assertNoTemp(t, dir)
}

func TestWriteCreateNeverOverwrites(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "original")
	mkdir(t, filepath.Join(dir, "sub"))
	symlink(t, "nowhere", filepath.Join(dir, "dangling"))
	tests := []struct {
		path, msg string
	}{
		{"a.txt", `"a.txt" already exists and create never overwrites`},
		{"sub", `"sub" already exists`},
		{"dangling", `"dangling" already exists`},
		{"a.txt/x", `a parent of "a.txt/x" is not a directory`},
	}
	for _, tt := range tests {
		_, err := call[WriteOutput](t, w, Write, map[string]any{"path": tt.path, "content": "new", "mode": "create"})
		wantError(t, err, CodeConflict, tt.msg)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "original" {
		t.Errorf("a.txt = %q after refused creates", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("create through a dangling link made its target: %v", err)
	}
	assertNoTemp(t, dir)
}

func TestWriteReplace(t *testing.T) {
	w, dir := newWorkspace(t)
	p := filepath.Join(dir, "run.sh")
	writeFile(t, p, "#!/bin/sh\necho old\n")
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	old := digestOf("#!/bin/sh\necho old\n")
	out := mustCall[WriteOutput](t, w, Write, map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho new\n", "mode": "replace", "expected_sha256": strings.ToUpper(old)})
	if out.WrittenBytes != int64(len("#!/bin/sh\necho new\n")) || out.ContentSHA256 != digestOf("#!/bin/sh\necho new\n") {
		t.Errorf("output = %+v", out)
	}
	if got := readFile(t, p); got != "#!/bin/sh\necho new\n" {
		t.Errorf("file = %q", got)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o751 {
		t.Errorf("mode after replace = %v, %v; want 0751", fi.Mode(), err)
	}
	// The old digest no longer matches.
	_, err := call[WriteOutput](t, w, Write, map[string]any{"path": "run.sh", "content": "x", "mode": "replace", "expected_sha256": old})
	wantError(t, err, CodeConflict, `"run.sh" has content_sha256 `+out.ContentSHA256+", not the expected "+old)
	if got := readFile(t, p); got != "#!/bin/sh\necho new\n" {
		t.Errorf("file changed by a refused replace: %q", got)
	}
	assertNoTemp(t, dir)
}

func TestWriteReplaceErrors(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, filepath.Join(dir, "big.bin"), strings.Repeat("b", maxFileBytes+1))
	mkdir(t, filepath.Join(dir, "sub"))
	symlink(t, "big.bin", filepath.Join(dir, "link"))
	digest := strings.Repeat("0", 64)
	tests := []struct {
		path, code, msg string
	}{
		{"missing.txt", CodeNotFound, `path "missing.txt" does not exist`},
		{"sub", CodeNotRegularFile, `"sub" is a directory, not a regular file`},
		{"link", CodeNotRegularFile, `"link" is a symbolic link, not a regular file`},
		{"big.bin", CodeFileTooLarge, `"big.bin" is 1048577 bytes, over the 1048576 byte editable limit`},
	}
	for _, tt := range tests {
		_, err := call[WriteOutput](t, w, Write, map[string]any{"path": tt.path, "content": "x", "mode": "replace", "expected_sha256": digest})
		wantError(t, err, tt.code, tt.msg)
	}
}

func TestEdit(t *testing.T) {
	w, dir := newWorkspace(t)
	p := filepath.Join(dir, "main.go")
	orig := "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"
	writeFile(t, p, orig)
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustCall[EditOutput](t, w, Edit, map[string]any{"path": "main.go", "old_text": `println("hi")`, "new_text": `println("hello")`, "expected_sha256": digestOf(orig)})
	want := strings.Replace(orig, `"hi"`, `"hello"`, 1)
	if out.WrittenBytes != int64(len(want)) || out.ContentSHA256 != digestOf(want) {
		t.Errorf("output = %+v", out)
	}
	if got := readFile(t, p); got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after edit = %v, want 0600", fi.Mode())
	}
	// An empty new_text deletes.
	mustCall[EditOutput](t, w, Edit, map[string]any{"path": "main.go", "old_text": "\n\n", "new_text": "\n"})
	if got := readFile(t, p); got != strings.Replace(want, "\n\n", "\n", 1) {
		t.Errorf("after deletion file = %q", got)
	}
	assertNoTemp(t, dir)
}

func TestEditErrors(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, filepath.Join(dir, "f.txt"), "one two two aaa\n")
	writeFile(t, filepath.Join(dir, "latin1.txt"), "caf\xe9\n")
	writeFile(t, filepath.Join(dir, "big.txt"), strings.Repeat("b", maxFileBytes+1))
	writeFile(t, filepath.Join(dir, "full.txt"), "X"+strings.Repeat("f", maxFileBytes-1))
	mkdir(t, filepath.Join(dir, "sub"))
	tests := []struct {
		name string
		args map[string]any
		code string
		msg  string
	}{
		{"no occurrence", map[string]any{"path": "f.txt", "old_text": "three", "new_text": "3"}, CodeConflict, `old_text does not occur in "f.txt"`},
		{"two occurrences", map[string]any{"path": "f.txt", "old_text": "two", "new_text": "2"}, CodeConflict, `old_text occurs 2 times in "f.txt"`},
		{"overlapping occurrences", map[string]any{"path": "f.txt", "old_text": "aa", "new_text": "b"}, CodeConflict, `old_text occurs 2 times in "f.txt" (overlapping occurrences count)`},
		{"digest mismatch", map[string]any{"path": "f.txt", "old_text": "one", "new_text": "1", "expected_sha256": strings.Repeat("f", 64)}, CodeConflict, `"f.txt" has content_sha256 ` + digestOf("one two two aaa\n")},
		{"not UTF-8", map[string]any{"path": "latin1.txt", "old_text": "caf", "new_text": "cafe"}, CodeInvalidText, `"latin1.txt" is not UTF-8 text (invalid byte at offset 3)`},
		{"file over 1 MiB", map[string]any{"path": "big.txt", "old_text": "b", "new_text": "c"}, CodeFileTooLarge, `"big.txt" is 1048577 bytes, over the 1048576 byte editable limit`},
		{"result over 1 MiB", map[string]any{"path": "full.txt", "old_text": "X", "new_text": "XY"}, CodeFileTooLarge, `the edit would make "full.txt" 1048577 bytes, over the 1048576 byte editable limit`},
		{"missing", map[string]any{"path": "nope.txt", "old_text": "a", "new_text": "b"}, CodeNotFound, `path "nope.txt" does not exist`},
		{"directory", map[string]any{"path": "sub", "old_text": "a", "new_text": "b"}, CodeNotRegularFile, `"sub" is a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call[EditOutput](t, w, Edit, tt.args)
			wantError(t, err, tt.code, tt.msg)
		})
	}
	if got := readFile(t, filepath.Join(dir, "f.txt")); got != "one two two aaa\n" {
		t.Errorf("f.txt changed by refused edits: %q", got)
	}
}

// TestConcurrentEdits runs edits of one file from several goroutines: each
// must apply, none lost.
func TestConcurrentEdits(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, filepath.Join(dir, "log.txt"), "END\n")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			a := args(t, map[string]any{"path": "log.txt", "old_text": "END", "new_text": fmt.Sprintf("<%d>END", i)})
			if _, err := w.Call(context.Background(), Edit, a); err != nil {
				errs <- err
			}
			// Reads and listings run alongside.
			if _, err := w.Call(context.Background(), List, nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := readFile(t, filepath.Join(dir, "log.txt"))
	for i := range n {
		if !strings.Contains(got, fmt.Sprintf("<%d>", i)) {
			t.Errorf("edit %d lost: %q", i, got)
		}
	}
}
