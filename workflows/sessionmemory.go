package workflows

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/kmp"
)

// versionSessionMemory: a session's ceremony wakes memory about its
// workspace before its first step and records its outcome under
// ws:<session id> at its terminal state.
const versionSessionMemory = "session-memory"

// wakeCeremony wakes memory for a ceremony the session opens, with the
// prompt as the intent: nil before versionSessionMemory.
func (s *sessionRun) wakeCeremony(ctx workflow.Context, definition, brief string) (*CeremonyMemory, string, error) {
	if workflow.GetVersion(ctx, versionSessionMemory, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil, "", nil
	}
	about := SessionAbout(s.st.Current())
	if snap := s.st.Snapshot; snap != nil && snap.About != "" {
		about = snap.About
	}
	session := s.st.Current()
	return wake(ctx, about, brief, s.st.Snapshot.compactProfile(), map[string][]string{
		"ceremony": {definition}, "session": {session}, "ws": {SessionAbout(session)},
	})
}

// recordTurn writes the turn entry of the execution that just ended: what
// it wrote, ran, called and decided, never its prose. Failures are logged
// and never stop the session.
func (s *sessionRun) recordTurn(ctx workflow.Context, ex *ExecutionState, mode string) {
	if ex == nil || workflow.GetVersion(ctx, versionSessionMemory, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	s.st.Turns++
	session := s.st.Current()
	in := RecordTurnInput{SessionID: session, Sessions: slices.Clone(ex.Sessions), ExecutionID: ex.ID,
		Key: memoryKey(ctx, "turn", s.st.Turns), About: SessionAbout(session), Turn: s.st.Turns, Mode: mode,
		Labels: map[string][]string{"session": {session}, "ws": {SessionAbout(session)}, "mode": {cmp.Or(mode, "normal")}}}
	var res RecordTurnResult
	if err := executeLocal(ctx, MemoryLocalOptions, ActivityMemoryRecordTurn, in).Get(ctx, &res); err != nil {
		workflow.GetLogger(ctx).Warn("the turn was not recorded in memory", "session", session, "error", err)
	}
}

// RecordOutcome records, once, how an ended ceremony ended, under
// ws:<session id>: a success_path when it completed, an observation of
// why it stopped otherwise, with the state, each step's record and check,
// linked to its cause when it recorded one. A ceremony woken without
// memory records nothing. A job records its own outcome (jobRun.remember).
func (d *Driver) RecordOutcome(ctx workflow.Context) error {
	c := d.c()
	if c == nil || !c.Ended || c.Memory == nil || c.Memory.Outcome {
		return nil
	}
	m := c.Memory
	m.Outcome = true
	name := c.Definition + " " + c.Version
	kind, summary := kmp.KindObservation, fmt.Sprintf("%s ended %s: %s", name, c.State, cmp.Or(c.Stopped, "no reason given"))
	if c.Stopped == "" && (c.State == "COMPLETED" || c.State == "DONE") {
		kind, summary = kmp.KindSuccessPath, fmt.Sprintf("%s completed (%s) for: %s", name, c.State, firstLine(c.Brief))
	}
	ev := []string{fmt.Sprintf("instance %s ended in %s", c.InstanceID, c.State)}
	for _, r := range c.Records {
		line := fmt.Sprintf("step %s round %d %s", r.Step, r.Iteration, r.Status)
		if ch := r.Check; ch != nil && ch.Program != "" {
			line += "; check " + checkLine(*ch)
		}
		ev = append(ev, line)
	}
	mem := kmp.Memory{ID: "outcome", Kind: kind, Summary: jobs.Bound(summary, 1000), Evidence: strings.Join(ev, "\n")}
	about := SessionAbout(d.t.Current())
	if m.Cause != "" && m.About == about {
		mem.ConnectTo = []kmp.Link{{Ref: m.Cause, Rel: "follows", Why: "how the ceremony that found this ended", Evidence: c.InstanceID, Confidence: "medium"}}
	}
	res, err := d.writeMemory(ctx, kmp.WriteRequest{About: about, Actor: memoryActor, Labels: m.Labels,
		IdempotencyKey: memoryKey(ctx, c.InstanceID+"/outcome", 1), Memories: []kmp.Memory{mem}})
	if err != nil {
		return err
	}
	m.Reports = append(m.Reports, res.Report("outcome"))
	return nil
}
