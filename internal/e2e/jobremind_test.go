package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/plugins/pluginstest"
	"github.com/underpass-ai/axlr/workflows"
)

// TestRepairAutonomousStalls runs a repair under repair.autonomous from the
// command line: an MCP plugin's tool runs without a card, but rm -rf (the
// default destructive list) and the first check command still wait for
// the person; then the model ends its turn four times with diagnose open.
// It is reminded three times, the step is completed failed in MADE and the
// instance cancelled, and the job ends failed with the reason (exit 1).
func TestRepairAutonomousStalls(t *testing.T) {
	plugin := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return pluginstest.NewServer() }, nil))
	defer plugin.Close()
	var mu sync.Mutex
	var echoed string
	var stalls, reminders int
	reply := func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		r, isReply := lastReply(req)
		switch {
		case strings.Contains(last.Content, "was stopped"):
			return agenttest.Reply{Text: "Sorry, I stopped."}
		case last.Role == "tool" && last.ToolCallID == "echo1":
			echoed = last.Content
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "rm1", Name: "local_exec", Arguments: `{"program": "rm", "args": ["-rf", "build"]}`}}}
		case last.Role == "tool" && last.ToolCallID == "rm1":
			return stepDone("r1", `{"check_command": {"program": "go", "args": ["test", "./..."]}, "expected": "ok", "observed": "panic: slice bounds out of range"}`)
		case isReply && r.NextStep == "diagnose", strings.Contains(last.Content, "Step diagnose is still open"):
			if !isReply {
				reminders++
			}
			stalls++
			return agenttest.Reply{Text: "The cause is in Parse, I think."}
		case openStep(last.Content) == "reproduce":
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "echo1", Name: "remote__echo", Arguments: `{"text": "reproducing TestParse"}`}}}
		}
		return agenttest.Reply{Text: "nothing to do"}
	}
	gh, repo, e := repairEnvWith(t, 1, reply)
	manifest := filepath.Join(e.dir, "remote.json")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`{"manifest_version": 1, "id": "remote", "url": %q, "allow_tools": ["echo"]}`, plugin.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.writeSettings(fmt.Sprintf(`{"model": "m", "forge": {"api_url": %q}, "tools": {"web": false}, "plugins": [{"manifest": %q}],
		"repair": {"repository": "underpass-ai/calc", "remote": %q, "poll_seconds": 1, "watch_minutes": 2, "autonomous": true}}`,
		gh.URL, manifest, repo.Path()))
	d := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--repair", "TestParse fails on empty input", "--json")
	first, _, _, rec := jobLines(t, r.stdout)
	if r.code != 3 || rec.Pending == nil || !strings.HasPrefix(rec.Pending.Command, "local_exec ") || !strings.Contains(rec.Pending.Command, `"rm"`) {
		t.Fatalf("--repair: exit %d, record %+v, want rm -rf waiting\n%s", r.code, rec, r.stderr)
	}
	mu.Lock()
	got := echoed
	mu.Unlock()
	if !strings.Contains(got, "reproducing TestParse") {
		t.Fatalf("the plugin's echo did not run without a card: %q", got)
	}
	id := first.ID
	if r := e.tui(ctx, "jobs", "approve", id); r.code != 0 {
		t.Fatalf("approve rm -rf: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.tui(ctx, "jobs", "watch", id, "--json")
	_, _, _, rec = jobLines(t, r.stdout)
	if r.code != 3 || rec.Pending == nil || rec.Pending.Command != "go test ./..." {
		t.Fatalf("watch to the check: exit %d, record %+v\n%s", r.code, rec, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "approve", id); r.code != 0 {
		t.Fatalf("approve the check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.tui(ctx, "jobs", "watch", id, "--json")
	_, _, _, rec = jobLines(t, r.stdout)
	const reason = "ceremony_stalled: the model ended its turn 4 times with step diagnose open"
	if r.code != 1 || rec.Status != jobs.Failed || rec.Reason != reason {
		t.Fatalf("watch to the end: exit %d, record %+v\nwant failed: %s\n%s", r.code, rec, reason, r.stderr)
	}
	mu.Lock()
	ended, reminded := stalls, reminders
	mu.Unlock()
	if ended != 4 || reminded != 3 {
		t.Fatalf("the model ended its turn %d times and was reminded %d times; want 4 and 3", ended, reminded)
	}
	show := e.tui(ctx, "jobs", "show", id)
	if show.code != 0 || !strings.Contains(show.stdout, reason) {
		t.Fatalf("jobs show: exit %d\n%s%s", show.code, show.stdout, show.stderr)
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(id), "job_stalled")
	d.stop()
	inst := madeInstance(t, e, rec.Instance)
	s, _ := inst.Step("diagnose")
	if s.Status != made.StepFailed || inst.CurrentState != "CANCELLED" || !inst.Completed {
		t.Fatalf("diagnose is %s in MADE, the instance %s (completed %v): the stalled job's step fails and its instance is cancelled", s.Status, inst.CurrentState, inst.Completed)
	}
}
