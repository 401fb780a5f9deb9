package workflows

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/kmp"
)

// fakeMemory stands in for memory's activities in workflow tests: a wake
// shows refs, a write is kept (or refused, or left pending), and the
// writes are what the tests read back.
type fakeMemory struct {
	mu      sync.Mutex
	refs    []string
	down    bool
	wakes   []MemoryWakeInput
	writes  []kmp.WriteRequest
	turns   []RecordTurnInput
	flushes int
}

func (f *fakeMemory) Wake(_ context.Context, in MemoryWakeInput) (MemoryWakeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wakes = append(f.wakes, in)
	if f.down {
		return MemoryWakeResult{Note: "memory not recalled: unavailable: down"}, nil
	}
	if len(f.refs) == 0 {
		return MemoryWakeResult{}, nil
	}
	var lines []string
	for _, r := range f.refs {
		lines = append(lines, r+" error_path: an earlier cause")
	}
	return MemoryWakeResult{Text: "[AXLR · memory] recalled:\n" + strings.Join(lines, "\n"), Refs: f.refs}, nil
}

func (f *fakeMemory) Write(_ context.Context, in MemoryWriteInput) (MemoryWriteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return MemoryWriteResult{Pending: true}, nil
	}
	for _, w := range f.writes {
		if w.IdempotencyKey == in.Request.IdempotencyKey {
			return MemoryWriteResult{Refs: map[string]string{in.Request.Memories[0].ID: "kmp:entry:" + w.IdempotencyKey}, Status: kmp.StatusReplayed}, nil
		}
	}
	f.writes = append(f.writes, in.Request)
	return MemoryWriteResult{Refs: map[string]string{in.Request.Memories[0].ID: "kmp:entry:" + in.Request.IdempotencyKey}, Status: kmp.StatusCommitted}, nil
}

func (f *fakeMemory) RecordTurn(_ context.Context, in RecordTurnInput) (RecordTurnResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.turns = append(f.turns, in)
	return RecordTurnResult{}, nil
}

func (f *fakeMemory) Flush(context.Context, MemoryFlushInput) (MemoryFlushResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
	return MemoryFlushResult{}, nil
}

func (f *fakeMemory) written() []kmp.WriteRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kmp.WriteRequest(nil), f.writes...)
}

func TestCheckLinks(t *testing.T) {
	m := &CeremonyMemory{Refs: []string{"kmp:entry:a", "kmp:entry:b"}}
	kept, reply := m.checkLinks(nil)
	if kept != nil || reply != "" {
		t.Fatalf("no links: %v, %q", kept, reply)
	}
	kept, reply = m.checkLinks([]ceremonies.Link{
		{Ref: "kmp:entry:a", Rel: "supports", Why: "same test"},
		{Ref: "kmp:entry:zzz", Rel: "supports", Why: "w"},
		{Ref: "kmp:entry:b", Rel: "likes", Why: "w"},
	})
	if len(kept) != 1 || kept[0].Ref != "kmp:entry:a" || kept[0].Evidence != "same test" || kept[0].Confidence != "medium" {
		t.Fatalf("kept %+v, want the link to a", kept)
	}
	for _, want := range []string{"kmp:entry:zzz (not a ref the wake showed)", `kmp:entry:b (rel "likes" is not a KMP relation name)`, "the wake showed kmp:entry:a, kmp:entry:b"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply %q does not say %q", reply, want)
		}
	}
}

func TestWriteReport(t *testing.T) {
	for _, c := range []struct {
		res  MemoryWriteResult
		want string
	}{
		{MemoryWriteResult{Refs: map[string]string{"cause": "kmp:entry:1"}, Status: kmp.StatusCommitted}, "cause recorded as kmp:entry:1"},
		{MemoryWriteResult{Refs: map[string]string{"cause": "kmp:entry:1"}, Status: kmp.StatusReplayed}, "cause recorded as kmp:entry:1 (replayed)"},
		{MemoryWriteResult{Refs: map[string]string{"cause": "kmp:entry:1"}, LinksRefused: "no"}, "cause recorded as kmp:entry:1; its links were refused: no"},
		{MemoryWriteResult{Refused: "invalid_argument: x"}, "cause not recorded: invalid_argument: x"},
		{MemoryWriteResult{Pending: true}, "cause waits in the sidecar: the memory was not reachable"},
	} {
		if got := c.res.Report("cause"); got != c.want {
			t.Errorf("Report = %q, want %q", got, c.want)
		}
	}
}

// TestJobMemory: a repair wakes memory with its brief before the first
// step and puts the recall in the first prompt; diagnose records the
// cause with the reproduction as evidence, keeping the link to a ref the
// wake showed and refusing one it did not (named to the model); the
// outcome is a success_path with the pull request, the merge and the
// files, linked to the cause; keys are <workflow id>:<step>:<iteration>.
func TestJobMemory(t *testing.T) {
	h := newJobHarness(t, newScripted(repairModel...), greenChecks)
	h.memory = &fakeMemory{refs: []string{"kmp:entry:earlier"}}
	h.setup(h.acts, h.made, []pull.Checks{greenChecks})
	h.made.diagnosis = &HandBackResult{
		Texts: map[string]string{"root_cause": "Parse indexes s[0] of an empty string", "evidence": "parse.go:3", "proposed_fix": "check the length"},
		Links: []ceremonies.Link{{Ref: "kmp:entry:earlier", Rel: "supports", Why: "the same panic"}, {Ref: "kmp:entry:made-up", Rel: "supports", Why: "w"}},
	}
	h.forge.files = []string{"calc/parse.go"}
	var check, merge outcome
	h.decideAt(time.Minute, JobDecision{RequestID: "d-1", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, &check)
	h.decideAt(2*time.Minute, JobDecision{RequestID: "d-2", Job: h.record.ID, Kind: jobs.PendingMerge, Approve: true}, &merge)
	rec := h.run(t, JobSettings{Remote: "/origin.git", Directory: "/jobs", Watch: 45 * time.Minute, Poll: 30 * time.Second})
	if rec.Status != jobs.Completed {
		t.Fatalf("record %+v", rec)
	}
	if len(h.memory.wakes) != 1 || h.memory.wakes[0] != (MemoryWakeInput{About: "repo:o/r", Intent: h.record.Brief, MaxBytes: WakeBytes}) {
		t.Fatalf("wakes %+v", h.memory.wakes)
	}
	if b := h.acts.begun; len(b) == 0 || !strings.Contains(b[0].Prompt, "kmp:entry:earlier error_path: an earlier cause") {
		t.Fatalf("the first prompt does not carry the recall: %+v", b)
	}
	w := h.memory.written()
	if len(w) != 2 {
		t.Fatalf("writes %+v, want the cause and the outcome", w)
	}
	cause, out := w[0], w[1]
	wf := "default-test-workflow-id" // the test environment's workflow id
	if cause.IdempotencyKey != wf+":diagnose:1" || cause.About != "repo:o/r" || cause.Memories[0].Kind != kmp.KindErrorPath ||
		cause.Memories[0].Summary != "Parse indexes s[0] of an empty string" ||
		!strings.Contains(cause.Memories[0].Evidence, "reproduction: go test ./... exited 1") ||
		len(cause.Memories[0].ConnectTo) != 1 || cause.Memories[0].ConnectTo[0].Ref != "kmp:entry:earlier" {
		t.Fatalf("cause %+v", cause)
	}
	if cause.Labels["repair"][0] != h.record.ID || cause.Labels["ws"][0] != "ws:"+sessionID {
		t.Fatalf("cause labels %v", cause.Labels)
	}
	var replies []string
	for _, r := range h.acts.recorded {
		replies = append(replies, r.Message)
	}
	if all := strings.Join(replies, "\n"); !strings.Contains(all, "kmp:entry:made-up (not a ref the wake showed)") ||
		!strings.Contains(all, "The cause is recorded in memory as kmp:entry:"+wf+":diagnose:1") {
		t.Fatalf("the model is not told of the refused link and the recorded cause: %s", all)
	}
	m := out.Memories[0]
	if out.IdempotencyKey != wf+":outcome:1" || m.Kind != kmp.KindSuccessPath || !strings.Contains(m.Summary, "merged as") ||
		!strings.Contains(m.Evidence, "files: calc/parse.go") || !strings.Contains(m.Evidence, "merge: "+rec.MergeSHA) ||
		len(m.ConnectTo) != 1 || m.ConnectTo[0].Ref != "kmp:entry:"+wf+":diagnose:1" || m.ConnectTo[0].Rel != "follows" ||
		out.Labels["pull_request"][0] != "7" {
		t.Fatalf("outcome %+v", out)
	}
	if len(rec.Memory) != 3 || rec.Memory[0] != "recalled 1 memories about repo:o/r" || !strings.HasPrefix(rec.Memory[2], "outcome recorded as ") {
		t.Fatalf("record's memory %q", rec.Memory)
	}
	if h.memory.flushes != 1 {
		t.Fatalf("flushes %d, want one at the job's end", h.memory.flushes)
	}
}

// TestSessionCeremonyMemory: a session's ceremony wakes memory about the
// workspace with the prompt before its first step (the recall rides on
// the step's first note, the compact profile's budget is 1 KiB) and, once
// ended, records its outcome under ws:<session id>, once.
func TestSessionCeremonyMemory(t *testing.T) {
	for _, profile := range []string{"standard", "compact"} {
		acts := newScripted(
			reply{calls: []scriptCall{reproduceHandBack}},
			reply{calls: []scriptCall{diagnoseHandBack}},
			reply{text: "Diagnosed."},
			reply{text: "Nothing else."},
		)
		acts.about, acts.profile = "repo:o/r", profile
		h := newCeremonyHarness(t, acts, &fakeCeremony{timeout: time.Hour, exit: 1})
		h.memory.refs = []string{"kmp:entry:earlier"}
		var ex, dec, next outcome
		h.update(UpdateExecute, "exec-1", debugReq("exec-1", "TestParse fails"), &ex)
		h.update(UpdateDecide, "dec-1", DecideRequest{ExecutionID: "dec-1", CallID: "call-4-0", Decision: contract.Approve}, &dec)
		h.update(UpdateExecute, "exec-2", execReq("exec-2", "thanks", policy.ApproveLocal, nil), &next)
		h.run()
		ex.mustAccept(t, "execute")
		dec.mustAccept(t, "decide")
		next.mustAccept(t, "the next prompt")
		budget := map[string]int{"standard": WakeBytes, "compact": WakeBytesCompact}[profile]
		if len(h.memory.wakes) != 1 || h.memory.wakes[0] != (MemoryWakeInput{About: "repo:o/r", Intent: "TestParse fails", MaxBytes: budget}) {
			t.Fatalf("%s: wakes %+v", profile, h.memory.wakes)
		}
		if len(acts.notes) == 0 || !strings.Contains(acts.notes[0], "kmp:entry:earlier error_path: an earlier cause") {
			t.Fatalf("%s: the first step's note does not carry the recall: %q", profile, acts.notes)
		}
		w := h.memory.written()
		if len(w) != 1 {
			t.Fatalf("%s: writes %+v, want the outcome once", profile, w)
		}
		o := w[0]
		if o.About != "ws:"+sessionID || o.Memories[0].Kind != kmp.KindSuccessPath || !strings.HasSuffix(o.IdempotencyKey, "/outcome:1") ||
			!strings.Contains(o.Memories[0].Evidence, "step reproduce round 1 completed; check go test ./... exited 1") || o.Labels["ceremony"][0] != "axlr_debug" {
			t.Fatalf("%s: outcome %+v", profile, o)
		}
	}
}

func TestModelWritesMemory(t *testing.T) {
	for mode, want := range map[string]bool{"normal": true, "debug": true, "review": true, "incident": false, "repair": false,
		"improve": false, ceremonies.PartPlan: false, ceremonies.PartTask: false, ceremonies.PartSync: false} {
		if got := modelWritesMemory(mode); got != want {
			t.Errorf("modelWritesMemory(%s) = %v, want %v", mode, got, want)
		}
	}
}

// rememberHost hosts a turn in a mode, as the session does.
func rememberHost(ctx workflow.Context, mode string) (hookReport, error) {
	st := newHostState(sessionID, "", "exec-1")
	st.Approval = policy.ApproveLocal
	t := newHost(&st, hostOptions{}).turn
	t.hooks = &testHooks{t: t}
	err := t.Begin(ctx, BeginTurnInput{SessionID: sessionID, ExecutionID: "exec-1", Prompt: "remember this", Root: "/work/app", Mode: mode})
	st.Mode = mode
	if err == nil {
		err = t.Run(ctx, nil)
	}
	status, msg := endedAs(err, "")
	return hookReport{Result: *t.Finish(ctx, status, msg, nil)}, nil
}

// In incident mode axlr_remember is neither offered nor run: a call is
// refused by the work mode. In normal mode it is offered.
func TestRememberRefusedInIncident(t *testing.T) {
	for _, mode := range []string{"incident", "normal"} {
		acts := newScripted(
			reply{calls: []scriptCall{{tool: RememberTool, args: map[string]any{"kind": "decision", "summary": "s", "evidence": "e"}}}},
			reply{text: "ok"},
		)
		acts.hostTools = []HostTool{{Name: RecallTool}, {Name: RememberTool}}
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterWorkflowWithOptions(rememberHost, workflow.RegisterOptions{Name: "test.RememberHost"})
		env.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session."})
		env.ExecuteWorkflow("test.RememberHost", mode)
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		offered := acts.requests[0].Tools
		if !slices.Contains(offered, RecallTool) || slices.Contains(offered, RememberTool) != (mode == "normal") {
			t.Fatalf("%s mode offers %v", mode, offered)
		}
		if mode == "normal" {
			continue
		}
		if len(acts.ran) != 0 || len(acts.recorded) == 0 || acts.recorded[0].Status != contract.CallForbidden ||
			!strings.Contains(acts.recorded[0].Message, "in incident mode axlr records memory itself") {
			t.Fatalf("ran %+v recorded %+v", acts.ran, acts.recorded)
		}
	}
}
