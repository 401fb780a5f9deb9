package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/underpass-ai/axlr/sandbox"
)

// pipeDrainWait bounds the wait for the output pipes to close once the
// program has exited: a background child may hold them open indefinitely.
const pipeDrainWait = time.Second

// ExecArgs are the arguments of exec.
type ExecArgs struct {
	Program string   `json:"program"`
	Args    []string `json:"args,omitempty"`
	// Cwd is relative to the workspace; default the workspace.
	Cwd   string `json:"cwd,omitempty"`
	Stdin string `json:"stdin,omitempty"`
	// TimeoutMS defaults to 30000 and may be at most 300000.
	TimeoutMS *int64 `json:"timeout_ms,omitempty"`
	// MaxOutputBytes caps stdout and stderr together; default 256 KiB, at
	// most 1 MiB.
	MaxOutputBytes *int64 `json:"max_output_bytes,omitempty"`
}

// ExecOutput is the output of exec.
type ExecOutput struct {
	ExitCode       int    `json:"exit_code"`
	Stdout         string `json:"stdout"`
	Stderr         string `json:"stderr"`
	CapturedBytes  int64  `json:"captured_bytes"`
	DiscardedBytes int64  `json:"discarded_bytes"`
	// Truncated is true when output was discarded or when a background
	// child still held the output pipes after the program exited.
	Truncated bool `json:"truncated"`
	// Sandbox says how the program ran, when the workspace has a sandbox:
	// "landlock ABI N", or "none: <why>"; SandboxNote is AXLR's line on a
	// failure that reads as a path the sandbox refused.
	Sandbox     string `json:"sandbox,omitempty"`
	SandboxNote string `json:"sandbox_note,omitempty"`
}

type execRequest struct {
	program string
	// local is the workspace path of a relative program with a slash.
	local     string
	args      []string
	cwd       string
	stdin     string
	timeoutMS int64
	maxOutput int64
}

func parseExec(raw json.RawMessage) (execRequest, *Error) {
	var a ExecArgs
	if err := decodeArgs(Exec, raw, &a, "program"); err != nil {
		return execRequest{}, err
	}
	if a.Program == "" {
		return execRequest{}, newError(CodeInvalidArguments, "program must not be empty")
	}
	if strings.IndexByte(a.Program, 0) >= 0 {
		return execRequest{}, newError(CodeInvalidRequest, "program contains a NUL byte")
	}
	for i, arg := range a.Args {
		if strings.IndexByte(arg, 0) >= 0 {
			return execRequest{}, newError(CodeInvalidArguments, "args[%d] contains a NUL byte", i)
		}
	}
	cwd, err := cleanPath("cwd", a.Cwd)
	if err != nil {
		return execRequest{}, err
	}
	r := execRequest{program: a.Program, args: a.Args, cwd: cwd, stdin: a.Stdin}
	if !strings.HasPrefix(a.Program, "/") && strings.Contains(a.Program, "/") {
		local := path.Join(cwd, a.Program)
		if local == ".." || strings.HasPrefix(local, "../") {
			return execRequest{}, newError(CodeInvalidRequest, "program %s climbs out of the workspace", quote(a.Program))
		}
		r.local = local
	}
	if r.timeoutMS, err = limit("timeout_ms", a.TimeoutMS, defaultTimeoutMS, 1, maxTimeoutMS, "ms"); err != nil {
		return execRequest{}, err
	}
	if r.maxOutput, err = limit("max_output_bytes", a.MaxOutputBytes, defaultOutputBytes, 0, maxOutputBytes, "byte"); err != nil {
		return execRequest{}, err
	}
	return r, nil
}

func (w *Workspace) exec(ctx context.Context, r execRequest) (ExecOutput, *Error) {
	fi, err := w.root.Stat(r.cwd)
	if err != nil {
		return ExecOutput{}, fsError("cwd", r.cwd, err)
	}
	if !fi.IsDir() {
		return ExecOutput{}, newError(CodeNotFound, "cwd %s is not a directory", quote(r.cwd))
	}
	prog, perr := w.resolveProgram(r)
	if perr != nil {
		return ExecOutput{}, perr
	}

	if b := w.box; b != nil && b.Refused != "" {
		return ExecOutput{}, newError(CodeStartFailed, "%s was not started: %s", quote(r.program), b.Refused)
	}
	runCtx, cancel := context.WithTimeout(ctx, time.Duration(r.timeoutMS)*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(runCtx, prog, r.args...)
	cmd.Args[0] = r.program
	cmd.Env = w.env
	cmd.Dir = filepath.Join(w.dir, r.cwd)
	cleanup, perr := w.confine(cmd)
	if perr != nil {
		return ExecOutput{}, perr
	}
	defer cleanup()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

	// The output pipes are ours, not os/exec's, so that we can tell when a
	// background child keeps them open after the program exits.
	p, err := newPipes(r.stdin != "")
	if err != nil {
		return ExecOutput{}, newError(CodeStartFailed, "create pipes for %s: %v", quote(r.program), err)
	}
	cmd.Stdout, cmd.Stderr = p.outW, p.errW
	if p.inR != nil {
		cmd.Stdin = p.inR
	}
	startErr := cmd.Start()
	p.closeChildEnds()
	if startErr != nil {
		p.closeParentEnds()
		if e := stopped(ctx, runCtx, r); e != nil {
			return ExecOutput{}, e
		}
		return ExecOutput{}, newError(CodeStartFailed, "start %s: %v", quote(r.program), cause(startErr))
	}
	if p.inW != nil {
		go func() {
			// An error means the program stopped reading; that is its business.
			io.WriteString(p.inW, r.stdin)
			p.inW.Close()
		}()
	}
	c := &capture{limit: r.maxOutput}
	var drains sync.WaitGroup
	drains.Go(func() { c.drain(p.outR, &c.stdout) })
	drains.Go(func() { c.drain(p.errR, &c.stderr) })

	waitErr := cmd.Wait()
	held := waitDrained(&drains, p)
	p.closeParentEnds()

	ps := cmd.ProcessState
	if ps != nil && ps.Exited() {
		out := ExecOutput{
			ExitCode:       ps.ExitCode(),
			Stdout:         strings.ToValidUTF8(string(c.stdout), "\uFFFD"),
			Stderr:         strings.ToValidUTF8(string(c.stderr), "\uFFFD"),
			CapturedBytes:  c.captured,
			DiscardedBytes: c.discarded,
			Truncated:      c.discarded > 0 || held,
		}
		if b := w.box; b != nil {
			out.Sandbox = b.Plan.Status()
			if b.Plan.ABI > 0 && out.ExitCode != 0 {
				out.SandboxNote = sandbox.Denied(out.Stderr + out.Stdout)
			}
		}
		return out, nil
	}
	if e := stopped(ctx, runCtx, r); e != nil {
		return ExecOutput{}, e
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ExecOutput{}, newError(CodeProcessError, "%s was terminated by signal %d (%v)", quote(r.program), int(ws.Signal()), ws.Signal())
		}
	}
	return ExecOutput{}, newError(CodeProcessError, "wait for %s: %v", quote(r.program), waitErr)
}

// stopped reports the timeout or cancellation that ended a run, if any.
func stopped(ctx, runCtx context.Context, r execRequest) *Error {
	switch {
	case ctx.Err() != nil:
		return newError(CodeCancelled, "%s was cancelled; its process group was killed", quote(r.program))
	case runCtx.Err() != nil:
		return newError(CodeTimeout, "%s did not finish within %d ms; its process group was killed", quote(r.program), r.timeoutMS)
	}
	return nil
}

// waitDrained waits for the output to reach end of file, at most
// pipeDrainWait, and reports whether the pipes were still held open.
func waitDrained(drains *sync.WaitGroup, p *pipes) bool {
	done := make(chan struct{})
	go func() {
		drains.Wait()
		close(done)
	}()
	t := time.NewTimer(pipeDrainWait)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		p.outR.Close()
		p.errR.Close()
		<-done
		return true
	}
}

// resolveProgram returns the path of the program to run: an absolute program
// as it is, a relative one with a slash inside the workspace from cwd, and a
// bare name looked up in the PATH of the exec environment. Only cwd is
// confined: the program runs with the host account's access anyway.
func (w *Workspace) resolveProgram(r execRequest) (string, *Error) {
	switch {
	case strings.HasPrefix(r.program, "/"):
		if _, err := exec.LookPath(r.program); err != nil {
			return "", newError(CodeStartFailed, "program %s cannot be run: %v", quote(r.program), cause(err))
		}
		return r.program, nil
	case r.local != "":
		// The path stays in the workspace (parseExec); a symbolic link at it
		// is followed like PATH's, as a virtualenv's bin/python is.
		abs := filepath.Join(w.dir, r.local)
		if _, err := exec.LookPath(abs); err != nil {
			return "", newError(CodeStartFailed, "program %s cannot be run: %v", quote(r.program), cause(err))
		}
		return abs, nil
	}
	pathEnv := lookupEnv(w.env, "PATH")
	if pathEnv == "" {
		return "", newError(CodeStartFailed, "program %s was not found in the PATH of the exec environment: it has none; name the program by its path, or set PATH in that environment", quote(r.program))
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		// A relative PATH entry would resolve against cwd: ignore it.
		if !filepath.IsAbs(dir) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, r.program)); err == nil {
			return p, nil
		}
	}
	return "", newError(CodeStartFailed, "program %s was not found in the PATH of the exec environment", quote(r.program))
}

// lookupEnv returns the last value of key in env.
func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// pipes are the standard streams of one run. The child ends are closed in
// this process once the child started; inR and inW are nil without stdin.
type pipes struct {
	outR, outW, errR, errW, inR, inW *os.File
}

func newPipes(withStdin bool) (*pipes, error) {
	var p pipes
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeChildEnds()
		p.closeParentEnds()
		return nil, err
	}
	if withStdin {
		if p.inR, p.inW, err = os.Pipe(); err != nil {
			p.closeChildEnds()
			p.closeParentEnds()
			return nil, err
		}
	}
	return &p, nil
}

func (p *pipes) closeChildEnds() {
	for _, f := range []*os.File{p.outW, p.errW, p.inR} {
		if f != nil {
			f.Close()
		}
	}
}

func (p *pipes) closeParentEnds() {
	for _, f := range []*os.File{p.outR, p.errR, p.inW} {
		if f != nil {
			f.Close()
		}
	}
}

// capture keeps the first limit bytes of stdout and stderr together and
// counts the rest.
type capture struct {
	mu                  sync.Mutex
	limit               int64
	stdout, stderr      []byte
	captured, discarded int64
}

func (c *capture) drain(r io.Reader, dst *[]byte) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.keep(dst, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *capture) keep(dst *[]byte, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := min(int64(len(b)), max(c.limit-c.captured, 0))
	*dst = append(*dst, b[:k]...)
	c.captured += k
	c.discarded += int64(len(b)) - k
}

// confine makes cmd run under the workspace's sandbox, when it has one
// that confines (Sandbox.Confine).
func (w *Workspace) confine(cmd *exec.Cmd) (func(), *Error) {
	if w.box == nil {
		return func() {}, nil
	}
	cleanup, err := w.box.Confine(cmd, w.dir)
	if err != nil {
		return nil, newError(CodeStartFailed, "%v", err)
	}
	return cleanup, nil
}
