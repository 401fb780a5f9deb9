package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	git "github.com/go-git/go-git/v5"
	"golang.org/x/mod/modfile"
)

// Limits of a candidate build.
const (
	BuildLimit  = 10 * time.Minute // how long go build may run
	BuildOutput = 4 << 10          // bytes of output an error quotes, the last ones
)

// candidateCommands are the packages, relative to the clone's root, that a
// candidate build makes, when the clone has them.
var candidateCommands = []string{"cmd/axlrd", "cmd/axlr-tui"}

// candidateStamp, in a candidate's directory, names the version and the
// commit it was built for and the SHA-256 of each binary, so a build asked
// again for the same ones finds it done.
const candidateStamp = ".candidate.json"

type stamp struct {
	Version  string            `json:"version"`
	Commit   string            `json:"commit"`
	Binaries map[string]string `json:"binaries"` // base name: SHA-256, hex
}

// ErrNothingToBuild is returned by BuildCandidate for a clone that has none
// of the commands a candidate is built from: nothing was built.
var ErrNothingToBuild = errors.New("the clone has no cmd/axlrd or cmd/axlr-tui, so no candidate was built")

// Candidate is a build of a job's clone, for the person to try and install.
type Candidate struct {
	Dir      string   // where the binaries are
	Version  string   // the version stamped into them
	Commit   string   // the clone's HEAD they were built from
	Binaries []string // absolute paths, one per command built
}

// BuildError is a go build that failed, with the end of its output.
type BuildError struct {
	Dir    string // the clone
	Output string // the last BuildOutput bytes of go build's output
	Err    error
}

func (e *BuildError) Error() string {
	if e.Output == "" {
		return fmt.Sprintf("go build in %s: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("go build in %s: %v\n%s", e.Dir, e.Err, strings.TrimRight(e.Output, "\n"))
}

func (e *BuildError) Unwrap() error { return e.Err }

// Confine makes cmd, run in dir, run confined, writing only dir, a private
// TMPDIR and write; it returns what removes the TMPDIR after the run.
// tools.Sandbox.Confine is one.
type Confine func(cmd *exec.Cmd, dir string, write ...string) (func(), error)

// BuildCandidate builds the clone's cmd/axlrd and cmd/axlr-tui, those it
// has, with
//
//	go build -trimpath -ldflags "-X <module>/internal/buildinfo.Version=<version>" -o <outDir>/
//
// run at the clone's root, into outDir (default "<clone>.bin", beside the
// clone so its worktree stays as it is). The build runs at most BuildLimit
// with only PATH, HOME and the GO* variables of env, plus GOFLAGS=-p=2 when
// env sets no GOFLAGS. A clone with neither command gives
// ErrNothingToBuild; a build that fails a *BuildError quoting the end of
// its output. A candidate that outDir holds already for this version and
// commit, its binaries unchanged since (the stamp .candidate.json says),
// is returned without building again. confine, when set, makes the build
// run confined (the sandbox): the clone and outDir writable.
func BuildCandidate(ctx context.Context, clone, outDir, version string, env []string, confine Confine) (Candidate, error) {
	if !validVersion(version) {
		return Candidate{}, fmt.Errorf("build candidate: version %q must be 1 to 128 of A-Z, a-z, 0-9 and ._+-", version)
	}
	clone, err := filepath.Abs(clone)
	if err != nil {
		return Candidate{}, fmt.Errorf("build candidate: %w", err)
	}
	r, err := git.PlainOpen(clone)
	if err != nil {
		return Candidate{}, fmt.Errorf("build candidate in %s: %w", clone, err)
	}
	head, err := r.Head()
	if err != nil {
		return Candidate{}, fmt.Errorf("build candidate in %s: read HEAD: %w", clone, err)
	}
	var pkgs []string
	for _, c := range candidateCommands {
		if fi, err := os.Stat(filepath.Join(clone, c)); err == nil && fi.IsDir() {
			pkgs = append(pkgs, "./"+c)
		}
	}
	if len(pkgs) == 0 {
		return Candidate{}, ErrNothingToBuild
	}
	gomod, err := os.ReadFile(filepath.Join(clone, "go.mod"))
	if err != nil {
		return Candidate{}, fmt.Errorf("build candidate in %s: %w", clone, err)
	}
	module := modfile.ModulePath(gomod)
	if module == "" {
		return Candidate{}, fmt.Errorf("build candidate in %s: go.mod names no module", clone)
	}
	if outDir == "" {
		outDir = clone + ".bin"
	}
	if outDir, err = filepath.Abs(outDir); err != nil {
		return Candidate{}, fmt.Errorf("build candidate: %w", err)
	}
	commit := head.Hash().String()
	if c, ok := builtAlready(outDir, version, commit, pkgs); ok {
		return c, nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Candidate{}, fmt.Errorf("build candidate in %s: %w", clone, err)
	}
	env = buildEnv(env)
	goBin, err := lookPath("go", env)
	if err != nil {
		return Candidate{}, fmt.Errorf("build candidate in %s: %w", clone, err)
	}

	runCtx, cancel := context.WithTimeout(ctx, BuildLimit)
	defer cancel()
	args := []string{"build", "-trimpath",
		"-ldflags", "-X " + module + "/internal/buildinfo.Version=" + version,
		"-o", outDir + string(filepath.Separator)}
	cmd := exec.CommandContext(runCtx, goBin, append(args, pkgs...)...)
	cmd.Dir = clone
	cmd.Env = env
	out := &tail{max: BuildOutput}
	cmd.Stdout, cmd.Stderr = out, out
	// go build starts the compiler and linker as its children: the whole
	// process group goes when the limit is reached.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if confine != nil {
		cleanup, err := confine(cmd, clone, outDir)
		if err != nil {
			return Candidate{}, fmt.Errorf("build candidate in %s: %w", clone, err)
		}
		defer cleanup()
	}
	if err := cmd.Run(); err != nil {
		if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("it did not finish within %v", BuildLimit)
		} else if ctx.Err() != nil {
			err = ctx.Err()
		}
		return Candidate{}, &BuildError{Dir: clone, Output: out.String(), Err: err}
	}
	c := Candidate{Dir: outDir, Version: version, Commit: commit}
	for _, p := range pkgs {
		bin := filepath.Join(outDir, filepath.Base(p))
		if _, err := os.Stat(bin); err != nil {
			return Candidate{}, fmt.Errorf("build candidate in %s: go build wrote no %s: %w", clone, bin, err)
		}
		c.Binaries = append(c.Binaries, bin)
	}
	if err := writeStamp(c); err != nil {
		return Candidate{}, fmt.Errorf("build candidate in %s: %w", clone, err)
	}
	return c, nil
}

// builtAlready returns the candidate outDir's stamp names for version and
// commit, when it holds exactly the binaries of pkgs, each unchanged.
func builtAlready(outDir, version, commit string, pkgs []string) (Candidate, bool) {
	b, err := os.ReadFile(filepath.Join(outDir, candidateStamp))
	if err != nil {
		return Candidate{}, false
	}
	var st stamp
	if json.Unmarshal(b, &st) != nil || st.Version != version || st.Commit != commit || len(st.Binaries) != len(pkgs) {
		return Candidate{}, false
	}
	c := Candidate{Dir: outDir, Version: version, Commit: commit}
	for _, p := range pkgs {
		bin := filepath.Join(outDir, filepath.Base(p))
		sum, err := fileSHA256(bin)
		if err != nil || st.Binaries[filepath.Base(p)] != sum {
			return Candidate{}, false
		}
		c.Binaries = append(c.Binaries, bin)
	}
	return c, true
}

// writeStamp writes c's stamp in its directory, replacing any other in one
// rename.
func writeStamp(c Candidate) error {
	st := stamp{Version: c.Version, Commit: c.Commit, Binaries: map[string]string{}}
	for _, bin := range c.Binaries {
		sum, err := fileSHA256(bin)
		if err != nil {
			return err
		}
		st.Binaries[filepath.Base(bin)] = sum
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.Dir, candidateStamp+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone already once renamed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(c.Dir, candidateStamp))
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func validVersion(v string) bool {
	if v == "" || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._+-", c) >= 0) {
			return false
		}
	}
	return true
}

// buildEnv keeps PATH, HOME and the GO* variables of env, and adds
// GOFLAGS=-p=2 when env sets no GOFLAGS.
func buildEnv(env []string) []string {
	var out []string
	goflags := false
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !(k == "PATH" || k == "HOME" || strings.HasPrefix(k, "GO")) {
			continue
		}
		if k == "GOFLAGS" {
			if v == "" {
				continue
			}
			goflags = true
		}
		out = append(out, kv)
	}
	if !goflags {
		out = append(out, "GOFLAGS=-p=2")
	}
	return out
}

// lookPath finds an executable in env's PATH, not in this process's.
func lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not in the build's PATH %q", name, path)
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(b)
}

// Installed is a candidate put in place of an executable.
type Installed struct {
	Path   string // the executable replaced, symbolic links resolved
	Backup string // the previous executable, kept as a hard link
}

// Install replaces the executable target (symbolic links resolved) with the
// file candidate: it copies candidate beside the target (the copy's mode
// gains u+x, and it is synced), keeps the target as a hard link
// "<target>.before-repair-<slug>" and renames the copy over the target in
// one step, so a process running the old executable, or starting meanwhile,
// keeps working. When the rename fails the backup is removed again.
// Refused: a missing candidate, an existing backup (the job was installed
// already), a directory that cannot be written, and Windows.
func Install(candidate, target, slug string) (Installed, error) {
	if runtime.GOOS == "windows" {
		return Installed{}, errors.New("install: Windows cannot replace a running executable; copy the candidate by hand")
	}
	if !validSlug(slug) {
		return Installed{}, fmt.Errorf("install: slug %q must be 1 to %d of a-z, 0-9 and -, starting with a letter or digit", slug, maxSlug)
	}
	if candidate == "" {
		return Installed{}, errors.New("install: there is no candidate; build one first")
	}
	cfi, err := os.Stat(candidate)
	if err != nil {
		return Installed{}, fmt.Errorf("install: no candidate at %s: %w", candidate, err)
	}
	if !cfi.Mode().IsRegular() {
		return Installed{}, fmt.Errorf("install: the candidate %s is not a regular file", candidate)
	}
	path, err := filepath.EvalSymlinks(target)
	if err != nil {
		return Installed{}, fmt.Errorf("install over %s: %w", target, err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return Installed{}, fmt.Errorf("install over %s: %w", target, err)
	}
	tfi, err := os.Stat(path)
	if err != nil {
		return Installed{}, fmt.Errorf("install over %s: %w", path, err)
	}
	if !tfi.Mode().IsRegular() {
		return Installed{}, fmt.Errorf("install over %s: it is not a regular file", path)
	}
	if os.SameFile(cfi, tfi) {
		return Installed{}, fmt.Errorf("install: the candidate %s is the installed executable already", candidate)
	}
	backup := path + ".before-repair-" + slug
	if _, err := os.Lstat(backup); err == nil {
		return Installed{}, fmt.Errorf("install over %s: the backup %s exists already, so this candidate was installed before; to go back, rename the backup over %s", path, backup, path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return Installed{}, fmt.Errorf("install over %s: %w", path, err)
	}

	dir, name := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+name+".repair-*")
	if err != nil {
		return Installed{}, fmt.Errorf("install over %s: the directory %s cannot be written: %w", path, dir, err)
	}
	defer os.Remove(tmp.Name()) // gone already once renamed
	if err := copyCandidate(tmp, candidate, cfi.Mode().Perm()|0o100); err != nil {
		return Installed{}, fmt.Errorf("install over %s: %w", path, err)
	}
	if err := os.Link(path, backup); err != nil {
		return Installed{}, fmt.Errorf("install over %s: keep the previous executable as %s: %w", path, backup, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(backup)
		return Installed{}, fmt.Errorf("install over %s: %w", path, err)
	}
	syncDir(dir)
	return Installed{Path: path, Backup: backup}, nil
}

// copyCandidate writes the candidate into tmp with mode, synced, and closes
// tmp.
func copyCandidate(tmp *os.File, candidate string, mode os.FileMode) error {
	src, err := os.Open(candidate)
	if err != nil {
		tmp.Close()
		return err
	}
	defer src.Close()
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return fmt.Errorf("copy %s: %w", candidate, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	return tmp.Close()
}

// syncDir makes a rename in dir durable where the filesystem allows; a
// failure leaves the rename done, only less durable, so it is not reported.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
