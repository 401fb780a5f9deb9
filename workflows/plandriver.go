package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
)

// A plan drives two of its three definitions with the ceremony driver: the
// plan's own (axlr_plan: the planner's decompose step, then the console's
// verify, approve and run) and each wave's sync (axlr_sync: integrate and
// reconcile, both the console's). StartPlan opens them; the rest is the
// driver's usual claim, completion and transition.

// StartPlan opens an instance of one of a plan's definitions (part is
// ceremonies.PartPlan or PartSync) under the id the plan's workflow chose
// and claims its first step. Unlike Start and StartJob, the id is the
// plan's (axlr-<plan>-<unix>, axlr-<plan>-sync<wave>-<unix>): a plan's
// instances are told apart by what they run, not by the session they run
// in, which is the planner's for both. brief fills the definition's brief
// input when it has one, and the workspace input the turn's root. A first step that is the model's is announced in
// the transcript; a console step is not, since the model is not asked.
func (d *Driver) StartPlan(ctx workflow.Context, part, instanceID, brief, executionID string, context map[string]any) error {
	def, ok := ceremonies.ForPlan(part)
	if !ok {
		return fmt.Errorf("start plan: no definition for part %q", part)
	}
	in := CeremonyStartInput{Mode: part, Plan: true, InstanceID: instanceID, SessionID: d.t.Current(), Context: context}
	if in.Context == nil {
		in.Context = map[string]any{}
	}
	if def.BriefInput != "" {
		in.Context[def.BriefInput] = brief
	}
	in.Context["workspace"] = d.t.st.Root
	var res CeremonyStartResult
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, CeremonyOptions), ActivityCeremonyStart, in).Get(ctx, &res)
	if err != nil {
		return fmt.Errorf("start ceremony %s %s: %w", def.Name, def.Version, err)
	}
	compact := false
	if snap := d.t.st.Snapshot; snap != nil {
		compact = snap.CeremonyProfile == "compact" || (snap.CeremonyProfile != "standard" && snap.ContextCap > 0 && snap.ContextCap <= CompactWindow)
	}
	*d.slot = &CeremonyState{
		Mode: part, Definition: res.Definition, Version: res.Version, InstanceID: instanceID, Compact: compact,
		Instructions: res.Instructions, Limits: res.Limits, StepTimeout: res.StepTimeout, Brief: brief,
		Entries: map[string]int{res.Instance.NextStep: 1},
	}
	*d.mode = part
	d.claimed(ctx, res.Instance)
	d.c().Execution = executionID
	if d.c().step().Console {
		return nil
	}
	return d.note(ctx, "began", d.c().stepNote(true))
}
