package forge

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/underpass-ai/axlr/sandbox"
	"github.com/underpass-ai/axlr/tools"
)

// fakeModule writes a tiny module shaped like this project (a build-info
// package and the given commands, each printing the stamped version),
// commits it, and returns its path and HEAD.
func fakeModule(t *testing.T, commands map[string]string) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	files := map[string]string{
		"go.mod":                        "module example.com/fakeaxlr\n\ngo 1.26\n",
		"internal/buildinfo/version.go": "package buildinfo\n\nvar Version = \"dev\"\n",
	}
	for cmd, src := range commands {
		files["cmd/"+cmd+"/main.go"] = src
	}
	writeTree(t, dir, files)
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
	h, err := wt.Commit("fake\n", &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	return dir, h.String()
}

func mainPrinting(name string) string {
	return "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/fakeaxlr/internal/buildinfo\"\n)\n\n" +
		"func main() { fmt.Println(\"" + name + "\", buildinfo.Version) }\n"
}

func TestBuildCandidate(t *testing.T) {
	clone, head := fakeModule(t, map[string]string{"axlrd": mainPrinting("axlrd"), "axlr-tui": mainPrinting("axlr-tui")})
	const version = "repair-20261016-0930-hello-0123456789ab"
	c, err := BuildCandidate(context.Background(), clone, "", version, os.Environ(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Candidate{
		Dir:      clone + ".bin",
		Version:  version,
		Commit:   head,
		Binaries: []string{filepath.Join(clone+".bin", "axlrd"), filepath.Join(clone+".bin", "axlr-tui")},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("BuildCandidate = %+v, want %+v", c, want)
	}
	for _, bin := range c.Binaries {
		out, err := exec.Command(bin).Output()
		if err != nil {
			t.Fatalf("run %s: %v", bin, err)
		}
		if got, want := string(out), filepath.Base(bin)+" "+version+"\n"; got != want {
			t.Errorf("%s prints %q, want %q", bin, got, want)
		}
	}
	r, err := git.PlainOpen(clone)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := r.Worktree()
	if st, err := wt.Status(); err != nil || !st.IsClean() {
		t.Errorf("the build changed the clone's worktree: %v %v", st, err)
	}

	// Asked again, as a retried activity would, the same build is found
	// done: with no go in its PATH, a build could not run.
	noGo := []string{"PATH=" + t.TempDir(), "HOME=" + os.Getenv("HOME")}
	again, err := BuildCandidate(context.Background(), clone, "", version, noGo, nil)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("BuildCandidate again = %+v, %v, want the first build", again, err)
	}
	// Each case changes one thing and puts it back.
	tests := []struct {
		name, version, file string
		data                []byte
	}{
		{"another version", version + "x", "", nil},
		{"a binary changed", version, c.Binaries[1], []byte("not the build")},
		{"the stamp gone", version, filepath.Join(c.Dir, candidateStamp), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.file != "" {
				keep, err := os.ReadFile(tc.file)
				if err != nil {
					t.Fatal(err)
				}
				if tc.data == nil {
					err = os.Remove(tc.file)
				} else {
					err = os.WriteFile(tc.file, tc.data, 0o755)
				}
				if err != nil {
					t.Fatal(err)
				}
				defer os.WriteFile(tc.file, keep, 0o755)
			}
			_, err := BuildCandidate(context.Background(), clone, "", tc.version, noGo, nil)
			if err == nil || !strings.Contains(err.Error(), "go is not in the build's PATH") {
				t.Errorf("BuildCandidate = %v, want a build, which needs go", err)
			}
		})
	}
	if _, err := BuildCandidate(context.Background(), clone, "", version, noGo, nil); err != nil {
		t.Errorf("with every change put back: %v", err)
	}
}

func TestBuildCandidateOneCommandIntoOutDir(t *testing.T) {
	clone, _ := fakeModule(t, map[string]string{"axlr-tui": mainPrinting("axlr-tui")})
	out := filepath.Join(t.TempDir(), "bin")
	c, err := BuildCandidate(context.Background(), clone, out, "v1", os.Environ(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir != out || !reflect.DeepEqual(c.Binaries, []string{filepath.Join(out, "axlr-tui")}) {
		t.Errorf("BuildCandidate = %+v", c)
	}
}

func TestBuildCandidateFails(t *testing.T) {
	clone, _ := fakeModule(t, map[string]string{
		"axlrd":    "package main\n\nfunc main() { undefinedCall() }\n",
		"axlr-tui": mainPrinting("axlr-tui"),
	})
	_, err := BuildCandidate(context.Background(), clone, "", "v1", os.Environ(), nil)
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("BuildCandidate = %v, want a *BuildError", err)
	}
	if !strings.Contains(be.Output, "undefined: undefinedCall") || !strings.Contains(err.Error(), "undefined: undefinedCall") {
		t.Errorf("the error does not quote the compiler:\n%v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := BuildCandidate(ctx, clone, "", "v1", os.Environ(), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled build: %v", err)
	}
}

func TestBuildCandidateRefuses(t *testing.T) {
	nothing, _ := fakeModule(t, nil)
	clone, _ := fakeModule(t, map[string]string{"axlrd": mainPrinting("axlrd")})
	tests := []struct {
		name, clone, version string
		env                  []string
		want                 string
	}{
		{"no commands", nothing, "v1", os.Environ(), ErrNothingToBuild.Error()},
		{"version with a space", clone, "v1 -X x", os.Environ(), "version"},
		{"empty version", clone, "", os.Environ(), "version"},
		{"not a clone", t.TempDir(), "v1", os.Environ(), "repository does not exist"},
		{"no go in PATH", clone, "v1", []string{"PATH=" + t.TempDir(), "HOME=" + os.Getenv("HOME")}, "go is not in the build's PATH"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildCandidate(context.Background(), tc.clone, "", tc.version, tc.env, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("BuildCandidate = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := BuildCandidate(context.Background(), nothing, "", "v1", os.Environ(), nil); !errors.Is(err, ErrNothingToBuild) {
		t.Errorf("no commands: %v, want ErrNothingToBuild", err)
	}
	if _, err := os.Stat(nothing + ".bin"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a clone with nothing to build got %s.bin", nothing)
	}
}

func TestBuildEnv(t *testing.T) {
	tests := []struct {
		name    string
		in, out []string
	}{
		{"keeps PATH, HOME and GO*, adds GOFLAGS",
			[]string{"PATH=/bin", "HOME=/h", "GOCACHE=/c", "GOTOOLCHAIN=local", "GH_TOKEN=secret", "OPENROUTER_API_KEY=k", "USER=u", "CGO_ENABLED=0"},
			[]string{"PATH=/bin", "HOME=/h", "GOCACHE=/c", "GOTOOLCHAIN=local", "GOFLAGS=-p=2"}},
		{"keeps a GOFLAGS that is set", []string{"GOFLAGS=-mod=mod", "PATH=/bin"}, []string{"GOFLAGS=-mod=mod", "PATH=/bin"}},
		{"replaces an empty GOFLAGS", []string{"GOFLAGS=", "PATH=/bin"}, []string{"PATH=/bin", "GOFLAGS=-p=2"}},
		{"drops malformed entries", []string{"GOPATH", "PATH=/bin"}, []string{"PATH=/bin", "GOFLAGS=-p=2"}},
		{"nothing", nil, []string{"GOFLAGS=-p=2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildEnv(tc.in); !reflect.DeepEqual(got, tc.out) {
				t.Errorf("buildEnv = %q, want %q", got, tc.out)
			}
		})
	}
}

func TestBuildOutputTail(t *testing.T) {
	tl := &tail{max: 8}
	for _, s := range []string{"abc", "defghij", "klmnopqrstuvwxyz", "0"} {
		io.WriteString(tl, s)
	}
	if got := tl.String(); got != "tuvwxyz0" {
		t.Errorf("tail = %q, want the last 8 bytes", got)
	}
	if len(tl.buf) > 16 {
		t.Errorf("tail holds %d bytes", len(tl.buf))
	}
}

// installFixture is an executable reached through a symbolic link, and a
// candidate to put in its place.
func installFixture(t *testing.T, dir string) (candidate, link, target string) {
	t.Helper()
	target = filepath.Join(dir, "bin", "axlr-tui")
	candidate = filepath.Join(dir, "clone.bin", "axlr-tui")
	writeTree(t, dir, map[string]string{"bin/axlr-tui": "old build\n", "clone.bin/axlr-tui": "new build\n"})
	if err := os.Chmod(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(candidate, 0o644); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, "axlr-tui")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return candidate, link, target
}

func TestInstall(t *testing.T) {
	candidate, link, target := installFixture(t, t.TempDir())
	before, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Install(candidate, link, "20261016-0930-hello")
	if err != nil {
		t.Fatal(err)
	}
	want := Installed{Path: target, Backup: target + ".before-repair-20261016-0930-hello"}
	if got != want {
		t.Errorf("Install = %+v, want %+v", got, want)
	}
	if data, _ := os.ReadFile(target); string(data) != "new build\n" {
		t.Errorf("the target holds %q", data)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o744 {
		t.Errorf("the installed mode is %v, want the candidate's 0644 plus u+x", fi.Mode().Perm())
	}
	backup, err := os.Stat(want.Backup)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, backup) {
		t.Error("the backup is not the previous executable's inode")
	}
	if data, _ := os.ReadFile(want.Backup); string(data) != "old build\n" {
		t.Errorf("the backup holds %q", data)
	}
	if l, err := os.Readlink(link); err != nil || l != target {
		t.Errorf("the link now reads %q, %v", l, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(target))
	if len(entries) != 2 {
		t.Errorf("the directory holds %d files, want the executable and its backup", len(entries))
	}

	_, err = Install(candidate, link, "20261016-0930-hello")
	if err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("a second install: %v, want the backup refusal", err)
	}
	if data, _ := os.ReadFile(want.Backup); string(data) != "old build\n" {
		t.Errorf("a refused install changed the backup: %q", data)
	}
}

func TestInstallRefuses(t *testing.T) {
	dir := t.TempDir()
	candidate, link, target := installFixture(t, dir)
	tests := []struct {
		name, candidate, target, slug, want string
	}{
		{"no candidate", "", link, "s", "there is no candidate"},
		{"missing candidate", filepath.Join(dir, "nope"), link, "s", "no candidate at"},
		{"candidate is a directory", dir, link, "s", "not a regular file"},
		{"missing target", candidate, filepath.Join(dir, "missing"), "s", "install over"},
		{"target is a directory", candidate, dir, "s", "not a regular file"},
		{"candidate is the target", target, link, "s", "is the installed executable already"},
		{"bad slug", candidate, link, "../x", "slug"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Install(tc.candidate, tc.target, tc.slug)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Install = %v, want %q", err, tc.want)
			}
			if data, _ := os.ReadFile(target); string(data) != "old build\n" {
				t.Errorf("a refused install changed the target: %q", data)
			}
		})
	}
}

// installChildEnv carries the candidate and the target, in that order and
// separated by the path list separator, to the child of
// TestInstallRefusesUnwritableDirectory.
const installChildEnv = "FORGE_TEST_INSTALL_CHILD"

func TestInstallRefusesUnwritableDirectory(t *testing.T) {
	dir, err := os.MkdirTemp("", "forge-install-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Chmod(filepath.Join(dir, "bin"), 0o755)
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	candidate, link, target := installFixture(t, dir)
	if err := os.Chmod(filepath.Join(dir, "bin"), 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		checkUnwritable(t, candidate, link)
	} else {
		// Root writes everywhere: the same call runs as nobody, from a copy
		// of this test binary that nobody can execute.
		self := filepath.Join(dir, "forge.test")
		copyExecutable(t, os.Args[0], self)
		cmd := exec.Command(self, "-test.run=^TestInstallChild$", "-test.v")
		cmd.Env = append(os.Environ(), installChildEnv+"="+candidate+string(filepath.ListSeparator)+link)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestInstallChild") {
			t.Fatalf("the install as nobody: %v\n%s", err, out)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "old build\n" {
		t.Errorf("a refused install changed the target: %q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(target)); len(entries) != 1 {
		t.Errorf("a refused install left %d files", len(entries))
	}
}

// TestInstallChild is TestInstallRefusesUnwritableDirectory's install when
// that test runs as root; on its own it has nothing to do.
func TestInstallChild(t *testing.T) {
	arg := os.Getenv(installChildEnv)
	if arg == "" {
		t.Skip("runs only as the child of TestInstallRefusesUnwritableDirectory")
	}
	candidate, link, _ := strings.Cut(arg, string(filepath.ListSeparator))
	checkUnwritable(t, candidate, link)
}

func checkUnwritable(t *testing.T, candidate, link string) {
	t.Helper()
	_, err := Install(candidate, link, "20261016-0930-hello")
	if err == nil || !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Install into an unwritable directory: %v", err)
	}
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestBuildCandidateConfined: the build runs under the confine it is given.
// With the sandbox's own rules (the clone and outDir writable, the Go
// caches as go env names them) it builds; with outDir left out, the
// kernel refuses the linker's write there and the build fails saying so.
func TestBuildCandidateConfined(t *testing.T) {
	box, warning := tools.NewSandbox(tools.SandboxConfig{Mode: sandbox.Required}, os.Environ())
	if warning != "" {
		t.Skip(warning)
	}
	clone, _ := fakeModule(t, map[string]string{"axlrd": mainPrinting("axlrd")})
	c, err := BuildCandidate(context.Background(), clone, "", "v1", os.Environ(), box.Confine)
	if err != nil {
		t.Fatalf("a confined build: %v", err)
	}
	if out, err := exec.Command(c.Binaries[0]).Output(); err != nil || string(out) != "axlrd v1\n" {
		t.Fatalf("the confined build's axlrd: %q %v", out, err)
	}
	noOut := func(cmd *exec.Cmd, dir string, _ ...string) (func(), error) { return box.Confine(cmd, dir) }
	_, err = BuildCandidate(context.Background(), clone, "", "v2", os.Environ(), noOut)
	var be *BuildError
	if !errors.As(err, &be) || !strings.Contains(be.Output, "permission denied") {
		t.Fatalf("a build that may not write its outDir: %v", err)
	}
}
