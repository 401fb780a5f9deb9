// Package e2e tests axlrd end to end: the embedded Temporal server on
// SQLite, the worker, the real activities, the session store and workspace
// tools, an httptest OpenAI-compatible model, and axlr-tui's commands. The
// tests that kill the daemon run it as a separate process: this test binary,
// re-executed as axlrd.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/underpass-ai/axlr/internal/database/dbtest"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/internal/cmd/root"
	"github.com/underpass-ai/axlr/internal/daemon"
	"github.com/underpass-ai/axlr/internal/embedtemporal"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/made/madetest"
	"github.com/underpass-ai/axlr/plugins/pluginstest"
)

// daemonEnv, set to 1, makes this test binary run axlrd's Main.
const daemonEnv = "AXLR_E2E_DAEMON"

// madeEnv, set to 1, makes this test binary a made-mcp: the embedded MADE
// engine served over stdio MCP under made-mcp's tool names, in the
// directory of MADE_MCP_REDB_PATH.
const madeEnv = "AXLR_E2E_MADE"

func TestMain(m *testing.M) {
	// A re-executed test binary serving as an MCP plugin (hosttools_test.go).
	pluginstest.MainIfServer()
	switch {
	case os.Getenv(daemonEnv) == "1":
		os.Exit(daemon.Main(os.Args[1:], os.Stdout, os.Stderr))
	case os.Getenv(madeEnv) == "1":
		os.Exit(fakeMadeMCP())
	case os.Getenv(kmpEnv) == "1":
		os.Exit(fakeKmpMCP())
	case os.Getenv(tuiEnv) == "1":
		// axlr-tui itself, in a terminal (tui_test.go).
		os.Exit(root.Main(context.Background(), factory.New(nil), os.Args[1:]))
	}
	code := m.Run()
	stopTemporal()
	dbtest.Stop()
	os.Exit(code)
}

func fakeMadeMCP() int {
	path := os.Getenv("MADE_MCP_REDB_PATH")
	if path == "" || os.Getenv("MADE_MCP_BACKEND") != "embedded" {
		fmt.Fprintln(os.Stderr, "MADE_MCP_REDB_PATH is required for the embedded backend")
		return 2
	}
	eng, err := embedded.Open(filepath.Join(filepath.Dir(path), "served"), embedded.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer eng.Close()
	if err := madetest.NewServer(eng).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// env is a test's environment: the daemon's and axlr-tui's.
type env struct {
	t         testing.TB
	dir       string
	stateDir  string
	workspace string
	port      int
	vars      map[string]string
}

func newEnv(t testing.TB, modelURL string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{
		t:         t,
		dir:       dir,
		stateDir:  filepath.Join(dir, "state"),
		workspace: filepath.Join(dir, "workspace"),
		port:      freePort(t),
	}
	if err := os.MkdirAll(e.workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	// A person's home has git's configuration, which git will not run
	// without when it cannot read it: the sandbox must let it.
	if err := os.WriteFile(filepath.Join(dir, ".gitconfig"), []byte("[user]\n\tname = Person\n\temail = person@example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.vars = map[string]string{
		"HOME":            dir,
		"PATH":            os.Getenv("PATH"),
		"XDG_CONFIG_HOME": filepath.Join(dir, "config"),
		"XDG_STATE_HOME":  filepath.Join(dir, "xdgstate"),
		"AXLR_HOST_ID":    "e2e",
		"OPENAI_BASE_URL": modelURL,
		"OPENAI_API_KEY":  "sk-test-secret-value-1234",
		// Many axlrd run at once here: their service APIs take free
		// ports, and each says its own in its ready line.
		"AXLR_SERVICE_LISTEN": "127.0.0.1:0",
		"AXLR_SERVICE_PROBE":  "127.0.0.1:0",
	}
	return e
}

func (e *env) getenv(k string) string { return e.vars[k] }

func (e *env) environ() []string {
	var out []string
	for k, v := range e.vars {
		out = append(out, k+"="+v)
	}
	return out
}

func (e *env) address() string { return fmt.Sprintf("127.0.0.1:%d", e.port) }

func (e *env) writeSettings(doc string) {
	e.t.Helper()
	path := filepath.Join(e.vars["XDG_CONFIG_HOME"], "axlr", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// inProcess is a daemon running in the test process.
type inProcess struct {
	cancel  context.CancelFunc
	done    chan error
	info    daemon.Info
	logs    *syncBuffer
	stopped sync.Once
}

// start runs axlrd in this process until the test ends.
func (e *env) start() *inProcess { return e.startWith(nil) }

// startWith runs axlrd in this process with options adjusted by adjust.
func (e *env) startWith(adjust func(*daemon.Options)) *inProcess {
	e.t.Helper()
	d, err := e.launch(adjust)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// launch runs axlrd in this process until the test ends, or returns why
// it did not start.
func (e *env) launch(adjust func(*daemon.Options)) (*inProcess, error) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan daemon.Info, 1)
	d := &inProcess{cancel: cancel, done: make(chan error, 1), logs: &syncBuffer{}}
	opts := daemon.Options{
		StateDir:     e.stateDir,
		FrontendPort: e.port,
		UIPortSet:    true,
		Getenv:       e.getenv,
		Environ:      e.environ(),
		Stderr:       d.logs,
		LogLevel:     "warn",
		Ready:        func(i daemon.Info) { ready <- i },
	}
	if adjust != nil {
		adjust(&opts)
	}
	go func() { d.done <- daemon.Serve(ctx, opts) }()
	select {
	case d.info = <-ready:
	case err := <-d.done:
		cancel()
		return nil, fmt.Errorf("axlrd did not start: %v\n%s", err, d.logs.String())
	case <-time.After(2 * time.Minute):
		cancel()
		return nil, fmt.Errorf("axlrd not ready after 2 minutes\n%s", d.logs.String())
	}
	e.t.Cleanup(func() {
		d.stop()
		if e.t.Failed() {
			e.t.Logf("axlrd's log:\n%s", d.logs.String())
		}
	})
	return d, nil
}

// stop stops the daemon and waits for it; it may be called more than once.
func (d *inProcess) stop() {
	d.stopped.Do(func() {
		d.cancel()
		<-d.done
	})
}

// process is axlrd as a child process (this binary re-executed).
type process struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	waited chan struct{}
}

// spawn starts axlrd as a child process, with extra flags after the
// env's, and waits for its ready line.
func (e *env) spawn(extra ...string) *process {
	e.t.Helper()
	p, err := e.trySpawn(extra...)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// trySpawn is spawn that returns why axlrd was not ready.
func (e *env) trySpawn(extra ...string) (*process, error) {
	e.t.Helper()
	args := append([]string{"--state-dir", e.stateDir, "--frontend-port", fmt.Sprint(e.port), "--ui-port", "0", "--log-level", "warn"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(e.environ(), daemonEnv+"=1")
	p := &process{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, waited: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			p.stdout.Write([]byte(line + "\n"))
			if strings.HasPrefix(line, "axlrd ready:") {
				close(ready)
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(p.waited)
	}()
	select {
	case <-ready:
	case <-p.waited:
		return nil, fmt.Errorf("axlrd exited before it was ready\nstdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
	case <-time.After(2 * time.Minute):
		p.kill()
		return nil, fmt.Errorf("axlrd not ready after 2 minutes\nstderr:\n%s", p.stderr)
	}
	e.t.Cleanup(func() {
		p.kill()
		if e.t.Failed() {
			e.t.Logf("axlrd's stderr (pid %d):\n%s", cmd.Process.Pid, p.stderr)
		}
	})
	return p, nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.waited
}

// cliResult is what one axlr-tui command printed and returned.
type cliResult struct {
	stdout, stderr string
	code           int
}

// factory is axlr-tui's factory in this process: empty standard input,
// stdout and stderr, the env's environment and its workspace as the
// current directory.
func (e *env) factory(stdout, stderr io.Writer) *factory.Factory {
	return &factory.Factory{
		IOStreams: factory.NewIOStreams(strings.NewReader(""), stdout, stderr),
		Getwd:     func() (string, error) { return e.workspace, nil },
		Conn:      client.Options{Getenv: e.getenv},
	}
}

// tui runs axlr-tui's Main in this process.
func (e *env) tui(ctx context.Context, args ...string) cliResult {
	var stdout, stderr syncBuffer
	code := root.Main(ctx, e.factory(&stdout, &stderr), append(args, "--temporal-address", e.address()))
	return cliResult{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// lines decodes --json output: the event lines and the final result.
func lines(t testing.TB, out string) ([]contract.Event, *contract.Result) {
	t.Helper()
	var evs []contract.Event
	var res *contract.Result
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var ev contract.Event
		err := dec.Decode(&ev)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("decode output line: %v\n%s", err, out)
		}
		if ev.Type == contract.EventResult {
			res = ev.Result
			continue
		}
		evs = append(evs, ev)
	}
	if res == nil {
		t.Fatalf("no result line in:\n%s", out)
	}
	return evs, res
}

func freePort(t testing.TB) int {
	t.Helper()
	port, err := embedtemporal.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
