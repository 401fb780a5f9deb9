package workflows

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/plans"
)

// planMADE drives the plan's instances on the real embedded MADE engine,
// publishing the pinned axlr_plan and axlr_sync definitions: the guards
// read what the plan's console steps record, a claim key is taken once and
// a bounce re-enters a state as MADE does. What it leaves out is the
// hand-back's own fields (the real activities read them from the
// transcript; the planner's is read by the verify activity) and the checks,
// which it answers from a script by command.
type planMADE struct {
	noResume
	t   *testing.T
	eng *embedded.Engine

	mu sync.Mutex
	// checks answer each command (ceremonies.CheckCommand.String), in order, the
	// last again once used up; revision answers a run with no program.
	checks   map[string][]contract.CheckRecord
	revision contract.CheckRecord
	ran      []RunCheckInput
	// triggers are the triggers applied, by instance; completed the
	// console steps' records.
	triggers  map[string][]string
	completed []CompleteInput
	grants    []GrantInput
}

var _ CeremonyActivities = (*planMADE)(nil)

func newPlanMADE(t *testing.T) *planMADE {
	t.Helper()
	eng, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return &planMADE{t: t, eng: eng, checks: map[string][]contract.CheckRecord{}, triggers: map[string][]string{},
		revision: contract.CheckRecord{Program: "git", Args: []string{"rev-parse", "HEAD"}, ExitCode: contract.Exit(0), OutputTail: "0123abc\n"}}
}

func planView(in made.Instance) InstanceView {
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
		v.Steps = append(v.Steps, StepView{Step: s.StepID, Status: string(s.Status), Iteration: max(s.Iteration, 1), Attempt: s.Attempt})
	}
	return v
}

func (f *planMADE) Start(ctx context.Context, in CeremonyStartInput) (CeremonyStartResult, error) {
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
	for _, input := range parsed.Inputs {
		if _, ok := in.Context[input.Name]; input.Required && !ok {
			return CeremonyStartResult{}, madeRefused("start %s without input %s", def.Name, input.Name)
		}
	}
	inst, err := f.eng.StartPublished(ctx, made.StartRequest{Ceremony: def.Name, Version: def.Version, CeremonyID: in.InstanceID,
		ActorID: "axlr", ActorKind: made.ActorService, Context: in.Context})
	if err != nil {
		return CeremonyStartResult{}, madeRefused("start %s: %v", in.InstanceID, err)
	}
	res := startResult(parsed)
	res.Instance, err = f.Claim(ctx, ClaimInput{InstanceID: in.InstanceID, Step: *inst.NextStepID, Iteration: 1, LeaseTTL: res.StepTimeout})
	return res, err
}

func (f *planMADE) Claim(ctx context.Context, in ClaimInput) (InstanceView, error) {
	inst, err := made.ClaimOnce(ctx, f.eng, made.ClaimRequest{CeremonyID: in.InstanceID, StepID: in.Step, ActorKind: made.ActorAgent,
		LeaseOwnerID: "axlrd-test", IdempotencyKey: ClaimKey(in.InstanceID, in.Step, in.Iteration, in.Round), LeaseTTL: in.LeaseTTL})
	if err != nil {
		return InstanceView{}, madeRefused("claim %s of %s: %v", in.Step, in.InstanceID, err)
	}
	v := planView(inst)
	v.NextStep = in.Step
	return v, nil
}

func (f *planMADE) HandBack(context.Context, HandBackInput) (HandBackResult, error) {
	return HandBackResult{}, nil
}

func (f *planMADE) RunCheck(_ context.Context, in RunCheckInput) (contract.CheckRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ran = append(f.ran, in)
	if in.Command.Program == "" {
		return f.revision, nil
	}
	cmd := ceremonies.CheckCommand{Program: in.Command.Program, Args: in.Command.Args}.String()
	script := f.checks[cmd]
	if len(script) == 0 {
		return contract.CheckRecord{Program: in.Command.Program, Args: in.Command.Args, ExitCode: contract.Exit(0), OutputTail: "ok\n"}, nil
	}
	rec := script[0]
	if len(script) > 1 {
		f.checks[cmd] = script[1:]
	}
	rec.Program, rec.Args = in.Command.Program, in.Command.Args
	return rec, nil
}

func (f *planMADE) Complete(ctx context.Context, in CompleteInput) (InstanceView, error) {
	f.mu.Lock()
	f.completed = append(f.completed, in)
	f.mu.Unlock()
	b, err := json.Marshal(in.Recorded)
	if err != nil {
		return InstanceView{}, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return InstanceView{}, err
	}
	req := made.CompleteRequest{CeremonyID: in.InstanceID, StepID: in.Step, ActorKind: made.ActorAgent, Status: made.StepStatus(in.Status), Output: out}
	if in.Status == string(made.StepFailed) {
		req.Error = "failed"
	}
	inst, err := f.eng.Complete(ctx, req)
	if err != nil {
		return InstanceView{}, madeRefused("complete %s of %s: %v", in.Step, in.InstanceID, err)
	}
	return planView(inst), nil
}

func (f *planMADE) Transition(ctx context.Context, in TransitionInput) (InstanceView, error) {
	inst, err := f.eng.ApplyTransition(ctx, made.TransitionRequest{CeremonyID: in.InstanceID, Trigger: in.Trigger, ActorKind: made.ActorService})
	if err != nil {
		return InstanceView{}, madeRefused("apply %s to %s: %v", in.Trigger, in.InstanceID, err)
	}
	f.mu.Lock()
	f.triggers[in.InstanceID] = append(f.triggers[in.InstanceID], in.Trigger)
	f.mu.Unlock()
	return planView(inst), nil
}

func (f *planMADE) ApproveGuard(ctx context.Context, in GrantInput) (InstanceView, error) {
	f.mu.Lock()
	f.grants = append(f.grants, in)
	f.mu.Unlock()
	inst, err := f.eng.ApproveGuard(ctx, made.ApproveRequest{CeremonyID: in.InstanceID, GuardName: in.Guard, RoleID: in.Role, RoleKind: made.ActorHuman})
	if err != nil {
		return InstanceView{}, madeRefused("grant %s: %v", in.Guard, err)
	}
	return planView(inst), nil
}

// instanceTriggers are the triggers applied to the instances whose id
// starts with prefix, in the order the instances started.
func (f *planMADE) instanceTriggers(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.triggers {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []string
	for _, id := range ids {
		out = append(out, strings.Join(f.triggers[id], " "))
	}
	return out
}

// recorded decodes what the console recorded at a step, each time, into
// out (a pointer to a slice of the step's record).
func (f *planMADE) recorded(t *testing.T, step string, out any) {
	t.Helper()
	f.mu.Lock()
	var recs []map[string]any
	for _, c := range f.completed {
		if c.Step == step {
			recs = append(recs, c.Recorded)
		}
	}
	f.mu.Unlock()
	b, err := json.Marshal(recs)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		t.Fatalf("records of %s: %v", step, err)
	}
}

// The console's records, as MADE holds them.
type (
	planVerifyRecord struct {
		Verdict  string
		Round    int
		Waves    int
		Defects  []string
		Baseline map[string]contract.CheckRecord
	}
	planApproveRecord struct {
		Decision, Reason string
		Returns          int
	}
	planRunRecord struct {
		Outcome, Revision, Reason       string
		Waves, Synced                   int
		Done, Blocked, Skipped, Changed []string
	}
	planIntegrateRecord struct {
		Verdict, Reason string
		Round           int
		Check           contract.CheckRecord
		Affected        []string
	}
	planReconcileRecord struct {
		Reconciled bool
		Round      int
		Responses  []ceremonies.Response
	}
)

// planVerifier verifies, for its nth call, the nth of its decompositions
// with the real verification over a workspace in memory.
type planVerifier struct {
	mu     sync.Mutex
	plans  []plans.Decomposition
	fsys   fstest.MapFS
	inputs []PlanVerifyInput
	// lose: the first call ends as its worker's loss does, in a heartbeat
	// timeout.
	lose bool
}

func (v *planVerifier) Verify(_ context.Context, in PlanVerifyInput) (plans.Verification, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lose {
		v.lose = false
		return plans.Verification{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
	}
	if len(v.inputs) >= len(v.plans) {
		return plans.Verification{}, temporal.NewNonRetryableApplicationError("no decomposition scripted", ErrTypeBadRequest, nil)
	}
	d := v.plans[len(v.inputs)]
	v.inputs = append(v.inputs, in)
	return plans.Verify(in.Plan, d, v.fsys), nil
}

var _ PlanActivities = (*planVerifier)(nil)

// planWorkers is the task worker (PlanTaskWorkflow): each worker answers
// the result scripted for its workflow id's suffix (the task, or
// <task>-r<round>), else done with its scope changed. A worker named in
// hold waits until it is cancelled, once, and then ends cancelled as
// PlanTask does, with what cancelled scripts for it (the files it put
// back and left) in the details.
type planWorkers struct {
	mu        sync.Mutex
	results   map[string]PlanTaskResult
	hold      map[string]bool
	cancelled map[string]PlanTaskResult
	inputs    []PlanTaskInput
	ids       []string
	// queues are the task queues the workers ran on, in order.
	queues []string
}

func (w *planWorkers) run(ctx workflow.Context, in PlanTaskInput) (PlanTaskResult, error) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	key := strings.TrimPrefix(id, PlanWorkflowID(in.Plan)+"-")
	w.mu.Lock()
	w.inputs = append(w.inputs, in)
	w.ids = append(w.ids, id)
	w.queues = append(w.queues, workflow.GetInfo(ctx).TaskQueueName)
	res, ok := w.results[key]
	hold := w.hold[key]
	delete(w.hold, key)
	cancelled := w.cancelled[key]
	w.mu.Unlock()
	if hold {
		if err := workflow.Sleep(ctx, 24*time.Hour); err != nil {
			cancelled.Status, cancelled.SessionID, cancelled.Reason = plans.TaskBlocked, in.SessionID, "the task was cancelled"
			return cancelled, temporal.NewCanceledError(cancelled.Reason, cancelled)
		}
	}
	if !ok {
		res = PlanTaskResult{Status: plans.TaskDone, Changed: in.Task.Scope, Summary: "did " + in.Task.ID}
	}
	res.SessionID = in.SessionID
	return res, nil
}

// started are the inputs of the workers started, by workflow id suffix.
func (w *planWorkers) started(plan string) map[string]PlanTaskInput {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]PlanTaskInput{}
	for i, id := range w.ids {
		out[strings.TrimPrefix(id, PlanWorkflowID(plan)+"-")] = w.inputs[i]
	}
	return out
}

func (w *planWorkers) order(plan string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, id := range w.ids {
		out = append(out, strings.TrimPrefix(id, PlanWorkflowID(plan)+"-"))
	}
	return strings.Join(out, " ")
}

// planWorkspace is the workspace the plans below cite.
var planWorkspace = fstest.MapFS{
	"calc/calc.go":      {Data: []byte("package calc\n\n// Min returns the smaller int.\nfunc Min(a, b int) int {\n\tif a < b {\n\t\treturn a\n\t}\n\treturn b\n}\n")},
	"calc/calc_test.go": {Data: []byte("package calc\n\nimport \"testing\"\n\nfunc TestMin(t *testing.T) {}\n")},
	"main.go":           {Data: []byte("package main\n\nfunc main() {}\n")},
	"README.md":         {Data: []byte("# calc\n")},
}

var (
	e2eGoTest  = ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}
	calcTest   = ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./calc"}}
	buildCheck = ceremonies.CheckCommand{Program: "go", Args: []string{"build", "./..."}}
)

// threeTasks is a verified plan of two waves: add-max and docs, then
// use-max after add-max.
func threeTasks() plans.Decomposition {
	return plans.Decomposition{
		Tasks: []ceremonies.PlanTask{
			{ID: "add-max", Goal: "calc.Max returns the larger int", Scope: []string{"calc/max.go", "calc/max_test.go"},
				Context:   []ceremonies.Citation{{Path: "calc/calc.go", Line: 4, Quote: "func Min(a, b int) int {"}},
				UnitCheck: calcTest, TestFirst: true, Protect: []string{"calc/calc.go"}},
			{ID: "docs", Goal: "The README names Max", Scope: []string{"README.md"}, UnitCheck: buildCheck},
			{ID: "use-max", Goal: "main prints Max(1, 2)", Scope: []string{"main.go"}, UnitCheck: buildCheck, DependsOn: []string{"add-max"}},
		},
		E2ECheck: e2eGoTest, Interfaces: "func Max(a, b int) int", SummaryEN: "Adds calc.Max and uses it.",
	}
}

// overlapping is threeTasks with docs changing add-max's file in the same
// wave, and a quote that is not on its line.
func overlapping() plans.Decomposition {
	d := threeTasks()
	d.Tasks[1].Scope = []string{"README.md", "calc/max.go"}
	return d
}

// planHandBack is the planner's decompose hand-back (its fields are read by
// the verify activity, scripted in planVerifier here) and its answer after.
func planHandBack() []reply {
	return []reply{
		{calls: []scriptCall{stepDoneCall(map[string]any{"tasks": []any{}, "e2e_check": map[string]any{"program": "go"}, "summary_en": "plan"})}},
		{text: "AXLR verifies the plan."},
	}
}

type planHarness struct {
	testsuite.WorkflowTestSuite
	t        *testing.T
	env      *testsuite.TestWorkflowEnvironment
	acts     *scripted
	made     *planMADE
	verifier *planVerifier
	workers  *planWorkers
	memory   *fakeMemory
	input    PlanInput
}

const planID = "add-max-and-0a1b2c"

func newPlanHarness(t *testing.T, model []reply, decompositions ...plans.Decomposition) *planHarness {
	h := &planHarness{t: t, acts: newScripted(model...), made: newPlanMADE(t), memory: &fakeMemory{},
		verifier: &planVerifier{plans: decompositions, fsys: planWorkspace},
		workers:  &planWorkers{results: map[string]PlanTaskResult{}, hold: map[string]bool{}, cancelled: map[string]PlanTaskResult{}}}
	h.env = h.NewTestWorkflowEnvironment()
	h.env.RegisterWorkflowWithOptions(Plan, workflow.RegisterOptions{Name: PlanWorkflow})
	h.env.RegisterWorkflowWithOptions(h.workers.run, workflow.RegisterOptions{Name: PlanTaskWorkflow})
	h.env.RegisterActivityWithOptions(h.acts, activity.RegisterOptions{Name: "session."})
	h.env.RegisterActivityWithOptions(h.made, activity.RegisterOptions{Name: "ceremony."})
	h.env.RegisterActivityWithOptions(h.verifier, activity.RegisterOptions{Name: "plan."})
	h.env.RegisterActivityWithOptions(h.memory, activity.RegisterOptions{Name: "memory."})
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h.env.SetStartTime(created)
	h.input = PlanInput{
		Record:    plans.Record{ID: planID, Status: plans.Decomposing, Brief: "Add max and use it in main", Root: "/work/calc", Created: created, Updated: created},
		SessionID: sessionID, Host: "test", Model: "planner-model", TaskModel: "task-model",
	}
	return h
}

// decideAt sends a decision after d of workflow time and keeps its
// outcome.
func (h *planHarness) decideAt(d time.Duration, dec PlanDecision) *outcome {
	out := &outcome{}
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(UpdatePlanDecide, cmp.Or(dec.RequestID, "update-"+d.String()), &testsuite.TestUpdateCallback{
			OnReject: func(err error) { out.rejected = err }, OnAccept: func() {},
			OnComplete: func(_ any, err error) { out.err, out.completed = err, true },
		}, dec)
	}, d)
	return out
}

func (h *planHarness) decision(id, kind, decision, reason string) PlanDecision {
	return PlanDecision{RequestID: id, Plan: planID, Kind: kind, Decision: decision, Reason: reason}
}

// recordAt queries the plan's record after d of workflow time.
func (h *planHarness) recordAt(d time.Duration) *plans.Record {
	rec := &plans.Record{}
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryPlan)
		if err != nil {
			h.t.Errorf("query the plan: %v", err)
			return
		}
		if err := v.Get(rec); err != nil {
			h.t.Errorf("decode the plan: %v", err)
		}
	}, d)
	return rec
}

// run runs the plan to its end and returns its last record.
func (h *planHarness) run() plans.Record {
	h.t.Helper()
	h.env.ExecuteWorkflow(PlanWorkflow, h.input)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("the plan did not end")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatal(err)
	}
	var rec plans.Record
	if err := h.env.GetWorkflowResult(&rec); err != nil {
		h.t.Fatal(err)
	}
	return rec
}

func (h *planHarness) checkKeys() []string {
	h.made.mu.Lock()
	defer h.made.mu.Unlock()
	var out []string
	for _, r := range h.made.ran {
		out = append(out, r.Key[strings.Index(r.Key, ":")+1:])
	}
	return out
}

func taskStatuses(r plans.Record) string {
	var out []string
	for _, t := range r.Tasks {
		out = append(out, fmt.Sprintf("%s=%s", t.ID, t.Status))
	}
	return strings.Join(out, " ")
}

// TestPlanDone: the planner's first proposal has a defect, which goes back
// to it with the task named; the second is verified, its commands wait for
// the person and run once each as the baseline, the person approves the
// plan through the approver identity, and the two waves run: add-max and
// docs one after another, then use-max with add-max's note and the files
// wave 1 changed, each wave synced green. The planner is asked nothing
// after its second proposal.
func TestPlanDone(t *testing.T) {
	model := append(append([]reply{{calls: []scriptCall{{tool: "local_read", args: map[string]any{"path": "calc/calc.go"}}}}},
		planHandBack()...), planHandBack()...)
	h := newPlanHarness(t, model, overlapping(), threeTasks())
	h.workers.results["add-max"] = PlanTaskResult{Status: plans.TaskDone, Changed: []string{"calc/max.go", "calc/max_test.go"}, Summary: "Max added",
		Notes:     []plans.Note{{To: "use-max", Text: "calc.Max(a, b int) int exists"}, {To: "all", Text: "go test ./calc passes"}},
		Questions: []string{"Should Max take floats too?"}}
	early := h.recordAt(30 * time.Second)
	wrongKind := h.decideAt(50*time.Second, h.decision("d-0", PlanDecidePlan, PlanApprove, ""))
	commands := h.decideAt(time.Minute, h.decision("d-1", PlanDecideCommands, PlanApprove, ""))
	card := h.recordAt(90 * time.Second)
	approve := h.decideAt(2*time.Minute, h.decision("d-2", PlanDecidePlan, PlanApprove, ""))
	rec := h.run()

	wrongKind.mustReject(t, "the plan's approval while its commands wait", "waits for the person on its command, not its approval")
	commands.mustAccept(t, "approve the commands")
	approve.mustAccept(t, "approve the plan")
	if early.Status != plans.AwaitingApproval || early.Pending == nil || early.Pending.Kind != plans.PendingCommand ||
		!slices.Equal(early.Pending.Commands, []string{"go test ./...", "go test ./calc", "go build ./..."}) {
		t.Fatalf("while the commands wait: %+v pending %+v", early, early.Pending)
	}
	if card.Status != plans.AwaitingApproval || card.Pending == nil || card.Pending.Kind != plans.PendingApproval || card.Waves != 2 ||
		taskStatuses(*card) != "add-max=pending docs=pending use-max=pending" || card.Tasks[2].Wave != 2 {
		t.Fatalf("the card: %+v pending %+v", card, card.Pending)
	}
	if rec.Status != plans.Done || rec.Reason != "" || rec.Pending != nil || rec.PlannerModel != "planner-model" ||
		taskStatuses(rec) != "add-max=done docs=done use-max=done" {
		t.Fatalf("record %+v", rec)
	}
	if !slices.Equal(rec.Tasks[0].Questions, []string{"Should Max take floats too?"}) || rec.Tasks[1].Questions != nil {
		t.Fatalf("the workers' questions in the record: %q, %q", rec.Tasks[0].Questions, rec.Tasks[1].Questions)
	}
	if len(rec.Syncs) != 2 || rec.Syncs[0].Wave != 1 || !rec.Syncs[0].Green() || rec.Syncs[1].Wave != 2 || !rec.Syncs[1].Green() || rec.Syncs[1].Check.String() != "go test ./..." {
		t.Fatalf("syncs %+v", rec.Syncs)
	}
	if h.acts.next != len(model) {
		t.Fatalf("the planner was asked %d times, scripted %d", h.acts.next, len(model))
	}
	notes := strings.Join(h.acts.notes, "\n")
	if !strings.Contains(notes, "[AXLR] Verification round 1 of 3 found defects in the plan.") ||
		!strings.Contains(notes, "- tasks add-max and docs: both change calc/max.go in wave 1; give it to one of them or order them with depends_on") {
		t.Fatalf("planner notes:\n%s", notes)
	}
	// Memory: a wake for the plan's brief and one for each task's goal;
	// each hand-back, each wave's sync and the outcome recorded.
	var intents []string
	for _, w := range h.memory.wakes {
		intents = append(intents, w.Intent)
	}
	if len(intents) != 4 || intents[0] != "Add max and use it in main" {
		t.Fatalf("wakes for %q", intents)
	}
	var keys []string
	for _, w := range h.memory.written() {
		keys = append(keys, strings.TrimPrefix(w.IdempotencyKey, "default-test-workflow-id:"))
		if w.Labels["plan"][0] != planID {
			t.Fatalf("write %s labels %v", w.IdempotencyKey, w.Labels)
		}
	}
	if got := strings.Join(keys, " "); got != "task-add-max:1 task-docs:1 sync-1:1 task-use-max:1 sync-2:1 outcome:1" {
		t.Fatalf("plan memory writes %s", got)
	}
	if out := h.memory.written()[5].Memories[0]; out.Kind != kmp.KindSuccessPath || !strings.Contains(out.Summary, "3 of 3 tasks done") ||
		!strings.Contains(h.memory.written()[0].Memories[0].Evidence, "note to use-max: calc.Max(a, b int) int exists") {
		t.Fatalf("outcome %+v, first hand-back %+v", out, h.memory.written()[0].Memories[0])
	}
	if got := h.made.instanceTriggers("axlr-" + planID + "-1"); !slices.Equal(got, []string{"decomposed defects_found decomposed verified approved done"}) {
		t.Fatalf("plan triggers %q", got)
	}
	if got := h.made.instanceTriggers("axlr-" + planID + "-sync"); !slices.Equal(got, []string{"integrated", "integrated"}) {
		t.Fatalf("sync triggers %q", got)
	}
	if len(h.made.grants) != 1 || h.made.grants[0].Guard != ceremonies.PlanApprovalGuard || h.made.grants[0].Role != ceremonies.ApproverRole {
		t.Fatalf("grants %+v", h.made.grants)
	}
	var verify []planVerifyRecord
	h.made.recorded(t, "verify", &verify)
	if len(verify) != 2 || verify[0].Verdict != ceremonies.VerdictDefects || verify[0].Round != 1 || len(verify[0].Defects) != 1 ||
		verify[1].Verdict != ceremonies.VerdictVerified || verify[1].Round != 2 || verify[1].Waves != 2 {
		t.Fatalf("verify records %+v", verify)
	}
	if base := verify[1].Baseline; len(base) != 4 || base["use-max"].Args[0] != "build" || base["add-max"].Args[1] != "./calc" || base[e2eBaseline].Args[1] != "./..." {
		t.Fatalf("baseline %+v", base)
	}
	var run []planRunRecord
	h.made.recorded(t, "run", &run)
	if len(run) != 1 || run[0].Outcome != ceremonies.OutcomeDone || run[0].Synced != 2 || run[0].Waves != 2 || run[0].Revision != "0123abc" ||
		!slices.Equal(run[0].Done, []string{"add-max", "docs", "use-max"}) ||
		!slices.Equal(run[0].Changed, []string{"calc/max.go", "calc/max_test.go", "README.md", "main.go"}) {
		t.Fatalf("run record %+v", run)
	}
	if keys := strings.Join(h.checkKeys(), " "); keys != "verify:baseline:0 verify:baseline:1 verify:baseline:2 integrate:s0 integrate:s0 run" {
		t.Fatalf("checks run: %s", keys)
	}
	if order := h.workers.order(planID); order != "add-max docs use-max" {
		t.Fatalf("workers %s", order)
	}
	started := h.workers.started(planID)
	use := started["use-max"]
	if use.Wave != 2 || use.Round != 0 || use.Model != "task-model" || use.Root != "/work/calc" || use.Host != "test" ||
		!slices.Equal(use.Changed, []string{"calc/max.go", "calc/max_test.go", "README.md"}) || !slices.Equal(use.Tasks, []string{"add-max", "docs", "use-max"}) ||
		!strings.HasPrefix(use.Prompt, "Task use-max of plan "+planID+", wave 2: main prints Max(1, 2)\n") ||
		!strings.HasSuffix(use.Prompt, "\nNotes from earlier tasks:\n- from add-max: calc.Max(a, b int) int exists\n- from add-max: go test ./calc passes\n") {
		t.Fatalf("use-max's worker: %+v", use)
	}
	if add := started["add-max"]; len(add.Changed) != 0 || strings.Contains(add.Prompt, "Notes from") || !add.Task.TestFirst ||
		!strings.Contains(add.Prompt, "--- calc/calc.go:1-9 ---") {
		t.Fatalf("add-max's worker: %+v", add)
	}
	sessions := map[string]bool{}
	for _, task := range rec.Tasks {
		if task.Session != started[task.ID].SessionID || len(task.Session) != 36 || sessions[task.Session] {
			t.Fatalf("task %s session %q, its worker's %q", task.ID, task.Session, started[task.ID].SessionID)
		}
		sessions[task.Session] = true
	}
	if got := h.verifier.inputs[1]; got.Plan != planID || got.SessionID != sessionID || got.Root != "/work/calc" || got.CallKey == h.verifier.inputs[0].CallKey {
		t.Fatalf("verify inputs %+v", h.verifier.inputs)
	}
}

// TestPlanBlockedTaskSkipsDependents: under plan.auto_approve the commands
// still wait for the person, and the plan is approved automatically; a
// blocked task skips the task that depends on it, and its record keeps
// the scope files its worker put back and those it created; the other
// task of its wave still runs, and no wave is synced, since none
// finished: the plan ends PARTIAL with each reason.
func TestPlanBlockedTaskSkipsDependents(t *testing.T) {
	h := newPlanHarness(t, planHandBack(), threeTasks())
	h.input.AutoApprove = true
	h.workers.results["add-max"] = PlanTaskResult{Status: plans.TaskBlocked, Reason: "red: the unit check passed before the change",
		Changed: []string{"calc/max_test.go"}, Restored: []string{"calc/max.go"}, Created: []string{"calc/max_test.go"}}
	commands := h.decideAt(time.Minute, h.decision("d-1", PlanDecideCommands, PlanApprove, ""))
	rec := h.run()
	commands.mustAccept(t, "approve the commands")
	want := "task add-max is blocked: red: the unit check passed before the change; task use-max is skipped: depends on add-max, which did not finish"
	if rec.Status != plans.Partial || rec.Reason != want || taskStatuses(rec) != "add-max=blocked docs=done use-max=skipped" || len(rec.Syncs) != 0 {
		t.Fatalf("record %+v", rec)
	}
	if add := rec.Tasks[0]; !slices.Equal(add.Restored, []string{"calc/max.go"}) || !slices.Equal(add.Created, []string{"calc/max_test.go"}) ||
		!slices.Equal(add.Changed, []string{"calc/max_test.go"}) {
		t.Fatalf("the blocked task's files: %+v", add)
	}
	// The next task starts knowing the file the blocked one left.
	if docs := h.workers.started(planID)["docs"]; !slices.Equal(docs.Changed, []string{"calc/max_test.go"}) {
		t.Fatalf("docs started with changed %v", docs.Changed)
	}
	if order := h.workers.order(planID); order != "add-max docs" {
		t.Fatalf("workers %s", order)
	}
	var approve []planApproveRecord
	h.made.recorded(t, "approve", &approve)
	if len(approve) != 1 || approve[0].Decision != ceremonies.DecisionAutomatic || len(h.made.grants) != 0 {
		t.Fatalf("approve %+v grants %+v", approve, h.made.grants)
	}
	var run []planRunRecord
	h.made.recorded(t, "run", &run)
	if len(run) != 1 || run[0].Outcome != ceremonies.OutcomePartial || run[0].Synced != 0 || run[0].Reason != want ||
		!slices.Equal(run[0].Blocked, []string{"add-max: red: the unit check passed before the change"}) ||
		!slices.Equal(run[0].Skipped, []string{"use-max: depends on add-max, which did not finish"}) {
		t.Fatalf("run record %+v", run)
	}
	if got := h.made.instanceTriggers("axlr-" + planID + "-1"); !slices.Equal(got, []string{"decomposed verified approved_automatically partial"}) {
		t.Fatalf("plan triggers %q", got)
	}
}

// TestPlanSyncReconciles: a red end-to-end check after a wave opens a
// reconciliation round for the tasks its tail names (a fresh worker, its
// round in its id, test first off, told its hand-back, the others', its
// notes and the tail); a green check then syncs the wave. Two red rounds
// end the sync BLOCKED and the plan PARTIAL, its later wave run all the
// same.
func TestPlanSyncReconciles(t *testing.T) {
	red := contract.CheckRecord{ExitCode: contract.Exit(1), OutputTail: "--- FAIL: TestMax\n    calc/max_test.go:9: Max(1, 2) = 1\nFAIL\n"}
	green := contract.CheckRecord{ExitCode: contract.Exit(0), OutputTail: "ok\n"}
	for _, tt := range []struct {
		name     string
		e2e      []contract.CheckRecord
		status   plans.Status
		workers  string
		triggers []string
	}{
		{"green after a round", []contract.CheckRecord{green, red, green, green}, plans.Done,
			"add-max docs add-max-r1 use-max", []string{"conflict reconciled integrated", "integrated"}},
		{"blocked after two rounds", []contract.CheckRecord{green, red, red, red, green}, plans.Partial,
			"add-max docs add-max-r1 add-max-r2 use-max", []string{"conflict reconciled conflict reconciled sync_blocked", "integrated"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newPlanHarness(t, planHandBack(), threeTasks())
			h.input.AutoApprove = true
			h.made.checks["go test ./..."] = tt.e2e
			h.workers.results["docs"] = PlanTaskResult{Status: plans.TaskDone, Changed: []string{"README.md"}, Summary: "README names Max",
				Notes: []plans.Note{{To: "add-max", Text: "the README documents Max(a, b)"}}}
			h.workers.results["add-max-r1"] = PlanTaskResult{Status: plans.TaskDone, Changed: []string{"calc/max.go"},
				Summary: "Max compared the wrong way\nNOTE use-max: call calc.Max(1, 2)"}
			h.decideAt(time.Minute, h.decision("d-1", PlanDecideCommands, PlanApprove, ""))
			rec := h.run()
			if rec.Status != tt.status || taskStatuses(rec) != "add-max=done docs=done use-max=done" {
				t.Fatalf("record %+v", rec)
			}
			if order := h.workers.order(planID); order != tt.workers {
				t.Fatalf("workers %s", order)
			}
			if got := h.made.instanceTriggers("axlr-" + planID + "-sync"); !slices.Equal(got, tt.triggers) {
				t.Fatalf("sync triggers %q", got)
			}
			var rounds []string
			for _, s := range rec.Syncs {
				rounds = append(rounds, fmt.Sprintf("%d:%d:%d", s.Wave, s.Round, *s.Exit))
			}
			started := h.workers.started(planID)
			r1 := started["add-max-r1"]
			if r1.Round != 1 || r1.Task.TestFirst || r1.Wave != 1 || r1.SessionID == started["add-max"].SessionID ||
				!slices.Equal(r1.Changed, []string{"calc/max.go", "calc/max_test.go", "README.md"}) ||
				!strings.HasPrefix(r1.Prompt, "[AXLR] Reconciliation round 1 of 2, wave 1 of plan "+planID+": every task of the wave is done, but the plan's end-to-end check go test ./... failed.") ||
				!strings.Contains(r1.Prompt, "\nYour task's hand-back: did add-max (changed: calc/max.go, calc/max_test.go)\n") ||
				!strings.Contains(r1.Prompt, "The other tasks' hand-backs:\n- docs: README names Max (changed: README.md)\n") ||
				!strings.Contains(r1.Prompt, "- from docs: the README documents Max(a, b)\n") ||
				!strings.Contains(r1.Prompt, "    calc/max_test.go:9: Max(1, 2) = 1\nFAIL\n") ||
				!strings.HasSuffix(r1.Prompt, "or as a line NOTE <task>: what it must change (NOTE all: for every task).") {
				t.Fatalf("the reconciliation worker: %+v", r1)
			}
			if use := started["use-max"]; !strings.Contains(use.Prompt, "- from add-max: call calc.Max(1, 2)\n") {
				t.Fatalf("use-max's prompt lacks the reconciliation's note:\n%s", use.Prompt)
			}
			var reconcile []planReconcileRecord
			h.made.recorded(t, "reconcile", &reconcile)
			if len(reconcile) == 0 || !reconcile[0].Reconciled || reconcile[0].Round != 1 || len(reconcile[0].Responses) != 1 {
				t.Fatalf("reconcile records %+v", reconcile)
			}
			if r := reconcile[0].Responses[0]; r.Task != "add-max" || !slices.Equal(r.Changed, []string{"calc/max.go"}) ||
				len(r.Notes) != 1 || r.Notes[0] != (ceremonies.Note{To: "use-max", Text: "call calc.Max(1, 2)"}) {
				t.Fatalf("the response %+v", r)
			}
			var integrate []planIntegrateRecord
			h.made.recorded(t, "integrate", &integrate)
			if first := integrate[0]; first.Verdict != ceremonies.VerdictRed || first.Round != 1 || !slices.Equal(first.Affected, []string{"add-max"}) || !first.Check.Failed() {
				t.Fatalf("integrate records %+v", integrate)
			}
			if tt.status == plans.Done {
				if strings.Join(rounds, " ") != "1:0:1 1:1:0 2:0:0" {
					t.Fatalf("syncs %s", rounds)
				}
				return
			}
			if strings.Join(rounds, " ") != "1:0:1 1:1:1 1:2:1 2:0:0" || rec.Reason != "the end-to-end check after wave 1 is not green" {
				t.Fatalf("syncs %s, reason %q", rounds, rec.Reason)
			}
			if last := integrate[2]; last.Verdict != ceremonies.VerdictBlocked || last.Round != 3 ||
				last.Reason != "the end-to-end check exited 1 after 2 reconciliation rounds" {
				t.Fatalf("integrate records %+v", integrate)
			}
		})
	}
}

// TestPlanReturnAndDecline: the person returns the plan twice, each time
// back to the planner with the reason and a fresh count of verification
// rounds, and its commands, approved once, are not asked again; a third
// return is refused, and the decline ends the plan DECLINED with the
// reason.
func TestPlanReturnAndDecline(t *testing.T) {
	model := slices.Concat(planHandBack(), planHandBack(), planHandBack())
	h := newPlanHarness(t, model, threeTasks(), threeTasks(), threeTasks())
	h.decideAt(time.Minute, h.decision("d-1", PlanDecideCommands, PlanApprove, ""))
	noReason := h.decideAt(2*time.Minute, h.decision("d-2", PlanDecidePlan, PlanReturn, " "))
	first := h.decideAt(3*time.Minute, h.decision("d-3", PlanDecidePlan, PlanReturn, "split add-max in two"))
	second := h.decideAt(4*time.Minute, h.decision("d-4", PlanDecidePlan, PlanReturn, "name the README task docs-max"))
	third := h.decideAt(5*time.Minute, h.decision("d-5", PlanDecidePlan, PlanReturn, "again"))
	decline := h.decideAt(6*time.Minute, h.decision("d-6", PlanDecidePlan, PlanDecline, "not now"))
	rec := h.run()
	noReason.mustReject(t, "a return without a reason", "decide: to return the plan of plan "+planID+" needs a reason")
	first.mustAccept(t, "the first return")
	second.mustAccept(t, "the second return")
	third.mustReject(t, "a third return", "decide: plan "+planID+" was returned 2 times, the most it may be; approve or decline it")
	decline.mustAccept(t, "the decline")
	if rec.Status != plans.Declined || rec.Reason != "the person declined the plan: not now" || rec.Pending != nil {
		t.Fatalf("record %+v", rec)
	}
	notes := strings.Join(h.acts.notes, "\n")
	if !strings.Contains(notes, "[AXLR] The person returned the plan (return 1 of 2): split add-max in two\n") ||
		!strings.Contains(notes, "[AXLR] The person returned the plan (return 2 of 2): name the README task docs-max\n") {
		t.Fatalf("planner notes:\n%s", notes)
	}
	if got := h.made.instanceTriggers("axlr-" + planID + "-1"); !slices.Equal(got, []string{"decomposed verified returned decomposed verified returned decomposed verified declined"}) {
		t.Fatalf("plan triggers %q", got)
	}
	var verify []planVerifyRecord
	h.made.recorded(t, "verify", &verify)
	for i, v := range verify {
		if v.Round != 1 || v.Verdict != ceremonies.VerdictVerified {
			t.Fatalf("verify %d: %+v", i, v)
		}
	}
	var approve []planApproveRecord
	h.made.recorded(t, "approve", &approve)
	want := []planApproveRecord{{ceremonies.DecisionReturn, "split add-max in two", 1}, {ceremonies.DecisionReturn, "name the README task docs-max", 2}, {ceremonies.DecisionDecline, "not now", 2}}
	if !slices.Equal(approve, want) {
		t.Fatalf("approve records %+v", approve)
	}
	if keys := h.checkKeys(); len(keys) != 3 {
		t.Fatalf("the commands ran %d times: %q", len(keys), keys)
	}
}

// TestPlanUnverified: the third unverified round ends the plan BLOCKED.
// Each round's defects go back to the planner: the structure's, the
// person's refusal of the commands with the reason, a unit check that
// cannot start.
func TestPlanUnverified(t *testing.T) {
	missing := threeTasks()
	missing.Tasks[1].UnitCheck = ceremonies.CheckCommand{Program: "no-such-linter"}
	h := newPlanHarness(t, slices.Concat(planHandBack(), planHandBack(), planHandBack()), overlapping(), threeTasks(), missing)
	h.made.checks["no-such-linter"] = []contract.CheckRecord{{StartError: `start_failed: program "no-such-linter" was not found`}}
	noReason := h.decideAt(time.Minute, h.decision("d-1", PlanDecideCommands, PlanDeny, ""))
	deny := h.decideAt(2*time.Minute, h.decision("d-2", PlanDecideCommands, PlanDeny, "no network in this workspace"))
	approve := h.decideAt(3*time.Minute, h.decision("d-3", PlanDecideCommands, PlanApprove, ""))
	rec := h.run()
	noReason.mustReject(t, "a denial without a reason", "decide: to deny the commands of plan "+planID+" needs a reason")
	deny.mustAccept(t, "deny the commands")
	approve.mustAccept(t, "approve the commands")
	wantDefect := `task docs: unit_check did not run (start_failed: program "no-such-linter" was not found); give the program and its args separately, with a program that exists in the workspace or on PATH`
	if rec.Status != plans.Blocked || rec.Reason != "3 verification rounds found defects; the last: "+wantDefect || len(rec.Tasks) != 0 {
		t.Fatalf("record %+v", rec)
	}
	notes := strings.Join(h.acts.notes, "\n")
	if !strings.Contains(notes, "[AXLR] Verification round 2 of 3 found defects in the plan.") ||
		!strings.Contains(notes, "- plan: the person refused to run go test ./..., go test ./calc, go build ./...: no network in this workspace; propose checks the person accepts") {
		t.Fatalf("planner notes:\n%s", notes)
	}
	if got := h.made.instanceTriggers("axlr-" + planID + "-1"); !slices.Equal(got, []string{"decomposed defects_found decomposed defects_found decomposed verify_exhausted"}) {
		t.Fatalf("plan triggers %q", got)
	}
	if keys := strings.Join(h.checkKeys(), " "); keys != "verify:baseline:0 verify:baseline:1 verify:baseline:2 verify:baseline:3" {
		t.Fatalf("checks run: %s", keys)
	}
}

// TestPlanInterruptedAndRecovered: cancelling the plan while a task runs
// interrupts it: the task is pending again, its worker cancelled, what the
// worker put back of its scope in the record, and the plan waits; the
// recover decision runs the task again in a fresh session and the plan
// on. A recovered plan is interrupted by the interrupt decision, with its
// reason, in wave 2, and recovered again: wave 1's tasks, done, do not run
// again (the workers' order says so).
func TestPlanInterruptedAndRecovered(t *testing.T) {
	h := newPlanHarness(t, planHandBack(), threeTasks())
	h.input.AutoApprove = true
	h.workers.hold["docs"] = true
	h.workers.cancelled["docs"] = PlanTaskResult{Restored: []string{"README.md"}}
	h.workers.hold["use-max"] = true
	h.decideAt(time.Minute, h.decision("d-1", PlanDecideCommands, PlanApprove, ""))
	running := h.recordAt(2 * time.Minute)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 3*time.Minute)
	cancelled := h.recordAt(4 * time.Minute)
	approveLate := h.decideAt(5*time.Minute, h.decision("d-2", PlanDecidePlan, PlanApprove, ""))
	recover1 := h.decideAt(6*time.Minute, h.decision("d-3", PlanDecideRecover, PlanApprove, ""))
	recoverAgain := h.decideAt(7*time.Minute, h.decision("d-4", PlanDecideRecover, PlanApprove, ""))
	interrupt := h.decideAt(8*time.Minute, h.decision("d-5", PlanDecideInterrupt, PlanApprove, "the laptop sleeps"))
	interrupted := h.recordAt(9 * time.Minute)
	interruptAgain := h.decideAt(10*time.Minute, h.decision("d-6", PlanDecideInterrupt, PlanApprove, ""))
	recover2 := h.decideAt(11*time.Minute, h.decision("d-7", PlanDecideRecover, PlanApprove, ""))
	rec := h.run()

	if running.Status != plans.Running || taskStatuses(*running) != "add-max=done docs=running use-max=pending" || running.Tasks[1].Session == "" {
		t.Fatalf("while docs runs: %+v", running)
	}
	if cancelled.Status != plans.Interrupted || cancelled.Reason != "interrupted while running task docs of wave 1" ||
		taskStatuses(*cancelled) != "add-max=done docs=pending use-max=pending" || cancelled.Tasks[1].Session != "" ||
		!slices.Equal(cancelled.Tasks[1].Restored, []string{"README.md"}) {
		t.Fatalf("after the cancellation: %+v", cancelled)
	}
	approveLate.mustReject(t, "an approval of an interrupted plan", "decide: plan "+planID+" waits for no decision (it is interrupted)")
	recover1.mustAccept(t, "recover")
	recoverAgain.mustReject(t, "recover a running plan", "decide: plan "+planID+" is running; only an interrupted plan is recovered")
	interrupt.mustAccept(t, "interrupt")
	if interrupted.Status != plans.Interrupted || interrupted.Reason != "the laptop sleeps" || taskStatuses(*interrupted) != "add-max=done docs=done use-max=pending" {
		t.Fatalf("after the interrupt decision: %+v", interrupted)
	}
	interruptAgain.mustReject(t, "interrupt an interrupted plan", "decide: plan "+planID+" is interrupted already; recover it to run it on")
	recover2.mustAccept(t, "recover again")
	if rec.Status != plans.Done || rec.Reason != "" || taskStatuses(rec) != "add-max=done docs=done use-max=done" ||
		!slices.Equal(rec.Tasks[1].Restored, []string{"README.md"}) {
		t.Fatalf("record %+v", rec)
	}
	if order := h.workers.order(planID); order != "add-max docs docs use-max use-max" {
		t.Fatalf("workers %s", order)
	}
	h.workers.mu.Lock()
	first, second := h.workers.inputs[1].SessionID, h.workers.inputs[2].SessionID
	h.workers.mu.Unlock()
	if first == second || rec.Tasks[1].Session != second {
		t.Fatalf("docs ran in %s, then %s; recorded %s", first, second, rec.Tasks[1].Session)
	}
	if got := h.made.instanceTriggers("axlr-" + planID + "-1"); !slices.Equal(got, []string{"decomposed verified approved_automatically done"}) {
		t.Fatalf("plan triggers %q", got)
	}
}

// TestPlanDecisionRefused: the validator refuses, with the reason, each
// decision that does not fit what the plan waits for.
func TestPlanDecisionRefused(t *testing.T) {
	h := newPlanHarness(t, planHandBack(), threeTasks())
	cases := []struct {
		dec  PlanDecision
		want string
	}{
		{PlanDecision{Plan: planID, Kind: PlanDecideCommands, Decision: PlanApprove}, "decide: request_id is empty"},
		{PlanDecision{RequestID: "r", Plan: "other-plan", Kind: PlanDecideCommands, Decision: PlanApprove}, "decide: this is plan " + planID + ", not other-plan"},
		{h.decision("r", "merge", PlanApprove, ""), `decide: unknown kind "merge": commands, plan, recover or interrupt`},
		{h.decision("r", PlanDecideCommands, PlanReturn, "x"), `decide: a commands decision is approve, deny, not "return"`},
		{h.decision("r", PlanDecidePlan, PlanDeny, "x"), `decide: a plan decision is approve, return, decline, not "deny"`},
		{h.decision("r", PlanDecideRecover, PlanDeny, "x"), `decide: a recover decision is approve, not "deny"`},
		{h.decision("r", PlanDecidePlan, PlanDecline, "x"), "decide: plan " + planID + " waits for the person on its command, not its approval"},
		{h.decision("r", PlanDecideRecover, PlanApprove, ""), "decide: plan " + planID + " is awaiting_approval; only an interrupted plan is recovered"},
	}
	var outs []*outcome
	for i, c := range cases {
		if c.dec.RequestID != "" {
			c.dec.RequestID = fmt.Sprintf("r-%d", i)
		}
		outs = append(outs, h.decideAt(time.Duration(i+1)*time.Second, c.dec))
	}
	h.decideAt(time.Minute, h.decision("ok", PlanDecideCommands, PlanApprove, ""))
	onCard := h.decideAt(90*time.Second, h.decision("on-card", PlanDecideCommands, PlanApprove, ""))
	h.decideAt(2*time.Minute, h.decision("decline", PlanDecidePlan, PlanDecline, "not this one"))
	if rec := h.run(); rec.Status != plans.Declined {
		t.Fatalf("record %+v", rec)
	}
	for i, c := range cases {
		outs[i].mustReject(t, fmt.Sprintf("case %d", i), c.want)
	}
	onCard.mustReject(t, "the commands' approval on the plan card", "decide: plan "+planID+" waits for the person on its approval, not its command")
}

func TestPlanInputValidate(t *testing.T) {
	ok := PlanInput{Record: plans.Record{ID: planID, Brief: "b", Root: "/w"}, SessionID: sessionID}
	for _, tt := range []struct {
		name   string
		change func(*PlanInput)
		want   string
	}{
		{"valid", func(*PlanInput) {}, ""},
		{"id", func(in *PlanInput) { in.Record.ID = "Not A Slug" }, `plan: id "Not A Slug" is not a plan's id (plans.ID makes one)`},
		{"brief", func(in *PlanInput) { in.Record.Brief = " \n" }, "plan: the brief is empty"},
		{"root", func(in *PlanInput) { in.Record.Root = "work" }, `plan: root "work" is not an absolute path`},
		{"session", func(in *PlanInput) { in.SessionID = "" }, "plan: session_id is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := ok
			tt.change(&in)
			err := in.Validate()
			if (err == nil) != (tt.want == "") || err != nil && err.Error() != tt.want {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Plan, workflow.RegisterOptions{Name: PlanWorkflow})
	env.ExecuteWorkflow(PlanWorkflow, PlanInput{Record: plans.Record{ID: planID, Brief: "b", Root: "w"}, SessionID: sessionID})
	var app *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != ErrTypeBadRequest || !app.NonRetryable() {
		t.Fatalf("a bad input ended the workflow with %v", err)
	}
}
