package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/embedded"
	madeembedded "github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// downStore is a store that is down while down is set.
type downStore struct {
	kmp.Store
	down bool
}

func (d *downStore) Wake(ctx context.Context, req kmp.WakeRequest) (kmp.WakeResult, error) {
	if d.down {
		return kmp.WakeResult{}, kmp.Errorf(kmp.CodeUnavailable, "down")
	}
	return d.Store.Wake(ctx, req)
}

func (d *downStore) Write(ctx context.Context, req kmp.WriteRequest) (kmp.WriteResult, error) {
	if d.down {
		return kmp.WriteResult{}, kmp.Errorf(kmp.CodeUnavailable, "down")
	}
	return d.Store.Write(ctx, req)
}

func newMemory(t *testing.T) (*Memory, *downStore) {
	t.Helper()
	s, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d := &downStore{Store: s}
	return &Memory{Store: d, Sidecars: filepath.Join(t.TempDir(), "sidecar"), Log: zerolog.Nop()}, d
}

func cause(key, summary string) kmp.WriteRequest {
	return kmp.WriteRequest{About: "repo:o/r", Actor: "axlr", IdempotencyKey: key,
		Memories: []kmp.Memory{{ID: "cause", Kind: kmp.KindErrorPath, Summary: summary, Evidence: "go test exit 1"}}}
}

func TestMemoryWake(t *testing.T) {
	m, d := newMemory(t)
	ctx := context.Background()
	res, err := m.Wake(ctx, workflows.MemoryWakeInput{About: "repo:o/r", Intent: "TestParse", MaxBytes: 2048})
	if err != nil || res.Text != "" || res.Refs != nil || res.Note != "" {
		t.Fatalf("wake of an empty memory: %+v, %v; want nothing", res, err)
	}
	var refs []string
	for i, s := range []string{"TestParse panics on empty input", "TestFormat drops the sign", strings.Repeat("padding ", 100)} {
		w, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: cause(string(rune('a'+i)), s)})
		if err != nil || w.Refs["cause"] == "" {
			t.Fatalf("write: %+v, %v", w, err)
		}
		refs = append(refs, w.Refs["cause"])
	}
	res, err = m.Wake(ctx, workflows.MemoryWakeInput{About: "repo:o/r", Intent: "TestParse panics", MaxBytes: 600})
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(res.Text, "\n")
	if head != "[AXLR · memory] What memory holds about repo:o/r for this work, each line after its ref:" || len(body) > 600 {
		t.Fatalf("recall %q (%d bytes of lines)", res.Text, len(body))
	}
	if !strings.HasPrefix(body, refs[0]+" TestParse panics on empty input") || len(res.Refs) == 0 || res.Refs[0] != refs[0] {
		t.Fatalf("recall %q refs %v, want %s first", body, res.Refs, refs[0])
	}
	d.down = true
	res, err = m.Wake(ctx, workflows.MemoryWakeInput{About: "repo:o/r", Intent: "x", MaxBytes: 2048})
	if err != nil || res.Text != "" || res.Note != "memory not recalled: unavailable: down" {
		t.Fatalf("wake of a memory that is down: %+v, %v", res, err)
	}
}

// A write the memory does not take waits in the session's sidecar; the
// next write, and a flush, write it with its key; a refused one is
// reported and never kept.
func TestMemorySidecar(t *testing.T) {
	m, d := newMemory(t)
	ctx := context.Background()
	d.down = true
	for _, key := range []string{"k1", "k1", "k2"} { // k1 twice: a retried activity
		res, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: cause(key, "cause "+key)})
		if err != nil || !res.Pending {
			t.Fatalf("write while down: %+v, %v", res, err)
		}
	}
	waiting, err := readSidecar(filepath.Join(m.Sidecars, "s1.json"))
	if err != nil || len(waiting) != 2 {
		t.Fatalf("sidecar %+v, %v; want k1 and k2", waiting, err)
	}
	res, err := m.Flush(ctx, workflows.MemoryFlushInput{SessionID: "s1"})
	if err != nil || res != (workflows.MemoryFlushResult{Waiting: 2}) {
		t.Fatalf("flush while down: %+v, %v", res, err)
	}
	d.down = false
	w, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: cause("k3", "cause k3")})
	if err != nil || w.Status != kmp.StatusCommitted {
		t.Fatalf("write once back: %+v, %v", w, err)
	}
	if _, err := os.Stat(filepath.Join(m.Sidecars, "s1.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the sidecar is still there (%v)", err)
	}
	l, err := d.List(ctx, kmp.ListRequest{About: "repo:o/r"})
	if err != nil || len(l.Entries) != 3 || l.Entries[0].Text != "cause k3" || l.Entries[2].Text != "cause k1" {
		t.Fatalf("memory after the flush: %+v, %v", l.Entries, err)
	}
	bad := cause("k4", "x")
	bad.Memories[0].Kind = "gossip"
	r, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: bad})
	if err != nil || r.Pending || !strings.HasPrefix(r.Refused, "invalid_argument: memories[0].kind") {
		t.Fatalf("a refused write: %+v, %v", r, err)
	}
	// Past MaxSidecar the oldest is dropped.
	d.down = true
	for i := range MaxSidecar + 2 {
		if _, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s2", Request: cause("m"+string(rune('A'+i)), "c")}); err != nil {
			t.Fatal(err)
		}
	}
	waiting, _ = readSidecar(filepath.Join(m.Sidecars, "s2.json"))
	if len(waiting) != MaxSidecar || waiting[0].IdempotencyKey != "mC" {
		t.Fatalf("sidecar holds %d, first %s; want %d from mC", len(waiting), waiting[0].IdempotencyKey, MaxSidecar)
	}
	d.down = false
	all, err := m.FlushAll(ctx)
	if err != nil || all.Written != MaxSidecar || all.Waiting != 0 {
		t.Fatalf("flush all: %+v, %v", all, err)
	}
	if _, err := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "../x", Request: cause("k9", "c")}); err == nil {
		t.Fatal("a session id that is a path was taken")
	}
}

// A write whose links the memory refuses is written without them, and the
// refusal is reported.
func TestMemoryLinksRefused(t *testing.T) {
	m, _ := newMemory(t)
	req := cause("k1", "the cause")
	req.Memories[0].ConnectTo = []kmp.Link{{Ref: "kmp:entry:0000000000000000", Rel: "supports", Why: "w", Evidence: "e"}}
	res, err := m.Write(context.Background(), workflows.MemoryWriteInput{SessionID: "s1", Request: req})
	if err != nil || res.Refs["cause"] == "" || !strings.Contains(res.LinksRefused, "unknown ref") {
		t.Fatalf("write with an unknown link: %+v, %v", res, err)
	}
}

func TestMemoryRead(t *testing.T) {
	m, d := newMemory(t)
	ctx := context.Background()
	w, _ := m.Write(ctx, workflows.MemoryWriteInput{SessionID: "s1", Request: cause("k1", "TestParse panics")})
	res, err := m.Read(ctx, workflows.MemoryReadInput{Op: workflows.MemoryWake, About: "repo:o/r", Intent: "TestParse"})
	if err != nil || res.Wake == nil || res.Wake.Wake.Refs()[0] != w.Refs["cause"] {
		t.Fatalf("wake read: %+v, %v", res, err)
	}
	res, err = m.Read(ctx, workflows.MemoryReadInput{Op: workflows.MemoryShow, Ref: w.Refs["cause"]})
	if err != nil || res.Show == nil || res.Show.Object.Text != "TestParse panics" {
		t.Fatalf("show read: %+v, %v", res, err)
	}
	_, err = m.Read(ctx, workflows.MemoryReadInput{Op: workflows.MemoryList, About: "repo:x/y"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || app.Message() != "not_found: no memory about repo:x/y" {
		t.Fatalf("list of an unknown about: %v", err)
	}
	d.down = true
	if _, err := m.Read(ctx, workflows.MemoryReadInput{Op: workflows.MemoryWake, About: "repo:o/r"}); kmp.CodeOf(err) != kmp.CodeUnavailable {
		t.Fatalf("read while down: %v, want it retryable", err)
	}
}

// turnLog writes a turn into a session log: the prompt, a response that
// reads, writes and runs a command (exit 1), their results, the answer.
func turnLog(t testing.TB, store *session.Store, id, exec string, effects bool) {
	t.Helper()
	log, err := store.Create(id)
	if err != nil {
		t.Fatal(err)
	}
	add := func(key string, d messageData) {
		t.Helper()
		if _, err := appendEvent(log, evMessage, key, d); err != nil {
			t.Fatal(err)
		}
	}
	add(keyPrompt(exec), messageData{Message: agent.Message{Role: "user", Content: "fix Parse"}, Prompt: true})
	calls := []agent.ToolCall{{ID: "c1", Name: "local_read", Arguments: `{"path": "calc.go"}`}}
	if effects {
		calls = append(calls,
			agent.ToolCall{ID: "c2", Name: "local_write", Arguments: `{"path": "calc.go", "content": "x"}`},
			agent.ToolCall{ID: "c3", Name: "local_exec", Arguments: `{"program": "go", "args": ["test", "./..."]}`})
	}
	add(keyResponse(3), messageData{Message: agent.Message{Role: "assistant", Content: "Reading, then fixing the empty case.", ToolCalls: calls}})
	add("tool:3.0", messageData{Message: agent.Message{Role: "tool", ToolCallID: "c1", Content: "package calc"}, Tool: "local_read", Status: contract.CallCompleted, Decision: contract.AutoApprove})
	if effects {
		add("tool:3.1", messageData{Message: agent.Message{Role: "tool", ToolCallID: "c2", Content: `{"bytes": 1}`}, Tool: "local_write", Status: contract.CallCompleted, Decision: contract.Approve})
		add("tool:3.2", messageData{Message: agent.Message{Role: "tool", ToolCallID: "c3", Content: `{"exit_code": 1, "stdout": "--- FAIL: TestParse", "stderr": ""}`}, Tool: "local_exec", Status: contract.CallCompleted, Decision: contract.AutoApprove})
	}
	add(keyResponse(7), messageData{Message: agent.Message{Role: "assistant", Content: "Parse is fixed; the test still fails elsewhere."}})
}

// A turn that wrote and ran becomes one turn entry of its actions, one
// evidence line each, never its prose; a turn that only read writes
// nothing; the same key replays.
func TestMemoryRecordTurn(t *testing.T) {
	m, _ := newMemory(t)
	store, err := session.Open(t.TempDir(), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	m.Sessions = store
	ctx := context.Background()
	s1, s2 := "0b5e9c1e-2f7d-4a7b-9e58-1d2c3b4a5f60", "6c1f0a52-8b1e-4c1e-9d61-6f1c0b2a7e10"
	turnLog(t, store, s1, "exec-1", true)
	in := workflows.RecordTurnInput{SessionID: s1, Sessions: []string{s1}, ExecutionID: "exec-1", Key: "wf:turn:1",
		About: "ws:s1", Turn: 1, Mode: "normal", Step: "axlr-session-s1 turn 1"}
	res, err := m.RecordTurn(ctx, in)
	if err != nil || res.Actions != 2 || res.Reads != 1 || res.Refs["turn"] == "" {
		t.Fatalf("record turn: %+v, %v", res, err)
	}
	got, err := m.Store.Inspect(ctx, kmp.InspectRequest{About: "ws:s1", Ref: res.Refs["turn"]})
	if err != nil {
		t.Fatal(err)
	}
	want := "wrote calc.go (completed, approve)\nran go test ./... (completed, auto_approve, exit 1)\nread 1 times\nMADE step axlr-session-s1 turn 1"
	if got.Object.Kind != kmp.KindTurn || got.Object.Text != "turn 1 in normal mode: 1 file written, 1 command run" || got.Evidence[0] != want {
		t.Fatalf("turn entry %q / %q, want evidence %q", got.Object.Text, got.Evidence, want)
	}
	if strings.Contains(got.Evidence[0], "fixing") || strings.Contains(got.Object.Text, "Parse is fixed") {
		t.Fatal("the turn entry carries the model's prose")
	}
	again, err := m.RecordTurn(ctx, in)
	if err != nil || again.Status != kmp.StatusReplayed {
		t.Fatalf("the same turn again: %+v, %v", again, err)
	}
	turnLog(t, store, s2, "exec-2", false)
	res, err = m.RecordTurn(ctx, workflows.RecordTurnInput{SessionID: s2, Sessions: []string{s2}, ExecutionID: "exec-2", Key: "wf:turn:2", About: "ws:s2", Turn: 1})
	if err != nil || res.Actions != 0 || res.Reads != 1 || res.Refs != nil {
		t.Fatalf("a turn that only read: %+v, %v", res, err)
	}
	if _, err := m.Store.Wake(ctx, kmp.WakeRequest{About: "ws:s2"}); kmp.CodeOf(err) != kmp.CodeNotFound {
		t.Fatalf("a turn that only read wrote something: %v", err)
	}
}

// The model's memory tools: axlr_remember keeps one memory in the
// workspace's about under the call's key (a retry replays it), and says
// what was kept; axlr_recall shows it with its ref; bad arguments are
// refused before anything is written.
func TestMemoryTools(t *testing.T) {
	m, _ := newMemory(t)
	h := &HostTools{Memory: m}
	ctx := context.Background()
	root := t.TempDir()
	about := WorkspaceAbout(root)
	if !strings.HasPrefix(about, "ws:") || len(about) != len("ws:")+16 {
		t.Fatalf("the about of a workspace without a remote is %q", about)
	}
	var names []string
	for _, o := range h.offer(ctx) {
		names = append(names, o.Name)
	}
	if strings.Join(names, " ") != "axlr_recall axlr_remember" || !h.effectful(workflows.RememberTool) || h.effectful(workflows.RecallTool) {
		t.Fatalf("offered %v; remember effectful %v, recall %v", names, h.effectful(workflows.RememberTool), h.effectful(workflows.RecallTool))
	}
	in := workflows.ToolCallInput{SessionID: "s1", Root: root, Key: "5.0"}
	remember := agent.ToolCall{Name: workflows.RememberTool, Arguments: `{"kind": "constraint", "summary": "never edit vendor/ by hand", "evidence": "README says so"}`}
	var kept struct {
		Kept  bool   `json:"kept"`
		About string `json:"about"`
		Ref   string `json:"ref"`
	}
	out := h.memoryCall(ctx, remember, in)
	if err := json.Unmarshal([]byte(out.content), &kept); err != nil || out.status != contract.CallCompleted || !kept.Kept || kept.About != about || kept.Ref == "" {
		t.Fatalf("remember: %+v (%v)", out, err)
	}
	if again := h.memoryCall(ctx, remember, in); !strings.Contains(again.content, kept.Ref) {
		t.Fatalf("a retried remember: %+v, want %s again", again, kept.Ref)
	}
	recall := h.memoryCall(ctx, agent.ToolCall{Name: workflows.RecallTool, Arguments: `{"intent": "edit vendor"}`}, in)
	if recall.status != contract.CallCompleted || !strings.Contains(recall.content, kept.Ref+" constraint: never edit vendor/ by hand") {
		t.Fatalf("recall: %+v", recall)
	}
	for _, bad := range []string{`{"kind": "gossip", "summary": "s", "evidence": "e"}`, `{"kind": "constraint", "summary": "s"}`, `{"kind": "constraint", "summary": "s", "evidence": "e", "extra": 1}`} {
		if out := h.memoryCall(ctx, agent.ToolCall{Name: workflows.RememberTool, Arguments: bad}, in); out.status != contract.CallFailed || !strings.Contains(out.content, "invalid_request") {
			t.Errorf("remember %s: %+v, want it refused", bad, out)
		}
		var mc workflows.ModelCall
		if !h.inspect(agent.ToolCall{Name: workflows.RememberTool, Arguments: bad}, &mc) || mc.Invalid == "" {
			t.Errorf("inspect %s: %+v, want it invalid", bad, mc)
		}
	}
	l, err := m.Store.List(ctx, kmp.ListRequest{About: about})
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("memory holds %+v (%v), want the one memory", l.Entries, err)
	}
}

// BenchmarkTurnRecord measures what a turn's record adds to a turn: the
// claim of the session record's turn, its completion with the turn's
// record read from the log, and the turn's memory entry, on the embedded
// MADE and memory, as the local activities run them.
func BenchmarkTurnRecord(b *testing.B) {
	ctx := context.Background()
	store, err := session.Open(b.TempDir(), session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	e, err := madeembedded.Open(b.TempDir(), madeembedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	def, _ := ceremonies.Lookup(ceremonies.SessionRecord, ceremonies.SessionRecordVersion)
	if _, err := PublishPinned(ctx, e, def); err != nil {
		b.Fatal(err)
	}
	mem, err := embedded.Open(b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { mem.Close() })
	cer := &Ceremony{Made: e, Store: store, Owner: "bench", Log: zerolog.Nop()}
	m := &Memory{Store: mem, Sidecars: b.TempDir(), Sessions: store, Log: zerolog.Nop()}
	sid := "0b5e9c1e-2f7d-4a7b-9e58-1d2c3b4a5f60"
	turnLog(b, store, sid, "exec-1", true)
	var rec workflows.SessionRecord
	b.ResetTimer()
	for i := range b.N {
		res, _ := cer.SessionTurn(ctx, workflows.SessionTurnInput{SessionID: sid, Workspace: "/w", Record: rec})
		if !res.Record.Claimed {
			b.Fatalf("turn %d not claimed: %s", i, res.Record.Note)
		}
		if _, err := m.RecordTurn(ctx, workflows.RecordTurnInput{SessionID: sid, Sessions: []string{sid}, ExecutionID: "exec-1",
			Key: fmt.Sprintf("bench:turn:%d", i), About: "ws:" + sid, Turn: i + 1}); err != nil {
			b.Fatal(err)
		}
		end, _ := cer.SessionTurnEnd(ctx, workflows.SessionTurnEndInput{SessionID: sid, Sessions: []string{sid}, ExecutionID: "exec-1",
			Record: res.Record, Status: "completed"})
		if end.Record.Note != "" {
			b.Fatal(end.Record.Note)
		}
		rec = end.Record
	}
}

// A decision's reason rides on its evidence line.
func TestTurnActionEvidence(t *testing.T) {
	exit := 1
	for _, c := range []struct {
		a    turnAction
		want string
	}{
		{turnAction{Effect: effectCommand, What: "go test ./...", Status: contract.CallCompleted, Decision: contract.AutoApprove, ExitCode: &exit}, "ran go test ./... (completed, auto_approve, exit 1)"},
		{turnAction{Effect: effectCommand, What: "rm -rf build", Status: contract.CallDenied, Decision: contract.Deny, Reason: "denied: keep the build"}, "ran rm -rf build (denied, deny): denied: keep the build"},
		{turnAction{Effect: effectExternal, What: "https://example.com", Status: contract.CallFailed, Reason: "timeout"}, "called https://example.com (failed): timeout"},
	} {
		if got := c.a.Evidence(); got != c.want {
			t.Errorf("Evidence() = %q, want %q", got, c.want)
		}
	}
}

// A turn a decision resumed is read from the end of the execution that
// waited to its own result: the call decided, not the earlier turns.
func TestReadTurnResumed(t *testing.T) {
	store, err := session.Open(t.TempDir(), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sid := "0b5e9c1e-2f7d-4a7b-9e58-1d2c3b4a5f60"
	turnLog(t, store, sid, "exec-1", true)
	log, _ := store.Log(sid)
	add := func(typ, key string, d any) {
		t.Helper()
		if _, err := appendEvent(log, typ, key, d); err != nil {
			t.Fatal(err)
		}
	}
	add(evResult, keyResult("exec-1"), contract.Result{Status: contract.NeedsDecision})
	add(evMessage, "tool:9.0", messageData{Message: agent.Message{Role: "tool", ToolCallID: "c9", Content: "denied: not now"}, Tool: "local_exec", Status: contract.CallDenied, Decision: contract.Deny})
	add(evMessage, keyResponse(10), messageData{Message: agent.Message{Role: "assistant", Content: "I will not run it."}})
	add(evResult, keyResult("exec-2"), contract.Result{Status: contract.Completed})
	f, err := readTurn([]*session.Log{log}, "exec-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Actions) != 1 || f.Actions[0].Status != contract.CallDenied || f.Actions[0].Reason != "denied: not now" || f.Answer != "I will not run it." || f.Prompt != "" {
		t.Fatalf("the resumed turn %+v", f)
	}
	if f, _ = readTurn([]*session.Log{log}, "exec-1"); len(f.Actions) != 3 || f.Prompt != "fix Parse" {
		t.Fatalf("the first turn, read from its prompt on: %+v", f)
	}
}
