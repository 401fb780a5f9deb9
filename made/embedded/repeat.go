package embedded

import (
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

// The newer constructs' semantics, which made-mcp 0.1.6 lacks.
//
// Step repeat: a completion with status completed whose output does not
// satisfy until sends the step back to pending for its next iteration
// (attempt 1 again, the output kept, so output_field guards read it) while
// the rounds run in this round of its state are fewer than max_iterations;
// the last one leaves it completed with repeat_exhausted. A completion
// that satisfies until completes it as usual. Retry attempts count per
// iteration.
//
// State repeat: when every step of a repeating state is completed and the
// until step's last completed output does not satisfy until, the state
// starts its next round (every step of it pending, next iteration, attempt
// 1, outputs kept) while its rounds are fewer than max_iterations; after
// the last one the state is exhausted (state_repeat_exhausted holds) and
// its steps stay completed.
//
// Re-entry: a transition into a state visited before (a bounce) resets the
// state's steps to a fresh start (pending, iteration 1, attempt 1, no
// output, no repeat exhaustion) and its repeat to round 1, so nothing of
// the earlier visit satisfies a guard.

// repeatStep applies a step's repeat after a completion with status
// completed.
func repeatStep(def definition.Step, rec *stepState) {
	r := def.Repeat
	if r == nil || definition.OutputHas(rec.LastCompleted, r.Until.OutputField, r.Until.Equals) {
		return
	}
	if rec.Iteration-rec.RoundStart+1 < r.MaxIterations {
		rec.Status = made.StepPending
		rec.Iteration++
		rec.Attempt = 1
		return
	}
	rec.RepeatExhausted = true
}

// repeatState applies the current state's repeat once all its steps are
// completed.
func (in *instanceState) repeatState(p *published) {
	state := in.CurrentState
	r, rnd := p.ix.States[state].Repeat, in.StateRounds[state]
	if r == nil || rnd == nil || rnd.Exhausted {
		return
	}
	steps := p.stepsOf(state)
	for _, s := range steps {
		if in.Steps[s.ID].Status != made.StepCompleted {
			return
		}
	}
	if rec, ok := in.Steps[r.Until.Step]; ok && definition.OutputHas(rec.LastCompleted, r.Until.OutputField, r.Until.Equals) {
		return
	}
	if rnd.Round >= r.MaxIterations {
		rnd.Exhausted = true
		return
	}
	rnd.Round++
	for _, s := range steps {
		rec := in.Steps[s.ID]
		rec.Status, rec.Attempt, rec.Error, rec.RepeatExhausted = made.StepPending, 1, nil, false
		rec.Iteration++
		rec.RoundStart = rec.Iteration
	}
}

// reenter resets a state visited before.
func (in *instanceState) reenter(p *published, state string) {
	for _, s := range p.stepsOf(state) {
		in.Steps[s.ID] = freshStep()
	}
	if rnd, ok := in.StateRounds[state]; ok {
		*rnd = round{Round: 1}
	}
}
