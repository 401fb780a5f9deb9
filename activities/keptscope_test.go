package activities

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/workflows"
)

const keptSession = "7d2e4f10-3a5b-4c6d-8e9f-0a1b2c3d4e5f"

func readString(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKeepAndRestoreScope, on a real workspace: the start keeps the scope
// (a file, an executable, a file a symbolic link will replace, and two
// that do not exist yet) in a file of its own under Scopes, mode 0600; a
// second keep of the key keeps the first. The task then changes one file,
// deletes the executable, puts a link in place of a file and creates the
// two others, one in a new directory. The restore writes back the three,
// content and mode, leaves the created ones and lists them; a second
// restore finds the files as the first left them and answers the same.
// The drop removes the kept file and its empty directories; a restore
// after it is refused.
func TestKeepAndRestoreScope(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	writeFile(t, root, "calc/calc.go", "package calc\n")
	writeFile(t, root, "calc/alias.go", "package calc // alias\n")
	writeFile(t, root, "scripts/run.sh", "#!/bin/sh\necho run\n")
	if err := os.Chmod(filepath.Join(root, "scripts", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "README.md", "outside the scope\n")
	scopes := filepath.Join(t.TempDir(), "scopes")
	a := &PlanTask{Scopes: scopes}
	key := workflows.ScopeKey{Root: root, Plan: "add-max-a1b2c3", Task: "add-max", Session: keptSession}
	in := workflows.KeepScopeInput{ScopeKey: key, Paths: []string{"scripts/run.sh", "calc/calc.go", "calc/alias.go", "calc/max.go", "gen/new.go"}}
	ctx := context.Background()
	if err := a.KeepScope(ctx, in); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(scopes, "add-max-a1b2c3", "add-max", keptSession+".json")
	if fi, err := os.Stat(kept); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kept scope %s: %v %v", kept, fi, err)
	}

	writeFile(t, root, "calc/calc.go", "package calc\n\nfunc Max() {}\n")
	if err := a.KeepScope(ctx, in); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"scripts/run.sh", "calc/alias.go"} {
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("calc.go", filepath.Join(root, "calc", "alias.go")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "calc/max.go", "package calc // max\n")
	writeFile(t, root, "gen/new.go", "package gen\n")
	writeFile(t, root, "README.md", "changed outside the scope\n")

	want := workflows.ScopeRestore{Restored: []string{"calc/alias.go", "calc/calc.go", "scripts/run.sh"}, Created: []string{"calc/max.go", "gen/new.go"}}
	for i := range 2 {
		got, err := a.RestoreScope(ctx, key)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("restore %d: %+v (%v), want %+v", i+1, got, err, want)
		}
		for p, content := range map[string]string{"calc/calc.go": "package calc\n", "calc/alias.go": "package calc // alias\n",
			"scripts/run.sh": "#!/bin/sh\necho run\n", "calc/max.go": "package calc // max\n", "gen/new.go": "package gen\n",
			"README.md": "changed outside the scope\n"} {
			if got := readString(t, root, p); got != content {
				t.Fatalf("restore %d: %s reads %q, want %q", i+1, p, got, content)
			}
		}
		if fi, err := os.Lstat(filepath.Join(root, "calc", "alias.go")); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("restore %d: calc/alias.go is %v (%v), want the file again", i+1, fi.Mode(), err)
		}
		if fi, err := os.Stat(filepath.Join(root, "scripts", "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("restore %d: scripts/run.sh mode %v (%v)", i+1, fi.Mode(), err)
		}
		if leftovers, _ := filepath.Glob(filepath.Join(root, "*", ".*.axlr-restore")); len(leftovers) != 0 {
			t.Fatalf("restore %d left %v", i+1, leftovers)
		}
	}

	for range 2 {
		if err := a.DropScope(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if entries, err := os.ReadDir(scopes); err != nil || len(entries) != 0 {
		t.Fatalf("scopes after the drop: %v %v", entries, err)
	}
	_, err := a.RestoreScope(ctx, key)
	assertAppError(t, err, workflows.ErrTypeBadRequest, "no scope of task add-max of plan add-max-a1b2c3 is kept for session "+keptSession)
}

// TestKeepScopeRefuses: what a start cannot keep is refused, naming the
// path or the key and the limit, and nothing is kept: a file over
// MaxKeptFileBytes, a scope over MaxKeptScopeBytes together, a symbolic
// link, a directory, a path that is not clean, a key whose parts are not
// ids, a host with no directory for scopes.
func TestKeepScopeRefuses(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	writeFile(t, root, "big.bin", strings.Repeat("x", MaxKeptFileBytes+1))
	var parts []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		writeFile(t, root, "parts/"+name+".bin", strings.Repeat("x", MaxKeptFileBytes))
		parts = append(parts, "parts/"+name+".bin")
	}
	writeFile(t, root, "calc/calc.go", "package calc\n")
	if err := os.Symlink("calc.go", filepath.Join(root, "calc", "alias.go")); err != nil {
		t.Fatal(err)
	}
	scopes := filepath.Join(t.TempDir(), "scopes")
	key := workflows.ScopeKey{Root: root, Plan: "add-max-a1b2c3", Task: "add-max", Session: keptSession}
	for _, tt := range []struct {
		name  string
		a     *PlanTask
		key   workflows.ScopeKey
		paths []string
		why   string
	}{
		{"file over the limit", &PlanTask{Scopes: scopes}, key, []string{"calc/calc.go", "big.bin"},
			`keep scope file "big.bin": 2097153 bytes, over the 2097152 a task keeps of a scope file to put it back if it does not finish; leave it out of the scope`},
		{"scope over the limit", &PlanTask{Scopes: scopes}, key, parts,
			"the scope files are over 8388608 bytes together (at parts/e.bin); a task keeps its scope to put it back if it does not finish: give the task fewer or smaller files"},
		{"symbolic link", &PlanTask{Scopes: scopes}, key, []string{"calc/alias.go"},
			`keep scope file "calc/alias.go": a symbolic link; a task's scope names the files themselves`},
		{"directory", &PlanTask{Scopes: scopes}, key, []string{"calc"}, `keep scope file "calc": not a regular file (d`},
		{"not clean", &PlanTask{Scopes: scopes}, key, []string{"../calc.go"}, `keep scope file "../calc.go": not a clean path inside the workspace`},
		{"session", &PlanTask{Scopes: scopes}, workflows.ScopeKey{Root: root, Plan: "add-max-a1b2c3", Task: "add-max", Session: "../../x"}, []string{"calc/calc.go"},
			"scope key add-max-a1b2c3/add-max/../../x: the plan and the task must be ids and the session a session id"},
		{"no directory", &PlanTask{}, key, []string{"calc/calc.go"}, "no directory keeps the scope files of plan tasks on this host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.KeepScope(context.Background(), workflows.KeepScopeInput{ScopeKey: tt.key, Paths: tt.paths})
			assertAppError(t, err, workflows.ErrTypeBadRequest, tt.why)
			if _, err := os.Stat(filepath.Join(scopes, "add-max-a1b2c3", "add-max", keptSession+".json")); !os.IsNotExist(err) {
				t.Fatalf("a scope was kept: %v", err)
			}
		})
	}
}

// TestRestoreScopeRefuses: a scope file the task replaced with a
// directory is not put back; the refusal names it and where its content
// is kept, and the kept scope stays for the person.
func TestRestoreScopeRefuses(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	writeFile(t, root, "calc/calc.go", "package calc\n")
	a := &PlanTask{Scopes: filepath.Join(t.TempDir(), "scopes")}
	key := workflows.ScopeKey{Root: root, Plan: "add-max-a1b2c3", Task: "add-max", Session: keptSession}
	if err := a.KeepScope(context.Background(), workflows.KeepScopeInput{ScopeKey: key, Paths: []string{"calc/calc.go"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "calc", "calc.go")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "calc/calc.go/x.go", "package x\n")
	kept := filepath.Join(a.Scopes, "add-max-a1b2c3", "add-max", keptSession+".json")
	_, err := a.RestoreScope(context.Background(), key)
	assertAppError(t, err, workflows.ErrTypeBadRequest, `restore scope file "calc/calc.go": it is a directory now; the content the task started with is kept in `+kept)
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the kept scope is gone: %v", err)
	}
}
