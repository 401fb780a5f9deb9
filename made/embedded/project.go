package embedded

import (
	"fmt"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

// project derives an instance's projection, as made-mcp presents it (§4 of
// the reference), plus the newer constructs' fields.
func project(in *instanceState, p *published) made.Instance {
	digest := in.Digest
	out := made.Instance{
		CeremonyID:            in.ID,
		DefinitionName:        in.Name,
		DefinitionVersion:     in.Version,
		BoundDefinitionDigest: &digest,
		CurrentState:          in.CurrentState,
		Completed:             p.isTerminal(in.CurrentState) && in.CompletedAt != nil,
		WaitingForHuman:       []string{},
		Transitions:           []made.Transition{},
		Steps:                 []made.Step{},
		GuardDeferrals:        []made.GuardDeferral{},
		Interventions:         []any{},
		OpenInterventionIDs:   []string{},
		Context:               copyJSON(in.Context),
		ParticipantBindings:   []any{},
		Reasons:               []any{},
		TransitionCount:       in.TransitionCount,
		Bounces:               in.Bounces,
	}
	for _, t := range p.transitionsFrom(in.CurrentState) {
		pt := in.projectTransition(p, t)
		out.Transitions = append(out.Transitions, pt)
		out.WaitingForHuman = append(out.WaitingForHuman, waitingOn(pt)...)
	}
	for _, id := range p.def.StepIDs() {
		out.Steps = append(out.Steps, projectStep(id, p.ix.Steps[id].State, in.Steps[id]))
	}
	for _, s := range p.stepsOf(in.CurrentState) {
		if in.Steps[s.ID].Status != made.StepCompleted {
			id := s.ID
			out.NextStepID = &id
			break
		}
	}
	for _, d := range in.Deferrals {
		out.GuardDeferrals = append(out.GuardDeferrals, made.GuardDeferral{
			GuardName: d.Guard, Statement: d.Statement, Reason: d.Reason,
			ReconsiderWhen: append([]string{}, d.ReconsiderWhen...), DeferredAt: humanTime(d.At),
		})
	}
	if len(in.StateRounds) > 0 {
		out.StateIterations = map[string]int{}
		for id, r := range in.StateRounds {
			out.StateIterations[id] = r.Round
		}
	}
	return out
}

func (in *instanceState) projectTransition(p *published, t definition.Transition) made.Transition {
	pt := made.Transition{Trigger: t.Trigger, ToState: t.To, Enabled: true, Guards: []made.GuardStatus{}}
	for _, name := range t.Guards {
		kind := "automated"
		if p.ix.Guards[name].IsHuman() {
			kind = "human"
		}
		ok := in.satisfied(p, name)
		pt.Enabled = pt.Enabled && ok
		pt.Guards = append(pt.Guards, made.GuardStatus{Name: name, Kind: kind, Satisfied: ok})
	}
	return pt
}

// waitingOn lists a transition's unsatisfied human guards once its
// automated ones hold: only a person can move it then.
func waitingOn(t made.Transition) []string {
	var out []string
	for _, g := range t.Guards {
		if g.Kind != "human" && !g.Satisfied {
			return nil
		}
		if g.Kind == "human" && !g.Satisfied {
			out = append(out, g.Name)
		}
	}
	return out
}

func projectStep(id, state string, rec *stepState) made.Step {
	s := made.Step{
		StepID: id, StateID: state, Status: rec.Status, Attempt: rec.Attempt,
		Output: copyJSON(rec.Output), Iteration: rec.Iteration, RepeatExhausted: rec.RepeatExhausted,
	}
	if rec.Error != nil {
		msg := *rec.Error
		s.Error = &msg
	}
	return s
}

// copyJSON deep-copies a decoded JSON object (an empty one for nil).
func copyJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyJSONValue(v)
	}
	return out
}

func copyJSONValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return copyJSON(x)
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = copyJSONValue(item)
		}
		return out
	}
	return v
}

// humanTime writes a time as made-mcp's nested timestamps are written (the
// time crate's human-readable form): "2026-06-06 12:00:00.0 +00:00:00".
func humanTime(t time.Time) string {
	t = t.UTC()
	frac := strings.TrimRight(fmt.Sprintf("%09d", t.Nanosecond()), "0")
	if frac == "" {
		frac = "0"
	}
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%s +00:00:00",
		t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), frac)
}
