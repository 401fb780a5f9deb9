package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/forge/githubtest"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/embedded"
	"github.com/underpass-ai/axlr/kmp/kmptest"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// kmpEnv, set to 1, makes this test binary a kmp-mcp: an embedded store
// in KMP_MCP_DATA_DIR served over stdio under kmp's tool names. While the
// file named by kmpDownEnv exists every call is unavailable; while the
// file named by kmpHoldEnv exists a write is committed, then the call
// creates <hold>.reached and never answers.
const (
	kmpEnv     = "AXLR_E2E_KMP"
	kmpDownEnv = "AXLR_E2E_KMP_DOWN"
	kmpHoldEnv = "AXLR_E2E_KMP_HOLD"
)

func fakeKmpMCP() int {
	dir := os.Getenv("KMP_MCP_DATA_DIR")
	if dir == "" || !filepath.IsAbs(dir) || os.Getenv("KMP_MCP_BACKEND") != "embedded" {
		fmt.Fprintln(os.Stderr, "an absolute KMP_MCP_DATA_DIR and KMP_MCP_BACKEND=embedded are required")
		return 2
	}
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	st := &faultyStore{Store: s, down: os.Getenv(kmpDownEnv), hold: os.Getenv(kmpHoldEnv)}
	if err := kmptest.NewServer(st, "kmp").Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// faultyStore is a store that is down while a file exists, and holds a
// committed write's answer while another does.
type faultyStore struct {
	*embedded.Store
	down, hold string
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return path != "" && err == nil
}

func (f *faultyStore) check() error {
	if exists(f.down) {
		return kmp.Errorf(kmp.CodeUnavailable, "the kernel is down")
	}
	return nil
}

func (f *faultyStore) Wake(ctx context.Context, req kmp.WakeRequest) (kmp.WakeResult, error) {
	if err := f.check(); err != nil {
		return kmp.WakeResult{}, err
	}
	return f.Store.Wake(ctx, req)
}

func (f *faultyStore) Write(ctx context.Context, req kmp.WriteRequest) (kmp.WriteResult, error) {
	if err := f.check(); err != nil {
		return kmp.WriteResult{}, err
	}
	res, err := f.Store.Write(ctx, req)
	if err == nil && exists(f.hold) {
		os.WriteFile(f.hold+".reached", []byte(req.IdempotencyKey), 0o600)
		<-ctx.Done()
		return res, ctx.Err()
	}
	return res, err
}

// memoryModel plays repairReply, with diagnose linking the ref of the
// earlier repair's cause when the first prompt's recall shows it, and
// keeps every request.
type memoryModel struct {
	mu       sync.Mutex
	requests []agenttest.Request
}

var refPattern = regexp.MustCompile(`kmp:entry:[0-9a-f]{16}`)

func (m *memoryModel) reply(req agenttest.Request) agenttest.Reply {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	r := repairReply(req)
	if len(r.ToolCalls) == 1 && r.ToolCalls[0].ID == "d1" {
		for _, msg := range req.Messages {
			line := ""
			for _, l := range strings.Split(msg.Content, "\n") {
				if strings.Contains(l, "Parse slices") {
					line = l
				}
			}
			if ref := refPattern.FindString(line); msg.Role == "user" && ref != "" {
				r.ToolCalls[0].Arguments = strings.TrimSuffix(r.ToolCalls[0].Arguments, "}") +
					`, "connect_to": [{"ref": "` + ref + `", "rel": "supports", "why": "the same panic in Parse on empty input"}]}`
				break
			}
		}
	}
	return r
}

// firstRequest is the first model request whose first user message holds
// text.
func (m *memoryModel) firstRequest(text string) (agenttest.Request, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.requests {
		for _, msg := range r.Messages {
			if msg.Role == "user" && strings.Contains(msg.Content, text) {
				return r, true
			}
		}
	}
	return agenttest.Request{}, false
}

// runRepair admits a repair with brief, approves its check and its merge,
// and returns its completed record.
func runRepair(ctx context.Context, t *testing.T, c *client.Client, repo *githubtest.Repository, e *env, brief string) jobs.Record {
	t.Helper()
	rec, err := c.AdmitJob(ctx, workflows.AdmitRequest{Admission: jobs.Admission{Kind: jobs.Repair, Repository: "underpass-ai/calc",
		Signature: jobs.JobSignature("underpass-ai/calc", jobs.Repair, brief), Brief: brief}, Build: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	sid, err := session.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartJob(ctx, workflows.JobInput{Record: rec, SessionID: sid, Model: "m", Settings: workflows.JobSettings{
		Remote: repo.Path(), Directory: e.dir + "/repairs", Watch: 2 * time.Minute, Poll: time.Second}}); err != nil {
		t.Fatal(err)
	}
	decide(ctx, t, c, rec.ID, jobs.AwaitingApproval, jobs.PendingCheck)
	decide(ctx, t, c, rec.ID, jobs.AwaitingMerge, jobs.PendingMerge)
	waitJob(ctx, t, c, rec.ID, jobs.Completed)
	return finalRecord(ctx, t, c, rec.ID)
}

// finalRecord is a job's record as the registry holds it once the job
// ended: its last report, after the outcome was recorded.
func finalRecord(ctx context.Context, t *testing.T, c *client.Client, id string) jobs.Record {
	t.Helper()
	for {
		if r, err := c.Job(ctx, id); err == nil && r.Terminal() {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the registry never saw job %s end", id)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// decide waits for the job to stand at status and approves what waits.
func decide(ctx context.Context, t *testing.T, c *client.Client, id string, status jobs.Status, kind jobs.PendingKind) {
	t.Helper()
	waitJob(ctx, t, c, id, status)
	if _, err := c.DecideJob(ctx, workflows.JobDecision{Job: id, Kind: kind, Approve: true}); err != nil {
		t.Fatal(err)
	}
}

// regress puts Parse's bug back on main, as a revert would.
func regress(t *testing.T, repo *githubtest.Repository) {
	t.Helper()
	if _, err := repo.Commit("main", "Revert the empty-input check", map[string]string{"calc.go": calcFiles["calc.go"]}); err != nil {
		t.Fatal(err)
	}
}

// openMemory opens axlrd's embedded store beside it (SQLite WAL shares).
func openMemory(t *testing.T, dir string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func listKind(ctx context.Context, t *testing.T, s kmp.Store, about, kind string) []kmp.Object {
	t.Helper()
	l, err := s.List(ctx, kmp.ListRequest{About: about, Kind: kind})
	if err != nil {
		t.Fatalf("list %s of %s: %v", kind, about, err)
	}
	return l.Entries
}

// TestRepairRemembers runs two repairs of the same failure, one after the
// other, on the embedded memory: the first records its cause (with the
// reproduction) and its outcome (the pull request, the merge, the files);
// the second's first model request carries that cause with its ref, its
// diagnose links it, and its outcome follows its own cause.
func TestRepairRemembers(t *testing.T) {
	model := &memoryModel{}
	_, repo, e := repairEnvWith(t, 1, model.reply)
	e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	first := runRepair(ctx, t, c, repo, e, "TestParse fails on empty input")
	regress(t, repo)
	second := runRepair(ctx, t, c, repo, e, "TestParse fails again on empty input after a revert")

	mem := openMemory(t, filepath.Join(e.stateDir, "memory"))
	about := "repo:underpass-ai/calc"
	causes := listKind(ctx, t, mem, about, kmp.KindErrorPath)
	if len(causes) != 2 {
		t.Fatalf("causes %+v, want one per repair", causes)
	}
	newer, older := causes[0], causes[1]
	if older.Text != "Parse slices s[:1] without checking that s is empty" ||
		!strings.Contains(older.Metadata["evidence"].(string), "reproduction: go test ./... exited 1") ||
		!strings.Contains(older.Metadata["evidence"].(string), "TestParse") {
		t.Fatalf("the first cause %+v", older)
	}
	req, ok := model.firstRequest("after a revert")
	if !ok {
		t.Fatal("no request of the second repair")
	}
	var prompt string
	for _, m := range req.Messages {
		if m.Role == "user" {
			prompt = m.Content
			break
		}
	}
	if !strings.Contains(prompt, "[AXLR · memory]") || !strings.Contains(prompt, older.Ref+" Parse slices s[:1] without checking that s is empty") {
		t.Fatalf("the second repair's first prompt does not carry the first cause %s:\n%s", older.Ref, prompt)
	}
	in, err := mem.Inspect(ctx, kmp.InspectRequest{About: about, Ref: newer.Ref})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Links.Outgoing) != 1 || in.Links.Outgoing[0] != (kmp.LinkedRef{Ref: older.Ref, Rel: "supports", Why: "the same panic in Parse on empty input"}) {
		t.Fatalf("the second cause's links %+v, want its diagnose's link to %s", in.Links, older.Ref)
	}
	outcomes := listKind(ctx, t, mem, about, kmp.KindSuccessPath)
	if len(outcomes) != 2 {
		t.Fatalf("outcomes %+v", outcomes)
	}
	for i, o := range outcomes {
		rec := []jobs.Record{second, first}[i]
		ev := o.Metadata["evidence"].(string)
		if !strings.Contains(o.Text, fmt.Sprintf("pull request #%d merged as %s", rec.PullRequest, rec.MergeSHA[:12])) ||
			!strings.Contains(ev, "files: calc.go") || !strings.Contains(ev, "merge: "+rec.MergeSHA) {
			t.Fatalf("outcome of %s: %+v", rec.ID, o)
		}
		got, err := mem.Inspect(ctx, kmp.InspectRequest{About: about, Ref: o.Ref})
		if err != nil || len(got.Links.Outgoing) != 1 || got.Links.Outgoing[0].Rel != "follows" || got.Links.Outgoing[0].Ref != causes[i].Ref {
			t.Fatalf("outcome %s links %+v (%v), want it to follow %s", o.Ref, got.Links, err, causes[i].Ref)
		}
		if len(rec.Memory) != 3 || !strings.HasPrefix(rec.Memory[1], "cause recorded as kmp:entry:") || !strings.HasPrefix(rec.Memory[2], "outcome recorded as kmp:entry:") {
			t.Fatalf("the record of %s says %q", rec.ID, rec.Memory)
		}
	}
	if first.Memory[0] != "memory holds nothing about "+about+" yet" || second.Memory[0] != "recalled 2 memories about "+about {
		t.Fatalf("recall reports %q, %q", first.Memory[0], second.Memory[0])
	}
	captureWorkflow(t, e, workflows.JobWorkflowID(second.ID), "job_repair_memory")
}

// kmpSettings names this test binary as kmp-mcp.
func kmpSettings(t *testing.T, e *env, gh *githubtest.Server) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "kmp": {"command": "` + exe + `", "env": {"` + kmpEnv + `": "1", "` +
		kmpDownEnv + `": "` + filepath.Join(e.dir, "kmp-down") + `", "` + kmpHoldEnv + `": "` + filepath.Join(e.dir, "kmp-hold") + `"}}}`)
}

// TestMemoryWriteThroughKill kills axlrd while kmp-mcp holds the answer
// to the cause's write it has committed: after the restart the write is
// sent again with its key, kmp replays it, and memory holds the cause
// once.
func TestMemoryWriteThroughKill(t *testing.T) {
	model := &memoryModel{}
	gh, repo, e := repairEnvWith(t, 1, model.reply)
	kmpSettings(t, e, gh)
	hold := filepath.Join(e.dir, "kmp-hold")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	k := spawnKillable(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	brief := "TestParse fails on empty input"
	rec, err := k.c.AdmitJob(ctx, workflows.AdmitRequest{Admission: jobs.Admission{Kind: jobs.Repair, Repository: "underpass-ai/calc",
		Signature: jobs.JobSignature("underpass-ai/calc", jobs.Repair, brief), Brief: brief}, Build: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := session.NewID()
	if err := k.c.StartJob(ctx, workflows.JobInput{Record: rec, SessionID: sid, Model: "m", Settings: workflows.JobSettings{
		Remote: repo.Path(), Directory: e.dir + "/repairs", Watch: 2 * time.Minute, Poll: time.Second}}); err != nil {
		t.Fatal(err)
	}
	decide(ctx, t, k.c, rec.ID, jobs.AwaitingApproval, jobs.PendingCheck)
	for !exists(hold + ".reached") {
		select {
		case <-ctx.Done():
			t.Fatal("kmp-mcp never received the cause's write")
		case <-time.After(100 * time.Millisecond):
		}
	}
	key, _ := os.ReadFile(hold + ".reached")
	if !strings.HasSuffix(string(key), ":diagnose:1") {
		t.Fatalf("the held write is %s, want the cause's", key)
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	k.restart("while kmp-mcp held the cause's committed write")
	decide(ctx, t, k.c, rec.ID, jobs.AwaitingMerge, jobs.PendingMerge)
	waitJob(ctx, t, k.c, rec.ID, jobs.Completed)
	done := finalRecord(ctx, t, k.c, rec.ID)
	if len(done.Memory) < 2 || !strings.HasSuffix(done.Memory[1], "(replayed)") {
		t.Fatalf("the record says %q, want the cause replayed", done.Memory)
	}
	k.d.kill()
	mem := openMemory(t, filepath.Join(e.stateDir, "memory", "kmp"))
	if causes := listKind(ctx, t, mem, "repo:underpass-ai/calc", kmp.KindErrorPath); len(causes) != 1 {
		t.Fatalf("causes %+v, want the one written once", causes)
	}
}

// TestMemoryDown runs a repair while kmp-mcp answers every call as
// unavailable: the job completes with nothing recalled, its writes wait
// in the job session's sidecar, and the next axlrd, with kmp-mcp back,
// writes them.
func TestMemoryDown(t *testing.T) {
	model := &memoryModel{}
	gh, repo, e := repairEnvWith(t, 1, model.reply)
	kmpSettings(t, e, gh)
	down := filepath.Join(e.dir, "kmp-down")
	if err := os.WriteFile(down, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	k := spawnKillable(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	done := runRepair(ctx, t, k.c, repo, e, "TestParse fails on empty input")
	if len(done.Memory) != 3 || !strings.HasPrefix(done.Memory[0], "memory not recalled: unavailable") ||
		done.Memory[1] != "cause waits in the sidecar: the memory was not reachable" || done.Memory[2] != "outcome waits in the sidecar: the memory was not reachable" {
		t.Fatalf("the record says %q", done.Memory)
	}
	sidecar := filepath.Join(e.stateDir, "memory", "sidecar", done.Session+".json")
	if !exists(sidecar) {
		t.Fatalf("no sidecar at %s", sidecar)
	}
	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	k.restart("to find kmp-mcp back")
	for exists(sidecar) {
		select {
		case <-ctx.Done():
			t.Fatal("the sidecar was never written")
		case <-time.After(100 * time.Millisecond):
		}
	}
	k.d.kill()
	mem := openMemory(t, filepath.Join(e.stateDir, "memory", "kmp"))
	about := "repo:underpass-ai/calc"
	causes, outcomes := listKind(ctx, t, mem, about, kmp.KindErrorPath), listKind(ctx, t, mem, about, kmp.KindSuccessPath)
	if len(causes) != 1 || len(outcomes) != 1 {
		t.Fatalf("after the flush: causes %+v, outcomes %+v", causes, outcomes)
	}
}
