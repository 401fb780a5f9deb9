package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/jsonargs"
	"github.com/underpass-ai/axlr/workflows"
)

// testBuild is the build the fixture's session activities run as.
const testBuild = "test-build"

// fakeRegistry stands for the job registry behind client.Client's Launch
// and Jobs, whose boundary is Temporal (the e2e tests cross it): it
// applies the registry's own rules (jobs.Admit) over the records it holds,
// admits a request id once, and gives an admitted job a session, as the
// job's workflow reports one. lose drops the answers of that many
// admissions; down fails every call.
type fakeRegistry struct {
	mu       sync.Mutex
	records  []jobs.Record
	applied  map[string]string
	launches []workflows.JobLaunch
	lose     int
	down     error
}

func (r *fakeRegistry) Launch(_ context.Context, l workflows.JobLaunch) (jobs.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.launches = append(r.launches, l)
	if r.down != nil {
		return jobs.Record{}, r.down
	}
	if r.applied == nil {
		r.applied = map[string]string{}
	}
	adm := l.Admit.Admission
	id, ok := r.applied[l.Admit.RequestID]
	if !ok {
		if err := jobs.Admit(r.records, adm, jobs.Limits{MaxActive: 8}, l.Admit.Build); err != nil {
			var ref *jobs.Refusal
			if errors.As(err, &ref) {
				return jobs.Record{}, &workflows.JobRefusedError{Refusal: *ref}
			}
			return jobs.Record{}, err
		}
		id = fmt.Sprintf("job-%d", len(r.records)+1)
		r.records = append(r.records, jobs.Record{ID: id, Kind: adm.Kind, Signature: adm.Signature, Repository: adm.Repository,
			OriginSession: adm.OriginSession, Session: "session-of-" + id, Brief: adm.Brief, Status: jobs.Running, Attempt: 1, Build: l.Admit.Build})
		r.applied[l.Admit.RequestID] = id
	}
	rec, err := jobs.Find(r.records, id)
	if err != nil {
		return jobs.Record{}, err
	}
	if r.lose > 0 {
		r.lose--
		return jobs.Record{}, errors.New("context deadline exceeded")
	}
	return rec, nil
}

func (r *fakeRegistry) Jobs(context.Context) ([]jobs.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down != nil {
		return nil, r.down
	}
	out := slices.Clone(r.records)
	slices.Reverse(out)
	return out, nil
}

// scriptedModel answers each request with the reply set last.
type scriptedModel struct {
	mu   sync.Mutex
	next agenttest.Reply
}

func (m *scriptedModel) script(agenttest.Request) agenttest.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// jobFixture is the real session activities over a real store and
// workspace, with an httptest model whose next calls the test chooses and
// a fake registry.
type jobFixture struct {
	*fixture
	model *scriptedModel
	reg   *fakeRegistry
}

func newJobFixture(t *testing.T) *jobFixture {
	m := &scriptedModel{}
	f := &jobFixture{fixture: newFixture(t, m.script), model: m, reg: &fakeRegistry{}}
	f.acts.Hosts = &HostTools{Jobs: func(context.Context) JobClient { return f.reg }}
	f.acts.Settings.Jobs = workflows.JobLaunchSettings{Repository: "underpass-ai/axlr", Build: testBuild}
	f.begin("work on the project")
	return f
}

// calls has the model answer with calls and returns them as the workflow
// sees them.
func (f *jobFixture) calls(calls ...agenttest.ToolCall) []workflows.ModelCall {
	f.t.Helper()
	f.model.mu.Lock()
	f.model.next = agenttest.Reply{ToolCalls: calls}
	f.model.mu.Unlock()
	res, err := f.request(f.len())
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Calls
}

func (f *jobFixture) len() int {
	log, err := f.acts.Store.Log(f.id)
	if err != nil {
		f.t.Fatal(err)
	}
	return log.Len()
}

// fail saves a failed result for a call, as ToolCall saves a workspace
// tool's failure: the runtime failures a test workspace cannot produce.
func (f *jobFixture) fail(c workflows.ModelCall, code, msg string) {
	f.t.Helper()
	log, _ := f.acts.Store.Log(f.id)
	if _, err := appendEvent(log, evMessage, keyTool(c.Key), messageData{
		Message: agent.Message{Role: "tool", ToolCallID: c.CallID, Content: toolError(code, msg)},
		Tool:    c.Tool, CallKey: c.Key, Status: contract.CallFailed, Decision: contract.AutoApprove,
	}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *jobFixture) run(c workflows.ModelCall) {
	f.t.Helper()
	if _, err := f.tool(c); err != nil {
		f.t.Fatal(err)
	}
}

// ask runs a request call as the session's workflow does and returns the
// result and the text the transcript saved.
func (f *jobFixture) ask(c workflows.ModelCall, mode, root string) (workflows.ToolCallResult, string, error) {
	res, err := call[workflows.JobRequestInput, workflows.ToolCallResult](f.fixture, func(s *Session) any { return s.RequestJob }, workflows.JobRequestInput{
		SessionID: f.id, Sessions: []string{f.id}, Key: c.Key, CallID: c.CallID, Tool: c.Tool, Decision: contract.AutoApprove, Mode: mode, Root: root, Model: "m",
	})
	log, _ := f.acts.Store.Log(f.id)
	ev, ok := log.ByKey(keyTool(c.Key))
	if !ok {
		return res, "", err
	}
	d, derr := decode[messageData](ev)
	if derr != nil {
		f.t.Fatal(derr)
	}
	return res, d.Message.Content, err
}

// session makes the calls the requests cite: r1 and r2 the same
// filesystem failure of local_read, n1 a local_read of a missing file, x1
// a program that exits 1, p1 a plugin's tool axlr refused, l1 one
// filesystem failure of local_list.
func (f *jobFixture) session() {
	f.t.Helper()
	c := f.calls(
		agenttest.ToolCall{ID: "r1", Name: "local_read", Arguments: `{"path":"a.go"}`},
		agenttest.ToolCall{ID: "r2", Name: "local_read", Arguments: `{"path":"a.go"}`},
		agenttest.ToolCall{ID: "n1", Name: "local_read", Arguments: `{"path":"missing.go"}`},
		agenttest.ToolCall{ID: "x1", Name: "local_exec", Arguments: `{"program":"/bin/sh","args":["-c","exit 1"]}`},
		agenttest.ToolCall{ID: "p1", Name: "notes__find", Arguments: `{}`},
		agenttest.ToolCall{ID: "l1", Name: "local_list", Arguments: `{}`},
	)
	f.fail(c[0], "filesystem_error", "read a.go: input/output error")
	f.fail(c[1], "filesystem_error", "read a.go: input/output error")
	f.run(c[2])
	f.run(c[3])
	if c[4].Invalid == "" {
		f.t.Fatalf("a plugin's tool with no plugin is valid: %+v", c[4])
	}
	if _, err := call[workflows.RecordToolResultInput, workflows.RecordToolResultResult](f.fixture, func(s *Session) any { return s.RecordToolResult },
		workflows.RecordToolResultInput{SessionID: f.id, Key: c[4].Key, CallID: c[4].CallID, Tool: c[4].Tool, Status: contract.CallFailed, Message: c[4].Invalid}); err != nil {
		f.t.Fatal(err)
	}
	f.fail(c[5], "filesystem_error", "list .: input/output error")
}

const recentCalls = "Recent citable calls of this session, newest first: l1 local_list (failed: filesystem_error); x1 local_exec (completed, exited 1); " +
	"n1 local_read (failed: not_found); r2 local_read (failed: filesystem_error); r1 local_read (failed: filesystem_error)."

func requestArgs(t *testing.T, change map[string]any) string {
	t.Helper()
	a := map[string]any{
		"description": "local_read fails with an I/O error on a readable file",
		"expected":    "the text of a.go",
		"observed":    "filesystem_error, twice",
		"evidence":    "read a.go: input/output error\ncat a.go prints it",
		"tool_calls":  []string{"r1", "r2"},
	}
	for k, v := range change {
		a[k] = v
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRequestRepair: a request validated against the session's transcript
// is admitted once under its call's id, and the model reads the job; each
// refusal, the validation's or the registry's, names its reason and the
// session's most recent citable calls.
func TestRequestRepair(t *testing.T) {
	f := newJobFixture(t)
	f.session()
	clone := filepath.Join(t.TempDir(), "clone")
	if err := os.MkdirAll(filepath.Join(clone, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := forge.WriteMarker(clone, forge.Marker{Version: forge.MarkerVersion, Kind: forge.KindRepair, Repository: "underpass-ai/axlr", Slug: "fix", Brief: "fix it", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   string
		mode   string
		root   string
		code   string
		reason string
	}{
		{name: "admitted", args: requestArgs(t, nil)},
		{name: "the same failure again: a duplicate", args: requestArgs(t, nil), code: "duplicate",
			reason: "duplicate: repair job-1 is already running for the same failure; follow it with axlr-tui jobs watch job-1 or axlr_repair_status instead of starting another"},
		{name: "isolated", args: requestArgs(t, map[string]any{"tool_calls": []string{"l1"}}), code: "isolated",
			reason: "an isolated failure is not evidence of a defect: repeat the operation once; if it fails the same way, cite both calls (a wrong result needs two cited calls)"},
		{name: "not in the session", args: requestArgs(t, map[string]any{"tool_calls": []string{"zz"}}), code: "call",
			reason: "call zz is not in this session; cite the IDs of calls you made here"},
		{name: "a program that exited nonzero", args: requestArgs(t, map[string]any{"tool_calls": []string{"x1"}}), code: "call",
			reason: "call x1 ran a program that exited 1: a failure of that program or of the project, not of axlr"},
		{name: "the workspace's failure", args: requestArgs(t, map[string]any{"tool_calls": []string{"n1"}}), code: "call",
			reason: "call n1 failed with not_found"},
		{name: "a plugin's tool", args: requestArgs(t, map[string]any{"tool_calls": []string{"p1"}}), code: "call",
			reason: "call p1 is notes__find, an MCP plugin tool: its failures belong to that server, not to axlr"},
		{name: "an external cause", args: requestArgs(t, map[string]any{"observed": "connection refused on every read"}), code: "external_cause",
			reason: `the request names an external cause ("connection refused"): a provider, credential, permission or network problem is not a defect of axlr; resolve it or tell the person`},
		{name: "a repair session", args: requestArgs(t, nil), mode: "repair", code: "mode",
			reason: "a repair session cannot request another repair; finish this one and report the defect to the person"},
		{name: "a job's clone", args: requestArgs(t, nil), root: clone, code: "mode",
			reason: "this session works in a job's clone; a repair cannot start from it"},
		{name: "not JSON", args: `{"description": "x", "evidence": - broken}`, code: "arguments",
			reason: "the arguments of axlr_request_repair are not JSON"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.calls(agenttest.ToolCall{ID: fmt.Sprint("q", i), Name: jobs.ToolRequestRepair, Arguments: tt.args})[0]
			if !c.Host || c.Invalid != "" {
				t.Fatalf("request call %+v", c)
			}
			res, text, err := f.ask(c, cmp.Or(tt.mode, "normal"), cmp.Or(tt.root, f.root))
			if err != nil {
				t.Fatal(err)
			}
			if res.Revision != f.len() || res.CallID != c.CallID || res.Tool != jobs.ToolRequestRepair {
				t.Fatalf("result %+v (log at %d)", res, f.len())
			}
			if tt.code != "" {
				var e struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal([]byte(text), &e); err != nil {
					t.Fatalf("refusal %s: %v", text, err)
				}
				if res.Status != contract.CallFailed || e.Error.Code != tt.code || !strings.HasPrefix(e.Error.Message, tt.reason) || !strings.HasSuffix(e.Error.Message, " "+recentCalls) {
					t.Fatalf("status %s, refusal %s: %s\nwant %s: %s … %s", res.Status, e.Error.Code, e.Error.Message, tt.code, tt.reason, recentCalls)
				}
				return
			}
			want := `{"job":{"id":"job-1","kind":"repair","status":"running","attempt":1,"session":"session-of-job-1"},"message":"Repair job-1 was admitted (running). ` +
				`It runs in its own session and clone while you carry on with your task; the person approves its check command and its merge. ` +
				`A later prompt of this session carries its outcome; axlr_repair_status reports it meanwhile."}`
			if res.Status != contract.CallCompleted || text != want {
				t.Fatalf("status %s, answer\n%s\nwant\n%s", res.Status, text, want)
			}
			l := f.reg.launches[0]
			failures := []jobs.ToolFailure{{Tool: "local_read", Class: jobs.ClassRuntimeFailure}}
			adm := l.Admit.Admission
			if l.Admit.RequestID != "request:"+f.id+":"+c.Key || adm.Kind != jobs.Repair || adm.OriginSession != f.id || l.Model != "m" ||
				adm.Repository != "underpass-ai/axlr" || l.Admit.Build != testBuild || adm.Signature != jobs.RepairSignature("underpass-ai/axlr", failures) ||
				!strings.Contains(adm.Brief, "r1 local_read → failed: filesystem_error: read a.go: input/output error") || !strings.Contains(adm.Brief, "(axlr build "+testBuild+")") {
				t.Fatalf("launch %+v", l)
			}
			// The model reads the answer with its next request.
			again, err := call[workflows.JobRequestInput, workflows.ToolCallResult](f.fixture, func(s *Session) any { return s.RequestJob }, workflows.JobRequestInput{
				SessionID: f.id, Sessions: []string{f.id}, Key: c.Key, CallID: c.CallID, Tool: c.Tool, Decision: contract.AutoApprove, Mode: "normal", Root: f.root})
			if err != nil || again.Revision != res.Revision || again.Status != contract.CallCompleted || len(f.reg.launches) != 1 {
				t.Fatalf("a retry after the result was saved: %+v %v, %d launches", again, err, len(f.reg.launches))
			}
		})
	}
	if n := len(f.reg.records); n != 1 {
		t.Fatalf("%d jobs admitted", n)
	}
}

// TestRequestRetriedAdmitsOnce: a request whose admission answer was lost
// is not saved; its retry asks under the same id and gets the same job.
// A registry that is down fails the attempt, which Temporal retries.
func TestRequestRetriedAdmitsOnce(t *testing.T) {
	f := newJobFixture(t)
	f.session()
	c := f.calls(agenttest.ToolCall{ID: "q", Name: jobs.ToolRequestRepair, Arguments: requestArgs(t, nil)})[0]
	f.reg.lose = 1
	before := f.len()
	if _, text, err := f.ask(c, "normal", f.root); err == nil || text != "" || f.len() != before {
		t.Fatalf("a lost answer: error %v, saved %q", err, text)
	}
	res, text, err := f.ask(c, "normal", f.root)
	if err != nil || res.Status != contract.CallCompleted || !strings.Contains(text, `"id":"job-1"`) {
		t.Fatalf("retry: %+v %q %v", res, text, err)
	}
	if len(f.reg.launches) != 2 || f.reg.launches[0].Admit.RequestID != f.reg.launches[1].Admit.RequestID || len(f.reg.records) != 1 {
		t.Fatalf("launches %+v, records %d", f.reg.launches, len(f.reg.records))
	}
}

// TestRequestLastAttempt: a registry that does not answer through the
// retries of JobRequestOptions is, at the last attempt, a failed call the
// model reads.
func TestRequestLastAttempt(t *testing.T) {
	f := newJobFixture(t)
	f.session()
	c := f.calls(agenttest.ToolCall{ID: "q", Name: jobs.ToolRequestRepair, Arguments: requestArgs(t, nil)})[0]
	f.reg.down = errors.New("connection to the frontend lost")
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions(f.acts, activity.RegisterOptions{Name: "session."})
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in workflows.JobRequestInput) (workflows.ToolCallResult, error) {
		var out workflows.ToolCallResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflows.JobRequestOptions), workflows.ActivityRequestJob, in).Get(ctx, &out)
		return out, err
	}, workflow.RegisterOptions{Name: "request"})
	env.ExecuteWorkflow("request", workflows.JobRequestInput{SessionID: f.id, Sessions: []string{f.id}, Key: c.Key, CallID: c.CallID, Tool: c.Tool, Decision: contract.AutoApprove, Mode: "normal", Root: f.root})
	var res workflows.ToolCallResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != contract.CallFailed || len(f.reg.launches) != workflows.JobRequestAttempts ||
		res.Summary != "internal_error: the job registry did not admit the repair: connection to the frontend lost; tried 5 times: tell the person, and ask again later" {
		t.Fatalf("result %+v after %d launches", res, len(f.reg.launches))
	}
}

// TestRequestImprovement: one improvement per origin session and three
// per build, both the registry's; an improvement cites two calls.
func TestRequestImprovement(t *testing.T) {
	f := newJobFixture(t)
	f.session()
	improve := func(change map[string]any) map[string]any {
		a := map[string]any{"description": "local_read could read several files in one call", "observed": "one call per file", "tool_calls": []string{"x1", "r1"}}
		for k, v := range change {
			a[k] = v
		}
		return a
	}
	ask := func(args string, mode string) (workflows.ToolCallResult, string) {
		t.Helper()
		c := f.calls(agenttest.ToolCall{ID: "i", Name: jobs.ToolRequestImprovement, Arguments: args})[0]
		res, text, err := f.ask(c, mode, f.root)
		if err != nil {
			t.Fatal(err)
		}
		return res, text
	}
	if res, text := ask(requestArgs(t, improve(map[string]any{"tool_calls": []string{"x1"}})), "normal"); res.Status != contract.CallFailed ||
		!strings.Contains(text, `"code":"arguments"`) || !strings.Contains(text, "tool_calls needs 2 to 8 IDs of calls from this session that show the friction (it has 1)") {
		t.Fatalf("one call: %s", text)
	}
	if res, text := ask(requestArgs(t, improve(nil)), "research"); res.Status != contract.CallCompleted || !strings.Contains(text, `"kind":"improve"`) ||
		!strings.Contains(text, "Improvement job-1 was admitted (running).") {
		t.Fatalf("admitted: %s", text)
	}
	res, text := ask(requestArgs(t, improve(map[string]any{"description": "local_list could show file sizes beside the names"})), "normal")
	if res.Status != contract.CallFailed || !strings.Contains(text, `"code":"session_improvement"`) ||
		!strings.Contains(text, "this session already started improvement job-1 (running); a session asks for at most one improvement "+recentCalls) {
		t.Fatalf("second improvement: %s", text)
	}

	g := newJobFixture(t)
	g.session()
	g.reg.records = f.reg.records
	for i := range 2 {
		g.reg.records = append(g.reg.records, jobs.Record{ID: fmt.Sprint("other-", i), Kind: jobs.Improve, OriginSession: fmt.Sprint("s", i),
			Session: "x", Status: jobs.Completed, Build: testBuild, Signature: fmt.Sprint("sig", i), Repository: "underpass-ai/axlr", Brief: fmt.Sprint("brief ", i)})
	}
	c := g.calls(agenttest.ToolCall{ID: "i", Name: jobs.ToolRequestImprovement, Arguments: requestArgs(t, improve(map[string]any{"description": "local_exec could take a working directory per call"}))})[0]
	if _, text, err := g.ask(c, "normal", g.root); err != nil || !strings.Contains(text, `"code":"build_improvements"`) || !strings.Contains(text, "already started 3 improvements") {
		t.Fatalf("a fourth improvement of the build: %s %v", text, err)
	}
}

// TestRepairStatus: axlr_repair_status answers the jobs this session asked
// for, newest first, or the one named.
func TestRepairStatus(t *testing.T) {
	f := newJobFixture(t)
	status := func(args string) (workflows.ToolCallResult, string) {
		t.Helper()
		c := f.calls(agenttest.ToolCall{ID: "s", Name: jobs.ToolRepairStatus, Arguments: args})[0]
		res, text, err := f.ask(c, "normal", f.root)
		if err != nil {
			t.Fatal(err)
		}
		return res, text
	}
	if res, text := status(`{}`); res.Status != contract.CallCompleted || text != `{"jobs":[],"message":"This session has asked for no repair or improvement."}` {
		t.Fatalf("none: %s", text)
	}
	updated := time.Date(2026, 10, 16, 9, 0, 0, 0, time.UTC)
	f.reg.records = []jobs.Record{
		{ID: "fix-read", Kind: jobs.Repair, OriginSession: f.id, Status: jobs.AwaitingMerge, Step: "merge", PullRequest: 12, URL: "https://github.com/o/r/pull/12",
			Pending: &jobs.Pending{Kind: jobs.PendingMerge, PullRequest: 12}, Updated: updated},
		{ID: "theirs", Kind: jobs.Repair, OriginSession: "another-session", Status: jobs.Running},
		{ID: "list-sizes", Kind: jobs.Improve, OriginSession: f.id, Status: jobs.Blocked, Reason: "the check already passes", Updated: updated},
	}
	_, text := status("")
	want := `{"jobs":[{"id":"list-sizes","kind":"improve","status":"blocked","reason":"the check already passes","updated":"2026-10-16T09:00:00Z"},` +
		`{"id":"fix-read","kind":"repair","status":"awaiting_merge","step":"merge","waiting":"the person's decision on merging pull request #12","pull_request":12,"url":"https://github.com/o/r/pull/12","updated":"2026-10-16T09:00:00Z"}]}`
	if text != want {
		t.Fatalf("status\n%s\nwant\n%s", text, want)
	}
	if _, text := status(`{"job":"fix-read"}`); !strings.HasPrefix(text, `{"jobs":[{"id":"fix-read"`) || strings.Contains(text, "list-sizes") {
		t.Fatalf("one job: %s", text)
	}
	for _, tt := range []struct{ args, want string }{
		{`{"job":"theirs"}`, `{"error":{"code":"not_found","message":"job theirs is not one this session asked for; it asked for list-sizes, fix-read"}}`},
		{`{"jobs":"all"}`, `{"error":{"code":"invalid_arguments","message":"unknown argument \"jobs\" for axlr_repair_status; it takes job"}}`},
	} {
		if res, text := status(tt.args); res.Status != contract.CallFailed || text != tt.want {
			t.Fatalf("%s: %s\nwant %s", tt.args, text, tt.want)
		}
	}
	f.reg.down = errors.New("no frontend")
	c := f.calls(agenttest.ToolCall{ID: "s", Name: jobs.ToolRepairStatus, Arguments: `{}`})[0]
	if _, text, err := f.ask(c, "normal", f.root); err == nil || !strings.Contains(err.Error(), "the job registry did not list the jobs: no frontend") || text != "" {
		t.Fatalf("registry down: %v, saved %q", err, text)
	}
}

// TestJobRequestTools: the host offers the three tools only with a job
// client; the model is sent each one's schema, whose properties are what
// the validation takes, and the request calls are host calls.
func TestJobRequestTools(t *testing.T) {
	f := newJobFixture(t)
	names := []string{jobs.ToolRequestRepair, jobs.ToolRequestImprovement, jobs.ToolRepairStatus}
	var offered []string
	for _, h := range f.acts.Hosts.offer(context.Background()) {
		offered = append(offered, h.Name)
	}
	if !slices.Equal(offered, names) {
		t.Fatalf("offered %v", offered)
	}
	if got := (&HostTools{}).offer(context.Background()); len(got) != 0 {
		t.Fatalf("without a job client: %+v", got)
	}
	if _, ok := (&HostTools{}).spec(jobs.ToolRequestRepair); ok {
		t.Fatal("a spec without a job client")
	}
	if _, err := call[workflows.ModelRequestInput, workflows.ModelRequestResult](f.fixture, func(s *Session) any { return s.ModelRequest },
		workflows.ModelRequestInput{SessionID: f.id, Revision: f.len(), Model: "m", Tools: append(slices.Clone(workflows.LocalTools), names...)}); err != nil {
		t.Fatal(err)
	}
	sent := f.fixture.model.Requests()[0].Tools
	request := jsonargs.Names(&jobs.Request{})
	for _, name := range names {
		i := slices.IndexFunc(sent, func(s agenttest.Tool) bool { return s.Name == name })
		if i < 0 {
			t.Fatalf("%s not sent among %+v", name, sent)
		}
		var schema struct {
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(sent[i].Parameters, &schema); err != nil || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Fatalf("%s schema %s: %v", name, sent[i].Parameters, err)
		}
		props := slices.Sorted(func(yield func(string) bool) {
			for k := range schema.Properties {
				if !yield(k) {
					return
				}
			}
		})
		want, required := slices.Sorted(slices.Values(request)), request
		if name == jobs.ToolRepairStatus {
			want, required = []string{"job"}, nil
		}
		if !slices.Equal(props, want) || !slices.Equal(schema.Required, required) || sent[i].Description == "" {
			t.Fatalf("%s: properties %v, required %v, want %v and %v", name, props, schema.Required, want, required)
		}
	}
	for _, name := range names {
		mc := inspectCall(f.acts.Hosts, "3.0", agent.ToolCall{ID: "c", Name: name, Arguments: `not json`}, false)
		if !mc.Host || mc.Invalid != "" {
			t.Fatalf("%s inspected as %+v", name, mc)
		}
		if mc := inspectCall(&HostTools{}, "3.0", agent.ToolCall{ID: "c", Name: name}, false); mc.Invalid == "" {
			t.Fatalf("%s without a job client inspected as %+v", name, mc)
		}
	}
}

// TestCallOutcome: what a call's saved result says became of it, as the
// validation reads it.
func TestCallOutcome(t *testing.T) {
	one, zero := 1, 0
	tests := []struct {
		name     string
		tool     string
		status   contract.CallStatus
		decision contract.Decision
		content  string
		want     jobs.CallOutcome
	}{
		{"exec exited", "local_exec", contract.CallCompleted, contract.AutoApprove, `{"exit_code":1,"stdout":""}`,
			jobs.CallOutcome{Status: jobs.CallCompleted, ExitCode: &one}},
		{"exec exited 0", "local_exec", contract.CallCompleted, contract.AutoApprove, `{"exit_code":0}`,
			jobs.CallOutcome{Status: jobs.CallCompleted, ExitCode: &zero}},
		{"exec output unreadable", "local_exec", contract.CallCompleted, contract.AutoApprove, `{"stdout":""}`,
			jobs.CallOutcome{Status: jobs.CallUnreadable}},
		{"a read", "local_read", contract.CallCompleted, contract.AutoApprove, `{"content":"x"}`, jobs.CallOutcome{Status: jobs.CallCompleted}},
		{"workspace failure", "local_read", contract.CallFailed, contract.AutoApprove, toolError("filesystem_error", "eio"),
			jobs.CallOutcome{Status: jobs.CallFailed, Code: "filesystem_error", Message: "eio"}},
		{"workspace refusal", "local_write", contract.CallFailed, contract.AutoApprove, toolError("invalid_path", "../x"),
			jobs.CallOutcome{Status: jobs.CallRejected, Code: "invalid_path", Message: "../x"}},
		{"timed out", "local_exec", contract.CallFailed, contract.AutoApprove, toolError("timeout", "30s"),
			jobs.CallOutcome{Status: jobs.CallTimedOut, Code: "timeout", Message: "30s"}},
		{"cancelled", "local_exec", contract.CallFailed, contract.AutoApprove, toolError("cancelled", "stop"),
			jobs.CallOutcome{Status: jobs.CallCancelled, Code: "cancelled", Message: "stop"}},
		{"workspace result unreadable", "local_read", contract.CallFailed, contract.AutoApprove, "boom",
			jobs.CallOutcome{Status: jobs.CallUnreadable, Message: "boom"}},
		{"invalid before it ran", "local_read", contract.CallFailed, "", "invalid arguments: path is required",
			jobs.CallOutcome{Status: jobs.CallRejected, Message: "invalid arguments: path is required"}},
		{"host error", "web_fetch", contract.CallFailed, contract.AutoApprove, toolError("fetch_failed", "reduce the page: unexpected EOF"),
			jobs.CallOutcome{Status: jobs.CallFailed, Code: "fetch_failed", Message: "reduce the page: unexpected EOF"}},
		{"plugin error", "axlr_call_tool", contract.CallFailed, contract.AutoApprove, `{"content":[],"is_error":true}`,
			jobs.CallOutcome{Status: jobs.CallFailed, Message: `{"content":[],"is_error":true}`, Plugin: true}},
		{"plugin alias", "local__read", contract.CallCompleted, contract.AutoApprove, `{}`, jobs.CallOutcome{Status: jobs.CallCompleted, Plugin: true}},
		{"uncertain", "local_write", contract.CallUncertain, contract.AutoApprove, "no result: may have run",
			jobs.CallOutcome{Status: jobs.CallUncertain, Message: "no result: may have run"}},
		{"denied", "local_exec", contract.CallDenied, contract.Deny, "denied by the person", jobs.CallOutcome{Status: jobs.CallDenied, Message: "denied by the person"}},
		{"forbidden", "local_write", contract.CallForbidden, "", "refused by the work mode", jobs.CallOutcome{Status: jobs.CallForbidden, Message: "refused by the work mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := callOutcome(agent.ToolCall{ID: "c", Name: tt.tool}, messageData{Message: agent.Message{Role: "tool", Content: tt.content}, Status: tt.status, Decision: tt.decision})
			tt.want.CallID, tt.want.Tool = "c", tt.tool
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tt.want)
			if string(g) != string(w) {
				t.Fatalf("outcome %s\nwant    %s", g, w)
			}
		})
	}
}
