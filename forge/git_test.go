package forge

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/underpass-ai/axlr/forge/pull"
)

// testOrigin makes a bare repository whose HEAD is branch and whose branch
// holds one commit of files, and returns its path and that commit.
func testOrigin(t *testing.T, branch string, files map[string]string) (string, string) {
	t.Helper()
	root := t.TempDir()
	bare := filepath.Join(root, "origin.git")
	ref := plumbing.NewBranchReferenceName(branch)
	if _, err := git.PlainInitWithOptions(bare, &git.PlainInitOptions{Bare: true, InitOptions: git.InitOptions{DefaultBranch: ref}}); err != nil {
		t.Fatal(err)
	}
	seed := filepath.Join(root, "seed")
	r, err := git.PlainInitWithOptions(seed, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: ref}})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, seed, files)
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Seed", Email: "seed@example.com", When: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)}
	h, err := wt.Commit("seed\n", &git.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{bare}}); err != nil {
		t.Fatal(err)
	}
	spec := config.RefSpec(ref.String() + ":" + ref.String())
	if err := r.Push(&git.PushOptions{RefSpecs: []config.RefSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	return bare, h.String()
}

// writeTree writes files under dir; an empty content removes the file.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runGit runs the git program in dir and returns its standard output.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// porcelainPaths is what git status --porcelain -uall lists, sorted.
func porcelainPaths(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	for _, l := range strings.Split(runGit(t, dir, "status", "--porcelain", "-uall"), "\n") {
		if len(l) > 3 {
			paths = append(paths, l[3:])
		}
	}
	sort.Strings(paths)
	return paths
}

// originRef returns the commit origin's branch points at, "" if none.
func originRef(t *testing.T, bare, branch string) string {
	t.Helper()
	r, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash().String()
}

var seedFiles = map[string]string{
	"README.md":      "hello\n",
	"go.mod":         "module example.com/x\n",
	"pkg/a.go":       "package pkg\n",
	"pkg/b.go":       "package pkg\n\nconst B = 1\n",
	".gitignore":     "*.log\n",
	"docs/guide.txt": "guide\n",
}

func TestCloneBaseAndOpen(t *testing.T) {
	origin, seed := testOrigin(t, "trunk", seedFiles)
	dir := filepath.Join(t.TempDir(), "repairs", "20261016-0930-x")
	r, err := Clone(context.Background(), origin, dir, GitAuth{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Base() != "trunk" {
		t.Errorf("Base() = %q, want trunk", r.Base())
	}
	if r.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", r.Dir(), dir)
	}
	if h, err := r.Head(); err != nil || h != seed {
		t.Errorf("Head() = %q, %v; want %s", h, err, seed)
	}
	if d, err := r.Dirty(); err != nil || len(d) != 0 {
		t.Errorf("Dirty() of a fresh clone = %q, %v", d, err)
	}
	if got := runGit(t, dir, "rev-parse", "--abbrev-ref", "origin/HEAD"); got != "origin/trunk\n" {
		t.Errorf("git rev-parse origin/HEAD = %q, want origin/trunk", got)
	}

	_, err = Clone(context.Background(), origin, dir, GitAuth{})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Clone into an existing directory: %v, want a refusal", err)
	}

	o, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Base() != "trunk" {
		t.Errorf("Open: Base() = %q, want trunk", o.Base())
	}
	if h, _ := o.Head(); h != seed {
		t.Errorf("Open: Head() = %q, want %s", h, seed)
	}
}

func TestCloneRelativeLocalPath(t *testing.T) {
	origin, _ := testOrigin(t, "main", seedFiles)
	t.Chdir(filepath.Dir(origin))
	r, err := Clone(context.Background(), "origin.git", "clone", GitAuth{Token: "never-sent"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Base() != "main" {
		t.Errorf("Base() = %q", r.Base())
	}
	if got := strings.TrimSpace(runGit(t, r.Dir(), "remote", "get-url", "origin")); got != origin {
		t.Errorf("origin URL = %q, want the absolute %q", got, origin)
	}
}

func TestCloneFailureLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "clone")
	_, err := Clone(context.Background(), filepath.Join(t.TempDir(), "missing.git"), dir, GitAuth{})
	if err == nil {
		t.Fatal("Clone of a missing repository succeeded")
	}
	if _, serr := os.Lstat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("a failed clone left %s (%v)", dir, serr)
	}
	for _, tc := range []struct{ remote, dir string }{{"", dir}, {"/x", ""}} {
		if _, err := Clone(context.Background(), tc.remote, tc.dir, GitAuth{}); err == nil {
			t.Errorf("Clone(%q, %q) succeeded", tc.remote, tc.dir)
		}
	}
}

func TestOpenBaseFromMarker(t *testing.T) {
	origin, _ := testOrigin(t, "main", seedFiles)
	dir := filepath.Join(t.TempDir(), "c")
	if _, err := Clone(context.Background(), origin, dir, GitAuth{}); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "symbolic-ref", "--delete", "refs/remotes/origin/HEAD")
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "no refs/remotes/origin/HEAD") {
		t.Errorf("Open without origin/HEAD or marker: %v", err)
	}
	m := testMarker(KindRepair)
	m.Base = "release-1"
	if err := WriteMarker(dir, m); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Base() != "release-1" {
		t.Errorf("Base() = %q, want the marker's release-1", r.Base())
	}
}

func TestOpenRefusesWhatIsNotAClone(t *testing.T) {
	origin, _ := testOrigin(t, "main", seedFiles)
	noRemote := t.TempDir()
	if _, err := git.PlainInit(noRemote, false); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{
		"not a repository": t.TempDir(),
		"bare":             origin,
		"no origin":        noRemote,
	} {
		if _, err := Open(dir); err == nil {
			t.Errorf("Open(%s) succeeded", name)
		}
	}
}

func TestDirtyMatchesGitStatus(t *testing.T) {
	tests := []struct {
		name    string
		changes map[string]string
		want    []string
	}{
		{"clean", nil, nil},
		{"modified", map[string]string{"README.md": "changed\n"}, []string{"README.md"}},
		{"deleted", map[string]string{"pkg/a.go": ""}, []string{"pkg/a.go"}},
		{"untracked in a new directory", map[string]string{"new/c.go": "package c\n"}, []string{"new/c.go"}},
		{"ignored", map[string]string{"build.log": "noise\n"}, nil},
		{"marker", map[string]string{MarkerFile: "{}\n"}, nil},
		{"mixed", map[string]string{"pkg/b.go": "package pkg\n", "docs/guide.txt": "", "z.txt": "z\n", "x.log": "x\n"},
			[]string{"docs/guide.txt", "pkg/b.go", "z.txt"}},
	}
	origin, _ := testOrigin(t, "main", seedFiles)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Clone(context.Background(), origin, filepath.Join(t.TempDir(), "c"), GitAuth{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "marker" {
				// Even where .git/info/exclude does not list it.
				os.Remove(filepath.Join(r.Dir(), ".git", "info", "exclude"))
			}
			writeTree(t, r.Dir(), tc.changes)
			got, err := r.Dirty()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Dirty() = %q, want %q", got, tc.want)
			}
			if tc.name != "marker" {
				if porcelain := porcelainPaths(t, r.Dir()); !reflect.DeepEqual(porcelain, tc.want) {
					t.Errorf("git status --porcelain lists %q, want %q", porcelain, tc.want)
				}
			}
		})
	}
}

var repairMessage = pull.CommitMessage{
	Title:   "Repair: hello_probe reports the wrong exit code",
	Body:    "The probe dropped the child's status.\n\nIt is kept now.",
	Trailer: "Repaired-by: AXLR axlr_repair 1.0 inst-1",
}

func TestCommit(t *testing.T) {
	origin, seed := testOrigin(t, "main", seedFiles)
	r, err := Clone(context.Background(), origin, filepath.Join(t.TempDir(), "c"), GitAuth{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteMarker(r.Dir(), testMarker(KindRepair)); err != nil {
		t.Fatal(err)
	}
	writeTree(t, r.Dir(), map[string]string{
		"README.md": "hello, repaired\n",
		"pkg/a.go":  "",
		"pkg/c.go":  "package pkg\n\nconst C = 3\n",
		"trace.log": "ignored\n",
	})
	sha, err := r.Commit("repair/20261016-0930-hello", repairMessage)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := r.Head(); h != sha {
		t.Errorf("Head() = %s, Commit returned %s", h, sha)
	}
	dir := r.Dir()
	if got := runGit(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "repair/20261016-0930-hello\n" {
		t.Errorf("HEAD is on %q", got)
	}
	if got := runGit(t, dir, "rev-parse", "HEAD^"); got != seed+"\n" {
		t.Errorf("parent = %q, want the seed %s", got, seed)
	}
	want := "AXLR <axlr@underpass.ai>|AXLR <axlr@underpass.ai>|" +
		"Repair: hello_probe reports the wrong exit code\n\nThe probe dropped the child's status.\n\nIt is kept now.\n\n" +
		"Repaired-by: AXLR axlr_repair 1.0 inst-1\n"
	if got := runGit(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%B"); strings.TrimRight(got, "\n") != strings.TrimRight(want, "\n") {
		t.Errorf("commit =\n%q\nwant\n%q", got, want)
	}
	if raw := runGit(t, dir, "cat-file", "commit", "HEAD"); strings.Contains(raw, "gpgsig") {
		t.Errorf("the commit is signed:\n%s", raw)
	}
	if got := runGit(t, dir, "show", "--name-status", "--format=", "HEAD"); got != "M\tREADME.md\nD\tpkg/a.go\nA\tpkg/c.go\n" {
		t.Errorf("the commit changes\n%s", got)
	}
	if p := porcelainPaths(t, dir); len(p) != 0 {
		t.Errorf("git status after the commit: %q", p)
	}
	if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err != nil {
		t.Errorf("the marker is gone from the worktree: %v", err)
	}

	// A retried activity finds its commit and makes no other.
	again, err := r.Commit("repair/20261016-0930-hello", repairMessage)
	if err != nil || again != sha {
		t.Errorf("retry: Commit = %s, %v; want %s", again, err, sha)
	}
	if n := runGit(t, dir, "rev-list", "--count", "HEAD"); n != "2\n" {
		t.Errorf("%s commits after the retry, want 2", strings.TrimSpace(n))
	}

	// The same message with a further change is a new round's commit.
	writeTree(t, dir, map[string]string{"README.md": "hello, repaired twice\n"})
	round2, err := r.Commit("repair/20261016-0930-hello", repairMessage)
	if err != nil {
		t.Fatal(err)
	}
	if round2 == sha {
		t.Fatal("a further change was not committed")
	}
	if got := runGit(t, dir, "rev-parse", "HEAD^"); got != sha+"\n" {
		t.Errorf("round 2's parent = %q, want %s", got, sha)
	}

	// Another message with nothing changed is nothing to commit.
	other := repairMessage
	other.Title = "Repair: something else"
	if _, err := r.Commit("repair/20261016-0930-hello", other); !errors.Is(err, pull.ErrNothingChanged) {
		t.Errorf("Commit of a clean tree with another message: %v, want ErrNothingChanged", err)
	}
}

func TestCommitNothingChanged(t *testing.T) {
	tests := []struct {
		name    string
		changes map[string]string
	}{
		{"clean", nil},
		{"only ignored files", map[string]string{"x.log": "x\n"}},
		{"only the marker", map[string]string{MarkerFile: "{}\n"}},
		{"changed back", map[string]string{"README.md": "hello\n"}},
	}
	origin, seed := testOrigin(t, "main", seedFiles)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Clone(context.Background(), origin, filepath.Join(t.TempDir(), "c"), GitAuth{})
			if err != nil {
				t.Fatal(err)
			}
			writeTree(t, r.Dir(), tc.changes)
			_, err = r.Commit("repair/x", repairMessage)
			if !errors.Is(err, pull.ErrNothingChanged) {
				t.Fatalf("Commit = %v, want ErrNothingChanged", err)
			}
			if err.Error() != "the repair changed no file in the clone" {
				t.Errorf("message %q", err)
			}
			if h, _ := r.Head(); h != seed {
				t.Errorf("HEAD moved to %s", h)
			}
		})
	}
}

func TestCommitRefusesBadInput(t *testing.T) {
	origin, _ := testOrigin(t, "main", seedFiles)
	r, err := Clone(context.Background(), origin, filepath.Join(t.TempDir(), "c"), GitAuth{})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, r.Dir(), map[string]string{"README.md": "x\n"})
	tests := []struct {
		name, branch string
		msg          pull.CommitMessage
		want         string
	}{
		{"no title", "repair/x", pull.CommitMessage{Body: "b"}, "no title"},
		{"two-line title", "repair/x", pull.CommitMessage{Title: "a\nb"}, "one line"},
		{"empty branch", "", repairMessage, "not a valid branch name"},
		{"bad branch", "repair/a..b", repairMessage, "not a valid branch name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Commit(tc.branch, tc.msg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Commit = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPush(t *testing.T) {
	origin, _ := testOrigin(t, "main", seedFiles)
	r, err := Clone(context.Background(), origin, filepath.Join(t.TempDir(), "c"), GitAuth{})
	if err != nil {
		t.Fatal(err)
	}
	const branch = "repair/20261016-0930-hello"
	writeTree(t, r.Dir(), map[string]string{"README.md": "one\n"})
	sha, err := r.Commit(branch, repairMessage)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Push(ctx, branch, GitAuth{}); err != nil {
		t.Fatal(err)
	}
	if got := originRef(t, origin, branch); got != sha {
		t.Errorf("origin's %s = %q, want %s", branch, got, sha)
	}
	if err := r.Push(ctx, branch, GitAuth{}); err != nil {
		t.Errorf("push again: %v, want success", err)
	}
	if got := runGit(t, r.Dir(), "rev-parse", "--abbrev-ref", branch+"@{upstream}"); got != "origin/"+branch+"\n" {
		t.Errorf("upstream = %q", got)
	}

	// A second round fast-forwards the branch.
	writeTree(t, r.Dir(), map[string]string{"README.md": "two\n"})
	sha2, err := r.Commit(branch, repairMessage)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx, branch, GitAuth{}); err != nil {
		t.Fatal(err)
	}
	if got := originRef(t, origin, branch); got != sha2 {
		t.Errorf("origin's %s = %q after round 2, want %s", branch, got, sha2)
	}

	// Someone else's commit on the branch is never overwritten.
	other, err := Clone(ctx, origin, filepath.Join(t.TempDir(), "other"), GitAuth{})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, other.Dir(), map[string]string{"README.md": "someone else\n"})
	if _, err := other.Commit(branch, pull.CommitMessage{Title: "Other"}); err != nil {
		t.Fatal(err)
	}
	if err := other.Push(ctx, branch, GitAuth{}); err == nil {
		t.Fatal("a diverged push succeeded")
	}
	if got := originRef(t, origin, branch); got != sha2 {
		t.Errorf("origin's %s = %q after a refused push, want %s", branch, got, sha2)
	}

	if err := r.Push(ctx, "a..b", GitAuth{}); err == nil {
		t.Error("Push of an invalid branch name succeeded")
	}
}

func TestGitAuthMethod(t *testing.T) {
	tests := []struct {
		remote string
		basic  bool
	}{
		{"https://github.com/underpass-ai/axlr.git", true},
		{"http://127.0.0.1:8080/r.git", true},
		{"git@github.com:underpass-ai/axlr.git", false},
		{"ssh://git@github.com/underpass-ai/axlr.git", false},
		{"/srv/git/axlr.git", false},
		{"file:///srv/git/axlr.git", false},
	}
	for _, tc := range tests {
		m := GitAuth{Token: "tok"}.method(tc.remote)
		ba, ok := m.(*githttp.BasicAuth)
		if ok != tc.basic {
			t.Errorf("%s: auth %T, want basic %v", tc.remote, m, tc.basic)
			continue
		}
		if ok && (ba.Username != "x-access-token" || ba.Password != "tok") {
			t.Errorf("%s: basic auth %s:%s", tc.remote, ba.Username, ba.Password)
		}
		if m := (GitAuth{}).method(tc.remote); m != nil {
			t.Errorf("%s: no token still gives %T", tc.remote, m)
		}
	}
}

// TestGitTokenOverHTTP clones and pushes through git http-backend behind basic
// auth, the way a forge serves git over https.
func TestGitTokenOverHTTP(t *testing.T) {
	backend := filepath.Join(strings.TrimSpace(runGit(t, ".", "--exec-path")), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend is needed: %v", err)
	}
	origin, _ := testOrigin(t, "main", seedFiles)
	const token = "ghs_0123456789abcdefSECRET"
	cgiHandler := &cgi.Handler{
		Path: backend,
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Dir(origin),
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=x-access-token", // enables receive-pack
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != "x-access-token" || p != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, req)
	}))
	defer srv.Close()
	remote := srv.URL + "/origin.git"
	ctx := context.Background()

	_, err := Clone(ctx, remote, filepath.Join(t.TempDir(), "anon"), GitAuth{})
	if err == nil {
		t.Fatal("an anonymous clone was let in")
	}
	if !errors.Is(err, pull.ErrRemoteRefused) {
		t.Errorf("an anonymous clone's refusal %v is not ErrRemoteRefused", err)
	}
	_, err = Clone(ctx, strings.Replace(remote, "http://", "http://x-access-token:"+token+"@", 1), filepath.Join(t.TempDir(), "embedded"), GitAuth{Token: "wrong"})
	if err == nil {
		t.Fatal("a wrong token was let in")
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the error quotes the URL's password: %v", err)
	}
	_, err = Clone(ctx, remote, filepath.Join(t.TempDir(), "wrong"), GitAuth{Token: token + "x"})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("Clone with a wrong token: %v", err)
	}
	if !errors.Is(err, pull.ErrRemoteRefused) {
		t.Errorf("a wrong token's refusal %v is not ErrRemoteRefused", err)
	}

	dir := filepath.Join(t.TempDir(), "c")
	r, err := Clone(ctx, remote, dir, GitAuth{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"README.md": "over http\n"})
	sha, err := r.Commit("repair/http", repairMessage)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx, "repair/http", GitAuth{}); err == nil || !errors.Is(err, pull.ErrRemoteRefused) {
		t.Errorf("a push without the token: %v, want it let in never and refused as ErrRemoteRefused", err)
	}
	if err := r.Push(ctx, "repair/http", GitAuth{Token: token}); err != nil {
		t.Fatal(err)
	}
	if got := originRef(t, origin, "repair/http"); got != sha {
		t.Errorf("origin's repair/http = %q, want %s", got, sha)
	}
	if err := r.Push(ctx, "repair/http", GitAuth{Token: token}); err != nil {
		t.Errorf("push again: %v", err)
	}
	filepath.WalkDir(filepath.Join(dir, ".git"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if data, _ := os.ReadFile(p); strings.Contains(string(data), token) {
			t.Errorf("%s holds the token", p)
		}
		return nil
	})
}

func TestGitAuthScrub(t *testing.T) {
	a := GitAuth{Token: "s3cret"}
	base := errors.New("wrapped")
	if err := a.scrub(errors.Join(base, errors.New("auth s3cret refused"))); strings.Contains(err.Error(), "s3cret") || errors.Is(err, base) {
		t.Errorf("scrub kept the token or its chain: %v", err)
	}
	if err := a.scrub(base); err != base {
		t.Errorf("scrub changed an error without the token: %v", err)
	}
	if a.scrub(nil) != nil {
		t.Error("scrub(nil) is not nil")
	}
}

func TestGitDisplayRemote(t *testing.T) {
	tests := map[string]string{
		"https://x-access-token:tok@github.com/o/r.git": "https://x-access-token@github.com/o/r.git",
		"https://github.com/o/r.git":                    "https://github.com/o/r.git",
		"/srv/r.git":                                    "/srv/r.git",
	}
	for in, want := range tests {
		if got := displayRemote(in); got != want {
			t.Errorf("displayRemote(%q) = %q, want %q", in, got, want)
		}
	}
}

// gitAs is runGit for a command that commits, signed by the forge.
func gitAs(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return runGit(t, dir, append([]string{"-c", "user.name=GitHub", "-c", "user.email=noreply@github.com"}, args...)...)
}

// updateBranch does to origin what GitHub's update-branch does after base
// moved on with changes: it commits changes on base ("" removes a file)
// and merges base into branch, and returns the merge commit.
func updateBranch(t *testing.T, origin, base, branch string, changes map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "forge")
	runGit(t, ".", "clone", "--quiet", origin, dir)
	writeTree(t, dir, changes)
	runGit(t, dir, "add", "-A")
	gitAs(t, dir, "commit", "--quiet", "-m", "base moves on")
	runGit(t, dir, "push", "--quiet", "origin", base)
	runGit(t, dir, "checkout", "--quiet", branch)
	gitAs(t, dir, "merge", "--quiet", "--no-ff", "-m", "Merge branch '"+base+"' into "+branch, base)
	runGit(t, dir, "push", "--quiet", "origin", branch)
	return strings.TrimSpace(runGit(t, dir, "rev-parse", "HEAD"))
}

// proposedClone is a job's clone after its first round: branch committed
// on the seed and pushed.
func proposedClone(t *testing.T, origin, branch string) (*Repo, string) {
	t.Helper()
	r, err := Clone(context.Background(), origin, filepath.Join(t.TempDir(), "c"), GitAuth{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteMarker(r.Dir(), testMarker(KindRepair)); err != nil {
		t.Fatal(err)
	}
	writeTree(t, r.Dir(), map[string]string{"pkg/a.go": "package pkg\n\n// Round one.\n"})
	sha, err := r.Commit(branch, repairMessage)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(context.Background(), branch, GitAuth{}); err != nil {
		t.Fatal(err)
	}
	return r, sha
}

// readTree returns the files under dir, .git left out.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSyncFollowsAnUpdatedBranch: after the forge merged its base into the
// job's branch, a round's uncommitted changes (a change, a deletion, a new
// file) land on top of the merge, the base's changes are in the worktree,
// ignored files and the marker are kept, and the round's commit pushes
// without force. A round that changes a file the update changed too (or a
// path above or below one) is refused, naming the files, and the clone is
// left as it was.
func TestSyncFollowsAnUpdatedBranch(t *testing.T) {
	const branch = "repair/20261016-0930-hello"
	forgeChanges := map[string]string{"pkg/b.go": "package pkg\n\nconst B = 2\n", "docs/guide.txt": "", "new/added.go": "package added\n"}
	tests := []struct {
		name  string
		round map[string]string
		clash []string
	}{
		{name: "other files", round: map[string]string{"README.md": "hello, round two\n", "go.mod": "", "z.txt": "z\n", "trace.log": "ignored\n"}},
		{name: "the same file", round: map[string]string{"pkg/b.go": "package pkg\n\nconst B = 3\n"}, clash: []string{"pkg/b.go"}},
		{name: "a file the forge deleted", round: map[string]string{"docs/guide.txt": "guide, repaired\n"}, clash: []string{"docs/guide.txt"}},
		{name: "a file the forge added", round: map[string]string{"new/added.go": "package mine\n"}, clash: []string{"new/added.go"}},
		{name: "a file where the forge made a directory", round: map[string]string{"new": "a file\n"}, clash: []string{"new"}},
		{name: "several", round: map[string]string{"README.md": "x\n", "pkg/b.go": "", "docs/guide.txt": "y\n"}, clash: []string{"docs/guide.txt", "pkg/b.go"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			origin, _ := testOrigin(t, "main", seedFiles)
			r, round1 := proposedClone(t, origin, branch)
			merge := updateBranch(t, origin, "main", branch, forgeChanges)
			writeTree(t, r.Dir(), tc.round)
			before := readTree(t, r.Dir())
			ctx := context.Background()

			head, err := r.Sync(ctx, branch, GitAuth{})
			if tc.clash != nil {
				var ce *BranchConflictError
				if !errors.As(err, &ce) || !errors.Is(err, pull.ErrBranchMoved) || !reflect.DeepEqual(ce.Files, tc.clash) {
					t.Fatalf("Sync = %q, %v; want a conflict on %q", head, err, tc.clash)
				}
				want := "the branch " + branch + " was updated on the forge with changes to files this round changes too: " + strings.Join(tc.clash, ", ")
				if err.Error() != want {
					t.Errorf("message %q, want %q", err, want)
				}
				if h, _ := r.Head(); h != round1 {
					t.Errorf("a refused sync moved HEAD to %s", h)
				}
				if after := readTree(t, r.Dir()); !reflect.DeepEqual(after, before) {
					t.Errorf("a refused sync changed the worktree:\n%v\nwas\n%v", after, before)
				}
				return
			}
			if err != nil || head != merge {
				t.Fatalf("Sync = %q, %v; want the forge's merge %s", head, err, merge)
			}
			if h, _ := r.Head(); h != merge {
				t.Errorf("Head() = %s, want %s", h, merge)
			}
			if b, err := r.Branch(); err != nil || b != branch {
				t.Errorf("Branch() = %q, %v", b, err)
			}
			want := maps.Clone(before)
			for p, content := range forgeChanges {
				if content == "" {
					delete(want, p)
				} else {
					want[p] = content
				}
			}
			if got := readTree(t, r.Dir()); !reflect.DeepEqual(got, want) {
				t.Errorf("worktree after the sync:\n%v\nwant\n%v", got, want)
			}
			if got, want := porcelainPaths(t, r.Dir()), []string{"README.md", "go.mod", "z.txt"}; !reflect.DeepEqual(got, want) {
				t.Errorf("git status after the sync lists %q, want the round's %q", got, want)
			}
			if again, err := r.Sync(ctx, branch, GitAuth{}); err != nil || again != merge {
				t.Errorf("Sync again = %q, %v; want nothing to do at %s", again, err, merge)
			}

			sha, err := r.Commit(branch, repairMessage)
			if err != nil {
				t.Fatal(err)
			}
			if got := runGit(t, r.Dir(), "rev-parse", "HEAD^"); got != merge+"\n" {
				t.Errorf("round two's parent = %q, want the merge %s", got, merge)
			}
			if got := runGit(t, r.Dir(), "show", "--name-status", "--format=", "HEAD"); got != "M\tREADME.md\nD\tgo.mod\nA\tz.txt\n" {
				t.Errorf("round two's commit changes\n%s", got)
			}
			if err := r.Push(ctx, branch, GitAuth{}); err != nil {
				t.Fatalf("push round two: %v", err)
			}
			if got := originRef(t, origin, branch); got != sha {
				t.Errorf("origin's %s = %s, want round two's %s", branch, got, sha)
			}
		})
	}
}

// TestSyncLeavesTheClone: with nothing new on the forge — no branch yet
// (the first round), the branch at HEAD, or behind HEAD (a commit not
// pushed yet) — Sync returns HEAD and changes nothing.
func TestSyncLeavesTheClone(t *testing.T) {
	const branch = "repair/20261016-0930-hello"
	ctx := context.Background()
	origin, seed := testOrigin(t, "main", seedFiles)
	r, err := Clone(ctx, origin, filepath.Join(t.TempDir(), "c"), GitAuth{})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, r.Dir(), map[string]string{"README.md": "round one\n"})
	check := func(step, want string) {
		t.Helper()
		before := readTree(t, r.Dir())
		if got, err := r.Sync(ctx, branch, GitAuth{}); err != nil || got != want {
			t.Fatalf("%s: Sync = %q, %v; want %s", step, got, err, want)
		}
		if h, _ := r.Head(); h != want {
			t.Errorf("%s: HEAD moved to %s", step, h)
		}
		if after := readTree(t, r.Dir()); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: the worktree changed", step)
		}
	}
	check("no branch on the forge", seed)
	if b, err := r.Branch(); err != nil || b != "main" {
		t.Errorf("Branch() = %q, %v; want main", b, err)
	}

	sha, err := r.Commit(branch, repairMessage)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx, branch, GitAuth{}); err != nil {
		t.Fatal(err)
	}
	check("the branch at HEAD", sha)

	writeTree(t, r.Dir(), map[string]string{"README.md": "round two\n"})
	ahead, err := r.Commit(branch, pull.CommitMessage{Title: "Round two"})
	if err != nil {
		t.Fatal(err)
	}
	check("the branch behind HEAD", ahead)

	if _, err := r.Sync(ctx, "a..b", GitAuth{}); err == nil || !strings.Contains(err.Error(), "not a valid branch name") {
		t.Errorf("Sync of an invalid branch name: %v", err)
	}
}

// TestSyncRefusesARewrittenBranch: a branch force-pushed on the forge to a
// commit that does not descend from the clone's HEAD is refused, and the
// clone keeps its HEAD.
func TestSyncRefusesARewrittenBranch(t *testing.T) {
	const branch = "repair/20261016-0930-hello"
	origin, _ := testOrigin(t, "main", seedFiles)
	r, round1 := proposedClone(t, origin, branch)

	dir := filepath.Join(t.TempDir(), "someone")
	runGit(t, ".", "clone", "--quiet", origin, dir)
	writeTree(t, dir, map[string]string{"README.md": "someone else's\n"})
	runGit(t, dir, "checkout", "--quiet", "-b", branch)
	gitAs(t, dir, "commit", "--quiet", "-am", "rewrite")
	runGit(t, dir, "push", "--quiet", "--force", "origin", branch)
	forced := strings.TrimSpace(runGit(t, dir, "rev-parse", "HEAD"))

	head, err := r.Sync(context.Background(), branch, GitAuth{})
	var de *BranchDivergedError
	if !errors.As(err, &de) || !errors.Is(err, pull.ErrBranchMoved) || de.Local != round1 || de.Remote != forced {
		t.Fatalf("Sync = %q, %v; want the branch diverged from %s to %s", head, err, round1, forced)
	}
	if !strings.Contains(err.Error(), "force-pushed") || !strings.Contains(err.Error(), forced[:12]) {
		t.Errorf("message %q", err)
	}
	if h, _ := r.Head(); h != round1 {
		t.Errorf("HEAD moved to %s", h)
	}
}

// TestCloneRefusals: a remote that is not there or is empty refused the
// clone (ErrRemoteRefused: a retry cannot help); one that does not answer
// did not (a later attempt may).
func TestCloneRefusals(t *testing.T) {
	ctx := context.Background()
	empty := filepath.Join(t.TempDir(), "empty.git")
	runGit(t, ".", "init", "--bare", "-q", empty)
	closed := httptest.NewServer(http.NotFoundHandler())
	down := closed.URL + "/origin.git"
	closed.Close()
	tests := []struct {
		name, remote string
		refused      bool
	}{
		{"no such repository", filepath.Join(t.TempDir(), "missing.git"), true},
		{"an empty repository", empty, true},
		{"a server that does not answer", down, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Clone(ctx, tt.remote, filepath.Join(t.TempDir(), "c"), GitAuth{})
			if err == nil || errors.Is(err, pull.ErrRemoteRefused) != tt.refused {
				t.Fatalf("clone %s: %v, refused %v, want refused %v", tt.remote, err, errors.Is(err, pull.ErrRemoteRefused), tt.refused)
			}
		})
	}
}

func TestRepositoryOf(t *testing.T) {
	for _, c := range []struct {
		url, want string
		ok        bool
	}{
		{"https://github.com/underpass-ai/axlr.git", "underpass-ai/axlr", true},
		{"https://github.com/underpass-ai/axlr", "underpass-ai/axlr", true},
		{"ssh://git@github.com/underpass-ai/axlr.git", "underpass-ai/axlr", true},
		{"git@github.com:underpass-ai/axlr.git", "underpass-ai/axlr", true},
		{"/srv/git/app.git", "", false},
		{"https://example.com/app.git", "", false},
	} {
		dir := t.TempDir()
		r, err := git.PlainInit(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{c.url}}); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		got, ok := RepositoryOf(filepath.Join(dir, "sub"))
		if got != c.want || ok != c.ok {
			t.Errorf("RepositoryOf(origin %s) = %q, %v; want %q, %v", c.url, got, ok, c.want, c.ok)
		}
	}
	if _, ok := RepositoryOf(t.TempDir()); ok {
		t.Error("a directory in no repository has a repository")
	}
}
