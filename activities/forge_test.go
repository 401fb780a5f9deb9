package activities

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/sandbox"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// TestForgeActivities against the GitHub fake and a bare origin: every
// activity run twice, as a retry after a crash would, changes the forge
// once — one clone, one commit, one pull request, one merge — and a merge
// guarded by a stale head is refused as the result's, not as an error. A
// read of the merged pull request gives its head's checks when asked to.
func TestForgeActivities(t *testing.T) {
	s, err := githubtest.Start(githubtest.Config{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	repo, err := s.CreateRepository("underpass-ai/app", map[string]string{"calc.go": "package calc\n"})
	if err != nil {
		t.Fatal(err)
	}
	repo.SetCI(func(githubtest.Commit) []githubtest.CheckRun {
		return []githubtest.CheckRun{{Name: "test", Conclusion: "success"}}
	})
	gh, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	f := &Forge{GitHub: gh}
	ctx := context.Background()
	dir := t.TempDir()
	prep := workflows.PrepareInput{Job: "20261201-1200-parse-fails", Kind: "repair", Repository: "underpass-ai/app", Remote: repo.Path(),
		Directory: dir, Brief: "Parse fails", Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	p1, err := f.Prepare(ctx, prep)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := f.Prepare(ctx, prep)
	if err != nil || p2 != p1 || p1.Base != "main" || p1.Clone != filepath.Join(dir, prep.Job) {
		t.Fatalf("prepare twice: %+v then %+v, %v", p1, p2, err)
	}
	if m, err := forge.CheckMarker(p1.Clone, "repair"); err != nil || m.Slug != prep.Job {
		t.Fatalf("marker %+v, %v", m, err)
	}

	in := workflows.ProposeInput{Clone: p1.Clone, Repository: "underpass-ai/app", Branch: "repair/" + prep.Job, Base: p1.Base,
		Commit: pull.CommitMessage{Title: "Repair: Parse handles empty input", Body: "## Cause\n…", Trailer: "Repaired-by: AXLR axlr_repair 1.0 axlr-x"},
		Title:  "Repair: Parse handles empty input", Body: "## Cause\n…"}
	if res, err := f.Propose(ctx, in); err != nil || !res.NothingChanged {
		t.Fatalf("propose with nothing changed: %+v, %v", res, err)
	}
	if err := os.WriteFile(filepath.Join(p1.Clone, "calc.go"), []byte("package calc\n\n// Fixed.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := f.Propose(ctx, in)
	if err != nil || first.PullRequest == 0 || !first.Opened || first.HeadSHA == "" {
		t.Fatalf("propose: %+v, %v", first, err)
	}
	again, err := f.Propose(ctx, in)
	if err != nil || again.PullRequest != first.PullRequest || again.Opened || again.HeadSHA != first.HeadSHA {
		t.Fatalf("propose again: %+v, %v", again, err)
	}

	read, err := f.Read(ctx, workflows.ReadInput{Repository: "underpass-ai/app", Number: first.PullRequest})
	if err != nil || read.Error != "" || read.PullRequest.HeadSHA != first.HeadSHA || len(read.Checks.Passed) != 1 {
		t.Fatalf("read: %+v, %v", read, err)
	}
	if res, err := f.UpdateBranch(ctx, workflows.UpdateBranchInput{Repository: "underpass-ai/app", Number: first.PullRequest, ExpectedHeadSHA: p1.Head}); err != nil || !res.Stale {
		t.Fatalf("update with a stale head: %+v, %v", res, err)
	}
	mi := workflows.MergeInput{Repository: "underpass-ai/app", Number: first.PullRequest, SHA: p1.Head, Branch: in.Branch, Title: in.Title}
	if res, err := f.Merge(ctx, mi); err != nil || res.Refused == "" || res.MergeSHA != "" {
		t.Fatalf("merge with a stale head: %+v, %v", res, err)
	}
	mi.SHA = first.HeadSHA
	merged, err := f.Merge(ctx, mi)
	if err != nil || merged.MergeSHA == "" || merged.Refused != "" {
		t.Fatalf("merge: %+v, %v", merged, err)
	}
	twice, err := f.Merge(ctx, mi)
	if err != nil || twice.MergeSHA != merged.MergeSHA {
		t.Fatalf("merge again: %+v, %v", twice, err)
	}
	// The watch stops at a merged pull request; the person's g reads the
	// checks its head had.
	read, err = f.Read(ctx, workflows.ReadInput{Repository: "underpass-ai/app", Number: first.PullRequest})
	if err != nil || !read.PullRequest.Merged || read.Checks.SHA != "" {
		t.Fatalf("read of the merged pull request: %+v, %v", read, err)
	}
	read, err = f.Read(ctx, workflows.ReadInput{Repository: "underpass-ai/app", Number: first.PullRequest, ClosedChecks: true})
	if err != nil || !read.PullRequest.Merged || read.Checks.SHA != first.HeadSHA || !reflect.DeepEqual(read.Checks.Passed, []string{"test"}) {
		t.Fatalf("read of the merged pull request with its checks: %+v, %v", read, err)
	}
	calls := s.Calls()
	if calls.PullRequestsOpened != 1 || calls.Merges != 1 {
		t.Fatalf("forge calls %+v: want one pull request and one merge", calls)
	}

	_, err = f.Issue(ctx, workflows.IssueInput{Repository: "underpass-ai/app", Number: 999})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeForgeRefused || !app.NonRetryable() {
		t.Fatalf("a missing issue: %v", err)
	}
	n := repo.AddIssue("Parse fails on empty input", "It panics.")
	if is, err := f.Issue(ctx, workflows.IssueInput{Repository: "underpass-ai/app", Number: n}); err != nil || is.Title != "Parse fails on empty input" {
		t.Fatalf("issue %+v, %v", is, err)
	}
}

// sourceModule commits a tiny module shaped like axlr (a build-info
// package and the given commands, each printing the stamped version) in a
// repository that a job's clone is prepared from.
func sourceModule(t *testing.T, commands map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "origin")
	for name, content := range moduleFiles(commands) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("fake axlr\n", &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// moduleFiles are the files of sourceModule.
func moduleFiles(commands map[string]string) map[string]string {
	files := map[string]string{
		"go.mod":                        "module example.com/fakeaxlr\n\ngo 1.26\n",
		"internal/buildinfo/version.go": "package buildinfo\n\nvar Version = \"dev\"\n",
	}
	for cmd, src := range commands {
		files["cmd/"+cmd+"/main.go"] = src
	}
	return files
}

func printsVersion(name string) string {
	return "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/fakeaxlr/internal/buildinfo\"\n)\n\n" +
		"func main() { fmt.Println(\"" + name + "\", buildinfo.Version) }\n"
}

// prepareClone makes job's clone of origin with Prepare, as the job's
// workflow does.
func prepareClone(t *testing.T, f *Forge, job, origin string) workflows.PrepareResult {
	t.Helper()
	p, err := f.Prepare(context.Background(), workflows.PrepareInput{Job: job, Kind: "repair", Repository: "underpass-ai/axlr",
		Remote: origin, Directory: t.TempDir(), Brief: "Parse fails", Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runCandidate runs BuildCandidate as the worker would.
func runCandidate(t *testing.T, f *Forge, in workflows.BuildCandidateInput) (workflows.BuildCandidateResult, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(f, activity.RegisterOptions{Name: "forge."})
	v, err := env.ExecuteActivity(workflows.ActivityForgeBuildCandidate, in)
	var res workflows.BuildCandidateResult
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

// TestForgeBuildCandidate: the job's clone builds into <clone>.bin with
// the version repair-<job>-<12 of its HEAD> stamped in; built again (a
// retry) it is found done, even where go could not run.
func TestForgeBuildCandidate(t *testing.T) {
	const job = "20261201-1200-parse-fails"
	f := &Forge{}
	p := prepareClone(t, f, job, sourceModule(t, map[string]string{"axlrd": printsVersion("axlrd"), "axlr-tui": printsVersion("axlr-tui")}))
	in := workflows.BuildCandidateInput{Job: job, Clone: p.Clone, HeadSHA: p.Head}
	res, err := runCandidate(t, f, in)
	if err != nil {
		t.Fatal(err)
	}
	version := "repair-" + job + "-" + p.Head[:12]
	bin := p.Clone + ".bin"
	want := workflows.BuildCandidateResult{Path: bin, Version: version, Commit: p.Head,
		Binaries: []string{filepath.Join(bin, "axlrd"), filepath.Join(bin, "axlr-tui")}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("BuildCandidate = %+v, want %+v", res, want)
	}
	for _, b := range res.Binaries {
		out, err := exec.Command(b).Output()
		if err != nil || string(out) != filepath.Base(b)+" "+version+"\n" {
			t.Errorf("%s prints %q, %v", b, out, err)
		}
	}
	again, err := runCandidate(t, &Forge{Env: []string{"PATH=" + t.TempDir()}}, in)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("a retry: %+v, %v, want the first build", again, err)
	}
}

// TestForgeBuildCandidateOutcomes: a clone that does not build is the
// result's, with the compiler's words; one with no command builds
// nothing; a clone that is not there, or a host with no go, is an error a
// retry cannot change.
func TestForgeBuildCandidateOutcomes(t *testing.T) {
	const job = "20261201-1200-parse-fails"
	broken := prepareClone(t, &Forge{}, job, sourceModule(t, map[string]string{"axlrd": "package main\n\nfunc main() { undefinedCall() }\n"}))
	nothing := prepareClone(t, &Forge{}, job, sourceModule(t, nil))
	tests := []struct {
		name    string
		forge   *Forge
		in      workflows.BuildCandidateInput
		want    func(workflows.BuildCandidateResult) bool
		errType string
		err     string
	}{
		{name: "does not build", forge: &Forge{}, in: workflows.BuildCandidateInput{Job: job, Clone: broken.Clone},
			want: func(r workflows.BuildCandidateResult) bool {
				return strings.Contains(r.Failed, "undefined: undefinedCall") && r.Path == "" && !r.NothingToBuild
			}},
		{name: "nothing to build", forge: &Forge{}, in: workflows.BuildCandidateInput{Job: job, Clone: nothing.Clone},
			want: func(r workflows.BuildCandidateResult) bool { return r.NothingToBuild && r.Failed == "" }},
		{name: "no clone", forge: &Forge{}, in: workflows.BuildCandidateInput{Job: job, Clone: filepath.Join(t.TempDir(), "gone")},
			errType: workflows.ErrTypeBadRequest, err: "build the candidate of job " + job + ": open clone"},
		{name: "no go", forge: &Forge{Env: []string{"PATH=" + t.TempDir()}}, in: workflows.BuildCandidateInput{Job: job, Clone: broken.Clone},
			errType: workflows.ErrTypeBadRequest, err: "go is not in the build's PATH"},
		{name: "no job", forge: &Forge{}, in: workflows.BuildCandidateInput{Clone: broken.Clone},
			errType: workflows.ErrTypeBadRequest, err: "must both be set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runCandidate(t, tc.forge, tc.in)
			if tc.err == "" {
				if err != nil || !tc.want(res) {
					t.Fatalf("BuildCandidate = %+v, %v", res, err)
				}
				return
			}
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != tc.errType || !app.NonRetryable() || !strings.Contains(app.Message(), tc.err) {
				t.Fatalf("BuildCandidate = %+v, %v, want a final %s with %q", res, err, tc.errType, tc.err)
			}
		})
	}
}

// installWorld is axlrd's executable reached through a link, an axlr-tui
// beside it, another axlr-tui the person runs, and a candidate for both.
type installWorld struct {
	dir, link, daemon, beside, tui, candidate string
	inodes                                    map[string]os.FileInfo
}

const installJob = "20261201-1200-parse-fails"

func newInstallWorld(t *testing.T, dir string) *installWorld {
	t.Helper()
	w := &installWorld{dir: dir, link: filepath.Join(dir, "axlrd"), daemon: filepath.Join(dir, "bin", "axlrd"),
		beside: filepath.Join(dir, "bin", "axlr-tui"), tui: filepath.Join(dir, "home", "axlr-tui"),
		candidate: filepath.Join(dir, "job.bin"), inodes: map[string]os.FileInfo{}}
	files := map[string]string{w.daemon: "old axlrd\n", w.beside: "old axlr-tui\n", w.tui: "old home axlr-tui\n",
		filepath.Join(w.candidate, "axlrd"): "new axlrd\n", filepath.Join(w.candidate, "axlr-tui"): "new axlr-tui\n"}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(w.daemon, w.link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{w.daemon, w.beside, w.tui} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		w.inodes[p] = fi
	}
	return w
}

func (w *installWorld) input() workflows.InstallInput {
	return workflows.InstallInput{Job: installJob, Candidate: w.candidate, MergeSHA: "merged1", TUIPath: w.tui}
}

// holds fails the test unless path holds content.
func holds(t *testing.T, path, content string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || string(b) != content {
		t.Errorf("%s holds %q (%v), want %q", path, b, err, content)
	}
}

// TestForgeInstall: axlrd's executable (through its link), the axlr-tui
// beside it and the one the person runs are each replaced by the
// candidate's binary in one rename, the previous one kept as a hard link;
// run again, as a retry after a crash, the install is found done.
func TestForgeInstall(t *testing.T) {
	w := newInstallWorld(t, t.TempDir())
	f := &Forge{Executable: w.link}
	res, err := f.Install(context.Background(), w.input())
	if err != nil {
		t.Fatal(err)
	}
	backup := ".before-repair-" + installJob
	want := []jobs.Installed{{Path: w.daemon, Backup: w.daemon + backup}, {Path: w.beside, Backup: w.beside + backup}, {Path: w.tui, Backup: w.tui + backup}}
	if !reflect.DeepEqual(res.Installed, want) {
		t.Fatalf("installed %+v, want %+v", res.Installed, want)
	}
	holds(t, w.daemon, "new axlrd\n")
	holds(t, w.beside, "new axlr-tui\n")
	holds(t, w.tui, "new axlr-tui\n")
	for _, in := range want {
		fi, err := os.Stat(in.Backup)
		if err != nil || !os.SameFile(fi, w.inodes[in.Path]) {
			t.Errorf("%s is not the previous %s: %v", in.Backup, in.Path, err)
		}
	}
	if l, err := os.Readlink(w.link); err != nil || l != w.daemon {
		t.Errorf("the link reads %q, %v", l, err)
	}
	again, err := f.Install(context.Background(), w.input())
	if err != nil || !reflect.DeepEqual(again.Installed, want) {
		t.Errorf("a retry: %+v, %v", again, err)
	}
	holds(t, w.daemon+backup, "old axlrd\n")
}

// TestForgeInstallTargets: the axlr-tui passed is the one beside axlrd
// (replaced once); a candidate with no axlr-tui replaces only axlrd.
func TestForgeInstallTargets(t *testing.T) {
	w := newInstallWorld(t, t.TempDir())
	same := filepath.Join(w.dir, "tui-link")
	if err := os.Symlink(w.beside, same); err != nil {
		t.Fatal(err)
	}
	in := w.input()
	in.TUIPath = same
	res, err := (&Forge{Executable: w.link}).Install(context.Background(), in)
	if err != nil || len(res.Installed) != 2 || res.Installed[1].Path != w.beside {
		t.Fatalf("installed %+v, %v", res.Installed, err)
	}
	holds(t, w.tui, "old home axlr-tui\n")

	w = newInstallWorld(t, t.TempDir())
	if err := os.Remove(filepath.Join(w.candidate, "axlr-tui")); err != nil {
		t.Fatal(err)
	}
	res, err = (&Forge{Executable: w.link}).Install(context.Background(), w.input())
	if err != nil || len(res.Installed) != 1 || res.Installed[0].Path != w.daemon {
		t.Fatalf("installed %+v, %v", res.Installed, err)
	}
	holds(t, w.beside, "old axlr-tui\n")
}

// TestForgeInstallRefuses: each refusal is final, says why, and changes
// nothing; one executable that cannot be replaced puts back those that
// were.
func TestForgeInstallRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(w *installWorld, in *workflows.InstallInput)
		want  string
	}{
		{"no job", func(_ *installWorld, in *workflows.InstallInput) { in.Job = "" }, "the job is not named"},
		{"no candidate", func(_ *installWorld, in *workflows.InstallInput) { in.Candidate = "" }, "it has no candidate"},
		{"not merged", func(_ *installWorld, in *workflows.InstallInput) { in.MergeSHA = "" }, "only a merged job is installed"},
		{"an empty candidate", func(w *installWorld, in *workflows.InstallInput) { in.Candidate = t.TempDir() }, "holds no axlrd or axlr-tui"},
		{"no such axlr-tui", func(w *installWorld, in *workflows.InstallInput) { in.TUIPath = filepath.Join(w.dir, "nope") }, "the axlr-tui to replace"},
		{"a backup exists", func(w *installWorld, _ *workflows.InstallInput) {
			if err := os.WriteFile(w.daemon+".before-repair-"+installJob, []byte("older\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "exists already"},
		{"the last one cannot be replaced", func(w *installWorld, _ *workflows.InstallInput) {
			if err := os.WriteFile(w.tui+".before-repair-"+installJob, []byte("older\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "install over " + "%TUI%" + ": the backup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newInstallWorld(t, t.TempDir())
			in := w.input()
			tc.setup(w, &in)
			_, err := (&Forge{Executable: w.link}).Install(context.Background(), in)
			want := strings.ReplaceAll(tc.want, "%TUI%", w.tui)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != workflows.ErrTypeInstallRefused || !app.NonRetryable() || !strings.Contains(err.Error(), want) {
				t.Fatalf("Install = %v, want a final refusal with %q", err, want)
			}
			holds(t, w.daemon, "old axlrd\n")
			holds(t, w.beside, "old axlr-tui\n")
			holds(t, w.tui, "old home axlr-tui\n")
			for _, p := range []string{w.daemon, w.beside} {
				if _, err := os.Lstat(p + ".before-repair-" + installJob); tc.name != "a backup exists" && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused install left the backup of %s: %v", p, err)
				}
				fi, _ := os.Stat(p)
				if !os.SameFile(fi, w.inodes[p]) {
					t.Errorf("%s is not the executable it was", p)
				}
			}
		})
	}
}

// installChildEnv names, to the child of TestForgeInstallUnwritable, the
// directory of its install world.
const installChildEnv = "ACTIVITIES_TEST_INSTALL_CHILD"

// TestForgeInstallUnwritable: a directory the person cannot write fails
// the install with the reason. Root writes everywhere, so as root the
// install runs as nobody, from a copy of this test binary.
func TestForgeInstallUnwritable(t *testing.T) {
	dir, err := os.MkdirTemp("", "activities-install-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	t.Cleanup(func() {
		os.Chmod(bin, 0o755)
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newInstallWorld(t, dir)
	if err := os.Chmod(bin, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		checkUnwritable(t, w)
	} else {
		self := filepath.Join(dir, "activities.test")
		data, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(self, data, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run=^TestForgeInstallChild$", "-test.v")
		cmd.Env = append(os.Environ(), installChildEnv+"="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestForgeInstallChild") {
			t.Fatalf("the install as nobody: %v\n%s", err, out)
		}
	}
	holds(t, w.daemon, "old axlrd\n")
	if entries, _ := os.ReadDir(bin); len(entries) != 2 {
		t.Errorf("a refused install left %d files in %s", len(entries), bin)
	}
}

// TestForgeInstallChild is TestForgeInstallUnwritable's install when that
// test runs as root; on its own it has nothing to do.
func TestForgeInstallChild(t *testing.T) {
	dir := os.Getenv(installChildEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestForgeInstallUnwritable")
	}
	w := &installWorld{dir: dir, link: filepath.Join(dir, "axlrd"), daemon: filepath.Join(dir, "bin", "axlrd"),
		beside: filepath.Join(dir, "bin", "axlr-tui"), tui: filepath.Join(dir, "home", "axlr-tui"), candidate: filepath.Join(dir, "job.bin")}
	checkUnwritable(t, w)
}

func checkUnwritable(t *testing.T, w *installWorld) {
	t.Helper()
	_, err := (&Forge{Executable: w.link}).Install(context.Background(), w.input())
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeInstallRefused || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Install into an unwritable directory: %v", err)
	}
}

// updatedJob is a job whose first round is proposed on the GitHub fake,
// after which the forge committed on the base and updated the job's
// branch with it, as the job's watch asks when the branch is behind.
type updatedJob struct {
	repo  *githubtest.Repository
	f     *Forge
	prep  workflows.PrepareResult
	in    workflows.ProposeInput
	first workflows.ProposeResult
	// merge is the update's merge commit, the pull request's head.
	merge string
	calls func() githubtest.Calls
}

func newUpdatedJob(t *testing.T, files, round1, base map[string]string) *updatedJob {
	t.Helper()
	s, err := githubtest.Start(githubtest.Config{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	repo, err := s.CreateRepository("underpass-ai/app", files)
	if err != nil {
		t.Fatal(err)
	}
	gh, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	j := &updatedJob{repo: repo, f: &Forge{GitHub: gh}, calls: s.Calls}
	ctx := context.Background()
	const job = "20261201-1200-parse-fails"
	j.prep, err = j.f.Prepare(ctx, workflows.PrepareInput{Job: job, Kind: "repair", Repository: "underpass-ai/app", Remote: repo.Path(),
		Directory: t.TempDir(), Brief: "Parse fails", Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	j.in = workflows.ProposeInput{Clone: j.prep.Clone, Repository: "underpass-ai/app", Branch: "repair/" + job, Base: j.prep.Base,
		Commit: pull.CommitMessage{Title: "Repair: Parse handles empty input", Trailer: "Repaired-by: AXLR axlr_repair 1.0 axlr-x"},
		Title:  "Repair: Parse handles empty input"}
	writeFiles(t, j.prep.Clone, round1)
	if j.first, err = j.f.Propose(ctx, j.in); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("main", "base moves on", base); err != nil {
		t.Fatal(err)
	}
	up, err := j.f.UpdateBranch(ctx, workflows.UpdateBranchInput{Repository: "underpass-ai/app", Number: j.first.PullRequest, ExpectedHeadSHA: j.first.HeadSHA})
	if err != nil || up.Stale {
		t.Fatalf("update the branch: %+v, %v", up, err)
	}
	read, err := j.f.Read(ctx, workflows.ReadInput{Repository: "underpass-ai/app", Number: j.first.PullRequest})
	if err != nil || read.PullRequest.HeadSHA == j.first.HeadSHA {
		t.Fatalf("read after the update: %+v, %v", read, err)
	}
	j.merge = read.PullRequest.HeadSHA
	return j
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestForgeProposeAfterUpdate: the second round of a job whose branch
// GitHub updated lands on the update's merge and pushes to the same pull
// request; one that changes a file the update changed too is refused,
// finally, naming the file, and the branch stays at the merge.
func TestForgeProposeAfterUpdate(t *testing.T) {
	tests := []struct {
		name    string
		round2  map[string]string
		refused string
	}{
		{name: "other files", round2: map[string]string{"calc.go": "package calc\n\n// Fixed twice.\n"}},
		{name: "a file the update changed", round2: map[string]string{"other.go": "package calc\n\n// Mine.\n"},
			refused: "the branch repair/20261201-1200-parse-fails was updated on the forge with changes to files this round changes too: other.go"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := newUpdatedJob(t, map[string]string{"calc.go": "package calc\n"},
				map[string]string{"calc.go": "package calc\n\n// Fixed.\n"}, map[string]string{"other.go": "package calc\n\n// Other.\n"})
			writeFiles(t, j.prep.Clone, tc.round2)
			res, err := j.f.Propose(context.Background(), j.in)
			if tc.refused != "" {
				var app *temporal.ApplicationError
				if !errors.As(err, &app) || app.Type() != workflows.ErrTypeBranchMoved || !app.NonRetryable() || app.Message() != tc.refused {
					t.Fatalf("Propose = %+v, %v; want the final refusal %q", res, err, tc.refused)
				}
				if h, _ := j.repo.Head(j.in.Branch); h != j.merge {
					t.Errorf("the branch moved to %s after a refusal, want the merge %s", h, j.merge)
				}
				return
			}
			if err != nil || res.PullRequest != j.first.PullRequest || res.Opened || res.HeadSHA == j.merge || res.HeadSHA == "" {
				t.Fatalf("Propose round two: %+v, %v; want a new head on #%d", res, err, j.first.PullRequest)
			}
			if h, _ := j.repo.Head(j.in.Branch); h != res.HeadSHA {
				t.Errorf("the forge's branch is at %s, want round two's %s", h, res.HeadSHA)
			}
			if parents, err := j.repo.Parents(res.HeadSHA); err != nil || !reflect.DeepEqual(parents, []string{j.merge}) {
				t.Errorf("round two's parents %v, %v; want the merge %s", parents, err, j.merge)
			}
			files, err := j.repo.Files(res.HeadSHA)
			want := map[string]string{"calc.go": "package calc\n\n// Fixed twice.\n", "other.go": "package calc\n\n// Other.\n"}
			if err != nil || !reflect.DeepEqual(files, want) {
				t.Errorf("round two holds %v, %v; want %v", files, err, want)
			}
			if c := j.calls(); c.PullRequestsOpened != 1 || c.BranchUpdates != 1 {
				t.Errorf("forge calls %+v: want one pull request and one update", c)
			}
		})
	}
}

// TestForgeBuildCandidateAfterUpdate: the candidate is built from the
// pull request's head, the update's merge the clone did not have, not from
// the clone's HEAD; asked for a head the branch is not at, the build is
// refused rather than made of another commit.
func TestForgeBuildCandidateAfterUpdate(t *testing.T) {
	const job = "20261201-1200-parse-fails"
	j := newUpdatedJob(t, moduleFiles(map[string]string{"axlrd": printsVersion("axlrd")}),
		map[string]string{"cmd/axlrd/main.go": printsVersion("axlrd-repaired")}, map[string]string{"README.md": "fake axlr\n"})
	res, err := runCandidate(t, j.f, workflows.BuildCandidateInput{Job: job, Clone: j.prep.Clone, HeadSHA: j.merge})
	version := workflows.CandidateVersion(job, j.merge)
	if err != nil || res.Commit != j.merge || res.Version != version || len(res.Binaries) != 1 {
		t.Fatalf("BuildCandidate = %+v, %v; want the merge %s as %s", res, err, j.merge, version)
	}
	if out, err := exec.Command(res.Binaries[0]).Output(); err != nil || string(out) != "axlrd-repaired "+version+"\n" {
		t.Errorf("the candidate prints %q, %v", out, err)
	}
	r, err := forge.Open(j.prep.Clone)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := r.Head(); h != j.merge {
		t.Errorf("the clone is at %s, want the merge %s", h, j.merge)
	}
	if _, err := os.Stat(filepath.Join(j.prep.Clone, "README.md")); err != nil {
		t.Errorf("the update's file is not in the clone: %v", err)
	}

	_, err = runCandidate(t, j.f, workflows.BuildCandidateInput{Job: job, Clone: j.prep.Clone, HeadSHA: j.first.HeadSHA})
	var app *temporal.ApplicationError
	want := "its clone's branch " + j.in.Branch + " is at " + j.merge + " after fetching it from the forge, not at the pull request's head " + j.first.HeadSHA
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeBranchMoved || !app.NonRetryable() || !strings.Contains(app.Message(), want) {
		t.Fatalf("BuildCandidate of a head the branch is not at: %v; want a final refusal with %q", err, want)
	}
}

// TestForgeHeartbeats: a clone, and a round's fetch, that wait on a
// remote heartbeat while they wait, naming what they do; the remote
// answers (an error) only once it has heard a heartbeat.
func TestForgeHeartbeats(t *testing.T) {
	const job = "20261201-1200-parse-fails"
	tests := []struct {
		name     string
		activity string
		input    func(t *testing.T, f *Forge, remote string) any
		want     string
	}{
		{name: "clone", activity: workflows.ActivityForgePrepare, want: "clone underpass-ai/app",
			input: func(t *testing.T, _ *Forge, remote string) any {
				return workflows.PrepareInput{Job: job, Kind: "repair", Repository: "underpass-ai/app", Remote: remote, Directory: t.TempDir(),
					Brief: "Parse fails", Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			}},
		{name: "fetch", activity: workflows.ActivityForgePropose, want: "fetch repair/" + job,
			input: func(t *testing.T, f *Forge, remote string) any {
				p := prepareClone(t, f, job, sourceModule(t, nil))
				g, err := git.PlainOpen(p.Clone)
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := g.Config()
				if err != nil {
					t.Fatal(err)
				}
				cfg.Remotes["origin"].URLs = []string{remote}
				if err := g.SetConfig(cfg); err != nil {
					t.Fatal(err)
				}
				return workflows.ProposeInput{Clone: p.Clone, Repository: "underpass-ai/app", Branch: "repair/" + job, Base: p.Base,
					Commit: pull.CommitMessage{Title: "Repair"}, Title: "Repair"}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			heard := make(chan struct{})
			var once sync.Once
			stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				select {
				case <-heard:
				case <-req.Context().Done():
				case <-time.After(10 * time.Second):
				}
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
			}))
			defer stall.Close()
			gh, err := forge.NewGitHub(forge.Options{APIURL: stall.URL + "/", Token: "t"})
			if err != nil {
				t.Fatal(err)
			}
			f := &Forge{GitHub: gh, HeartbeatEvery: 10 * time.Millisecond}
			in := tc.input(t, f, stall.URL+"/underpass-ai/app.git")

			var mu sync.Mutex
			var details []string
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(f, activity.RegisterOptions{Name: "forge."})
			env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
				var what string
				if err := d.Get(&what); err != nil {
					t.Errorf("heartbeat details: %v", err)
				}
				mu.Lock()
				details = append(details, what)
				mu.Unlock()
				once.Do(func() { close(heard) })
			})
			if _, err := env.ExecuteActivity(tc.activity, in); err == nil || !strings.Contains(err.Error(), "status code: 503") {
				t.Errorf("%s against a remote that fails: %v", tc.activity, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(details) == 0 || details[0] != tc.want {
				t.Errorf("heartbeats %q, want %q", details, tc.want)
			}
		})
	}
}

// TestPrepareRefusedRemote: a job whose remote is not there fails its
// clone at once as the forge's refusal, non-retryable, naming the remote
// and leaving no directory behind; the person reads why on the first
// attempt instead of after the retries.
func TestPrepareRefusedRemote(t *testing.T) {
	f := &Forge{}
	dir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "no-such-repo.git")
	_, err := f.Prepare(context.Background(), workflows.PrepareInput{Job: "20261201-1200-parse-fails", Kind: "repair", Repository: "underpass-ai/app",
		Remote: missing, Directory: dir, Brief: "Parse fails"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeForgeRefused || !app.NonRetryable() || !strings.Contains(err.Error(), "no-such-repo.git") {
		t.Fatalf("prepare from a missing remote: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "20261201-1200-parse-fails")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed clone left its directory: %v", err)
	}
}

// TestCandidateOutlastsTheBuild holds the candidate build activity's
// timeout above the build's own limit, so a build that runs too long is
// reported by the forge ("it did not finish within …"), not cut by
// Temporal.
func TestCandidateOutlastsTheBuild(t *testing.T) {
	if got := workflows.CandidateOptions.StartToCloseTimeout; got < forge.BuildLimit+time.Minute {
		t.Errorf("CandidateOptions.StartToCloseTimeout = %v, want at least forge.BuildLimit (%v) and a minute", got, forge.BuildLimit)
	}
}

// TestForgeBuildCandidateConfined: the candidate builds under axlrd's
// sandbox, and a build the sandbox refuses (here its build cache, which
// the settings left unwritable) fails with the compiler's words and
// AXLR's line on the denied path.
func TestForgeBuildCandidateConfined(t *testing.T) {
	const job = "20261201-1200-parse-fails"
	env := append(os.Environ(), "GOCACHE="+t.TempDir())
	box, warning := tools.NewSandbox(tools.SandboxConfig{Mode: sandbox.Required}, env)
	if warning != "" {
		t.Skip(warning)
	}
	p := prepareClone(t, &Forge{}, job, sourceModule(t, map[string]string{"axlrd": printsVersion("axlrd")}))
	in := workflows.BuildCandidateInput{Job: job, Clone: p.Clone, HeadSHA: p.Head}
	res, err := runCandidate(t, &Forge{Env: env, Sandbox: box}, in)
	if err != nil || res.Failed != "" || len(res.Binaries) != 1 {
		t.Fatalf("a confined build: %+v %v", res, err)
	}
	noCache, _ := tools.NewSandbox(tools.SandboxConfig{Mode: sandbox.Required, Write: &[]string{}}, env)
	again := prepareClone(t, &Forge{}, job+"-2", sourceModule(t, map[string]string{"axlrd": printsVersion("axlrd")}))
	res, err = runCandidate(t, &Forge{Env: append(env, "GOCACHE="+t.TempDir()), Sandbox: noCache},
		workflows.BuildCandidateInput{Job: job + "-2", Clone: again.Clone, HeadSHA: again.Head})
	if err != nil || !strings.Contains(res.Failed, "permission denied") || !strings.Contains(res.Failed, "[AXLR] The sandbox (Landlock)") {
		t.Fatalf("a build whose cache the sandbox refuses: %+v %v", res, err)
	}
}

// TestPrepareMovedAfterPush: a job whose host was lost after it pushed
// prepares a fresh clone on another host (Placed: in that host's own jobs
// directory) checked out at the branch it pushed, and proposing the same
// commit there finds the pull request it opened instead of a second one.
func TestPrepareMovedAfterPush(t *testing.T) {
	s, err := githubtest.Start(githubtest.Config{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	repo, err := s.CreateRepository("underpass-ai/app", map[string]string{"calc.go": "package calc\n"})
	if err != nil {
		t.Fatal(err)
	}
	gh, err := forge.NewGitHub(forge.Options{APIURL: s.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lost := &Forge{GitHub: gh, Jobs: filepath.Join(t.TempDir(), "b")}
	prep := workflows.PrepareInput{Job: "20261201-1200-parse-fails", Kind: "repair", Repository: "underpass-ai/app", Remote: repo.Path(),
		Directory: "/the/client's/own/jobs", Brief: "Parse fails", Created: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Placed: true}
	p, err := lost.Prepare(ctx, prep)
	if err != nil || !strings.HasPrefix(p.Clone, lost.Jobs) {
		t.Fatalf("prepare on the first host: %+v, %v", p, err)
	}
	if err := os.WriteFile(filepath.Join(p.Clone, "calc.go"), []byte("package calc\n\n// Fixed.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := workflows.ProposeInput{Clone: p.Clone, Repository: "underpass-ai/app", Branch: "repair/" + prep.Job, Base: p.Base,
		Commit: pull.CommitMessage{Title: "Repair: Parse handles empty input", Body: "## Cause\n…", Trailer: "Repaired-by: AXLR axlr_repair 1.0 axlr-x"},
		Title:  "Repair: Parse handles empty input", Body: "## Cause\n…"}
	first, err := lost.Propose(ctx, in)
	if err != nil || !first.Opened {
		t.Fatalf("propose on the first host: %+v, %v", first, err)
	}

	// The first host is gone with its disk; the job moves.
	next := &Forge{GitHub: gh, Jobs: filepath.Join(t.TempDir(), "c")}
	prep.Branch = in.Branch
	moved, err := next.Prepare(ctx, prep)
	if err != nil || !strings.HasPrefix(moved.Clone, next.Jobs) || moved.Head != first.HeadSHA {
		t.Fatalf("prepare on the next host: %+v (want its head at the pushed %s), %v", moved, first.HeadSHA, err)
	}
	if b, err := os.ReadFile(filepath.Join(moved.Clone, "calc.go")); err != nil || !strings.Contains(string(b), "Fixed") {
		t.Fatalf("the fresh clone's calc.go: %q, %v", b, err)
	}
	in.Clone = moved.Clone
	again, err := next.Propose(ctx, in)
	if err != nil || again.Opened || again.PullRequest != first.PullRequest || again.HeadSHA != first.HeadSHA {
		t.Fatalf("propose on the next host: %+v, %v", again, err)
	}
	if calls := s.Calls(); calls.PullRequestsOpened != 1 {
		t.Fatalf("forge calls %+v: want one pull request", calls)
	}
}
