package workflows

import (
	"cmp"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/plans"
)

// versionPlanMemory: a plan wakes memory before its first step and
// before each task, and records each hand-back, each sync and its
// outcome, in its workspace's about, with plan, task, wave, session and
// ws labels. The model never writes memory in a plan's modes.
const versionPlanMemory = "plan-memory"

// memory is the plan's memory, nil when the plan runs without it.
func (p *planRun) memory() *CeremonyMemory {
	if c := p.st.Ceremony; c != nil {
		return c.Memory
	}
	return nil
}

// wakePlan wakes memory for the plan's brief, before its first step.
func (p *planRun) wakePlan(ctx workflow.Context) (*CeremonyMemory, string, error) {
	if workflow.GetVersion(ctx, versionPlanMemory, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil, "", nil
	}
	about := SessionAbout(p.in.SessionID)
	if snap := p.st.Snapshot; snap != nil && snap.About != "" {
		about = snap.About
	}
	r := p.st.Record
	return wake(ctx, about, r.Brief, false, map[string][]string{
		"ceremony": {"axlr_plan"}, "plan": {r.ID}, "session": {p.in.SessionID}, "ws": {SessionAbout(p.in.SessionID)},
	})
}

// wakeTask is what memory recalls for a task's goal, for its worker's
// first message: empty without memory.
func (p *planRun) wakeTask(ctx workflow.Context, goal string) (string, error) {
	m := p.memory()
	if m == nil {
		return "", nil
	}
	_, recall, err := wake(ctx, m.About, goal, false, nil)
	return recall, err
}

// rememberHandback records a task's hand-back: its outcome, what it
// changed and the notes it left.
func (p *planRun) rememberHandback(ctx workflow.Context, wave int, id string, res PlanTaskResult) {
	m := p.memory()
	if m == nil {
		return
	}
	summary := fmt.Sprintf("task %s of plan %s (wave %d) %s: %s", id, p.st.Record.ID, wave, res.Status, firstLine(cmp.Or(res.SummaryEn, res.Summary, res.Reason)))
	ev := []string{"worker session " + res.SessionID}
	if len(res.Changed) > 0 {
		ev = append(ev, "changed: "+strings.Join(res.Changed, ", "))
	}
	for _, n := range res.Notes {
		ev = append(ev, fmt.Sprintf("note to %s: %s", n.To, jobs.Bound(n.Text, 300)))
	}
	if res.Reason != "" {
		ev = append(ev, "reason: "+jobs.Bound(res.Reason, 300))
	}
	p.writePlanMemory(ctx, fmt.Sprintf("task-%s", id), kmp.KindObservation, summary, ev,
		map[string][]string{"task": {id}, "wave": {fmt.Sprint(wave)}, "worker_session": {res.SessionID}}, "hand-back of "+id)
}

// rememberSync records how a wave's sync ended.
func (p *planRun) rememberSync(ctx workflow.Context, wave int) {
	c := p.st.Sync
	if p.memory() == nil || c == nil {
		return
	}
	ev := []string{fmt.Sprintf("instance %s ended in %s", c.InstanceID, c.State)}
	for _, r := range c.Records {
		line := fmt.Sprintf("step %s round %d %s", r.Step, r.Iteration, r.Status)
		if v, ok := r.Output["verdict"].(string); ok {
			line += ", verdict " + v
		}
		if ch := r.Check; ch != nil && ch.Program != "" {
			line += "; check " + checkLine(*ch)
		}
		ev = append(ev, line)
	}
	summary := fmt.Sprintf("wave %d of plan %s ended %s", wave, p.st.Record.ID, c.State)
	p.writePlanMemory(ctx, fmt.Sprintf("sync-%d", wave), kmp.KindObservation, summary, ev, map[string][]string{"wave": {fmt.Sprint(wave)}}, "sync of wave "+fmt.Sprint(wave))
}

// rememberOutcome records how the plan ended: its status and each task's.
func (p *planRun) rememberOutcome(ctx workflow.Context) {
	if p.memory() == nil {
		return
	}
	r := p.st.Record
	done := 0
	var ev []string
	for _, t := range r.Tasks {
		if t.Status == plans.TaskDone {
			done++
		}
		line := fmt.Sprintf("task %s %s", t.ID, t.Status)
		if len(t.Changed) > 0 {
			line += ": changed " + strings.Join(t.Changed, ", ")
		}
		if t.Reason != "" {
			line += " (" + jobs.Bound(t.Reason, 200) + ")"
		}
		ev = append(ev, line)
	}
	kind := kmp.KindObservation
	if r.Status == plans.Done {
		kind = kmp.KindSuccessPath
	}
	summary := fmt.Sprintf("axlr_plan 1.0 ended %s: plan %s %s, %d of %d tasks done, for: %s", p.st.Ceremony.State, r.ID, r.Status, done, len(r.Tasks), firstLine(r.Brief))
	if r.Reason != "" {
		summary += " (" + jobs.Bound(r.Reason, 300) + ")"
	}
	ev = append(ev, "instance "+p.st.Ceremony.InstanceID)
	p.writePlanMemory(ctx, "outcome", kind, summary, ev, nil, "outcome")
}

// writePlanMemory writes one memory of the plan, keyed <workflow id>:
// <step>:1, with the plan's labels and extra; the report joins the
// plan's memory reports.
func (p *planRun) writePlanMemory(ctx workflow.Context, step, kind, summary string, ev []string, extra map[string][]string, what string) {
	m := p.memory()
	labels := map[string][]string{}
	//workflowcheck:ignore copying maps into a map does not depend on the order
	for _, src := range []map[string][]string{m.Labels, extra} {
		for k, v := range src {
			labels[k] = v
		}
	}
	res, err := p.driver.writeMemory(ctx, kmp.WriteRequest{About: m.About, Actor: memoryActor, Labels: labels,
		IdempotencyKey: memoryKey(ctx, step, 1), Memories: []kmp.Memory{{ID: "memory", Kind: kind, Summary: jobs.Bound(summary, 1000), Evidence: strings.Join(ev, "\n")}}})
	if err != nil {
		workflow.GetLogger(ctx).Warn("the plan's memory was not written", "plan", p.st.Record.ID, "what", what, "error", err)
		return
	}
	m.Reports = append(m.Reports, res.Report(what))
}
