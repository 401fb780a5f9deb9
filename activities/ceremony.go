package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// Limits of a check run, as the console-driven workflows state them.
const (
	CheckTimeout  = 5 * time.Minute
	CheckCapture  = 16 << 10
	EvidenceBytes = 4 << 10
)

// Ceremony implements workflows.CeremonyActivities: the MADE verbs, the
// hand-back's validation and the check runs of the ceremony driver. Each is
// idempotent on its key: a claim, completion or transition that an earlier
// attempt already made is found in MADE and taken as done; a check's result
// is saved in the session log and not run again.
type Ceremony struct {
	Made       made.Engine
	Store      *session.Store
	Workspaces *Workspaces
	// Owner is the lease owner of the claims (the host).
	Owner string
	Log   zerolog.Logger
	// HeartbeatEvery is how often a check heartbeats (default 2 s).
	HeartbeatEvery time.Duration
	// Definitions is the directory of axlrd's copies of the definitions
	// the person published (MADE returns no stored definition).
	Definitions string
	// Drafts is the directory of the incidents' drafts AXLR recorded, by
	// digest; Model, ReviewerModel (reviewer_model, empty: the session's)
	// and MaxTokens are the reviewer's.
	Drafts        string
	Model         Model
	ReviewerModel string
	MaxTokens     int
}

var _ workflows.CeremonyActivities = (*Ceremony)(nil)

// evCheck is a check's saved result in the session log.
const evCheck = "check.result"

// Start publishes the mode's pinned definition, refuses one whose digest
// differs from its pin, opens the instance and claims its first step.
func (a *Ceremony) Start(ctx context.Context, in workflows.CeremonyStartInput) (workflows.CeremonyStartResult, error) {
	if in.Published {
		return a.startPublished(ctx, in)
	}
	def, ok := ceremonies.Lookup(in.Definition, in.Version)
	if !ok {
		return workflows.CeremonyStartResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no pinned ceremony %s %s", in.Definition, in.Version), workflows.ErrTypeBadRequest, nil)
	}
	parsed, err := PublishPinned(ctx, a.Made, def)
	if err != nil {
		return workflows.CeremonyStartResult{}, err
	}
	return a.open(ctx, startResult(def, parsed), in.InstanceID, in.Context)
}

// open starts an instance of the definition res names (or finds the one
// an earlier attempt started) and claims its first step.
func (a *Ceremony) open(ctx context.Context, res workflows.CeremonyStartResult, id string, input map[string]any) (workflows.CeremonyStartResult, error) {
	inst, err := a.Made.StartPublished(ctx, made.StartRequest{
		Ceremony: res.Definition, Version: res.Version, CeremonyID: id,
		ActorID: "axlr", ActorKind: made.ActorService, Context: input,
	})
	if errors.Is(err, made.ErrExists) {
		inst, err = a.Made.Get(ctx, id)
	}
	if err != nil {
		return workflows.CeremonyStartResult{}, madeError("start "+id, err)
	}
	if inst.NextStepID == nil {
		return workflows.CeremonyStartResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("instance %s of %s %s has no claimable step in %s", id, res.Definition, res.Version, inst.CurrentState), workflows.ErrTypeMadeRefused, nil)
	}
	step := *inst.NextStepID
	claimed, err := a.claim(ctx, id, step, workflows.ClaimKey(id, step, 1, 0), 1, res.StepTimeout)
	if err != nil {
		return workflows.CeremonyStartResult{}, err
	}
	res.Instance = claimed
	return res, nil
}

// startResult is what the driver keeps of a pinned definition: each
// step's prompt and iterations at most, and the step timeout.
func startResult(def ceremonies.Definition, parsed *definition.Definition) workflows.CeremonyStartResult {
	res := workflows.CeremonyStartResult{
		Definition: def.Name, Version: def.Version, Instructions: map[string]string{},
		StepTimeout: parsed.StepTimeout, Limits: map[string]int{},
	}
	if res.StepTimeout <= 0 {
		res.StepTimeout = workflows.DefaultStepTimeout
	}
	for _, st := range parsed.Steps {
		if p, ok := st.Config["prompt"].(string); ok {
			res.Instructions[st.ID] = p
		}
		res.Limits[st.ID] = 1
		if st.Repeat != nil {
			res.Limits[st.ID] = st.Repeat.MaxIterations
		}
	}
	return res
}

// Resume reads an instance an earlier run left, for a run that takes it
// over (a recovered job's): the pinned definition's prompts and limits, the
// steps MADE holds completed with their outputs (in the definition's
// order), the check command the person accepted (the command a proposing
// step ran: a command runs only once approved) and the step to claim
// next. An instance that cannot go on (gone, ended, of another
// definition) is not an error: Ended says why, and the run starts anew.
func (a *Ceremony) Resume(ctx context.Context, in workflows.CeremonyResumeInput) (workflows.CeremonyResumeResult, error) {
	def, ok := ceremonies.Lookup(in.Definition, in.Version)
	if !ok {
		return workflows.CeremonyResumeResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no pinned ceremony %s %s", in.Definition, in.Version), workflows.ErrTypeBadRequest, nil)
	}
	parsed, err := PublishPinned(ctx, a.Made, def)
	if err != nil {
		return workflows.CeremonyResumeResult{}, err
	}
	res := workflows.CeremonyResumeResult{CeremonyStartResult: startResult(def, parsed)}
	inst, err := a.Made.Get(ctx, in.InstanceID)
	switch {
	case errors.Is(err, made.ErrNotFound):
		res.Ended = fmt.Sprintf("MADE holds no instance %s", in.InstanceID)
		return res, nil
	case err != nil:
		return res, madeError("read "+in.InstanceID, err)
	case inst.DefinitionName != def.Name || inst.DefinitionVersion != def.Version:
		res.Ended = fmt.Sprintf("instance %s runs %s %s, not %s %s", in.InstanceID, inst.DefinitionName, inst.DefinitionVersion, def.Name, def.Version)
		return res, nil
	case inst.Completed:
		res.Ended = fmt.Sprintf("instance %s ended %s", in.InstanceID, inst.CurrentState)
		return res, nil
	}
	res.Instance = view(inst)
	for _, st := range inst.Steps {
		switch {
		case st.Status == made.StepInProgress && res.Open == "":
			res.Open = st.StepID
		case st.Status == made.StepCompleted:
			rec, cmd, err := doneStep(def, st)
			if err != nil {
				return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("instance %s, step %s: %v", in.InstanceID, st.StepID, err), workflows.ErrTypeMadeRefused, err)
			}
			res.Done = append(res.Done, rec)
			if cmd != nil {
				res.Command = cmd
			}
		}
	}
	if res.Open == "" {
		res.Open = res.Instance.NextStep
	}
	return res, nil
}

// doneStep is a completed step as the driver records it, and the check
// command it ran when it is a step that proposes one.
func doneStep(def ceremonies.Definition, st made.Step) (contract.StepRecord, *ceremonies.CheckCommand, error) {
	rec := contract.StepRecord{Step: st.StepID, Iteration: max(st.Iteration, 1), Status: string(st.Status), Output: map[string]any{}}
	for k, v := range st.Output {
		if k != "check" {
			rec.Output[k] = v
		}
	}
	for k, v := range jobTexts(def.Name, st.Output) {
		rec.Output[k] = v
	}
	if raw, ok := st.Output["check"]; ok {
		var ch contract.CheckRecord
		if err := remarshal(raw, &ch); err != nil {
			return rec, nil, fmt.Errorf("its recorded check: %w", err)
		}
		rec.Check = &ch
	}
	spec, _ := ceremonies.StepOf(def.Name, def.Version, st.StepID)
	raw, ok := st.Output["check_command"]
	if !spec.Check.Proposes() || !ok || rec.Check == nil {
		return rec, nil, nil
	}
	var cmd ceremonies.CheckCommand
	if err := remarshal(raw, &cmd); err != nil {
		return rec, nil, fmt.Errorf("its check_command: %w", err)
	}
	return rec, &cmd, nil
}

// remarshal decodes a plain JSON value (what MADE gives back) into v.
func remarshal(from any, v any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// PublishPinned publishes a pinned definition and checks that MADE holds it
// under its pinned digest. It returns the parsed definition.
func PublishPinned(ctx context.Context, e made.Engine, def ceremonies.Definition) (*definition.Definition, error) {
	yaml, err := def.YAML()
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeBadRequest, err)
	}
	parsed, err := definition.Parse(yaml)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("pinned definition %s %s: %v", def.Name, def.Version, err), workflows.ErrTypeBadRequest, err)
	}
	pub, err := e.Publish(ctx, yaml)
	var conflict *made.ConflictError
	switch {
	case errors.As(err, &conflict):
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"ceremony %s %s is published in MADE with digest %s, but this axlrd pins %s: publish a new version instead of changing %s",
			def.Name, def.Version, conflict.PublishedDigest, def.Digest, def.Version), workflows.ErrTypeMadeRefused, err)
	case err != nil:
		return nil, madeError("publish "+def.Name+" "+def.Version, err)
	case pub.Digest != def.Digest:
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"ceremony %s %s is published in MADE with digest %s, but this axlrd pins %s", def.Name, def.Version, pub.Digest, def.Digest),
			workflows.ErrTypeMadeRefused, nil)
	}
	return parsed, nil
}

// Claim claims a step at an iteration.
func (a *Ceremony) Claim(ctx context.Context, in workflows.ClaimInput) (workflows.InstanceView, error) {
	return a.claim(ctx, in.InstanceID, in.Step, workflows.EpochKey(workflows.ClaimKey(in.InstanceID, in.Step, in.Iteration, in.Round), in.Epoch), in.Iteration, in.LeaseTTL)
}

func (a *Ceremony) claim(ctx context.Context, id, step, key string, iteration int, ttl time.Duration) (workflows.InstanceView, error) {
	inst, err := made.ClaimOnce(ctx, a.Made, made.ClaimRequest{
		CeremonyID: id, StepID: step, ActorKind: made.ActorAgent,
		LeaseOwnerID:   a.Owner,
		IdempotencyKey: key,
		LeaseTTL:       ttl,
	})
	if errors.Is(err, made.ErrLeaseActive) || errors.Is(err, made.ErrExists) {
		// MADE holds the step under a claim that is not this one, or
		// closed it: an operator resolves that, not a retry.
		return workflows.InstanceView{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("step %s of %s cannot be claimed and is not in progress under this claim (%v)", step, id, err), workflows.ErrTypeNeedsOperator, err)
	}
	if err != nil {
		return workflows.InstanceView{}, madeError(fmt.Sprintf("claim %s of %s", step, id), err)
	}
	v := view(inst)
	v.NextStep = step
	v.Action = fmt.Sprintf("claimed %s (iteration %d)", step, iteration)
	return v, nil
}

// HandBack validates an axlr_step_done call against the open step.
func (a *Ceremony) HandBack(ctx context.Context, in workflows.HandBackInput) (workflows.HandBackResult, error) {
	hb, err := a.handBack(in.SessionID, in.CallKey, in.Definition, in.Version, in.Step, in.Compact, in.Published)
	if err != nil {
		var refused handBackError
		if errors.As(err, &refused) {
			return workflows.HandBackResult{Error: refused.Error()}, nil
		}
		return workflows.HandBackResult{}, err
	}
	links, _ := hb.Fields["connect_to"].([]ceremonies.Link)
	return workflows.HandBackResult{Command: hb.Command, NotReproducible: hb.NotReproducible, NotFeasible: hb.NotFeasible, Ignored: hb.Ignored,
		Links: links, Texts: jobTexts(in.Definition, hb.Fields)}, nil
}

// jobTexts are the fields of a job's hand-back that its pull request is
// written from, each cut to its bound; none for a ceremony that is not a
// job's.
func jobTexts(definition string, fields map[string]any) map[string]string {
	if definition != jobs.Repair.Definition() && definition != jobs.Improve.Definition() {
		return nil
	}
	bounds := map[string]int{"summary": jobs.MaxSummary, "root_cause": jobs.MaxSection, "proposed_fix": jobs.MaxSection,
		"criteria": jobs.MaxSection, "scope": jobs.MaxSection, "evidence": jobs.MaxSection, "summary_en": jobs.MaxSummary}
	var out map[string]string
	for name, limit := range bounds {
		text, ok := fields[name].(string)
		if !ok || strings.TrimSpace(text) == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = jobs.Bound(text, limit)
	}
	return out
}

// handBackError is a refused hand-back: the model's to fix.
type handBackError struct{ error }

func (a *Ceremony) handBack(sessionID, callKey, definition, version, step string, compact, published bool) (ceremonies.HandBack, error) {
	log, err := openLog(a.Store, sessionID)
	if err != nil {
		return ceremonies.HandBack{}, err
	}
	tc, err := findCall(log, callKey)
	if err != nil {
		return ceremonies.HandBack{}, err
	}
	validate := func() (ceremonies.HandBack, error) {
		return ceremonies.Validate(definition, version, step, []byte(tc.Arguments), compact)
	}
	if published {
		validate = func() (ceremonies.HandBack, error) { return ceremonies.ValidatePublished(step, []byte(tc.Arguments)) }
	}
	hb, err := validate()
	if err != nil {
		return ceremonies.HandBack{}, handBackError{err}
	}
	return hb, nil
}

// RunCheck runs a check command in the workspace, argv without a shell,
// with the restricted environment, a five-minute timeout and 16 KiB of
// captured output, keeping a 4 KiB evidence tail. A command with no program
// records the revision: git rev-parse HEAD and git status --porcelain. The
// result is saved under its key and returned again on a retry.
func (a *Ceremony) RunCheck(ctx context.Context, in workflows.RunCheckInput) (contract.CheckRecord, error) {
	log, err := openLog(a.Store, in.SessionID)
	if err != nil {
		return contract.CheckRecord{}, err
	}
	key := "check:" + in.Key
	if ev, ok := log.ByKey(key); ok {
		return decode[contract.CheckRecord](ev)
	}
	ws, err := a.Workspaces.Get(in.Root)
	if err != nil {
		return contract.CheckRecord{}, err
	}
	stop := heartbeat(ctx, a.HeartbeatEvery, func() any { return in.Key })
	var rec contract.CheckRecord
	if in.Command.Program == "" {
		rec, err = revision(ctx, ws)
	} else {
		rec, err = runCommand(ctx, ws, in.Command, CheckTimeout)
	}
	stop()
	if err != nil {
		return contract.CheckRecord{}, err
	}
	if _, err := appendEvent(log, evCheck, key, rec); err != nil {
		return contract.CheckRecord{}, err
	}
	return rec, nil
}

// runCommand runs a check and records how it ended: its exit code, or that
// it could not start, or that it ran past timeout.
func runCommand(ctx context.Context, ws *tools.Workspace, cmd ceremonies.CheckCommand, timeout time.Duration) (contract.CheckRecord, error) {
	rec := contract.CheckRecord{Program: cmd.Program, Args: cmd.Args}
	if rec.Args == nil {
		rec.Args = []string{}
	}
	args, err := json.Marshal(tools.ExecArgs{Program: cmd.Program, Args: cmd.Args,
		TimeoutMS: ptr64(timeout.Milliseconds()), MaxOutputBytes: ptr64(CheckCapture)})
	if err != nil {
		return rec, fmt.Errorf("encode check %s: %w", cmd, err)
	}
	raw, err := ws.Call(ctx, tools.Exec, args)
	if ctx.Err() != nil {
		return rec, ctx.Err()
	}
	var te *tools.Error
	switch {
	case errors.As(err, &te) && te.Code == tools.CodeTimeout:
		// It ran out of time: no exit code is invented for it.
		rec.TimedOut = true
		rec.OutputTail = te.Message
		return rec, nil
	case errors.As(err, &te):
		// The command could not start (not found, bad cwd): that is its
		// outcome, recorded as it is.
		rec.StartError = te.Code + ": " + te.Message
		return rec, nil
	case err != nil:
		return rec, fmt.Errorf("run check %s: %w", cmd, err)
	}
	var out tools.ExecOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		return rec, fmt.Errorf("decode check output: %w", err)
	}
	rec.ExitCode = contract.Exit(out.ExitCode)
	rec.OutputTail = tail(out.Stdout+out.Stderr, EvidenceBytes)
	rec.Sandbox, rec.SandboxNote = out.Sandbox, out.SandboxNote
	return rec, nil
}

// revision records git rev-parse HEAD on the first line of the tail, then
// git status --porcelain.
func revision(ctx context.Context, ws *tools.Workspace) (contract.CheckRecord, error) {
	head, err := runCommand(ctx, ws, ceremonies.CheckCommand{Program: "git", Args: []string{"rev-parse", "HEAD"}}, CheckTimeout)
	if err != nil {
		return head, err
	}
	status, err := runCommand(ctx, ws, ceremonies.CheckCommand{Program: "git", Args: []string{"status", "--porcelain"}}, CheckTimeout)
	if err != nil {
		return status, err
	}
	rec := status
	rec.Program, rec.Args = "git", []string{"rev-parse", "HEAD"}
	rec.OutputTail = strings.TrimSpace(head.OutputTail) + "\n" + status.OutputTail
	if !head.Passed() {
		// Not a git repository, no commit yet, or no git: no revision.
		rec = head
		rec.OutputTail = "\n" + head.OutputTail
	}
	return rec, nil
}

// Complete completes a step with the hand-back's fields and what AXLR
// recorded. A completion an earlier attempt made is found and taken as
// done.
func (a *Ceremony) Complete(ctx context.Context, in workflows.CompleteInput) (workflows.InstanceView, error) {
	output := map[string]any{}
	if in.CallKey != "" {
		hb, err := a.handBack(in.SessionID, in.CallKey, in.Definition, in.Version, in.Step, in.Compact, in.Published)
		if err != nil {
			return workflows.InstanceView{}, temporal.NewNonRetryableApplicationError("hand-back no longer valid: "+err.Error(), workflows.ErrTypeSessionDiverged, err)
		}
		for k, v := range hb.Fields {
			output[k] = v
		}
	}
	for k, v := range in.Recorded {
		output[k] = v
	}
	// Round-trip through JSON so the engine sees plain JSON values.
	output, err := plainJSON(output)
	if err != nil {
		return workflows.InstanceView{}, err
	}
	req := made.CompleteRequest{CeremonyID: in.InstanceID, StepID: in.Step, ActorKind: made.ActorAgent,
		Status: made.StepStatus(in.Status), Output: output}
	if in.Status == string(made.StepFailed) {
		req.Error, _ = in.Recorded["detail"].(string)
		if req.Error == "" {
			req.Error = "failed"
		}
	}
	action := fmt.Sprintf("%s %s (iteration %d)", in.Status, in.Step, in.Iteration)
	inst, err := a.Made.Complete(ctx, req)
	if err != nil && !errors.Is(err, made.ErrUnavailable) {
		// A completion an earlier attempt made (a crash before its result
		// was recorded): the step is done, and the instance may have moved
		// on since.
		cur, gerr := a.Made.Get(ctx, in.InstanceID)
		if gerr == nil {
			if st, ok := cur.Step(in.Step); ok && (st.Iteration > in.Iteration || (st.Status != made.StepInProgress && st.Status != made.StepPending)) {
				v := view(cur)
				v.Action = action + ", found done"
				v.Moved = cur.CurrentState != st.StateID
				return v, nil
			}
		}
	}
	if err != nil {
		return workflows.InstanceView{}, madeError(fmt.Sprintf("complete %s of %s", in.Step, in.InstanceID), err)
	}
	v := view(inst)
	v.Action = action
	return v, nil
}

// Transition fires a trigger; a transition an earlier attempt applied (the
// instance left the state) is taken as done.
func (a *Ceremony) Transition(ctx context.Context, in workflows.TransitionInput) (workflows.InstanceView, error) {
	action := fmt.Sprintf("applied %s from %s", in.Trigger, in.From)
	if len(in.Others) > 0 {
		action += fmt.Sprintf(" (also enabled, not applied: %s)", strings.Join(in.Others, ", "))
	}
	inst, err := a.Made.ApplyTransition(ctx, made.TransitionRequest{CeremonyID: in.InstanceID, Trigger: in.Trigger, ActorKind: made.ActorService})
	if errors.Is(err, made.ErrWrongState) || errors.Is(err, made.ErrTerminal) {
		cur, gerr := a.Made.Get(ctx, in.InstanceID)
		if gerr == nil && cur.CurrentState != in.From {
			v := view(cur)
			v.Action = action + ", found done"
			return v, nil
		}
	}
	if err != nil {
		return workflows.InstanceView{}, madeError(fmt.Sprintf("apply %s to %s", in.Trigger, in.InstanceID), err)
	}
	v := view(inst)
	v.Action = action
	return v, nil
}

// ApproveGuard grants a human guard as the role named, a human: the
// person's approver identity, so MADE records who approved. A grant an
// earlier attempt made is found satisfied and taken as done.
func (a *Ceremony) ApproveGuard(ctx context.Context, in workflows.GrantInput) (workflows.InstanceView, error) {
	action := fmt.Sprintf("granted %s as %s", in.Guard, in.Role)
	inst, err := a.Made.ApproveGuard(ctx, made.ApproveRequest{CeremonyID: in.InstanceID, GuardName: in.Guard, RoleID: in.Role, RoleKind: made.ActorHuman})
	if err != nil {
		cur, gerr := a.Made.Get(ctx, in.InstanceID)
		if gerr == nil && guardSatisfied(cur, in.Guard) {
			v := view(cur)
			v.Action = action + ", found done"
			return v, nil
		}
		return workflows.InstanceView{}, madeError(fmt.Sprintf("grant %s of %s", in.Guard, in.InstanceID), err)
	}
	v := view(inst)
	v.Action = action
	return v, nil
}

// guardSatisfied reports whether a guard of one of the instance's
// transitions holds.
func guardSatisfied(in made.Instance, guard string) bool {
	for _, t := range in.Transitions {
		for _, g := range t.Guards {
			if g.Name == guard && g.Satisfied {
				return true
			}
		}
	}
	return false
}

// madeError makes an engine error an activity error: refusals are final,
// an unreachable engine is retried.
func madeError(op string, err error) error {
	msg := op + ": " + err.Error()
	switch {
	case errors.Is(err, made.ErrUnavailable),
		errors.Is(err, made.ErrConflict) && strings.Contains(err.Error(), "changed by someone else first"):
		return fmt.Errorf("%s: %w", op, err)
	case errors.Is(err, made.ErrInvalid):
		return temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeBadRequest, err)
	}
	return temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeMadeRefused, err)
}

func view(in made.Instance) workflows.InstanceView {
	v := workflows.InstanceView{InstanceID: in.CeremonyID, State: in.CurrentState, Completed: in.Completed, Waiting: in.WaitingForHuman}
	if in.NextStepID != nil {
		v.NextStep = *in.NextStepID
	}
	for _, t := range in.Transitions {
		// The cancel trigger is always enabled; the driver fires it only to
		// stop the instance.
		if t.Enabled && t.Trigger != ceremonies.CancelTrigger {
			v.Enabled = append(v.Enabled, t.Trigger)
		}
	}
	for _, s := range in.Steps {
		v.Steps = append(v.Steps, workflows.StepView{Step: s.StepID, Status: string(s.Status), Iteration: max(s.Iteration, 1), Attempt: s.Attempt, RepeatExhausted: s.RepeatExhausted})
	}
	return v
}

func plainJSON(m map[string]any) (map[string]any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode step output: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode step output: %w", err)
	}
	return out, nil
}

// tail keeps the last n bytes of s, starting at a character boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return s[i:]
}

func ptr64(v int64) *int64 { return &v }
