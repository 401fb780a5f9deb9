package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEscapes tries every tool against symbolic links that point out of the
// workspace, and checks that nothing outside was touched or revealed.
func TestEscapes(t *testing.T) {
	f := newFixture(t, Options{})
	digest := digestOf(secret + "\n")
	tests := []struct {
		name string
		tool string
		args map[string]any
		code string
		msg  string
	}{
		{"read file link", Read, map[string]any{"path": "out-file"}, CodeInvalidPath, `path "out-file" resolves outside the workspace through a symbolic link`},
		{"read through directory link", Read, map[string]any{"path": "out-dir/secret.txt"}, CodeInvalidPath, `path "out-dir/secret.txt" resolves outside`},
		{"read absolute link", Read, map[string]any{"path": "abs-out"}, CodeInvalidPath, `path "abs-out" resolves outside`},
		{"read absolute link to inside", Read, map[string]any{"path": "abs-in"}, CodeInvalidPath, `path "abs-in" resolves outside`},
		{"create through directory link", Write, map[string]any{"path": "out-dir/new.txt", "content": "x", "mode": "create"}, CodeInvalidPath, `path "out-dir/new.txt" resolves outside`},
		{"create below directory link", Write, map[string]any{"path": "out-dir/d/new.txt", "content": "x", "mode": "create"}, CodeInvalidPath, `path "out-dir/d/new.txt" resolves outside`},
		{"create over file link", Write, map[string]any{"path": "out-file", "content": "x", "mode": "create"}, CodeConflict, `"out-file" already exists and create never overwrites`},
		{"replace file link", Write, map[string]any{"path": "out-file", "content": "x", "mode": "replace", "expected_sha256": digest}, CodeNotRegularFile, `"out-file" is a symbolic link, not a regular file`},
		{"replace through directory link", Write, map[string]any{"path": "out-dir/secret.txt", "content": "x", "mode": "replace", "expected_sha256": digest}, CodeInvalidPath, `path "out-dir/secret.txt" resolves outside`},
		{"edit file link", Edit, map[string]any{"path": "out-file", "old_text": "CANARY", "new_text": "x"}, CodeNotRegularFile, `"out-file" is a symbolic link`},
		{"edit through directory link", Edit, map[string]any{"path": "out-dir/secret.txt", "old_text": "CANARY", "new_text": "x"}, CodeInvalidPath, `path "out-dir/secret.txt" resolves outside`},
		{"edit link inside", Edit, map[string]any{"path": "in-file", "old_text": "hello", "new_text": "x"}, CodeNotRegularFile, `"in-file" is a symbolic link, not a regular file`},
		{"list through directory link", List, map[string]any{"path": "out-dir/x"}, CodeInvalidPath, `path "out-dir/x" resolves outside`},
		{"search directory link", Search, map[string]any{"pattern": "CANARY", "path": "out-dir"}, CodeNotSearchable, `path "out-dir" is a symbolic link, which search does not follow`},
		{"search file link", Search, map[string]any{"pattern": "CANARY", "path": "out-file/"}, CodeNotSearchable, `path "out-file" is a symbolic link`},
		{"search through directory link", Search, map[string]any{"pattern": "CANARY", "path": "out-dir/secret.txt"}, CodeInvalidPath, `path "out-dir/secret.txt" resolves outside`},
		{"exec cwd link", Exec, map[string]any{"program": "true", "cwd": "out-dir"}, CodeInvalidPath, `cwd "out-dir" resolves outside the workspace through a symbolic link`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.w.Call(context.Background(), tt.tool, args(t, tt.args))
			wantError(t, err, tt.code, tt.msg)
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error reveals the secret: %v", err)
			}
			assertOutsideIntact(t, f)
		})
	}
}

func assertOutsideIntact(t testing.TB, f *fixture) {
	t.Helper()
	entries, err := os.ReadDir(f.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "secret.txt" {
		t.Fatalf("outside directory holds %v", entries)
	}
	if got := readFile(t, filepath.Join(f.outside, "secret.txt")); got != secret+"\n" {
		t.Fatalf("outside secret changed to %q", got)
	}
}

// TestEscapesAreDescribedNotFollowed checks list and search over a tree with
// outward links: links are listed as links, never entered.
func TestEscapesAreDescribedNotFollowed(t *testing.T) {
	f := newFixture(t, Options{})
	for _, p := range []string{"out-dir", "out-dir/", "out-file"} {
		got := mustCall[ListOutput](t, f.w, List, map[string]any{"path": p})
		want := strings.TrimSuffix(p, "/")
		if len(got.Entries) != 1 || got.Entries[0].Path != want || got.Entries[0].Type != EntrySymlink || got.Entries[0].Size != nil {
			t.Errorf("list %s = %+v, want the link described", p, got.Entries)
		}
	}
	got := mustCall[ListOutput](t, f.w, List, map[string]any{"recursive": true, "max_depth": 10})
	var paths []string
	for _, e := range got.Entries {
		paths = append(paths, e.Path+":"+e.Type)
	}
	want := "a.txt:file abs-in:symlink abs-out:symlink in-dir:symlink in-file:symlink out-dir:symlink out-file:symlink sub:dir sub/b.txt:file"
	if strings.Join(paths, " ") != want {
		t.Errorf("recursive list = %s\nwant %s", strings.Join(paths, " "), want)
	}
	s := mustCall[SearchOutput](t, f.w, Search, map[string]any{"pattern": "CANARY|hello|inside"})
	var found []string
	for _, m := range s.Matches {
		found = append(found, m.Path)
	}
	if strings.Join(found, " ") != "a.txt sub/b.txt" || s.FilesScanned != 2 {
		t.Errorf("search found %v in %d files, want a.txt sub/b.txt in 2", found, s.FilesScanned)
	}
	out := mustCall[ExecOutput](t, f.w, Exec, map[string]any{"program": "pwd", "cwd": "in-dir"})
	if strings.TrimSpace(out.Stdout) != mustEval(t, filepath.Join(f.dir, "sub")) {
		t.Errorf("pwd in in-dir = %q", out.Stdout)
	}
	assertOutsideIntact(t, f)
}

func mustEval(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
