package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/plans"
)

// taskWorkspace is a plan task's workspace in memory: its files and, with
// Git, those of its last commit, which its status compares them to. The
// model's writes and edits land in it.
type taskWorkspace struct {
	mu    sync.Mutex
	git   bool
	head  map[string]string
	files map[string]string
}

func newTaskWorkspace(git bool, files map[string]string) *taskWorkspace {
	return &taskWorkspace{git: git, head: maps.Clone(files), files: maps.Clone(files)}
}

func (w *taskWorkspace) set(p, content string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files[p] = content
}

func (w *taskWorkspace) read(p string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.files[p]
}

func digestOf(content string, ok bool) string {
	if !ok {
		return ""
	}
	s := sha256.Sum256([]byte(content))
	return hex.EncodeToString(s[:])
}

// taskFiles implements PlanTaskActivities over the in-memory workspace
// and the hand-backs the scripted model sent; it keeps scopes in memory,
// as activities.PlanTask does in files (a path absent from a kept scope
// did not exist).
type taskFiles struct {
	ws    *taskWorkspace
	model *taskModel

	kept     map[ScopeKey]map[string]*string
	restored map[ScopeKey]ScopeRestore
	dropped  []ScopeKey
}

var _ PlanTaskActivities = (*taskFiles)(nil)

func (f *taskFiles) Digests(_ context.Context, in DigestsInput) (map[string]string, error) {
	f.ws.mu.Lock()
	defer f.ws.mu.Unlock()
	out := map[string]string{}
	for _, p := range in.Paths {
		c, ok := f.ws.files[p]
		out[p] = digestOf(c, ok)
	}
	return out, nil
}

func (f *taskFiles) Status(_ context.Context, in StatusInput) (WorkspaceStatus, error) {
	f.ws.mu.Lock()
	defer f.ws.mu.Unlock()
	if !f.ws.git {
		return WorkspaceStatus{}, nil
	}
	s := WorkspaceStatus{Git: true, Head: "0123abcd0123abcd0123abcd0123abcd0123abcd"}
	for _, p := range slices.Sorted(maps.Keys(f.ws.files)) {
		if h, ok := f.ws.head[p]; !ok || h != f.ws.files[p] {
			s.Changed = append(s.Changed, p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(f.ws.head)) {
		if _, ok := f.ws.files[p]; !ok {
			s.Changed = append(s.Changed, p)
		}
	}
	slices.Sort(s.Changed)
	return s, nil
}

func (f *taskFiles) KeepScope(_ context.Context, in KeepScopeInput) error {
	f.ws.mu.Lock()
	defer f.ws.mu.Unlock()
	if _, ok := f.kept[in.ScopeKey]; ok {
		return nil
	}
	files := map[string]*string{}
	for _, p := range in.Paths {
		if c, ok := f.ws.files[p]; ok {
			files[p] = &c
		} else {
			files[p] = nil
		}
	}
	f.kept[in.ScopeKey] = files
	return nil
}

func (f *taskFiles) RestoreScope(_ context.Context, key ScopeKey) (ScopeRestore, error) {
	f.ws.mu.Lock()
	defer f.ws.mu.Unlock()
	files, ok := f.kept[key]
	if !ok {
		return ScopeRestore{}, temporal.NewNonRetryableApplicationError("no scope kept for "+key.Task, ErrTypeBadRequest, nil)
	}
	var out ScopeRestore
	for _, p := range slices.Sorted(maps.Keys(files)) {
		now, exists := f.ws.files[p]
		switch c := files[p]; {
		case c == nil && exists:
			out.Created = append(out.Created, p)
		case c != nil && (!exists || now != *c):
			f.ws.files[p] = *c
			out.Restored = append(out.Restored, p)
		}
	}
	if first, ok := f.restored[key]; ok {
		return first, nil
	}
	f.restored[key] = out
	return out, nil
}

func (f *taskFiles) DropScope(_ context.Context, key ScopeKey) error {
	f.ws.mu.Lock()
	defer f.ws.mu.Unlock()
	delete(f.kept, key)
	f.dropped = append(f.dropped, key)
	return nil
}

func (f *taskFiles) HandBack(_ context.Context, in HandBackInput) (TaskHandBack, error) {
	hb, err := ceremonies.Validate(in.Definition, in.Version, in.Step, f.model.argsOf(in.CallKey), in.Compact)
	if err != nil {
		return TaskHandBack{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeSessionDiverged, err)
	}
	return TaskHandBackOf(hb), nil
}

// taskModel is the scripted model of a task's worker: it keeps each
// call's arguments by key, and its local_write and local_edit calls change
// the workspace.
type taskModel struct {
	*scripted
	ws   *taskWorkspace
	mu   sync.Mutex
	args map[string]json.RawMessage
}

func (m *taskModel) argsOf(key string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.args[key]
}

func (m *taskModel) ModelRequest(ctx context.Context, in ModelRequestInput) (ModelRequestResult, error) {
	res, err := m.scripted.ModelRequest(ctx, in)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range res.Calls {
		m.args[c.Key] = c.Preview
	}
	return res, err
}

func (m *taskModel) ToolCall(ctx context.Context, in ToolCallInput) (ToolCallResult, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Old     string `json:"old_text"`
		New     string `json:"new_text"`
	}
	if err := json.Unmarshal(m.argsOf(in.Key), &a); err != nil {
		return ToolCallResult{}, err
	}
	switch in.Tool {
	case "local_write":
		m.ws.set(a.Path, a.Content)
	case "local_edit":
		m.ws.set(a.Path, strings.Replace(m.ws.read(a.Path), a.Old, a.New, 1))
	}
	return m.scripted.ToolCall(ctx, in)
}

// taskMADE is the driver's ceremony activities over the embedded MADE
// engine running the pinned axlr_task 1.0: publish, start, claim, complete
// (the hand-back's fields and what AXLR recorded), transition. The unit
// check's runs answer what check makes of the workspace then.
type taskMADE struct {
	noResume
	eng   *embedded.Engine
	model *taskModel
	ws    *taskWorkspace
	check func(files map[string]string) contract.CheckRecord

	mu        sync.Mutex
	ran       []string
	completed []CompleteInput
	triggers  []string
}

var _ CeremonyActivities = (*taskMADE)(nil)

func (f *taskMADE) Start(ctx context.Context, in CeremonyStartInput) (CeremonyStartResult, error) {
	def, ok := ceremonies.Lookup(in.Definition, in.Version)
	if !def.Plan || !ok {
		return CeremonyStartResult{}, madeRefused("start %s %s, not a plan's", in.Definition, in.Version)
	}
	y, err := def.YAML()
	if err != nil {
		return CeremonyStartResult{}, err
	}
	parsed, err := definition.Parse(y)
	if err != nil {
		return CeremonyStartResult{}, err
	}
	if _, err := f.eng.Publish(ctx, y); err != nil {
		return CeremonyStartResult{}, err
	}
	inst, err := f.eng.StartPublished(ctx, made.StartRequest{Ceremony: def.Name, Version: def.Version, CeremonyID: in.InstanceID,
		ActorID: "axlr", ActorKind: made.ActorService, Context: in.Context})
	if err != nil {
		return CeremonyStartResult{}, madeRefused("start %s: %v", in.InstanceID, err)
	}
	res := startResult(parsed)
	res.Instance, err = f.Claim(ctx, ClaimInput{InstanceID: inst.CeremonyID, Step: *inst.NextStepID, Iteration: 1, LeaseTTL: res.StepTimeout})
	return res, err
}

func (f *taskMADE) Claim(ctx context.Context, in ClaimInput) (InstanceView, error) {
	inst, err := made.ClaimOnce(ctx, f.eng, made.ClaimRequest{CeremonyID: in.InstanceID, StepID: in.Step, ActorKind: made.ActorAgent,
		LeaseOwnerID: "axlrd-test", IdempotencyKey: ClaimKey(in.InstanceID, in.Step, in.Iteration, in.Round), LeaseTTL: in.LeaseTTL})
	if err != nil {
		return InstanceView{}, madeRefused("claim %s: %v", in.Step, err)
	}
	v := madeView(inst)
	v.NextStep = in.Step
	return v, nil
}

func (f *taskMADE) HandBack(_ context.Context, in HandBackInput) (HandBackResult, error) {
	hb, err := ceremonies.Validate(in.Definition, in.Version, in.Step, f.model.argsOf(in.CallKey), in.Compact)
	if err != nil {
		return HandBackResult{Error: err.Error()}, nil
	}
	return HandBackResult{Command: hb.Command, Ignored: hb.Ignored}, nil
}

// RunCheck runs the unit check on the workspace as it is; its key is
// <instance>:<step>:<iteration>, the start's with :baseline.
func (f *taskMADE) RunCheck(_ context.Context, in RunCheckInput) (contract.CheckRecord, error) {
	parts := strings.Split(in.Key, ":")
	f.mu.Lock()
	f.ran = append(f.ran, strings.Join(parts[1:], ":"))
	f.mu.Unlock()
	f.ws.mu.Lock()
	files := maps.Clone(f.ws.files)
	f.ws.mu.Unlock()
	rec := f.check(files)
	rec.Program, rec.Args = in.Command.Program, in.Command.Args
	return rec, nil
}

func (f *taskMADE) Complete(ctx context.Context, in CompleteInput) (InstanceView, error) {
	f.mu.Lock()
	f.completed = append(f.completed, in)
	f.mu.Unlock()
	out := map[string]any{}
	if in.CallKey != "" {
		hb, err := ceremonies.Validate(in.Definition, in.Version, in.Step, f.model.argsOf(in.CallKey), in.Compact)
		if err != nil {
			return InstanceView{}, err
		}
		maps.Copy(out, hb.Fields)
	}
	maps.Copy(out, in.Recorded)
	b, err := json.Marshal(out)
	if err != nil {
		return InstanceView{}, err
	}
	var plain map[string]any
	if err := json.Unmarshal(b, &plain); err != nil {
		return InstanceView{}, err
	}
	req := made.CompleteRequest{CeremonyID: in.InstanceID, StepID: in.Step, ActorKind: made.ActorAgent, Status: made.StepStatus(in.Status), Output: plain}
	if in.Status == string(made.StepFailed) {
		req.Error = "failed"
	}
	inst, err := f.eng.Complete(ctx, req)
	if err != nil {
		return InstanceView{}, madeRefused("complete %s: %v", in.Step, err)
	}
	return madeView(inst), nil
}

func (f *taskMADE) Transition(ctx context.Context, in TransitionInput) (InstanceView, error) {
	f.mu.Lock()
	f.triggers = append(f.triggers, in.Trigger)
	f.mu.Unlock()
	inst, err := f.eng.ApplyTransition(ctx, made.TransitionRequest{CeremonyID: in.InstanceID, Trigger: in.Trigger, ActorKind: made.ActorService})
	if err != nil {
		return InstanceView{}, madeRefused("apply %s: %v", in.Trigger, err)
	}
	return madeView(inst), nil
}

func (f *taskMADE) ApproveGuard(context.Context, GrantInput) (InstanceView, error) {
	return InstanceView{}, madeRefused("axlr_task has no human guard")
}

func (f *taskMADE) recorded(step string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, c := range f.completed {
		if c.Step == step {
			out = append(out, c.Recorded)
		}
	}
	return out
}

// madeView is the driver's view of an instance, as the real activities
// make it.
func madeView(in made.Instance) InstanceView {
	v := InstanceView{InstanceID: in.CeremonyID, State: in.CurrentState, Completed: in.Completed}
	if in.NextStepID != nil {
		v.NextStep = *in.NextStepID
	}
	for _, t := range in.Transitions {
		if t.Enabled && t.Trigger != ceremonies.CancelTrigger {
			v.Enabled = append(v.Enabled, t.Trigger)
		}
	}
	for _, s := range in.Steps {
		v.Steps = append(v.Steps, StepView{Step: s.StepID, Status: string(s.Status), Iteration: max(s.Iteration, 1), Attempt: s.Attempt, RepeatExhausted: s.RepeatExhausted})
	}
	return v
}

// The workspace of these tests: a Go package whose task adds calc.Max.
const (
	calcSource = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"
	maxTest    = "package calc\n\nimport \"testing\"\n\nfunc TestMax(t *testing.T) {\n\tif Max(1, 2) != 2 {\n\t\tt.Fatal(\"Max(1, 2) != 2\")\n\t}\n}\n"
	maxSource  = calcSource + "\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n"
	calcAPI    = "package calc\n\n// API: Add, Max.\n"
)

func calcFiles() map[string]string {
	return map[string]string{"calc/calc.go": calcSource, "calc/api.go": calcAPI, "README.md": "calc\n", "go.mod": "module example.com/calc\n"}
}

// goTest is what go test ./calc does with the workspace: no test to run
// until calc/max_test.go has one, a build failure while it calls Max and
// Max does not exist, else a pass.
func goTest(files map[string]string) contract.CheckRecord {
	switch test := files["calc/max_test.go"]; {
	case !strings.Contains(test, "func Test"):
		return contract.CheckRecord{ExitCode: contract.Exit(0), OutputTail: "ok  \texample.com/calc\t0.01s [no tests to run]\n"}
	case strings.Contains(test, "Max(1, 2)") && !strings.Contains(files["calc/calc.go"], "func Max"):
		return contract.CheckRecord{ExitCode: contract.Exit(1), OutputTail: "calc/max_test.go:6:5: undefined: Max\nFAIL\texample.com/calc [build failed]\n"}
	}
	return contract.CheckRecord{ExitCode: contract.Exit(0), OutputTail: "ok  \texample.com/calc\t0.02s\n"}
}

const taskSession = "7d2e4f10-3a5b-4c6d-8e9f-0a1b2c3d4e5f"

func addMax(testFirst bool) ceremonies.PlanTask {
	return ceremonies.PlanTask{ID: "add-max", Goal: "calc.Max returns the larger int", Scope: []string{"calc/calc.go", "calc/max_test.go"},
		UnitCheck: ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./calc"}}, TestFirst: testFirst, Protect: []string{"calc/api.go"},
		Context: []ceremonies.Citation{}, DependsOn: []string{}}
}

func planTaskInput(task ceremonies.PlanTask) PlanTaskInput {
	return PlanTaskInput{Plan: "add-calc-max-a1b2c3", Task: task, Wave: 1, Prompt: "Task add-max of plan add-calc-max-a1b2c3, wave 1: calc.Max returns the larger int",
		SessionID: taskSession, Host: "test", Root: "/work/calc", Tasks: []string{"add-max", "use-max"}}
}

type taskHarness struct {
	testsuite.WorkflowTestSuite
	env    *testsuite.TestWorkflowEnvironment
	ws     *taskWorkspace
	model  *taskModel
	made   *taskMADE
	files  *taskFiles
	search []map[string]any
}

func newTaskHarness(t *testing.T, git bool, model ...reply) *taskHarness {
	t.Helper()
	eng, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	h := &taskHarness{ws: newTaskWorkspace(git, calcFiles())}
	h.model = &taskModel{scripted: newScripted(model...), ws: h.ws, args: map[string]json.RawMessage{}}
	h.made = &taskMADE{eng: eng, model: h.model, ws: h.ws, check: goTest}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(PlanTask, workflow.RegisterOptions{Name: PlanTaskWorkflow})
	h.env.RegisterActivityWithOptions(h.model, activity.RegisterOptions{Name: "session."})
	h.env.RegisterActivityWithOptions(h.made, activity.RegisterOptions{Name: "ceremony."})
	h.files = &taskFiles{ws: h.ws, model: h.model, kept: map[ScopeKey]map[string]*string{}, restored: map[ScopeKey]ScopeRestore{}}
	h.env.RegisterActivityWithOptions(h.files, activity.RegisterOptions{Name: "plantask."})
	h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if _, ok := sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttributePlanTask)); !ok {
			return
		}
		s := map[string]any{}
		s["plan"], _ = sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttributePlan))
		s["task"], _ = sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttributePlanTask))
		s["wave"], _ = sa.GetInt64(temporal.NewSearchAttributeKeyInt64(SearchAttributePlanWave))
		s["status"], _ = sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttributePlanStatus))
		h.search = append(h.search, s)
	}).Return(nil)
	return h
}

func (h *taskHarness) run(t *testing.T, in PlanTaskInput) PlanTaskResult {
	t.Helper()
	h.env.ExecuteWorkflow(PlanTaskWorkflow, in)
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the task's worker did not end")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res PlanTaskResult
	if err := h.env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

func (h *taskHarness) triggers() string { return strings.Join(h.made.triggers, " ") }
func (h *taskHarness) ran() string      { return strings.Join(h.made.ran, " ") }

// replies are the tool results the model was sent, each step_done's
// decoded.
func (h *taskHarness) stepReplies(t *testing.T) []stepReply {
	t.Helper()
	var out []stepReply
	for _, r := range h.model.recorded {
		if r.Tool != StepDoneTool {
			continue
		}
		var s stepReply
		if err := json.Unmarshal([]byte(r.Message), &s); err != nil {
			t.Fatalf("step_done reply %q: %v", r.Message, err)
		}
		out = append(out, s)
	}
	return out
}

func writeCall(path, content string) scriptCall {
	return scriptCall{tool: "local_write", args: map[string]any{"path": path, "content": content, "mode": "create"}}
}

func calls(cs ...scriptCall) reply { return reply{calls: cs} }

var (
	redHandBack   = stepDoneCall(map[string]any{"test_files": []string{"calc/max_test.go"}, "expected": "TestMax fails: Max is undefined"})
	greenHandBack = stepDoneCall(map[string]any{"summary": "Max returns the larger int", "summary_en": "Added calc.Max.",
		"notes":     []map[string]any{{"to": "use-max", "text": "calc.Max(a, b int) int exists"}, {"to": "all", "text": "calc.go holds Max"}},
		"questions": []string{"Should Max take floats too?"}})
)

// TestPlanTaskTestFirst: a test-first task from its pack to done on the
// pinned axlr_task 1.0 in the embedded MADE engine, in a Git workspace:
// start records the digests of the scope and protected files and the
// baseline (go test runs no test yet); in red a write to calc.go is
// refused (only the scope's test files), the test is written and the unit
// check fails; in green Max is written and the check passes; the hand-back
// records the changed files, HEAD, the notes and the question. The turn
// ends with the green step's acceptance, and the search attributes show
// the task running, then done.
func TestPlanTaskTestFirst(t *testing.T) {
	h := newTaskHarness(t, true,
		calls(writeCall("calc/calc.go", maxSource)),
		calls(writeCall("calc/max_test.go", maxTest)),
		calls(redHandBack),
		calls(writeCall("calc/calc.go", maxSource), greenHandBack),
	)
	res := h.run(t, planTaskInput(addMax(true)))
	want := PlanTaskResult{Status: plans.TaskDone, SessionID: taskSession, Changed: []string{"calc/calc.go", "calc/max_test.go"},
		Summary: "Max returns the larger int", SummaryEn: "Added calc.Max.",
		Notes:     []plans.Note{{From: "add-max", To: "use-max", Text: "calc.Max(a, b int) int exists"}, {From: "add-max", To: "all", Text: "calc.go holds Max"}},
		Questions: []string{"Should Max take floats too?"}}
	rev := res.Revision
	res.Revision = ""
	if !equalJSON(res, want) {
		t.Fatalf("result\n%+v\nwant\n%+v", res, want)
	}
	if !strings.HasPrefix(rev, "0123abcd0123abcd0123abcd0123abcd0123abcd+") || len(rev) != 40+1+12 {
		t.Fatalf("revision %q", rev)
	}
	if got, want := h.triggers(), "test_first test_failing check_passing handed_back"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
	if got, want := h.ran(), "start:1:baseline red:1 green:1"; got != want {
		t.Fatalf("checks run %q, want %q", got, want)
	}
	start := h.made.recorded("start")[0]
	digests := map[string]string{"calc/api.go": digestOf(calcAPI, true), "calc/calc.go": digestOf(calcSource, true), "calc/max_test.go": ""}
	if start["started"] != true || start["test_first"] != true || !equalJSON(start["changed_before"], []string{}) || !equalJSON(start["digests"], digests) ||
		!equalJSON(start["check"], contract.CheckRecord{Program: "go", Args: []string{"test", "./calc"}, ExitCode: contract.Exit(0), OutputTail: "ok  \texample.com/calc\t0.01s [no tests to run]\n"}) {
		t.Fatalf("start recorded %v", start)
	}
	hb := h.made.recorded("handback")[0]
	if hb["done"] != true || hb["scope_checked_by"] != ceremonies.ScopeByGit || hb["revision"] != "0123abcd0123abcd0123abcd0123abcd0123abcd" ||
		!equalJSON(hb["changed_files"], want.Changed) || !equalJSON(hb["questions"], want.Questions) ||
		!equalJSON(hb["notes"], []ceremonies.Note{{To: "use-max", Text: "calc.Max(a, b int) int exists"}, {To: "all", Text: "calc.go holds Max"}}) {
		t.Fatalf("handback recorded %v", hb)
	}
	refused := h.model.recorded[0]
	if refused.Tool != "local_write" || refused.Status != contract.CallFailed ||
		refused.Message != `local_write of "calc/calc.go" is refused in step red: until the unit check fails, only the task's test files (calc/max_test.go) may be written. Write the failing test first, then hand the step back.` {
		t.Fatalf("the write in red: %+v", refused)
	}
	steps := h.stepReplies(t)
	if len(steps) != 2 || !steps[0].Accepted || steps[0].NextStep != "green" || !strings.Contains(steps[0].Feedback, "the test fails, and calc/max_test.go are frozen now") ||
		!steps[1].Accepted || steps[1].NextStep != "handback" || steps[1].Check == nil || *steps[1].Check.ExitCode != 0 {
		t.Fatalf("step replies %+v", steps)
	}
	if len(h.model.notes) != 1 || !strings.Contains(h.model.notes[0], "current step: red (iteration 1)") ||
		!strings.Contains(h.model.notes[0], "AXLR ran the unit check go test ./calc when the task started: it exited 0.") {
		t.Fatalf("notes %q", h.model.notes)
	}
	if len(h.model.requests) != 4 {
		t.Fatalf("%d model requests; the turn ends when green is accepted", len(h.model.requests))
	}
	for _, r := range h.model.requests {
		if slices.ContainsFunc(r.Tools, func(name string) bool { return !slices.Contains(LocalTools, name) && name != StepDoneTool }) {
			t.Fatalf("offered %v", r.Tools)
		}
	}
	wantSearch := []map[string]any{
		{"plan": "add-calc-max-a1b2c3", "task": "add-max", "wave": int64(1), "status": "running"},
		{"plan": "add-calc-max-a1b2c3", "task": "add-max", "wave": int64(1), "status": "done"},
	}
	if !equalJSON(h.search, wantSearch) {
		t.Fatalf("search attributes %v", h.search)
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// TestPlanTaskCodeFirst: a code-first task in a workspace without Git
// goes from start to green directly, writing both files there; the scope
// is checked by the digests, the revision is the digests' and none is
// recorded; the files an earlier task changed are digested at the start.
func TestPlanTaskCodeFirst(t *testing.T) {
	h := newTaskHarness(t, false,
		calls(writeCall("calc/max_test.go", maxTest), writeCall("calc/calc.go", maxSource)),
		calls(stepDoneCall(map[string]any{"summary": "Max added", "summary_en": "Added calc.Max."})),
	)
	in := planTaskInput(addMax(false))
	in.Changed = []string{"README.md"}
	res := h.run(t, in)
	if res.Status != plans.TaskDone || !slices.Equal(res.Changed, []string{"calc/calc.go", "calc/max_test.go"}) || res.Notes != nil || res.Questions != nil ||
		!strings.HasPrefix(res.Revision, "sha256:") || len(res.Revision) != len("sha256:")+64 {
		t.Fatalf("result %+v", res)
	}
	if got, want := h.triggers(), "code_first check_passing handed_back"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
	start := h.made.recorded("start")[0]
	digests := map[string]string{"README.md": digestOf("calc\n", true), "calc/api.go": digestOf(calcAPI, true), "calc/calc.go": digestOf(calcSource, true), "calc/max_test.go": ""}
	if !equalJSON(start["digests"], digests) || start["test_first"] != false {
		t.Fatalf("start recorded %v", start)
	}
	hb := h.made.recorded("handback")[0]
	if _, ok := hb["revision"]; ok || hb["scope_checked_by"] != ceremonies.ScopeByDigests {
		t.Fatalf("handback recorded %v", hb)
	}
}

// TestPlanTaskRedRefused: red's hand-back is checked before the unit check
// runs: test files outside the scope or that are not tests, then test
// files unchanged since the start, each fail their round with the files
// named and no run; the third round, with the test written, fails the
// check and goes on to green.
func TestPlanTaskRedRefused(t *testing.T) {
	h := newTaskHarness(t, true,
		calls(stepDoneCall(map[string]any{"test_files": []string{"calc/calc.go", "calc/other_test.go", "../x_test.go"}, "expected": "fails"})),
		calls(redHandBack),
		calls(writeCall("calc/max_test.go", maxTest), redHandBack),
		calls(writeCall("calc/calc.go", maxSource), greenHandBack),
	)
	res := h.run(t, planTaskInput(addMax(true)))
	if res.Status != plans.TaskDone {
		t.Fatalf("result %+v", res)
	}
	if got, want := h.ran(), "start:1:baseline red:3 green:1"; got != want {
		t.Fatalf("checks run %q, want %q", got, want)
	}
	steps := h.stepReplies(t)
	wants := []string{
		"The unit check did not run: the test files handed back do not hold (not in the task's scope: calc/other_test.go, ../x_test.go; not test files: calc/calc.go). Write the failing test in the task's test files (calc/max_test.go), then hand back the ones you changed. Step red continues: iteration 2.",
		"The unit check did not run: the test files handed back do not hold (unchanged since the task started: calc/max_test.go). Write the failing test in the task's test files (calc/max_test.go), then hand back the ones you changed. Step red continues: iteration 3.",
	}
	for i, w := range wants {
		if !steps[i].Accepted || steps[i].Feedback != w || steps[i].Check != nil {
			t.Fatalf("reply %d: %+v\nwant feedback %q", i+1, steps[i], w)
		}
	}
	red := h.made.recorded("red")
	if len(red) != 3 || red[0]["red"] != false || red[0]["settled"] != false || red[2]["red"] != true || red[2]["settled"] != true {
		t.Fatalf("red recorded %v", red)
	}
}

// TestPlanTaskBlocked: the ways a task ends BLOCKED, each with its reason,
// the scope files put back as they were at its start, those it created
// (left) and the files that stay changed: declared untestable (no run),
// red's rounds used up by a test that passes, the unit check that cannot
// start, a protected file changed in every green round (calc.go put back,
// the protected file outside the scope left), a call that needs the
// person (the instance cancelled), four answers without a tool call
// (three reminders, as a job's). Each ends with its kept scope dropped.
func TestPlanTaskBlocked(t *testing.T) {
	passing := "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n"
	apiEdit := calls(writeCall("calc/api.go", "package calc\n"), writeCall("calc/calc.go", maxSource), stepDoneCall(map[string]any{"summary": "s", "summary_en": "S."}))
	tests := []struct {
		name      string
		testFirst bool
		model     []reply
		check     func(map[string]string) contract.CheckRecord
		reason    string
		changed   []string
		restored  []string
		created   []string
		triggers  string
		ran       string
		requests  int
		reminders int
	}{
		{name: "untestable", testFirst: true,
			model:    []reply{calls(stepDoneCall(map[string]any{"testable": false, "observed": "Max is only logged"}))},
			reason:   "red: the worker found that no test the unit check runs can show the goal: Max is only logged",
			triggers: "test_first untestable", ran: "start:1:baseline", requests: 1},
		{name: "red rounds used up", testFirst: true,
			model:  []reply{calls(writeCall("calc/max_test.go", passing), redHandBack), calls(redHandBack), calls(redHandBack)},
			reason: "red round 3 of 3: the unit check go test ./calc exited 0, which is not a failing test", changed: []string{"calc/max_test.go"},
			created: []string{"calc/max_test.go"}, triggers: "test_first red_exhausted", ran: "start:1:baseline red:1 red:2 red:3", requests: 3},
		{name: "unit check cannot start",
			check: func(map[string]string) contract.CheckRecord {
				return contract.CheckRecord{StartError: `start_failed: program "go" was not found`}
			},
			reason:   `start: the unit check go test ./calc could not start: start_failed: program "go" was not found`,
			triggers: "start_failed", ran: "start:1:baseline"},
		{name: "protected file", model: []reply{apiEdit, apiEdit, apiEdit},
			reason:  "green round 3 of 3: protected files changed: calc/api.go; files outside the task's scope changed: calc/api.go",
			changed: []string{"calc/api.go"}, restored: []string{"calc/calc.go"}, triggers: "code_first green_exhausted", ran: "start:1:baseline", requests: 3},
		{name: "a call needs the person",
			model:    []reply{calls(writeCall("calc/calc.go", maxSource), scriptCall{tool: "local_exec", args: map[string]any{"program": "git", "args": []string{"push", "--force"}}})},
			reason:   `a call needs the person, and a plan's task runs without one: local_exec {"args":["push","--force"],"program":"git"} (`,
			restored: []string{"calc/calc.go"}, triggers: "code_first cancel", ran: "start:1:baseline", requests: 1},
		{name: "four answers without a tool call", model: []reply{{text: "I will add Max."}, {text: "Done, I think."}, {text: "Done."}, {text: "Really done."}},
			reason:   "ceremony_stalled: the model ended its turn 4 times with step green open",
			triggers: "code_first cancel", ran: "start:1:baseline", requests: 4, reminders: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTaskHarness(t, true, tt.model...)
			if tt.check != nil {
				h.made.check = tt.check
			}
			res := h.run(t, planTaskInput(addMax(tt.testFirst)))
			if res.Status != plans.TaskBlocked || !strings.HasPrefix(res.Reason, tt.reason) || !slices.Equal(res.Changed, tt.changed) ||
				!slices.Equal(res.Restored, tt.restored) || !slices.Equal(res.Created, tt.created) {
				t.Fatalf("result %+v\nwant reason %q, changed %q, restored %q, created %q", res, tt.reason, tt.changed, tt.restored, tt.created)
			}
			if got := h.ws.read("calc/calc.go"); got != calcSource {
				t.Fatalf("calc/calc.go after the task:\n%s", got)
			}
			if len(h.files.kept) != 0 || len(h.files.dropped) != 1 {
				t.Fatalf("kept %v, dropped %v", h.files.kept, h.files.dropped)
			}
			if got := h.triggers(); got != tt.triggers {
				t.Fatalf("triggers %q, want %q", got, tt.triggers)
			}
			if got := h.ran(); got != tt.ran {
				t.Fatalf("checks run %q, want %q", got, tt.ran)
			}
			if got := len(h.model.requests); got != tt.requests {
				t.Fatalf("%d model requests, want %d", got, tt.requests)
			}
			if got := countNotes(h.model.notes, "still open"); got != tt.reminders {
				t.Fatalf("%d reminders, want %d: %q", got, tt.reminders, h.model.notes)
			}
			if last := h.search[len(h.search)-1]; last["status"] != "blocked" {
				t.Fatalf("search attributes %v", h.search)
			}
			if fin := h.model.finished[0]; fin.Ceremony == nil || !fin.Ceremony.Ended {
				t.Fatalf("finished %+v", fin)
			}
		})
	}
}

// TestPlanTaskGreenRefused: green's files are checked before the unit
// check runs: a change outside the scope, then a change of the test file
// red froze, each fail the round with the files named; restored, the
// third round passes, and the task is done with only its scope changed.
func TestPlanTaskGreenRefused(t *testing.T) {
	h := newTaskHarness(t, true,
		calls(writeCall("calc/max_test.go", maxTest), redHandBack),
		calls(writeCall("calc/calc.go", maxSource), writeCall("README.md", "calc, now with Max\n"), greenHandBack),
		calls(writeCall("README.md", "calc\n"), writeCall("calc/max_test.go", maxTest+"// more\n"), greenHandBack),
		calls(writeCall("calc/max_test.go", maxTest), greenHandBack),
	)
	res := h.run(t, planTaskInput(addMax(true)))
	if res.Status != plans.TaskDone || !slices.Equal(res.Changed, []string{"calc/calc.go", "calc/max_test.go"}) {
		t.Fatalf("result %+v", res)
	}
	if got, want := h.ran(), "start:1:baseline red:1 green:3"; got != want {
		t.Fatalf("checks run %q, want %q", got, want)
	}
	steps := h.stepReplies(t)
	wants := []string{
		"The unit check did not run: files outside the task's scope changed: README.md. Restore them; only the task's scope (calc/calc.go, calc/max_test.go) may change, and the frozen and protected files stay as they are. Then hand the step back. Step green continues: iteration 2.",
		"The unit check did not run: test files the red step froze changed: calc/max_test.go. Restore them; only the task's scope (calc/calc.go, calc/max_test.go) may change, and the frozen and protected files stay as they are. Then hand the step back. Step green continues: iteration 3.",
	}
	for i, w := range wants {
		if s := steps[1+i]; !s.Accepted || s.Feedback != w {
			t.Fatalf("green reply %d: %+v\nwant feedback %q", i+1, s, w)
		}
	}
}

// TestPlanTaskNotes: notes and questions are bounded by the definition (at
// most 4 notes) and addressed to the plan's tasks or all: a hand-back
// that breaks either is refused with every problem named, MADE unchanged
// and the round not spent; the next is kept, each note from the task.
func TestPlanTaskNotes(t *testing.T) {
	five := []map[string]any{}
	for i := range 5 {
		five = append(five, map[string]any{"to": "all", "text": fmt.Sprintf("note %d", i)})
	}
	h := newTaskHarness(t, true,
		calls(writeCall("calc/max_test.go", maxTest), writeCall("calc/calc.go", maxSource),
			stepDoneCall(map[string]any{"summary": "s", "summary_en": "S.", "notes": five})),
		calls(stepDoneCall(map[string]any{"summary": "s", "summary_en": "S.", "notes": []map[string]any{{"to": "nope", "text": "x"}},
			"questions": []string{"one?", "two?", "three?"}})),
		calls(stepDoneCall(map[string]any{"summary": "s", "summary_en": "S.", "notes": []map[string]any{{"to": "use-max", "text": "  Max exists  "}},
			"questions": []string{"one?", "two?"}})),
	)
	res := h.run(t, planTaskInput(addMax(false)))
	if res.Status != plans.TaskDone || !equalJSON(res.Notes, []plans.Note{{From: "add-max", To: "use-max", Text: "Max exists"}}) ||
		!slices.Equal(res.Questions, []string{"one?", "two?"}) {
		t.Fatalf("result %+v", res)
	}
	steps := h.stepReplies(t)
	if steps[0].Accepted || steps[0].Error != "notes: holds 5 notes; at most 4" {
		t.Fatalf("five notes: %+v", steps[0])
	}
	if steps[1].Accepted || steps[1].Error != "questions: holds 3 items; at most 2" {
		t.Fatalf("three questions: %+v", steps[1])
	}
	if got, want := h.ran(), "start:1:baseline green:1"; got != want {
		t.Fatalf("checks run %q, want %q", got, want)
	}
	if n := len(h.made.recorded("green")); n != 1 {
		t.Fatalf("%d green completions", n)
	}
}

// TestPlanTaskUnknownAddressee: a note to a task the plan does not have is
// refused with the plan's tasks named; MADE is unchanged.
func TestPlanTaskUnknownAddressee(t *testing.T) {
	h := newTaskHarness(t, false,
		calls(writeCall("calc/max_test.go", maxTest), writeCall("calc/calc.go", maxSource),
			stepDoneCall(map[string]any{"summary": "s", "summary_en": "S.", "notes": []map[string]any{{"to": "nope", "text": "x"}}})),
		calls(stepDoneCall(map[string]any{"summary": "s", "summary_en": "S."})),
	)
	res := h.run(t, planTaskInput(addMax(false)))
	steps := h.stepReplies(t)
	want := `note 1: to "nope" is not a task of this plan; address a task id or "all". MADE is unchanged; fix the notes or questions and hand the step back again.`
	if res.Status != plans.TaskDone || steps[0].Accepted || steps[0].Error != want || len(h.made.recorded("green")) != 1 {
		t.Fatalf("result %+v, replies %+v", res, steps)
	}
}

// TestPlanTaskGreenFailsThreeTimes: a task whose unit check fails in
// each of its three green rounds ends BLOCKED with its scope as it was at
// its start: calc.go, which it broke, is put back; max_test.go, which it
// created, is left and listed; only that stays changed. The scope was
// kept at the start (after the digests, before the baseline), put back
// when the task ended, then dropped, under the worker's key.
func TestPlanTaskGreenFailsThreeTimes(t *testing.T) {
	broken := "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
	done := stepDoneCall(map[string]any{"summary": "s", "summary_en": "S."})
	h := newTaskHarness(t, true,
		calls(writeCall("calc/max_test.go", maxTest), writeCall("calc/calc.go", broken), done),
		calls(done),
		calls(done),
	)
	var order []string
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		order = append(order, info.ActivityType.Name)
	})
	res := h.run(t, planTaskInput(addMax(false)))
	want := PlanTaskResult{Status: plans.TaskBlocked, SessionID: taskSession, Changed: []string{"calc/max_test.go"},
		Reason:   "green round 3 of 3: the unit check go test ./calc exited 1",
		Restored: []string{"calc/calc.go"}, Created: []string{"calc/max_test.go"}}
	res.Revision = ""
	if !equalJSON(res, want) {
		t.Fatalf("result\n%+v\nwant\n%+v", res, want)
	}
	if got := h.ws.read("calc/calc.go"); got != calcSource {
		t.Fatalf("calc/calc.go after the task:\n%s", got)
	}
	if got := h.ws.read("calc/max_test.go"); got != maxTest {
		t.Fatalf("calc/max_test.go after the task:\n%s", got)
	}
	if got, want := h.ran(), "start:1:baseline green:1 green:2 green:3"; got != want {
		t.Fatalf("checks run %q, want %q", got, want)
	}
	key := ScopeKey{Root: "/work/calc", Plan: "add-calc-max-a1b2c3", Task: "add-max", Session: taskSession}
	if len(h.files.kept) != 0 || !slices.Equal(h.files.dropped, []ScopeKey{key}) {
		t.Fatalf("kept %v, dropped %v", h.files.kept, h.files.dropped)
	}
	if i := slices.Index(order, ActivityPlanTaskKeepScope); i < 1 || order[i-1] != ActivityPlanTaskDigests {
		t.Fatalf("local activities %v: the scope is kept after the start's digests", order)
	}
	// The files that stay changed are read after the scope is put back.
	if i := slices.Index(order, ActivityPlanTaskRestoreScope); i < 0 || !slices.Equal(order[i:i+4],
		[]string{ActivityPlanTaskRestoreScope, ActivityPlanTaskDropScope, ActivityPlanTaskStatus, ActivityPlanTaskDigests}) {
		t.Fatalf("local activities %v", order)
	}
}

// TestPlanTaskCancelledRestoresScope: a worker cancelled while its model
// works puts its scope back before it ends, and carries what it put back
// and left in its cancellation's details for the plan.
func TestPlanTaskCancelledRestoresScope(t *testing.T) {
	h := newTaskHarness(t, true)
	h.env.OnActivity(ActivityModelRequest, mock.Anything, mock.Anything).After(time.Hour).Return(ModelRequestResult{}, nil)
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == ActivityModelRequest {
			// What the model's calls did before the plan was interrupted.
			h.ws.set("calc/calc.go", "package calc\n")
			h.ws.set("calc/max_test.go", maxTest)
		}
	})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(PlanTaskWorkflow, planTaskInput(addMax(false)))
	var ce *temporal.CanceledError
	if !h.env.IsWorkflowCompleted() || !errors.As(h.env.GetWorkflowError(), &ce) {
		t.Fatalf("completed %v, error %v", h.env.IsWorkflowCompleted(), h.env.GetWorkflowError())
	}
	var reason string
	var res PlanTaskResult
	if err := ce.Details(&reason, &res); err != nil || reason != "the task was cancelled" ||
		!slices.Equal(res.Restored, []string{"calc/calc.go"}) || !slices.Equal(res.Created, []string{"calc/max_test.go"}) {
		t.Fatalf("details %q %+v: %v", reason, res, err)
	}
	if got := h.ws.read("calc/calc.go"); got != calcSource {
		t.Fatalf("calc/calc.go after the task:\n%s", got)
	}
	if len(h.files.kept) != 0 || len(h.files.dropped) != 1 {
		t.Fatalf("kept %v, dropped %v", h.files.kept, h.files.dropped)
	}
}

// TestPlanTaskCancelled: a worker cancelled while its model works ends
// its instance CANCELLED and returns the cancellation.
func TestPlanTaskCancelled(t *testing.T) {
	h := newTaskHarness(t, true)
	h.env.OnActivity(ActivityModelRequest, mock.Anything, mock.Anything).After(time.Hour).Return(ModelRequestResult{}, nil)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)
	h.env.ExecuteWorkflow(PlanTaskWorkflow, planTaskInput(addMax(false)))
	if !h.env.IsWorkflowCompleted() || !temporal.IsCanceledError(h.env.GetWorkflowError()) {
		t.Fatalf("completed %v, error %v", h.env.IsWorkflowCompleted(), h.env.GetWorkflowError())
	}
	if got, want := h.triggers(), "code_first cancel"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
	if f := h.model.finished; len(f) != 1 || f[0].Status != contract.Interrupted || f[0].Error != "the task was cancelled" {
		t.Fatalf("finished %+v", f)
	}
}

// TestPlanTaskStepTimeout: a step past its timeout (the definition's
// 3600 s) stops the ceremony before the next model request, and the task
// ends BLOCKED with the reason; the model is not asked again.
func TestPlanTaskStepTimeout(t *testing.T) {
	h := newTaskHarness(t, true)
	var requests int
	h.env.OnActivity(ActivityModelRequest, mock.Anything, mock.Anything).After(2 * time.Hour).Return(
		func(_ context.Context, in ModelRequestInput) (ModelRequestResult, error) {
			requests++
			return ModelRequestResult{Revision: in.Revision + 1, Text: "Still reading calc.go."}, nil
		})
	res := h.run(t, planTaskInput(addMax(false)))
	if res.Status != plans.TaskBlocked || res.Reason != "step_timeout: step green passed its 1h0m0s timeout" || requests != 1 {
		t.Fatalf("result %+v after %d requests", res, requests)
	}
	if got, want := h.triggers(), "code_first cancel"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
}

// TestPlanTaskInputValidate names the field of an input a worker cannot
// start with.
func TestPlanTaskInputValidate(t *testing.T) {
	ok := planTaskInput(addMax(true))
	tests := []struct {
		name string
		edit func(*PlanTaskInput)
		want string
	}{
		{"valid", func(*PlanTaskInput) {}, ""},
		{"plan", func(in *PlanTaskInput) { in.Plan = "Not A Slug" }, `plan task: plan "Not A Slug" is not a plan id (a slug of at most 40 characters)`},
		{"task", func(in *PlanTaskInput) { in.Task.ID = "" }, `plan task: task id "" is not a slug of at most 40 characters`},
		{"wave", func(in *PlanTaskInput) { in.Wave = 0 }, "plan task add-max: wave 0; waves count from 1"},
		{"session", func(in *PlanTaskInput) { in.SessionID = " " }, "plan task add-max: session_id is empty"},
		{"prompt", func(in *PlanTaskInput) { in.Prompt = "" }, "plan task add-max: the prompt (its context pack) is empty"},
		{"root", func(in *PlanTaskInput) { in.Root = "calc" }, `plan task add-max: root "calc" is not an absolute path`},
		{"scope", func(in *PlanTaskInput) { in.Task.Scope = nil }, "plan task add-max: the scope names no file"},
		{"unit check", func(in *PlanTaskInput) { in.Task.UnitCheck = ceremonies.CheckCommand{} }, "plan task add-max: the unit check has no program"},
		{"scope path", func(in *PlanTaskInput) { in.Task.Scope = []string{"./calc/calc.go"} }, `plan task add-max: scope path "./calc/calc.go" is not a clean path inside the workspace`},
		{"changed path", func(in *PlanTaskInput) { in.Changed = []string{"../x"} }, `plan task add-max: changed path "../x" is not a clean path inside the workspace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ok
			in.Task.Scope = slices.Clone(ok.Task.Scope)
			tt.edit(&in)
			err := in.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && err.Error() != tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPlanTaskStepQuery: while the worker runs, QueryTaskStep answers the
// axlr_task step it works, with the step's iteration and limit; after the
// ceremony ended, no step.
func TestPlanTaskStepQuery(t *testing.T) {
	h := newTaskHarness(t, true,
		calls(writeCall("calc/max_test.go", maxTest)),
		calls(redHandBack),
		calls(writeCall("calc/calc.go", maxSource), greenHandBack),
	)
	var seen []string
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if !strings.HasSuffix(info.ActivityType.Name, "ModelRequest") {
			return
		}
		v, err := h.env.QueryWorkflow(QueryTaskStep)
		if err != nil {
			t.Errorf("query: %v", err)
			return
		}
		var ts TaskStep
		if err := v.Get(&ts); err != nil {
			t.Errorf("decode: %v", err)
			return
		}
		seen = append(seen, fmt.Sprintf("%s/%s %s %d/%d", ts.Plan, ts.Task, ts.Step, ts.Iteration, ts.Limit))
	})
	h.run(t, planTaskInput(addMax(true)))
	want := []string{"add-calc-max-a1b2c3/add-max red 1/3", "add-calc-max-a1b2c3/add-max red 1/3", "add-calc-max-a1b2c3/add-max green 1/3"}
	if !slices.Equal(seen, want) {
		t.Errorf("steps while the worker ran %q, want %q", seen, want)
	}
	v, err := h.env.QueryWorkflow(QueryTaskStep)
	var ts TaskStep
	if err != nil || v.Get(&ts) != nil || ts.Step != "" {
		t.Errorf("after the end: %+v %v", ts, err)
	}
}
