package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/workflows"
)

// tuiEnv makes the test binary axlr-tui (TestMain).
const tuiEnv = "AXLR_E2E_TUI"

// tmux drives axlr-tui in a detached tmux session of 80×24.
type tmux struct {
	t     *testing.T
	name  string
	shots int
}

// startTUI opens axlr-tui with args, the test binary as axlr-tui, in
// tmux, in the env's workspace.
func startTUI(t *testing.T, e *env, args ...string) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (.ci/run installs it)")
	}
	var vars []string
	for k, v := range e.vars {
		vars = append(vars, k+"="+v)
	}
	sort.Strings(vars)
	name := fmt.Sprintf("axlr-e2e-%d", os.Getpid())
	tmuxArgs := append([]string{"new-session", "-d", "-s", name, "-x", "80", "-y", "24", "-c", e.workspace, "env", "-i", tuiEnv + "=1", "TERM=xterm-256color", "NO_COLOR=1"}, vars...)
	tmuxArgs = append(append(tmuxArgs, os.Args[0]), args...)
	if out, err := exec.Command("tmux", tmuxArgs...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	m := &tmux{t: t, name: name}
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-session", "-t", name).Run() })
	return m
}

// keys sends tmux key names (or literal text with "-l").
func (m *tmux) keys(keys ...string) {
	m.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"send-keys", "-t", m.name}, keys...)...).CombinedOutput(); err != nil {
		m.t.Fatalf("tmux send-keys %v: %v\n%s", keys, err, out)
	}
}

// screen is what the pane shows now.
func (m *tmux) screen() string {
	out, err := exec.Command("tmux", "capture-pane", "-p", "-t", m.name).Output()
	if err != nil {
		m.t.Fatalf("tmux capture-pane: %v", err)
	}
	return string(out)
}

// waitFor polls the pane until it shows every text.
func (m *tmux) waitFor(ctx context.Context, what string, texts ...string) string {
	m.t.Helper()
	for {
		s := m.screen()
		all := true
		for _, text := range texts {
			all = all && strings.Contains(s, text)
		}
		if all {
			m.shot(what, s)
			return s
		}
		select {
		case <-ctx.Done():
			m.t.Fatalf("the screen never showed %s (%q); it shows:\n%s", what, texts, s)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// shot writes a screen to $AXLR_E2E_SCREENS/<test>-<n>-<what>.txt when
// that is set: the screenshots of each view a closing note shows.
func (m *tmux) shot(what, screen string) {
	dir := os.Getenv("AXLR_E2E_SCREENS")
	if dir == "" {
		return
	}
	m.shots++
	name := fmt.Sprintf("%s-%02d-%s.txt", m.t.Name(), m.shots, strings.ReplaceAll(what, " ", "-"))
	if err := os.WriteFile(filepath.Join(dir, name), []byte(screen), 0o644); err != nil {
		m.t.Errorf("screenshot: %v", err)
	}
}

// tuiReply asks to remove a directory, a command that waits for the
// person, then answers.
func tuiReply(req agenttest.Request) agenttest.Reply {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "tool" {
		return agenttest.Reply{Text: "Removed the build directory."}
	}
	return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "rm-1", Name: "local_exec", Arguments: `{"program": "rm", "args": ["-rf", "build"]}`}}}
}

// TestTUIInTmux runs the real axlr-tui in tmux at 80×24 against axlrd and
// a scripted model: a prompt typed in the composer, the card of the
// command that waits approved with a, the answer on the screen; Esc J
// opens the jobs panel, which shows the registry's job.
func TestTUIInTmux(t *testing.T) {
	model := agenttest.NewServer(t, tuiReply)
	e := newEnv(t, model.URL)
	if err := os.MkdirAll(e.workspace+"/build", 0o755); err != nil {
		t.Fatal(err)
	}
	e.writeSettings(`{"model": "m"}`)
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := admitRepair(ctx, t, c)

	m := startTUI(t, e, "--temporal-address", e.address())
	m.waitFor(ctx, "the footer", "m")
	m.keys("-l", "clean the build directory")
	m.keys("Enter")
	// The transcript shows the call before the card opens: wait for the
	// card itself, or a goes to the composer.
	m.waitFor(ctx, "the card of rm -rf build", "Approve call rm-1?", `"rm"`, `"build"`, "a approve")
	m.keys("a")
	m.waitFor(ctx, "the answer", "Removed the build directory.")
	if _, err := os.Stat(e.workspace + "/build"); !os.IsNotExist(err) {
		t.Fatalf("the approved command did not run: %v", err)
	}
	m.keys("Escape")
	m.waitFor(ctx, "the shortcuts in the footer", "J jobs · P plans")
	m.keys("J")
	m.waitFor(ctx, "the jobs panel's row", "Jobs · 1/2 active", "repair  "+rec.ID[:14], "preparing")
	// The session picker lists this session; its history shows the
	// turn's steps, read from the workflow's history.
	// Esc then keys at once reads as Alt+key: a person waits for the view.
	m.keys("Escape")
	m.waitFor(ctx, "the session view", "a prompt, or a /command")
	m.keys("-l", "/sessions")
	m.keys("Enter")
	m.waitFor(ctx, "the session picker", "Sessions · 1 on this host", "running")
	m.keys("Enter")
	m.waitFor(ctx, "the session resumed", "resumed session")
	m.keys("-l", "/history")
	m.keys("Enter")
	m.waitFor(ctx, "the history view", "History · ", "update execute", "activity ModelRequest")
	m.keys("Escape")
	m.waitFor(ctx, "the session view", "a prompt, or a /command")
	m.keys("Escape")
	m.waitFor(ctx, "the shortcuts in the footer", "P plans · S sessions")
	m.keys("P")
	m.waitFor(ctx, "the plans panel", "Plans")
	m.keys("Escape")
	m.waitFor(ctx, "the session view", "a prompt, or a /command")
	m.keys("C-c")
}

// TestTUIReconnects kills axlrd under the open TUI: the footer says
// "reconnecting" while axlrd does not answer, and stops saying it once
// axlrd is back, with the session still on screen and still answering.
func TestTUIReconnects(t *testing.T) {
	model := agenttest.NewServer(t, func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Text: "Still here."} })
	e := newEnv(t, model.URL)
	e.writeSettings(`{"model": "m"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := e.spawn()
	m := startTUI(t, e, "--temporal-address", e.address())
	m.waitFor(ctx, "the footer", "m · normal")
	m.keys("-l", "hello")
	m.keys("Enter")
	m.waitFor(ctx, "the first answer", "Still here.")
	d.kill()
	m.waitFor(ctx, "reconnecting in the footer", "reconnecting")
	e.spawn()
	for strings.Contains(m.waitFor(ctx, "the footer", "m · normal"), "reconnecting") {
		select {
		case <-ctx.Done():
			t.Fatalf("the footer still says reconnecting with axlrd back:\n%s", m.screen())
		case <-time.After(200 * time.Millisecond):
		}
	}
	m.keys("-l", "again")
	m.keys("Enter")
	m.waitFor(ctx, "the answer after the restart", "> again", "Still here.\n")
	m.keys("C-c")
}

// TestTUIBare runs axlr-tui alone, as the README's "Run it" does: no
// flag at all. It finds axlrd as a person's would, through settings.json
// (the daemon's frontend port, which axlrd listens on too), takes its
// model from there, and opens on the current directory: the welcome and
// the footer show, and a prompt typed gets its answer.
func TestTUIBare(t *testing.T) {
	model := agenttest.NewServer(t, func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Text: "Hello from axlrd."} })
	e := newEnv(t, model.URL)
	e.writeSettings(fmt.Sprintf(`{"model": "bare-model", "daemon": {"frontend_port": %d}}`, e.port))
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := startTUI(t, e)
	m.waitFor(ctx, "the welcome and the footer", "prompts run in "+e.workspace, "bare-model · normal")
	m.keys("-l", "say hello")
	m.keys("Enter")
	m.waitFor(ctx, "the answer", "> say hello", "Hello from axlrd.")
	m.keys("C-c")
}

// offers reports whether a request offers the tool.
func offers(req agenttest.Request, tool string) bool {
	for _, t := range req.Tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}

// footerLine is a screen's last line, the footer.
func footerLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return lines[len(lines)-1]
}

// plainPrompt sends "and now?" after a ceremony ended, in the TUI: the
// footer reads normal before and after, the model answers a normal
// prompt (no step offered), and MADE holds the ceremony's instance alone.
func plainPrompt(ctx context.Context, t *testing.T, e *env, d *inProcess, m *tmux, instances int) {
	t.Helper()
	// The ceremony's last result follows its answer at once.
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if footer := footerLine(m.waitFor(fctx, "the footer back in normal mode", "m · normal")); strings.Contains(footer, "step") {
		t.Fatalf("footer after the ceremony ended: %q", footer)
	}
	m.keys("-l", "and now?")
	m.keys("Enter")
	screen := m.waitFor(ctx, "the normal answer", "> and now?", "Back to normal.")
	if footer := footerLine(screen); !strings.HasPrefix(footer, "m · normal · approve local") || strings.Contains(footer, "step") {
		t.Fatalf("footer after the plain prompt: %q", footer)
	}
	m.keys("C-c")
	d.stop()
	if ids := madeInstances(t, e); len(ids) != instances {
		t.Fatalf("MADE holds instances %q, want %d: the plain prompt opened a ceremony", ids, instances)
	}
}

// TestTUIDebugThenNormal runs /debug to COMPLETED in the real axlr-tui
// (the check command's card approved with a), then a plain prompt: the
// session stays in normal mode, MADE holds one instance, and the footer
// reads normal. Before, the TUI sent debug with every prompt and the
// plain one opened a new axlr_debug instance.
func TestTUIDebugThenNormal(t *testing.T) {
	script := &debugScript{fixWorks: true}
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		if !offers(req, workflows.StepDoneTool) && strings.Contains(req.Messages[len(req.Messages)-1].Content, "and now?") {
			return agenttest.Reply{Text: "Back to normal."}
		}
		return script.reply(req)
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m"}`)
	d := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := startTUI(t, e, "--temporal-address", e.address())
	m.waitFor(ctx, "the footer", "m · normal")
	m.keys("-l", "/debug TestParse fails on empty input")
	m.keys("Enter")
	m.waitFor(ctx, "the check command's card", "tool: axlr_check", `"program": "go"`, "a approve")
	m.keys("a")
	m.waitFor(ctx, "the ceremony's end", "The ceremony ended COMPLETED.")
	plainPrompt(ctx, t, e, d, m, 1)
}

// TestTUIStopCeremonyThenNormal: a /debug step that used its tool calls
// three times pauses with the step open; /stop-ceremony stops it, and a
// plain prompt after it is a normal one: the footer reads normal and
// MADE holds the stopped instance alone.
func TestTUIStopCeremonyThenNormal(t *testing.T) {
	var mu sync.Mutex
	reads := 0
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		if !offers(req, workflows.StepDoneTool) {
			return agenttest.Reply{Text: "Back to normal."}
		}
		// A step is open: read, each time differently (the compact profile
		// refuses the same call twice in a row), until the budget pauses.
		mu.Lock()
		defer mu.Unlock()
		reads++
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "c", Name: "local_read", Arguments: fmt.Sprintf(`{"path": "calc.go", "max_bytes": %d}`, reads)}}}
	})
	e := newEnv(t, model.URL)
	calcRepo(t, e)
	e.writeSettings(`{"model": "m", "ceremonies": {"profile": "compact"}}`)
	d := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := startTUI(t, e, "--temporal-address", e.address())
	m.waitFor(ctx, "the footer", "m · normal")
	m.keys("-l", "/debug TestParse fails on empty input")
	m.keys("Enter")
	m.waitFor(ctx, "the paused step", "send a message to continue the step", "m · debug · step reproduce")
	m.keys("-l", "/stop-ceremony")
	m.keys("Enter")
	plainPrompt(ctx, t, e, d, m, 1)
}
