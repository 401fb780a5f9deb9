package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func writeFile(t *testing.T, dir, p, content string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlanTaskDigests: the digests of regular files (a symbolic link that
// stays inside the workspace followed), "" for a file that is not there
// (nor its directory); a path that is not clean, leads out of the
// workspace or names no regular file is refused, naming the path, without
// blocking on a FIFO.
func TestPlanTaskDigests(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	writeFile(t, root, "calc/calc.go", "package calc\n")
	writeFile(t, root, "calc/calc_test.go", "package calc\n\nimport \"testing\"\n")
	writeFile(t, dir, "secret.txt", "outside")
	if err := os.Symlink("calc.go", filepath.Join(root, "calc", "alias.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../secret.txt", filepath.Join(root, "calc", "out.txt")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "calc", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &PlanTask{}
	got, err := a.Digests(context.Background(), workflows.DigestsInput{Root: root,
		Paths: []string{"calc/calc.go", "calc/calc_test.go", "calc/alias.go", "calc/max.go", "calc/calc.go/x", "gone/max.go"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"calc/calc.go": sum("package calc\n"), "calc/calc_test.go": sum("package calc\n\nimport \"testing\"\n"),
		"calc/alias.go": sum("package calc\n"), "calc/max.go": "", "calc/calc.go/x": "", "gone/max.go": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("digests %v, want %v", got, want)
	}
	for _, tt := range []struct{ path, why string }{
		{"../secret.txt", `digest of "../secret.txt": not a clean path inside the workspace`},
		{"calc/../calc/calc.go", "not a clean path inside the workspace"},
		{"/etc/passwd", "not a clean path inside the workspace"},
		{"calc/out.txt", `digest of "calc/out.txt": `},
		{"calc", `digest of "calc": not a regular file (d`},
		{"calc/pipe", `digest of "calc/pipe": not a regular file (p`},
	} {
		t.Run(tt.path, func(t *testing.T) {
			_, err := a.Digests(context.Background(), workflows.DigestsInput{Root: root, Paths: []string{"calc/calc.go", tt.path}})
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != workflows.ErrTypeBadRequest || !app.NonRetryable() || !strings.Contains(app.Message(), tt.why) {
				t.Fatalf("error %v, want a refusal containing %q", err, tt.why)
			}
		})
	}
	_, err = a.Digests(context.Background(), workflows.DigestsInput{Root: filepath.Join(dir, "absent"), Paths: []string{"a.go"}})
	assertAppError(t, err, workflows.ErrTypeBadRequest, "is not a directory on this host")
}

// gitRun runs git in dir for a test's setup.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestPlanTaskStatus, on real repositories: outside a work tree Git is
// false; before the first commit there is no HEAD and untracked files
// show one by one; after it, HEAD and every changed, staged, deleted and
// untracked file inside the workspace (not an ignored one), relative to
// the workspace when it is a directory of the repository, and nothing of
// the repository outside it.
func TestPlanTaskStatus(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on this host")
	}
	dir := t.TempDir()
	a := &PlanTask{Workspaces: &Workspaces{}}
	t.Cleanup(func() { a.Workspaces.Close() })
	status := func(root string) workflows.WorkspaceStatus {
		t.Helper()
		s, err := a.Status(context.Background(), workflows.StatusInput{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	plain := filepath.Join(dir, "plain")
	writeFile(t, plain, "a.go", "package a\n")
	if s := status(plain); !reflect.DeepEqual(s, workflows.WorkspaceStatus{}) {
		t.Fatalf("outside a work tree: %+v", s)
	}

	unborn := filepath.Join(dir, "unborn")
	writeFile(t, unborn, "calc/calc.go", "package calc\n")
	writeFile(t, unborn, "go.mod", "module x\n")
	gitRun(t, unborn, "init", "-q")
	if s := status(unborn); !reflect.DeepEqual(s, workflows.WorkspaceStatus{Git: true, Changed: []string{"calc/calc.go", "go.mod"}}) {
		t.Fatalf("before the first commit: %+v", s)
	}

	repo := filepath.Join(dir, "repo")
	writeFile(t, repo, "README.md", "readme\n")
	writeFile(t, repo, "svc/calc/calc.go", "package calc\n")
	writeFile(t, repo, "svc/calc/old.go", "package calc\n")
	writeFile(t, repo, "svc/staged.go", "package svc\n")
	writeFile(t, repo, "svc/.gitignore", "*.log\n")
	gitRun(t, repo, "init", "-q")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	head := gitRun(t, repo, "rev-parse", "HEAD")
	writeFile(t, repo, "README.md", "changed outside the workspace\n")
	writeFile(t, repo, "svc/calc/calc.go", "package calc\n\nfunc Max() {}\n")
	writeFile(t, repo, "svc/calc/new/max_test.go", "package calc\n")
	writeFile(t, repo, "svc/build.log", "ignored\n")
	writeFile(t, repo, "svc/staged.go", "package svc // staged\n")
	gitRun(t, repo, "add", "svc/staged.go")
	if err := os.Remove(filepath.Join(repo, "svc", "calc", "old.go")); err != nil {
		t.Fatal(err)
	}
	want := workflows.WorkspaceStatus{Git: true, Head: head, Changed: []string{"calc/calc.go", "calc/new/max_test.go", "calc/old.go", "staged.go"}}
	if s := status(filepath.Join(repo, "svc")); !reflect.DeepEqual(s, want) {
		t.Fatalf("in a directory of the repository: %+v, want %+v", s, want)
	}
	if s := status(repo); s.Head != head || !reflect.DeepEqual(s.Changed, []string{"README.md", "svc/calc/calc.go", "svc/calc/new/max_test.go", "svc/calc/old.go", "svc/staged.go"}) {
		t.Fatalf("at the top: %+v", s)
	}
}

// TestPorcelainPaths: entries of git status -z, the workspace's prefix
// taken off; an entry outside the prefix or of another shape is an error.
func TestPorcelainPaths(t *testing.T) {
	for _, tt := range []struct {
		name, out, prefix string
		want              []string
		err               string
	}{
		{name: "none", out: "", want: nil},
		{name: "top", out: " M b.go\x00?? a b.go\x00D  c/d.go\x00", want: []string{"a b.go", "b.go", "c/d.go"}},
		{name: "prefix", out: "A  svc/x.go\x00 M svc/a/y.go\x00", prefix: "svc/", want: []string{"a/y.go", "x.go"}},
		{name: "outside", out: " M README.md\x00", prefix: "svc/", err: `"README.md" is outside the workspace "svc/"`},
		{name: "malformed", out: "M\x00", err: `unexpected entry "M"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := porcelainPaths(tt.out, tt.prefix)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("paths %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

// TestPlanTaskHandBack: a red and a green hand-back read from a real
// transcript, as the model sent them to an httptest server: the test
// files, the notes (to and text) and questions; an untestable
// declaration; a call that no longer validates is the transcript's
// divergence.
func TestPlanTaskHandBack(t *testing.T) {
	calls := []string{
		`{"test_files": ["calc/max_test.go"], "expected": "TestMax fails: Max is undefined"}`,
		`{"testable": false, "observed": "the goal is a log line no test reads"}`,
		`{"summary": "Max returns the larger int", "summary_en": "Added calc.Max.", "notes": [{"to": "all", "text": "calc.Max(a, b int) int exists"}, {"to": "use-max", "text": "call Max"}], "questions": ["Should Max take floats?"]}`,
		`{"summary": "no English summary"}`,
	}
	var replies []agenttest.Reply
	for i, args := range calls {
		replies = append(replies, agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "c" + string(rune('0'+i)), Name: workflows.StepDoneTool, Arguments: args}}})
	}
	f := newFixture(t, agenttest.Queue(replies...))
	rev := f.begin("Task add-max of plan calc-max-a1b2c3, wave 1: calc.Max returns the larger int").Revision
	var keys []string
	for range calls {
		res, err := f.request(rev)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, res.Calls[0].Key)
		rec, err := call[workflows.RecordToolResultInput, workflows.RecordToolResultResult](f, func(s *Session) any { return s.RecordToolResult },
			workflows.RecordToolResultInput{SessionID: f.id, Key: res.Calls[0].Key, CallID: res.Calls[0].CallID, Tool: workflows.StepDoneTool, Status: "completed", Message: "{}"})
		if err != nil {
			t.Fatal(err)
		}
		rev = rec.Revision
	}
	a := &PlanTask{Store: f.acts.Store}
	read := func(key, step string) (workflows.TaskHandBack, error) {
		return a.HandBack(context.Background(), workflows.HandBackInput{SessionID: f.id, CallKey: key, Definition: "axlr_task", Version: "1.0", Step: step})
	}
	for _, tt := range []struct {
		name, step string
		call       int
		want       workflows.TaskHandBack
	}{
		{name: "red", step: "red", call: 0, want: workflows.TaskHandBack{TestFiles: []string{"calc/max_test.go"}, Expected: "TestMax fails: Max is undefined"}},
		{name: "untestable", step: "red", call: 1, want: workflows.TaskHandBack{NotTestable: true, Observed: "the goal is a log line no test reads"}},
		{name: "green", step: "green", call: 2, want: workflows.TaskHandBack{Summary: "Max returns the larger int", SummaryEn: "Added calc.Max.",
			Notes:     []plans.Note{{To: "all", Text: "calc.Max(a, b int) int exists"}, {To: "use-max", Text: "call Max"}},
			Questions: []string{"Should Max take floats?"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := read(keys[tt.call], tt.step)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("hand-back %+v (%v), want %+v", got, err, tt.want)
			}
		})
	}
	_, err := read(keys[3], "green")
	assertAppError(t, err, workflows.ErrTypeSessionDiverged, "hand-back no longer valid: step green needs summary, summary_en")
	_, err = read(keys[0], "green")
	assertAppError(t, err, workflows.ErrTypeSessionDiverged, `hand-back no longer valid: step green takes summary, summary_en, notes, questions; "expected" is not one of its fields`)
}
