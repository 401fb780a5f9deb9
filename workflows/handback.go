package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// A step's hand-back (an axlr_step_done call) goes through four parts: the
// hand-back is validated (handBack); the command for the step's check is
// settled, which may ask the person (commandFor); the check runs and is
// judged (runAndJudge), or the host checks a hosted step (its
// CeremonyHooks); and the step is completed in MADE, the instance moved on
// and the model answered (completeStep). A part that answers the model
// itself (a refusal, a question for the person) ends the hand-back there,
// and MADE is unchanged.

// stepReply is axlr_step_done's answer to the model.
type stepReply struct {
	Accepted  bool                  `json:"accepted"`
	Error     string                `json:"error,omitempty"`
	Step      string                `json:"step,omitempty"`
	Iteration int                   `json:"iteration,omitempty"`
	Check     *contract.CheckRecord `json:"check,omitempty"`
	Feedback  string                `json:"feedback,omitempty"`
	Ignored   []string              `json:"ignored_fields,omitempty"`
	NextStep  string                `json:"next_step,omitempty"`
	Instr     string                `json:"instruction,omitempty"`
	State     string                `json:"state,omitempty"`
	Ceremony  string                `json:"ceremony,omitempty"`
}

func (r stepReply) text() string {
	b, err := json.Marshal(r)
	if err != nil {
		return `{"accepted":false,"error":"internal: reply not encoded"}`
	}
	return string(b)
}

// StepHandBack is a validated hand-back on its way to MADE: the call, the
// step, what AXLR records beside the model's fields, and the answer the
// model reads once the step is completed.
type StepHandBack struct {
	Call ModelCall
	Step ceremonies.Step
	// Iteration is the step's, Limit its iterations at most.
	Iteration, Limit int
	// Key is the idempotency key of the step's check runs: its claim's.
	Key string
	// Recorded is what AXLR records beside the model's fields: the step's
	// outcome (true, or what its check showed), the check, the revision.
	Recorded map[string]any

	rest     []ModelCall
	result   HandBackResult
	decision contract.Decision
	reply    stepReply
	compact  bool
}

// Tell adds to what the model reads of the round.
func (h *StepHandBack) Tell(text string) { h.reply.Feedback += text }

// Checked records a run of the step's check: MADE keeps it, and the model
// reads it (under the compact profile, its output's tail).
func (h *StepHandBack) Checked(rec contract.CheckRecord) {
	h.Recorded["check"] = rec
	h.reply.Check = shownCheck(h.compact, rec)
}

// Round names the round in a reason: "<step> round <iteration> of
// <limit>".
func (h *StepHandBack) Round() string {
	return fmt.Sprintf("%s round %d of %d", h.Step.ID, h.Iteration, max(h.Limit, 1))
}

// stepDone handles an axlr_step_done call; approved says the person just
// approved its check command.
func (d *Driver) stepDone(ctx workflow.Context, c ModelCall, rest []ModelCall, approved bool) error {
	if !d.stepOpen() {
		return d.t.Record(ctx, c, contract.CallFailed, contract.AutoApprove, stepReply{Error: "no ceremony step is open in this session"}.text())
	}
	hb, answered, err := d.handBack(ctx, c, rest, approved)
	if err != nil || answered {
		return err
	}
	if hb.Step.Check.Hosted() {
		refused, err := d.host().CheckStep(ctx, hb)
		if err != nil {
			return err
		}
		if refused != "" {
			return d.refuse(ctx, hb, contract.CallFailed, hb.decision, refused, nil)
		}
	} else {
		cmd, answered, err := d.commandFor(ctx, hb, approved)
		if err != nil || answered {
			return err
		}
		if answered, err := d.runAndJudge(ctx, hb, cmd); err != nil || answered {
			return err
		}
	}
	return d.completeStep(ctx, hb)
}

// handBack validates the call's fields against the open step. A refusal
// answers the model, and MADE is untouched.
func (d *Driver) handBack(ctx workflow.Context, c ModelCall, rest []ModelCall, approved bool) (*StepHandBack, bool, error) {
	cer := d.c()
	var res HandBackResult
	err := executeLocal(ctx, LocalOptions, ActivityCeremonyHandBack, HandBackInput{
		SessionID: d.t.Current(), CallKey: c.Key, Definition: cer.Definition, Version: cer.Version, Step: cer.Step, Compact: cer.Compact, Published: cer.Published,
	}).Get(ctx, &res)
	if err != nil {
		return nil, false, fmt.Errorf("check hand-back of %s: %w", cer.Step, err)
	}
	if res.Error != "" {
		return nil, true, d.t.Record(ctx, c, contract.CallFailed, contract.AutoApprove, stepReply{Step: cer.Step, Error: res.Error}.text())
	}
	st := cer.step()
	hb := &StepHandBack{
		Call: c, Step: st, Iteration: cer.Iteration, Limit: cer.Limits[st.ID],
		Key:      cer.key(cer.Step, cer.Iteration, cer.Round),
		Recorded: map[string]any{st.Outcome: true},
		rest:     rest, result: res, decision: contract.AutoApprove, compact: cer.Compact,
		reply: stepReply{Accepted: true, Step: cer.Step, Iteration: cer.Iteration, Ignored: res.Ignored},
	}
	if cer.Published {
		// A person's step is completed with exactly the fields handed back.
		hb.Recorded = map[string]any{}
	}
	if approved {
		hb.decision = contract.Approve
	}
	return hb, false, nil
}

// refuse answers the model that the hand-back does not hold, with the
// check that showed it (if any); MADE is unchanged.
func (d *Driver) refuse(ctx workflow.Context, hb *StepHandBack, status contract.CallStatus, decision contract.Decision, msg string, check *contract.CheckRecord) error {
	return d.t.Record(ctx, hb.Call, status, decision, stepReply{Step: hb.Step.ID, Check: check, Error: msg}.text())
}

// commandFor settles the command the step's check runs: the hand-back's,
// approved by the person (or with the work) once it differs from the one
// accepted, for a step that proposes one; the accepted one for a step that
// reruns it; none for a step that records without a run, or that the
// model settled by declaring the failure not reproducible or the
// improvement not feasible. It answers the model itself when the command
// is forbidden, waits for the person, or is missing.
func (d *Driver) commandFor(ctx workflow.Context, hb *StepHandBack, approved bool) (*ceremonies.CheckCommand, bool, error) {
	cer, st := d.c(), hb.Step
	switch {
	case st.Check.Proposes():
		if hb.result.NotReproducible || hb.result.NotFeasible {
			hb.Recorded[st.Outcome], hb.Recorded["settled"] = false, true
			return nil, false, nil
		}
		proposed := *hb.result.Command
		if msg, ok := d.forbidden(ctx, proposed); ok {
			return nil, true, d.refuse(ctx, hb, contract.CallForbidden, "", msg, nil)
		}
		if cer.Command == nil || !cer.Command.Equal(proposed) {
			if !approved && !d.preapproved(proposed) {
				return nil, true, d.askCheck(hb.Call, hb.rest, proposed)
			}
			cer.Command = hb.result.Command
		}
		return cer.Command, false, nil
	case st.Check == ceremonies.CheckRerun || st.Check == ceremonies.CheckPresent:
		if cer.Command == nil {
			return nil, true, d.refuse(ctx, hb, contract.CallFailed, contract.AutoApprove, "no check command was accepted in this ceremony", nil)
		}
		if c := hb.result.Command; c != nil && !c.Equal(*cer.Command) {
			hb.Tell(fmt.Sprintf("check_command %s ignored: AXLR reruns the accepted command %s. ", c, cer.Command))
		}
		if msg, ok := d.forbidden(ctx, *cer.Command); ok {
			return nil, true, d.refuse(ctx, hb, contract.CallForbidden, "", msg, nil)
		}
		return cer.Command, false, nil
	}
	return nil, false, nil
}

// runAndJudge runs the step's check, when it has one, and records what the
// run means for the step (ceremonies.Check.Judge), or the revision. A
// missing improvement must be shown on a clean tree, and a check that did
// not exit proves nothing: both answer the model, MADE unchanged.
func (d *Driver) runAndJudge(ctx workflow.Context, hb *StepHandBack, cmd *ceremonies.CheckCommand) (bool, error) {
	st := hb.Step
	if cmd != nil && st.Check == ceremonies.CheckMissing {
		// A change the model made could be what makes the check fail.
		rev, err := d.runCheck(ctx, hb.Key+":clean", nil)
		if err != nil {
			return false, err
		}
		if _, dirty := ceremonies.ReadRevision(rev.OutputTail); strings.TrimSpace(dirty) != "" {
			return true, d.refuse(ctx, hb, contract.CallFailed, hb.decision, fmt.Sprintf(
				"the clone has changes (%s): the brief's check must show the improvement missing on a clean tree, so restore those files (change nothing in this step) and hand the step back again. MADE is unchanged.",
				strings.Join(strings.Fields(dirty), " ")), nil)
		}
	}
	if cmd == nil && st.Check != ceremonies.CheckRevision {
		return false, nil
	}
	check, err := d.runCheck(ctx, hb.Key, cmd)
	if err != nil {
		return false, err
	}
	exit, exited := d.exitOf(ctx, cmd, check)
	if !exited {
		// It could not start, or ran out of time: that is neither a
		// failure reproduced nor a pass, so MADE is not told either.
		return true, d.refuse(ctx, hb, contract.CallFailed, hb.decision, fmt.Sprintf(
			"the check command %s %s: that neither reproduces a failure nor passes, and MADE is unchanged. Fix the command (a program that exists, a check that ends in time) and hand the step back again.",
			cmd, check.Ending()), shownCheck(hb.compact, check))
	}
	if st.Check == ceremonies.CheckRevision {
		hb.Recorded["revision"], hb.Recorded["dirty"] = ceremonies.ReadRevision(check.OutputTail)
		return false, nil
	}
	j := st.Check.Judge(exit, check.OutputTail)
	hb.Recorded[st.Outcome] = j.Holds
	if j.Settles {
		hb.Recorded["settled"] = j.Holds
	}
	hb.Tell(j.Feedback)
	hb.Checked(check)
	return false, nil
}

// completeStep completes the step in MADE with the hand-back's fields and
// what AXLR recorded, moves the instance on, and answers the model.
func (d *Driver) completeStep(ctx workflow.Context, hb *StepHandBack) error {
	cer := d.c()
	var v InstanceView
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyComplete, CompleteInput{
		SessionID: d.t.Current(), CallKey: hb.Call.Key, Definition: cer.Definition, Version: cer.Version, InstanceID: cer.InstanceID,
		Step: cer.Step, Iteration: cer.Iteration, Status: "completed", Recorded: hb.Recorded, Compact: cer.Compact, Published: cer.Published,
	}).Get(ctx, &v)
	if err != nil {
		return fmt.Errorf("complete step %s: %w", cer.Step, err)
	}
	rec := contract.StepRecord{Step: cer.Step, Iteration: cer.Iteration, Status: "completed", Output: recordedForResult(hb.Recorded)}
	//workflowcheck:ignore copying a map into a map does not depend on the order
	for k, v := range hb.result.Texts {
		rec.Output[k] = v
	}
	if cer.StepSession == d.t.Current() && d.t.st.Revision > cer.StepFrom {
		rec.Transcript = &contract.TranscriptSpan{SessionID: cer.StepSession, From: cer.StepFrom, To: d.t.st.Revision - 1}
	}
	if ch, ok := hb.Recorded["check"].(contract.CheckRecord); ok {
		rec.Check = &ch
	}
	cer.Records = append(cer.Records, rec)
	d.t.emit(contract.Event{Type: contract.EventStepCompleted, SessionID: d.t.Current(), Instance: cer.InstanceID, Step: cer.Step, Iteration: cer.Iteration, Status: contract.CallCompleted})
	if err := d.remember(ctx, hb); err != nil {
		return err
	}
	if err := d.advance(ctx, v, &hb.reply); err != nil {
		return err
	}
	if err := d.t.Record(ctx, hb.Call, contract.CallCompleted, hb.decision, hb.reply.text()); err != nil {
		return err
	}
	if cer.Compact && cer.Active() && cer.Step != "" && cer.Step != hb.Step.ID {
		// The compact profile starts each step from a ledger, not from the
		// whole transcript.
		return d.resetView(ctx, hb.reply.text())
	}
	return nil
}

// preapproved reports whether a check command was approved with the work.
func (d *Driver) preapproved(cmd ceremonies.CheckCommand) bool {
	return slices.ContainsFunc(d.approved, cmd.Equal)
}

// forbidden judges a check command as what it is to the policy: a
// local_exec of its program and arguments. A command the execution's
// policy forbids is refused before any card, with the policy's reason.
func (d *Driver) forbidden(ctx workflow.Context, cmd ceremonies.CheckCommand) (string, bool) {
	no, reason := policy.Forbidden(d.t.st.Policy, CheckCall(cmd))
	if !no || workflow.GetVersion(ctx, versionSeeds, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return "", false
	}
	return fmt.Sprintf("check_command %s is forbidden by the execution's policy: %s. MADE is unchanged; propose a command the policy allows, or explain.", cmd, reason), true
}

// CheckCall is a check command as the policy sees it: local_exec of its
// program and arguments.
func CheckCall(cmd ceremonies.CheckCommand) policy.Call {
	args, _ := json.Marshal(cmd.Args)
	if cmd.Args == nil {
		args = []byte("[]")
	}
	return policy.Call{Tool: "local_exec", Args: map[string]policy.Value{
		"program": {Text: cmd.Program},
		"args":    {Text: string(args)},
	}}
}

// exitOf is a check's exit code, and whether it exited. Runs recorded
// before versionSeeds read a check that did not exit as a nonzero exit.
func (d *Driver) exitOf(ctx workflow.Context, cmd *ceremonies.CheckCommand, check contract.CheckRecord) (int, bool) {
	if check.ExitCode != nil {
		return *check.ExitCode, true
	}
	if cmd == nil || workflow.GetVersion(ctx, versionSeeds, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return -1, true
	}
	return 0, false
}

// askCheck makes the step's check command wait for the person's approval:
// the execution ends needs_decision with the command as the pending call.
func (d *Driver) askCheck(c ModelCall, rest []ModelCall, cmd ceremonies.CheckCommand) error {
	reason := "a check command needs the person's approval"
	if accepted := d.c().Command; accepted != nil {
		reason = "a changed check command needs the person's approval (accepted: " + accepted.String() + ")"
	}
	args, _ := json.Marshal(cmd)
	return d.t.Wait(PendingState{Call: c, Queue: rest, Reason: reason, Check: &cmd}, CheckTool, args)
}

// runCheck runs a check command, or records the revision when cmd is nil.
func (d *Driver) runCheck(ctx workflow.Context, key string, cmd *ceremonies.CheckCommand) (contract.CheckRecord, error) {
	in := RunCheckInput{SessionID: d.t.Current(), Root: d.t.st.Root, Key: key}
	if cmd != nil {
		in.Command = *cmd
	} else {
		in.Key += ":revision"
	}
	var rec contract.CheckRecord
	if err := executeActivity(ctx, CheckOptions, ActivityCeremonyRunCheck, in, &rec); err != nil {
		return rec, fmt.Errorf("run check %s: %w", key, err)
	}
	return rec, nil
}

// shownCheck is the check as the model reads it: the compact profile shows
// the last 2 KiB of the output (MADE keeps the full evidence).
func shownCheck(compact bool, r contract.CheckRecord) *contract.CheckRecord {
	if compact && len(r.OutputTail) > 2<<10 {
		r.OutputTail = r.OutputTail[len(r.OutputTail)-2<<10:]
	}
	return &r
}

// recordedForResult keeps what a result shows of a step's record: the
// recorded fields without the check, which the record carries apart.
func recordedForResult(recorded map[string]any) map[string]any {
	out := map[string]any{}
	//workflowcheck:ignore copying a map into a map does not depend on the order
	for k, v := range recorded {
		if k != "check" {
			out[k] = v
		}
	}
	return out
}
