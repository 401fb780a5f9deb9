package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// originMarker opens the prompts of the session that asks for a repair;
// the job's own session never sees it.
const originMarker = "ORIGIN:"

// originScript plays the model of a session that meets a failure of
// axlr's own local_read twice (a file name too long for the file system),
// asks for a repair citing both calls, then answers; on its next prompt it
// reads the job's outcome note. The job's session gets repairReply.
type originScript struct {
	mu sync.Mutex
	// notes are the outcome notes the last request held.
	notes []string
	// results are what the model read back, by call id.
	results map[string]string
}

func (o *originScript) reply(req agenttest.Request) agenttest.Reply {
	if !strings.Contains(firstUser(req), originMarker) {
		return repairReply(req)
	}
	o.mu.Lock()
	o.notes = nil
	for _, m := range req.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "[AXLR] Job ") {
			o.notes = append(o.notes, m.Content)
		}
		if m.Role == "tool" {
			o.results[m.ToolCallID] = m.Content
		}
	}
	o.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	tools := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			tools++
		}
	}
	long := strings.Repeat("n", 300)
	switch {
	case last.Role == "user":
		if tools > 0 {
			return agenttest.Reply{Text: "Noted the repair's outcome."}
		}
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "read-1", Name: "local_read", Arguments: `{"path": "` + long + `"}`}}}
	case tools == 1:
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "read-2", Name: "local_read", Arguments: `{"path": "` + long + `"}`}}}
	case tools == 2:
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "ask-1", Name: jobs.ToolRequestRepair, Arguments: `{
			"description": "local_read fails on a long file name instead of saying the name is too long",
			"expected": "a clear invalid_request naming the limit",
			"observed": "filesystem_error: file name too long",
			"evidence": "local_read of a 300-byte name failed twice with filesystem_error",
			"tool_calls": ["read-1", "read-2"]}`}}}
	case tools == 3:
		return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "status-1", Name: jobs.ToolRepairStatus, Arguments: `{}`}}}
	}
	return agenttest.Reply{Text: "A repair of axlr is under way; I carry on."}
}

func firstUser(req agenttest.Request) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// TestRepairRequestedBySession: a session whose own tool failed the same
// way twice asks for a repair with axlr_request_repair; the registry admits
// it as a job of that origin session and it runs in its own session and
// clone; axlr_repair_status lists it; once it merged, the origin session's
// next prompt carries its outcome note, once.
func TestRepairRequestedBySession(t *testing.T) {
	origin := &originScript{results: map[string]string{}}
	gh, repo, e := repairEnvWith(t, 1, origin.reply)
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "repair": {"repository": "underpass-ai/calc", "remote": "` + repo.Path() +
		`", "poll_seconds": 1, "watch_minutes": 2, "auto_merge": true}}`)
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := e.tui(ctx, "--exec", originMarker+" read the long file", "--approve", "local", "--json")
	_, res := lines(t, r.stdout)
	if r.code != 0 || res.Status != contract.Completed {
		t.Fatalf("origin: exit %d %+v\n%s", r.code, res, r.stderr)
	}
	var ask, status *contract.ToolCallRecord
	for i, tc := range res.ToolCalls {
		switch tc.Tool {
		case jobs.ToolRequestRepair:
			ask = &res.ToolCalls[i]
		case jobs.ToolRepairStatus:
			status = &res.ToolCalls[i]
		}
	}
	if ask == nil || ask.Status != contract.CallCompleted || status == nil || status.Status != contract.CallCompleted {
		t.Fatalf("the request %+v, the status %+v", ask, status)
	}
	origin.mu.Lock()
	asked, listed := origin.results["ask-1"], origin.results["status-1"]
	origin.mu.Unlock()
	var admitted struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	if err := json.Unmarshal([]byte(asked), &admitted); err != nil || admitted.Job.ID == "" {
		t.Fatalf("the request's result %s: %v", asked, err)
	}
	id := admitted.Job.ID
	if !strings.Contains(listed, id) {
		t.Fatalf("axlr_repair_status answered %s", listed)
	}
	rec, err := c.Job(ctx, id)
	if err != nil || rec.OriginSession != res.SessionID || rec.Kind != jobs.Repair {
		t.Fatalf("the job %+v: %v", rec, err)
	}
	if r := e.tui(ctx, "jobs", "watch", id); r.code != 3 {
		t.Fatalf("watch to the check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "approve", id); r.code != 0 {
		t.Fatalf("approve: exit %d %s", r.code, r.stderr)
	}
	if r := e.tui(ctx, "jobs", "watch", id); r.code != 0 {
		t.Fatalf("watch to the merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, prompt := range []string{"what became of it?", "and now?"} {
		if r := e.tui(ctx, "--exec", originMarker+" "+prompt, "--session", res.SessionID); r.code != 0 {
			t.Fatalf("origin's next prompt: exit %d %s", r.code, r.stderr)
		}
	}
	origin.mu.Lock()
	defer origin.mu.Unlock()
	if len(origin.notes) != 1 || !strings.Contains(origin.notes[0], "[AXLR] Job "+id+" (repair) ended completed: pull request #1") {
		t.Fatalf("the origin session was told %q", origin.notes)
	}
	captureWorkflow(t, e, workflows.SessionWorkflowID(res.SessionID), "session_job_request")
}
