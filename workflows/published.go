package workflows

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// The generic loop runs a definition a person published (/ceremony,
// --ceremony) with the same driver: the model gets each step's own
// config.prompt and hands the step back with whatever fields it asks for;
// the driver applies the transition MADE enables (the first of several,
// the others reported), claims the next step, asks the person for a human
// guard the instance waits on and, when nothing AXLR can do moves the
// instance, says what it waits for.

// GrantTool names a person's human guard waiting for the person in a
// result's pending call.
const GrantTool = "axlr_grant_guard"

// ActivityCeremonyRead reads where an instance stands (ceremony.Read).
const ActivityCeremonyRead = "ceremony.Read"

// ReadInstanceInput reads an instance.
type ReadInstanceInput struct {
	InstanceID string `json:"instance_id"`
}

// GuardApproval is a human guard of a person's definition waiting for the
// person: the pending call's arguments.
type GuardApproval struct {
	InstanceID string `json:"instance_id"`
	Definition string `json:"definition"`
	Version    string `json:"version"`
	State      string `json:"state"`
	Guard      string `json:"guard"`
	// Role is the definition's role that grants it, as the person.
	Role string `json:"role"`
}

// maxHops bounds the transitions applied in a row with no step between
// them, in case a definition's states chain without end.
const maxHops = 16

// OpenPublished opens an instance of a definition the person published,
// the newest version when version is empty, and claims its first step.
func (d *Driver) OpenPublished(ctx workflow.Context, name, version string, in Opening) error {
	id := fmt.Sprintf("axlr-%s-%d", d.t.Current(), workflow.Now(ctx).Unix())
	start := CeremonyStartInput{Definition: name, Version: version, InstanceID: id, SessionID: d.t.Current(),
		Context: map[string]any{"workspace": d.t.st.Root}, Published: true, Brief: in.Brief}
	if in.Memory != nil {
		start.MemoryAbout = in.Memory.About
	}
	var res CeremonyStartResult
	if err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyStart, start).Get(ctx, &res); err != nil {
		return fmt.Errorf("start ceremony %s: %w", strings.TrimSuffix(name+"@"+version, "@"), err)
	}
	return d.opened(ctx, &CeremonyState{
		Mode: ceremonies.ModeCeremony, Definition: res.Definition, Version: res.Version, InstanceID: id, Published: true,
		Compact:      d.t.st.Snapshot.compactProfile(),
		Instructions: res.Instructions, Limits: res.Limits, StepTimeout: res.StepTimeout, Brief: in.Brief,
		Entries: map[string]int{res.Instance.NextStep: 1}, Approvers: res.Approvers, Cancel: res.Cancel, Memory: in.Memory,
	}, res.Instance, in.Execution, in.Recall)
}

// advancePublished moves a person's instance on after a completion, a
// grant or a fresh read: the same step again when it repeats; else the
// transition MADE enables (the first of several, the others kept in
// Unapplied); else the state's next step; else it waits, for the
// person's grant of a human guard or for something outside AXLR.
func (d *Driver) advancePublished(ctx workflow.Context, v InstanceView, reply *stepReply) error {
	cer := d.c()
	// What it waited for is said again below if it still waits.
	cer.Waiting = ""
	for hops := 0; ; hops++ {
		cer.State, reply.State = v.State, v.State
		if v.Completed {
			d.ended(v.State, reply)
			return nil
		}
		if st, ok := v.step(cer.Step); ok && cer.Step != "" && st.Status == "pending" && st.Iteration > cer.Iteration {
			reply.Feedback += fmt.Sprintf("Step %s continues: iteration %d. ", cer.Step, st.Iteration)
			return d.claim(ctx, cer.Step, st.Iteration, reply)
		}
		cer.Step = ""
		if len(v.Enabled) == 0 && v.NextStep != "" {
			st, _ := v.step(v.NextStep)
			return d.claim(ctx, v.NextStep, max(st.Iteration, 1), reply)
		}
		if len(v.Enabled) == 0 {
			d.waitOutside(ctx, v, reply)
			return nil
		}
		if hops >= maxHops {
			d.needsOperator(ctx, v.State, fmt.Sprintf("%d transitions in a row reached no step", maxHops), reply)
			return nil
		}
		trigger, others := v.Enabled[0], v.Enabled[1:]
		var next InstanceView
		err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyTransition, TransitionInput{
			InstanceID: cer.InstanceID, Trigger: trigger, From: v.State, Others: others,
		}).Get(ctx, &next)
		if err != nil {
			return fmt.Errorf("apply %s: %w", trigger, err)
		}
		if len(others) > 0 {
			u := fmt.Sprintf("from %s: applied %s; also enabled %s", v.State, trigger, strings.Join(others, ", "))
			cer.Unapplied = append(cer.Unapplied, u)
			reply.Feedback += fmt.Sprintf("MADE enabled %d transitions from %s: AXLR applied the first, %s (not %s). ", len(others)+1, v.State, trigger, strings.Join(others, ", "))
		}
		d.t.emit(contract.Event{Type: contract.EventTransition, SessionID: d.t.Current(), Instance: cer.InstanceID, Trigger: trigger, State: next.State})
		v = next
	}
}

// ended takes note that a person's instance reached a terminal state: the
// session is back in normal mode, and a BLOCKED end is the person's to
// take on.
func (d *Driver) ended(state string, reply *stepReply) {
	cer := d.c()
	cer.Step, cer.Ended, cer.Waiting, cer.Guard = "", true, "", ""
	*d.mode = "normal"
	reply.Ceremony = state
	reply.Feedback += fmt.Sprintf("The ceremony ended %s; the session is back in normal mode. ", state)
	if state == "BLOCKED" {
		reply.Feedback += "Tell the person why it is blocked and propose the next step."
		return
	}
	reply.Feedback += "Answer the person."
}

// waitOutside takes note of a state with no enabled transition and no
// claimable step: a human guard is asked of the person before the next
// request (askGuard); anything else waits outside AXLR, and the model
// tells the person.
func (d *Driver) waitOutside(ctx workflow.Context, v InstanceView, reply *stepReply) {
	cer := d.c()
	if len(v.Waiting) > 0 {
		cer.Guard = v.Waiting[0]
		cer.Waiting = fmt.Sprintf("guard %s waits for the person's approval in %s (instance %s)", cer.Guard, v.State, cer.InstanceID)
		reply.Feedback += fmt.Sprintf("The ceremony waits in %s for the person to grant guard %s: AXLR asks them now, and the ceremony goes on with their decision. Do not call %s until then.", v.State, cer.Guard, StepDoneTool)
	} else {
		cer.Waiting = fmt.Sprintf("%s has no enabled transition and no claimable step: it waits for something outside AXLR (a guard or a step that is not AXLR's)", v.State)
		reply.Feedback += fmt.Sprintf("State %s has no enabled transition and no step AXLR can claim: the ceremony waits for something outside AXLR. Tell the person what it waits for; AXLR reads the instance again on their next prompt.", v.State)
	}
	d.t.emit(contract.Event{Type: contract.EventCeremonyWaiting, SessionID: d.t.Current(), Instance: cer.InstanceID, State: v.State, Reason: cer.Waiting})
	workflow.SetCurrentDetails(ctx, "ceremony "+cer.InstanceID+": "+cer.Waiting)
}

// askGuard makes the execution wait for the person's grant of the human
// guard a person's instance waits on: the execution ends needs_decision,
// the pending call naming the guard and the instance.
func (d *Driver) askGuard() error {
	c := d.c()
	if !c.Active() || !c.Published || c.Guard == "" {
		return nil
	}
	g := GuardApproval{InstanceID: c.InstanceID, Definition: c.Definition, Version: c.Version, State: c.State, Guard: c.Guard, Role: c.Approvers[c.Guard]}
	n := len(c.Records)
	call := ModelCall{Key: EpochKey(fmt.Sprintf("grant:%s:%s:%d", c.InstanceID, c.Guard, n), c.Epoch), CallID: fmt.Sprintf("grant-%d", n), Tool: GrantTool}
	args, _ := json.Marshal(g)
	return d.t.Wait(PendingState{Call: call, Reason: fmt.Sprintf("guard %s of %s %s (instance %s) waits for the person's approval in %s", g.Guard, g.Definition, g.Version, g.InstanceID, g.State), Guard: &g}, GrantTool, args)
}

// DecideGuard applies the person's decision on a human guard: an approval
// grants it through the approver identity (the definition's role that
// may, as a person) and the ceremony goes on; a denial stops driving the
// instance, left waiting in MADE, and the session is back in normal mode.
func (d *Driver) DecideGuard(ctx workflow.Context, p *PendingState, req *DecideRequest) error {
	c, g := d.c(), p.Guard
	call := ModelCall{Key: p.Call.Key, CallID: p.Call.CallID, Tool: GrantTool}
	c.Guard = ""
	if req.Decision != contract.Approve {
		d.t.SetCall(call, contract.Deny, contract.CallDenied)
		detail := "the person declined guard " + g.Guard
		if req.Reason != "" {
			detail += ": " + req.Reason
		}
		c.Ended, c.Stopped, c.Waiting = true, "guard_declined: "+detail, ""
		*d.mode = "normal"
		d.t.emit(contract.Event{Type: contract.EventCeremonyStopped, SessionID: d.t.Current(), Instance: c.InstanceID, State: c.State, Reason: c.Stopped})
		return d.note(ctx, "declined", fmt.Sprintf("[AXLR] %s. AXLR stopped driving ceremony %s and left instance %s waiting in %s in MADE; the session is back in normal mode. Tell the person, and propose the next step.",
			upperFirst(detail), c.Definition, c.InstanceID, c.State))
	}
	d.t.SetCall(call, contract.Approve, contract.CallCompleted)
	var v InstanceView
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyApproveGuard,
		GrantInput{InstanceID: c.InstanceID, Guard: g.Guard, Role: g.Role}).Get(ctx, &v)
	if err != nil {
		return fmt.Errorf("grant %s: %w", g.Guard, err)
	}
	c.Waiting = ""
	var reply stepReply
	if err := d.advance(ctx, v, &reply); err != nil {
		return err
	}
	msg := fmt.Sprintf("[AXLR] The person granted guard %s (as %s). %s", g.Guard, g.Role, reply.Feedback)
	if c.Active() && c.Step != "" {
		msg += "\n" + c.stepNote(false)
	}
	return d.note(ctx, "granted", strings.TrimSpace(msg))
}

// recheck reads a waiting instance again on the person's next prompt: a
// guard granted or a step done outside AXLR moves it on.
func (d *Driver) recheck(ctx workflow.Context) error {
	c := d.c()
	var v InstanceView
	if err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyRead, ReadInstanceInput{InstanceID: c.InstanceID}).Get(ctx, &v); err != nil {
		return fmt.Errorf("read ceremony %s: %w", c.InstanceID, err)
	}
	var reply stepReply
	if err := d.advance(ctx, v, &reply); err != nil {
		return err
	}
	msg := "[AXLR] Ceremony " + c.Definition + " " + c.Version + " (instance " + c.InstanceID + "): " + reply.Feedback
	if c.Active() && c.Step != "" {
		msg = c.stepNote(false)
	}
	return d.note(ctx, "recheck", strings.TrimSpace(msg))
}

// upperFirst capitalizes a sentence's first letter.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
