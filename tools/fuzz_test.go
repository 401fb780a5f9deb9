package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPath feeds arbitrary paths to every tool in a workspace beside an
// outside directory holding a canary, with links pointing out. Nothing
// outside may change or show through, and no call may panic.
func FuzzPath(f *testing.F) {
	for _, p := range []string{
		"a.txt", "sub/b.txt", "in-file", "in-dir/b.txt", "new/file.txt", ".", "", "./", "sub/",
		"../x", "..", "../outside/secret.txt", "a/../../x", "sub/../../outside", "/etc/passwd", "//x",
		"out-file", "out-dir", "out-dir/", "out-dir/secret.txt", "out-dir/new.txt", "out-dir/../ws/a.txt",
		"abs-out", "abs-in", "in-dir/../out-file", "./out-dir/./secret.txt", "sub/./../out-dir/x",
		"a\x00b", strings.Repeat("../", 12) + "etc", strings.Repeat("x/", 300), "..\\outside", "~/x", "$HOME/x",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		fx := newFixture(t, Options{Env: []string{"PATH=/usr/bin:/bin"}})
		calls := []struct {
			tool string
			args map[string]any
		}{
			{Read, map[string]any{"path": p}},
			{Write, map[string]any{"path": p, "content": "fuzz", "mode": "create"}},
			{Write, map[string]any{"path": p, "content": "fuzz", "mode": "replace", "expected_sha256": digestOf(secret + "\n")}},
			{Edit, map[string]any{"path": p, "old_text": "CANARY", "new_text": "fuzz"}},
			{List, map[string]any{"path": p, "recursive": true, "max_depth": 8}},
			{Search, map[string]any{"pattern": "CANARY", "path": p}},
			{Search, map[string]any{"pattern": "x", "glob": p}},
			{Exec, map[string]any{"program": "true", "cwd": p}},
		}
		for _, c := range calls {
			raw, err := fx.w.Call(context.Background(), c.tool, args(t, c.args))
			text := string(raw)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("%s %q: error %T %v is not an *Error", c.tool, p, err, err)
				}
				text = e.Message
			}
			if strings.Contains(text, "CANARY") && !strings.Contains(p, "CANARY") {
				t.Fatalf("%s %q reveals the canary: %s", c.tool, p, text)
			}
			if err == nil && (c.tool == Edit || c.args["mode"] == ModeReplace) {
				t.Fatalf("%s %q changed a file holding the canary", c.tool, p)
			}
			if err == nil && c.tool == List {
				for _, e := range decode[ListOutput](t, raw).Entries {
					assertInside(t, fx, e.Path)
				}
			}
			if err == nil && c.tool == Search {
				for _, m := range decode[SearchOutput](t, raw).Matches {
					assertInside(t, fx, m.Path)
				}
			}
		}
		assertOutsideIntact(t, fx)
		base, err := os.ReadDir(filepath.Dir(fx.dir))
		if err != nil {
			t.Fatal(err)
		}
		if len(base) != 2 {
			t.Fatalf("something appeared beside the workspace: %v", base)
		}
	})
}

// assertInside checks that a reported path names an entry inside the
// workspace, reached without following a link outward.
func assertInside(t *testing.T, fx *fixture, rel string) {
	t.Helper()
	full := filepath.Join(fx.dir, filepath.FromSlash(rel))
	if !strings.HasPrefix(full, fx.dir+string(filepath.Separator)) {
		t.Fatalf("reported path %q is outside the workspace", rel)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(full))
	if err != nil {
		t.Fatalf("reported path %q: %v", rel, err)
	}
	if root := mustEval(t, fx.dir); parent != root && !strings.HasPrefix(parent, root+string(filepath.Separator)) {
		t.Fatalf("reported path %q lies in %s, outside the workspace", rel, parent)
	}
	if _, err := os.Lstat(full); err != nil {
		t.Fatalf("reported path %q: %v", rel, err)
	}
}
