package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/sandbox"
	"github.com/underpass-ai/axlr/workflows"
)

// TestRepairSandboxed: a repair's model, in diagnose, tries to read the
// person's GitHub token and to append to ~/.bashrc. Both commands run
// confined: the token stays unread and .bashrc as it was, the model reads
// the denials (with the sandbox's status and AXLR's line), and the job
// goes on to its merge. History's rows say how each command ran: the
// probes refused a path, the checks ran confined.
func TestRepairSandboxed(t *testing.T) {
	if abi, err := sandbox.ABI(); abi < 1 {
		t.Skipf("the kernel offers no Landlock: %v", err)
	}
	var mu sync.Mutex
	var seen []string
	probes := []string{"cat $HOME/.config/gh/hosts.yml", "echo pwned >> $HOME/.bashrc"}
	reply := func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		// A probe's result is local_exec's output; a check's record, in
		// a hand-back's answer, says how it ran too.
		probed := last.Role == "tool" && strings.Contains(last.Content, `"stdout"`) && strings.Contains(last.Content, `"sandbox"`)
		if probed {
			seen = append(seen, last.Content)
		}
		if r, ok := lastReply(req); ok && r.NextStep == "diagnose" || len(seen) > 0 && len(seen) < len(probes) {
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "probe" + string(rune('0'+len(seen))), Name: "local_exec",
				Arguments: `{"program": "sh", "args": ["-c", "` + probes[len(seen)] + `"]}`}}}
		}
		if len(seen) == len(probes) && probed {
			return stepDone("d1", `{"root_cause": "Parse slices s[:1] without checking that s is empty", "evidence": "calc.go", "proposed_fix": "return an error for empty input"}`)
		}
		return repairReply(req)
	}
	gh, repo, e := repairEnvWith(t, 1, reply)
	jobSettings(e, gh.URL, repo.Path())
	token := filepath.Join(e.dir, ".config", "gh", "hosts.yml")
	bashrc := filepath.Join(e.dir, ".bashrc")
	for p, content := range map[string]string{token: "github.com:\n  oauth_token: gho_secret\n", bashrc: "# mine\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	rec := startRepair(ctx, t, c)
	merge := waitJob(ctx, t, c, rec.ID, jobs.AwaitingMerge)
	if _, err := c.DecideJob(ctx, decision(merge, jobs.PendingMerge)); err != nil {
		t.Fatal(err)
	}
	waitJob(ctx, t, c, rec.ID, jobs.Completed)
	if b, _ := os.ReadFile(bashrc); string(b) != "# mine\n" {
		t.Fatalf(".bashrc is now %q", b)
	}
	abi, _ := sandbox.ABI()
	confined := "sandbox: landlock ABI " + strconv.Itoa(abi)
	h := e.tui(ctx, "history", workflows.JobWorkflowID(rec.ID))
	if strings.Count(h.stdout, "local_exec call probe") != len(probes) || strings.Count(h.stdout, confined+", refused a path") != len(probes) ||
		!strings.Contains(h.stdout, "exit 1 · "+confined) || !strings.Contains(h.stdout, "exit 0 · "+confined) {
		t.Errorf("history does not say how the commands ran:\n%s", h.stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(probes) {
		t.Fatalf("the model read %d probe results: %q", len(seen), seen)
	}
	for i, out := range seen {
		if strings.Contains(out, "gho_secret") || !strings.Contains(out, "Permission denied") || !strings.Contains(out, "landlock ABI") || !strings.Contains(out, "tools.sandbox_read") {
			t.Errorf("probe %q: the model read %s", probes[i], out)
		}
	}
}
