package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/made/definition"
)

// pinnedMADE is MADE running a job's pinned definition (axlr_repair 1.0 or
// axlr_improve 1.0, parsed from the embedded YAML): a completion stores
// what AXLR recorded as the step's output, the enabled transitions are
// those whose guards hold (output_field and step_status read the outputs,
// a human guard holds once granted to a role of the definition), a
// transition that is not enabled is refused, and a state entered again
// starts afresh at iteration 1 within max_bounces. It leaves out step
// repeats (every test's steps settle the first time) and the hand-back's
// own fields, which the real activities read from the transcript.
type pinnedMADE struct {
	noResume
	mu  sync.Mutex
	def *definition.Definition
	// command is what the first step hands back; checks are what each
	// step's check command prints and exits with.
	command ceremonies.CheckCommand
	checks  map[string]contract.CheckRecord

	state   string
	status  map[string]string
	outputs map[string]map[string]any
	granted map[string]bool
	visited map[string]bool
	bounces int

	claims []ClaimInput
	keys   map[string]bool
	// texts are the pull request's texts each step's hand-back gives.
	texts     map[string]map[string]string
	ran       []RunCheckInput
	completed []CompleteInput
	triggers  []string
	grants    []GrantInput
}

var _ CeremonyActivities = (*pinnedMADE)(nil)

func newPinnedMADE(t *testing.T, kind jobs.Kind, command ceremonies.CheckCommand, checks map[string]contract.CheckRecord) *pinnedMADE {
	t.Helper()
	d, ok := ceremonies.ForJob(string(kind))
	if !ok {
		t.Fatalf("no definition for a %s job", kind)
	}
	y, err := d.YAML()
	if err != nil {
		t.Fatal(err)
	}
	def, err := definition.Parse(y)
	if err != nil {
		t.Fatalf("parse %s: %v", d.File, err)
	}
	return &pinnedMADE{def: def, command: command, checks: checks, status: map[string]string{},
		outputs: map[string]map[string]any{}, granted: map[string]bool{}, visited: map[string]bool{}}
}

func madeRefused(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeMadeRefused, nil)
}

// stepOf is the step a state runs: one per state in the jobs' definitions.
func (f *pinnedMADE) stepOf(state string) string {
	for _, s := range f.def.Steps {
		if s.State == state {
			return s.ID
		}
	}
	return ""
}

func (f *pinnedMADE) holds(guard string) bool {
	g, ok := f.def.Guard(guard)
	if !ok {
		return false
	}
	c := g.Condition
	switch c.Kind {
	case definition.GuardHumanApproval:
		return f.granted[guard]
	case definition.GuardStepStatus:
		return f.status[c.Step] == c.Status
	case definition.GuardOutputField:
		got, ok := f.outputs[c.Step][c.Field]
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(c.Value)
		return ok && bytes.Equal(a, b)
	}
	return false
}

// enabled are the triggers leaving the current state whose guards hold,
// the cancel trigger left out (as the real activities leave it out).
func (f *pinnedMADE) enabled() []string {
	var out []string
	for _, t := range f.def.Transitions {
		if t.From != f.state || t.Trigger == ceremonies.CancelTrigger {
			continue
		}
		if !slices.ContainsFunc(t.Guards, func(g string) bool { return !f.holds(g) }) {
			out = append(out, t.Trigger)
		}
	}
	return out
}

func (f *pinnedMADE) enter(state string) {
	if f.visited[state] {
		f.bounces++
		if s := f.stepOf(state); s != "" {
			delete(f.status, s)
			delete(f.outputs, s)
		}
	}
	f.visited[state] = true
	f.state = state
}

// startResult is what the ceremony activities' Start answers for a
// definition: its step prompts, each step's iterations at most (its
// repeat's, else 1) and its step timeout. The instance is the caller's.
func startResult(d *definition.Definition) CeremonyStartResult {
	res := CeremonyStartResult{Definition: d.Name, Version: d.Version, StepTimeout: d.StepTimeout, Instructions: map[string]string{}, Limits: map[string]int{}}
	for _, s := range d.Steps {
		if p, ok := s.Config["prompt"].(string); ok {
			res.Instructions[s.ID] = p
		}
		res.Limits[s.ID] = 1
		if s.Repeat != nil {
			res.Limits[s.ID] = s.Repeat.MaxIterations
		}
	}
	return res
}

func (f *pinnedMADE) Start(_ context.Context, in CeremonyStartInput) (CeremonyStartResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.Definition != f.def.Name || in.Version != f.def.Version {
		return CeremonyStartResult{}, madeRefused("start %s %s on %s", in.Definition, in.Version, f.def.Name)
	}
	res := startResult(f.def)
	for _, s := range f.def.States {
		if s.Kind == definition.StateInitial {
			f.enter(s.ID)
		}
	}
	first := f.stepOf(f.state)
	f.status[first] = "IN_PROGRESS"
	res.Instance = InstanceView{InstanceID: in.InstanceID, State: f.state, NextStep: first, Steps: []StepView{{Step: first, Status: "in_progress", Iteration: 1, Attempt: 1}}}
	return res, nil
}

func (f *pinnedMADE) Claim(_ context.Context, in ClaimInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims = append(f.claims, in)
	if f.stepOf(f.state) != in.Step {
		return InstanceView{}, madeRefused("claim %s in %s", in.Step, f.state)
	}
	// As MADE does, a claim key is taken once: a state entered again
	// needs the round in its key.
	key := ClaimKey(in.InstanceID, in.Step, in.Iteration, in.Round)
	if f.keys[key] {
		return InstanceView{}, temporal.NewNonRetryableApplicationError("claim key "+key+" already exists", ErrTypeNeedsOperator, nil)
	}
	if f.keys == nil {
		f.keys = map[string]bool{}
	}
	f.keys[key] = true
	f.status[in.Step] = "IN_PROGRESS"
	return InstanceView{InstanceID: in.InstanceID, State: f.state, Steps: []StepView{{Step: in.Step, Status: "in_progress", Iteration: in.Iteration, Attempt: 1}}}, nil
}

func (f *pinnedMADE) HandBack(_ context.Context, in HandBackInput) (HandBackResult, error) {
	st, _ := ceremonies.StepOf(in.Definition, in.Version, in.Step)
	if t := f.texts[in.Step]; t != nil {
		return HandBackResult{Texts: t}, nil
	}
	switch st.Check {
	case ceremonies.CheckReproduce, ceremonies.CheckMissing:
		cmd := f.command
		return HandBackResult{Command: &cmd}, nil
	}
	return HandBackResult{}, nil
}

// RunCheck answers a revision (no program) with a clean tree, and a
// command with what the step's check prints; its key is
// <instance>:<step>:<iteration>.
func (f *pinnedMADE) RunCheck(_ context.Context, in RunCheckInput) (contract.CheckRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ran = append(f.ran, in)
	if in.Command.Program == "" {
		return contract.CheckRecord{ExitCode: contract.Exit(0), OutputTail: "0123abc\n"}, nil
	}
	parts := strings.Split(in.Key, ":")
	c, ok := f.checks[parts[1]]
	if !ok {
		return contract.CheckRecord{}, madeRefused("no check scripted for %s", in.Key)
	}
	c.Program, c.Args = in.Command.Program, in.Command.Args
	return c, nil
}

func (f *pinnedMADE) Complete(_ context.Context, in CompleteInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completed = append(f.completed, in)
	if f.stepOf(f.state) != in.Step || f.status[in.Step] != "IN_PROGRESS" {
		return InstanceView{}, madeRefused("complete %s in %s (%s)", in.Step, f.state, f.status[in.Step])
	}
	b, err := json.Marshal(in.Recorded)
	if err != nil {
		return InstanceView{}, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return InstanceView{}, err
	}
	f.outputs[in.Step], f.status[in.Step] = out, strings.ToUpper(in.Status)
	return InstanceView{InstanceID: in.InstanceID, State: f.state, Enabled: f.enabled(),
		Steps: []StepView{{Step: in.Step, Status: in.Status, Iteration: in.Iteration, Attempt: 1}}}, nil
}

func (f *pinnedMADE) Transition(_ context.Context, in TransitionInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.def.Transitions, func(t definition.Transition) bool { return t.From == f.state && t.Trigger == in.Trigger })
	if i < 0 || (in.Trigger != ceremonies.CancelTrigger && !slices.Contains(f.enabled(), in.Trigger)) {
		return InstanceView{}, madeRefused("%s is not enabled in %s (enabled: %v)", in.Trigger, f.state, f.enabled())
	}
	to := f.def.Transitions[i].To
	if f.visited[to] && f.def.MaxBounces != nil && f.bounces >= *f.def.MaxBounces {
		return InstanceView{}, madeRefused("bounce limit reached (%d)", *f.def.MaxBounces)
	}
	f.triggers = append(f.triggers, in.Trigger)
	clear(f.granted)
	f.enter(to)
	if st, _ := f.def.State(to); st.Kind == definition.StateTerminal {
		return InstanceView{InstanceID: in.InstanceID, State: to, Completed: true}, nil
	}
	next := f.stepOf(to)
	return InstanceView{InstanceID: in.InstanceID, State: to, NextStep: next, Steps: []StepView{{Step: next, Status: "pending", Iteration: 1, Attempt: 1}}}, nil
}

func (f *pinnedMADE) ApproveGuard(_ context.Context, in GrantInput) (InstanceView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grants = append(f.grants, in)
	g, ok := f.def.Guard(in.Guard)
	if !ok || !g.IsHuman() || !slices.ContainsFunc(f.def.Roles, func(r definition.Role) bool { return r.ID == in.Role }) {
		return InstanceView{}, madeRefused("grant %s as %s", in.Guard, in.Role)
	}
	f.granted[in.Guard] = true
	return InstanceView{InstanceID: in.InstanceID, State: f.state, Enabled: f.enabled()}, nil
}

// The checks the pinned definitions' model steps run: a repair's
// reproduction fails and its rerun passes; an improvement's brief runs no
// test yet ([no tests to run]) and its build runs the new test green.
var (
	parseCheck   = ceremonies.CheckCommand{Program: "go", Args: []string{"test", "./..."}}
	exitCheck    = ceremonies.CheckCommand{Program: "go", Args: []string{"test", "-run", "TestExitShown", "./tools"}}
	repairChecks = map[string]contract.CheckRecord{
		"reproduce": {ExitCode: contract.Exit(1), OutputTail: "--- FAIL: TestParse\nFAIL\n"},
		"repair":    {ExitCode: contract.Exit(0), OutputTail: "ok  \tgithub.com/o/r/parser\t0.02s\n"},
	}
	improveChecks = map[string]contract.CheckRecord{
		"brief": {ExitCode: contract.Exit(0), OutputTail: "ok  \tgithub.com/o/r/tools\t0.01s [no tests to run]\n"},
		"build": {ExitCode: contract.Exit(0), OutputTail: "ok  \tgithub.com/o/r/tools\t0.03s\n"},
	}
)

// newPinnedHarness runs a job of kind on its pinned definition, the model
// answering model, the forge reading reads.
func newPinnedHarness(t *testing.T, kind jobs.Kind, model []reply, reads ...pull.Checks) *jobHarness {
	h := &jobHarness{}
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	switch kind {
	case jobs.Repair:
		h.pinned = newPinnedMADE(t, kind, parseCheck, repairChecks)
		h.record = jobs.Record{ID: "20261201-1200-testparse-fails", Kind: jobs.Repair, Signature: "abcd1234", Repository: "o/r",
			Brief: "TestParse fails on empty input", Status: jobs.Preparing, Attempt: 1, Created: created}
	case jobs.Improve:
		h.pinned = newPinnedMADE(t, kind, exitCheck, improveChecks)
		h.record = jobs.Record{ID: "20261201-1200-exit-code-shown", Kind: jobs.Improve, Signature: "ef015678", Repository: "o/r",
			Brief: "Show the exit code in exec output", Status: jobs.Preparing, Attempt: 1, Created: created}
	}
	h.setup(newScripted(model...), h.pinned, reads)
	return h
}

// approveCheck approves the check command the first step waits on, a
// minute in, and fails the test at its end unless the Update was taken.
func (h *jobHarness) approveCheck(t *testing.T) {
	out := &outcome{}
	h.decideAt(time.Minute, JobDecision{RequestID: "d-check", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true}, out)
	t.Cleanup(func() {
		if !t.Failed() {
			out.mustAccept(t, "approve the check")
		}
	})
}

// atTime runs fn after d of workflow time.
func (h *jobHarness) atTime(d time.Duration, fn func()) { h.env.RegisterDelayedCallback(fn, d) }

// forgeCalls are the forge calls that matter to a job's outcome.
type forgeCalls struct {
	Proposes, Commits, Reruns, Updates, Merges int
}

func (h *jobHarness) calls() forgeCalls {
	f := h.forge
	f.mu.Lock()
	defer f.mu.Unlock()
	return forgeCalls{Proposes: f.proposes, Commits: f.commits, Reruns: f.reruns, Updates: f.updates, Merges: len(f.merges)}
}

// redNotes are the red-round notes the model was told.
func (h *jobHarness) redNotes() []string {
	var out []string
	for _, n := range h.acts.notes {
		if strings.HasPrefix(n, "[AXLR] Check round ") {
			out = append(out, n)
		}
	}
	return out
}

func (h *jobHarness) triggers() string { return strings.Join(h.pinned.triggers, " ") }

// jobSettings are a job's repair settings in these tests: a 45 minute watch
// read every 30 s.
func jobSettings(autoMerge bool) JobSettings {
	return JobSettings{Remote: "/origin.git", Directory: "/jobs", AutoMerge: autoMerge, Watch: 45 * time.Minute, Poll: 30 * time.Second}
}

var (
	repairAgain = []reply{
		{calls: []scriptCall{stepDoneCall(map[string]any{"summary": "fixed the edge case", "summary_en": "Fixed the edge case."})}},
		{text: "Fixed; AXLR pushes it."},
	}
	improveModel = []reply{
		{calls: []scriptCall{stepDoneCall(map[string]any{"criteria": "exec output names its exit code", "scope": "tools/exec.go",
			"check_command": map[string]any{"program": "go", "args": []string{"test", "-run", "TestExitShown", "./tools"}}})}},
		{calls: []scriptCall{stepDoneCall(map[string]any{"summary": "Exec output names its exit code.", "summary_en": "Exec output now names the exit code."})}},
		{text: "Built; AXLR proposes it now."},
	}
	lintRed = pull.Checks{Failed: []string{"test: failure https://ci/1", "lint: failure https://ci/2"}}
)

func replies(parts ...[]reply) []reply {
	var out []reply
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestJobImprove: an improvement from its brief to a merged pull request
// on axlr_improve 1.0: the brief's check (approved by the person) runs on
// a clean tree and matches no test yet, so the improvement is missing; the
// build's rerun runs the new test green; the proposal is an improvement's;
// the checks go green and, though repair.auto_merge is set, the job waits
// for the person's merge decision, granted by the approver identity before
// the one merge.
func TestJobImprove(t *testing.T) {
	h := newPinnedHarness(t, jobs.Improve, improveModel, pendingChecks, greenChecks)
	h.approveCheck(t)
	var waiting jobs.Record
	var mergesWaiting int
	h.atTime(10*time.Minute, func() {
		v, err := h.env.QueryWorkflow(QueryJob)
		if err == nil {
			err = v.Get(&waiting)
		}
		if err != nil {
			t.Errorf("query the job: %v", err)
		}
		mergesWaiting = h.calls().Merges
	})
	var merge outcome
	h.decideAt(11*time.Minute, JobDecision{RequestID: "d-merge", Job: h.record.ID, Kind: jobs.PendingMerge, Approve: true}, &merge)
	rec := h.run(t, jobSettings(true))
	merge.mustAccept(t, "approve the merge")

	if waiting.Status != jobs.AwaitingMerge || waiting.Pending == nil || *waiting.Pending != (jobs.Pending{Kind: jobs.PendingMerge, PullRequest: 7, HeadSHA: "head1"}) || mergesWaiting != 0 {
		t.Fatalf("before the decision: record %+v pending %+v, %d merges", waiting, waiting.Pending, mergesWaiting)
	}
	if rec.Status != jobs.Completed || rec.Reason != "" || rec.PullRequest != 7 || rec.HeadSHA != "head1" || rec.MergeSHA != "merged1" || rec.Pending != nil {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 1, Commits: 1, Merges: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	if m := h.forge.merges[0]; m.SHA != "head1" || m.Number != 7 || m.Branch != "improve/"+h.record.ID {
		t.Fatalf("merge %+v", m)
	}
	if got, want := h.triggers(), "briefed verified proposed checks_passed merge_approved merged"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
	if len(h.pinned.grants) != 1 || h.pinned.grants[0].Guard != ceremonies.MergeApprovalGuard || h.pinned.grants[0].Role != ceremonies.ApproverRole {
		t.Fatalf("grants %+v", h.pinned.grants)
	}
	out := map[string]map[string]any{}
	for _, c := range h.pinned.completed {
		out[c.Step] = c.Recorded
	}
	if out["brief"]["missing"] != true || out["build"]["verified"] != true || out["decide"]["decision"] != ceremonies.DecisionApprove {
		t.Fatalf("recorded brief %v, build %v, decide %v", out["brief"], out["build"], out["decide"])
	}
	// The brief's check ran on a clean tree, then once per model step.
	var ran []string
	for _, r := range h.pinned.ran {
		k := r.Key[strings.Index(r.Key, ":")+1:]
		if r.Command.Program != "" {
			k += " " + r.Command.String()
		}
		ran = append(ran, k)
	}
	if got, want := strings.Join(ran, ", "), "brief:1:clean:revision, brief:1 "+exitCheck.String()+", build:1 "+exitCheck.String(); got != want {
		t.Fatalf("checks run %q, want %q", got, want)
	}
	p := h.forge.proposals[0]
	if p.Branch != "improve/"+h.record.ID || p.Base != "main" || !strings.HasPrefix(p.Title, "Improve: ") ||
		p.Commit.Trailer != jobs.CommitTrailer(jobs.Improve, rec.Instance) || !strings.Contains(p.Body, "It merges only with the person's approval") {
		t.Fatalf("proposal %+v", p)
	}
	if !strings.Contains(h.acts.notes[0], "Ceremony axlr_improve 1.0 began") || !strings.Contains(h.acts.notes[0], "Brief the improvement before changing anything") {
		t.Fatalf("the model was told %q", h.acts.notes[0])
	}
}

// TestJobRedRound: a red round goes back to the model's repair step with
// every failing check and the head named; the second proposal commits on
// the same branch against the same base (the open pull request), its body
// carrying the red round; then green, one automatic merge of the new head.
func TestJobRedRound(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, replies(repairModel, repairAgain), lintRed, greenChecks)
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Completed || rec.PullRequest != 7 || rec.HeadSHA != "head2" || rec.MergeSHA != "merged1" {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 2, Commits: 2, Merges: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	if h.forge.merges[0].SHA != "head2" {
		t.Fatalf("merged %+v", h.forge.merges[0])
	}
	notes := h.redNotes()
	want := "[AXLR] Check round 1: the pull request's checks failed on head1: test: failure https://ci/1; lint: failure https://ci/2. Fix the cause in step repair and hand the step back; AXLR pushes the change to the same pull request."
	if len(notes) != 1 || notes[0] != want {
		t.Fatalf("red notes %q, want %q", notes, want)
	}
	first, second := h.forge.proposals[0], h.forge.proposals[1]
	if second.Branch != first.Branch || second.Base != first.Base || second.Branch != "repair/"+h.record.ID {
		t.Fatalf("proposals on %s→%s then %s→%s", first.Branch, first.Base, second.Branch, second.Base)
	}
	if strings.Contains(first.Body, "after a red round") || !strings.Contains(second.Body, "Check round 2 after a red round: test: failure https://ci/1; lint: failure https://ci/2") {
		t.Fatalf("bodies\n%s\n---\n%s", first.Body, second.Body)
	}
	if got, want := h.triggers(), "reproduced diagnosed repaired proposed checks_failed repaired proposed checks_passed merge_automatic merged"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
}

// TestJobFlakyRound: the model judges a red round flaky and hands the
// repair back without changing a file: the failed jobs of the same head
// are rerun, nothing is committed, and the rerun's green checks merge
// that head.
func TestJobFlakyRound(t *testing.T) {
	flaky := []reply{
		{calls: []scriptCall{stepDoneCall(map[string]any{"summary": "the failure is a flaky network test; nothing changed", "summary_en": "Flaky test."})}},
		{text: "Nothing to change; AXLR reruns the checks."},
	}
	h := newPinnedHarness(t, jobs.Repair, replies(repairModel, flaky), redChecks, pendingChecks, greenChecks)
	h.forge.unchanged = map[int]bool{2: true}
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Completed || rec.HeadSHA != "head1" || rec.MergeSHA != "merged1" || rec.PullRequest != 7 {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 2, Commits: 1, Reruns: 1, Merges: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	if !slices.Equal(h.forge.rerunHeads, []string{"head1"}) || h.forge.merges[0].SHA != "head1" {
		t.Fatalf("reran %v, merged %+v", h.forge.rerunHeads, h.forge.merges[0])
	}
	var proposed []map[string]any
	for _, c := range h.pinned.completed {
		if c.Step == "propose" {
			proposed = append(proposed, c.Recorded)
		}
	}
	if len(proposed) != 2 || proposed[0]["rerun"] != nil || proposed[1]["rerun"] != true || proposed[1]["head_sha"] != "head1" || proposed[1]["round"] != 2 {
		t.Fatalf("propose recorded %v", proposed)
	}
	if notes := h.redNotes(); len(notes) != 1 || !strings.Contains(notes[0], "failed on head1: test: failure https://ci/1.") {
		t.Fatalf("red notes %q", notes)
	}
}

// TestJobThirdRedRound: after two red rounds back to the model, a third
// ends the job BLOCKED with the failing checks, three commits on the one
// pull request and no merge; the model is told of the first two rounds
// only.
func TestJobThirdRedRound(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, replies(repairModel, repairAgain, repairAgain), redChecks)
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Blocked || !strings.HasPrefix(rec.Reason, "checks failed after 2 repair rounds: ") || !strings.HasSuffix(rec.Reason, ": test: failure https://ci/1") ||
		rec.PullRequest != 7 || rec.HeadSHA != "head3" || rec.MergeSHA != "" {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 3, Commits: 3}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	notes := h.redNotes()
	if len(notes) != 2 || !strings.HasPrefix(notes[0], "[AXLR] Check round 1: the pull request's checks failed on head1: test: failure https://ci/1.") ||
		!strings.HasPrefix(notes[1], "[AXLR] Check round 2: the pull request's checks failed on head2: test: failure https://ci/1.") {
		t.Fatalf("red notes %q", notes)
	}
	if got, want := h.triggers(), "reproduced diagnosed repaired proposed checks_failed repaired proposed checks_failed repaired proposed watch_blocked"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
}

// TestJobWatchBlocked: a watch that cannot go green ends the job BLOCKED
// with the reason, the pull request left as it is: no rerun, no update,
// no merge.
func TestJobWatchBlocked(t *testing.T) {
	open := pull.Request{}
	tests := []struct {
		name       string
		pulls      []pull.Request
		reads      []pull.Checks
		unreadable string
		watch      time.Duration
		reason     string
	}{
		{name: "conflict", pulls: []pull.Request{open, {MergeableState: "dirty"}}, reads: []pull.Checks{pendingChecks},
			reason: "the pull request conflicts with its base"},
		{name: "closed outside", pulls: []pull.Request{open, {State: "closed"}}, reads: []pull.Checks{pendingChecks},
			reason: "the pull request was closed outside the job"},
		{name: "merged outside", pulls: []pull.Request{{State: "closed", Merged: true}}, reads: []pull.Checks{greenChecks},
			reason: "the pull request was merged outside the job"},
		{name: "never settles", reads: []pull.Checks{pendingChecks}, watch: 10 * time.Minute,
			reason: "checks did not settle within 10m0s"},
		{name: "no checks", reads: []pull.Checks{{}},
			reason: "no checks registered on head1 within 5m0s"},
		{name: "forge blocks", pulls: []pull.Request{{MergeableState: "blocked"}}, reads: []pull.Checks{greenChecks},
			reason: "checks passed but the forge blocks the merge (review or protection rule)"},
		{name: "unreadable", reads: []pull.Checks{greenChecks}, unreadable: "read pull request 7 of o/r: 502 Bad Gateway",
			reason: "status unreadable: read pull request 7 of o/r: 502 Bad Gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newPinnedHarness(t, jobs.Repair, repairModel, tt.reads...)
			h.forge.pulls, h.forge.unreadable = tt.pulls, tt.unreadable
			h.approveCheck(t)
			s := jobSettings(true)
			if tt.watch > 0 {
				s.Watch = tt.watch
			}
			rec := h.run(t, s)
			if rec.Status != jobs.Blocked || rec.Reason != tt.reason || rec.PullRequest != 7 || rec.HeadSHA != "head1" || rec.MergeSHA != "" {
				t.Fatalf("record %+v", rec)
			}
			if got, want := h.calls(), (forgeCalls{Proposes: 1, Commits: 1}); got != want {
				t.Fatalf("forge calls %+v, want %+v", got, want)
			}
			if !strings.HasSuffix(h.triggers(), "proposed watch_blocked") {
				t.Fatalf("triggers %q", h.triggers())
			}
			if tt.watch > 0 && h.forge.read < int(tt.watch/s.Poll) {
				t.Fatalf("%d reads in a %s watch at %s", h.forge.read, tt.watch, s.Poll)
			}
		})
	}
}

// TestJobBehind: a branch behind its base is updated once per round,
// guarded by the head the watch saw, and the watch waits for the new head
// and its checks to show. A red round's new commit gets its own update;
// behind again with its checks passed on the updated head, the round does
// not update it again: it is green, and the merge takes the updated head.
func TestJobBehind(t *testing.T) {
	behind, clean := pull.Request{MergeableState: "behind"}, pull.Request{}
	h := newPinnedHarness(t, jobs.Repair, replies(repairModel, repairAgain),
		greenChecks, pendingChecks, redChecks, greenChecks, greenChecks)
	h.forge.pulls = []pull.Request{behind, behind, clean, behind, behind}
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Completed || rec.HeadSHA != "head2u" || rec.MergeSHA != "merged1" {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 2, Commits: 2, Updates: 2, Merges: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	if !slices.Equal(h.forge.updateHeads, []string{"head1", "head2"}) || h.forge.merges[0].SHA != "head2u" {
		t.Fatalf("updated %v, merged %+v", h.forge.updateHeads, h.forge.merges[0])
	}
	var updated []any
	for _, c := range h.pinned.completed {
		if c.Step == "watch" {
			updated = append(updated, c.Recorded["updated"])
		}
	}
	if !slices.Equal(updated, []any{true, true}) {
		t.Fatalf("watch recorded updated %v", updated)
	}
	if notes := h.redNotes(); len(notes) != 1 || !strings.Contains(notes[0], "failed on head1u: ") {
		t.Fatalf("red notes %q", notes)
	}
}

// TestJobBehindAgain: the base moves on again after the round's update,
// the checks passed on the updated head: the merge decision opens at once
// (not at the end of the watch), its pending merge saying the branch is
// behind; a branch that goes green up to date says nothing of the kind.
func TestJobBehindAgain(t *testing.T) {
	behind := pull.Request{MergeableState: "behind"}
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks, greenChecks)
	h.forge.pulls = []pull.Request{behind, behind}
	h.approveCheck(t)
	var approve outcome
	h.decideAt(5*time.Minute, JobDecision{RequestID: "d-merge", Job: h.record.ID, Kind: jobs.PendingMerge, Approve: true}, &approve)
	rec := h.run(t, jobSettings(false))
	approve.mustAccept(t, "approve the merge")
	if rec.Status != jobs.Completed || rec.HeadSHA != "head1u" {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 1, Commits: 1, Updates: 1, Merges: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.reports, func(r jobs.Record) bool { return r.Status == jobs.AwaitingMerge })
	if i < 0 || h.reports[i].Pending == nil || *h.reports[i].Pending != (jobs.Pending{Kind: jobs.PendingMerge, PullRequest: 7, HeadSHA: "head1u", Behind: true}) {
		t.Fatalf("reports %+v", h.reports)
	}
	if h.reports[i].Updated.Sub(h.reports[0].Updated) >= jobSettings(false).Watch {
		t.Fatalf("the merge decision opened after the whole watch: %v", h.reports[i].Updated.Sub(h.reports[0].Updated))
	}
}

// TestJobMergeRefused: a merge the forge refuses (the head moved after
// the decision) ends the job BLOCKED with the forge's reason and no merge
// commit.
func TestJobMergeRefused(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	h.forge.refuse = "merge pull request 7 of o/r at head1: stale head"
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Blocked || rec.Reason != "the merge was refused: merge pull request 7 of o/r at head1: stale head" || rec.MergeSHA != "" || rec.PullRequest != 7 {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 1, Commits: 1, Merges: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	if got, want := h.triggers(), "reproduced diagnosed repaired proposed checks_passed merge_automatic merge_failed"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
}

// TestJobDecline: the person declines the merge with a reason: the job
// reports awaiting_merge with the pull request and head, then ends
// BLOCKED with the reason; nothing is granted or merged.
func TestJobDecline(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	h.approveCheck(t)
	var decline outcome
	h.decideAt(5*time.Minute, JobDecision{RequestID: "d-merge", Job: h.record.ID, Kind: jobs.PendingMerge, Reason: "the fix belongs in the caller"}, &decline)
	rec := h.run(t, jobSettings(false))
	decline.mustAccept(t, "decline the merge")
	if rec.Status != jobs.Blocked || rec.Reason != "the person declined the merge: the fix belongs in the caller" || rec.MergeSHA != "" || rec.Pending != nil {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 1, Commits: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	if len(h.pinned.grants) != 0 || !strings.HasSuffix(h.triggers(), "checks_passed merge_declined") {
		t.Fatalf("grants %+v, triggers %q", h.pinned.grants, h.triggers())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.reports, func(r jobs.Record) bool { return r.Status == jobs.AwaitingMerge })
	if i < 0 || h.reports[i].Pending == nil || *h.reports[i].Pending != (jobs.Pending{Kind: jobs.PendingMerge, PullRequest: 7, HeadSHA: "head1"}) {
		t.Fatalf("reports %+v", h.reports)
	}
	if last := h.reports[len(h.reports)-1]; last.Status != jobs.Blocked || last.Reason != rec.Reason {
		t.Fatalf("last report %+v", last)
	}
}

// TestJobDecideValidator: the decide Update refuses, with its reason, a
// decision for another job, one without a request id, one of the wrong
// kind, one while nothing waits, and a refusal without a reason; none of
// them changes the job, which takes the valid ones and merges once.
func TestJobDecideValidator(t *testing.T) {
	reads := make([]pull.Checks, 20)
	for i := range reads {
		reads[i] = pendingChecks
	}
	h := newPinnedHarness(t, jobs.Repair, repairModel, append(reads, greenChecks)...)
	id := h.record.ID
	tests := []struct {
		name string
		at   time.Duration
		dec  JobDecision
		want string // the rejection; empty, accepted
	}{
		{"another job", 10 * time.Second, JobDecision{RequestID: "d-1", Job: "20261201-1200-other", Kind: jobs.PendingCheck, Approve: true},
			"decide: this is job " + id + ", not 20261201-1200-other"},
		{"no request id", 20 * time.Second, JobDecision{RequestID: " ", Job: id, Kind: jobs.PendingCheck, Approve: true},
			"decide: request_id is empty"},
		{"the merge while the check waits", 30 * time.Second, JobDecision{RequestID: "d-3", Job: id, Kind: jobs.PendingMerge, Approve: true},
			"decide: job " + id + " waits for its check, not its merge"},
		{"a check refused without a reason", 40 * time.Second, JobDecision{RequestID: "d-4", Job: id, Kind: jobs.PendingCheck},
			"decide: refusing the check of job " + id + " needs a reason"},
		{"approve the check", time.Minute, JobDecision{RequestID: "d-5", Job: id, Kind: jobs.PendingCheck, Approve: true}, ""},
		{"nothing waits", 5 * time.Minute, JobDecision{RequestID: "d-6", Job: id, Kind: jobs.PendingMerge, Approve: true},
			"decide: job " + id + " waits for no decision (it is running)"},
		{"the check while the merge waits", 15 * time.Minute, JobDecision{RequestID: "d-7", Job: id, Kind: jobs.PendingCheck, Approve: true},
			"decide: job " + id + " waits for its merge, not its check"},
		{"a merge declined without a reason", 16 * time.Minute, JobDecision{RequestID: "d-8", Job: id, Kind: jobs.PendingMerge, Reason: "  "},
			"decide: refusing the merge of job " + id + " needs a reason"},
		{"approve the merge", 17 * time.Minute, JobDecision{RequestID: "d-9", Job: id, Kind: jobs.PendingMerge, Approve: true}, ""},
	}
	outs := make([]outcome, len(tests))
	for i, tt := range tests {
		h.env.RegisterDelayedCallback(func() {
			h.env.UpdateWorkflow(UpdateJobDecide, fmt.Sprintf("u-%d", i), &testsuite.TestUpdateCallback{
				OnReject: func(err error) { outs[i].rejected = err }, OnAccept: func() {},
				OnComplete: func(_ any, err error) { outs[i].err, outs[i].completed = err, true },
			}, tt.dec)
		}, tt.at)
	}
	rec := h.run(t, jobSettings(false))
	for i, tt := range tests {
		if tt.want == "" {
			outs[i].mustAccept(t, tt.name)
			continue
		}
		outs[i].mustReject(t, tt.name, tt.want)
		if outs[i].completed {
			t.Fatalf("%s: refused, yet the update completed", tt.name)
		}
	}
	if rec.Status != jobs.Completed || rec.MergeSHA != "merged1" {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 1, Commits: 1, Merges: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	if len(h.pinned.grants) != 1 {
		t.Fatalf("grants %+v", h.pinned.grants)
	}
}

// TestJobNothingProposed: a repair whose clone holds no change at its
// first proposal ends BLOCKED with the forge's reason: no pull request,
// no watch, no rerun, no merge.
func TestJobNothingProposed(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	h.forge.unchanged = map[int]bool{1: true}
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Blocked || rec.Reason != pull.ErrNothingChanged.Error() || rec.PullRequest != 0 || rec.MergeSHA != "" {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 1}); got != want || h.forge.read != 0 {
		t.Fatalf("forge calls %+v and %d reads, want %+v and none", got, h.forge.read, want)
	}
	if got, want := h.triggers(), "reproduced diagnosed repaired propose_failed"; got != want {
		t.Fatalf("triggers %q, want %q", got, want)
	}
}
