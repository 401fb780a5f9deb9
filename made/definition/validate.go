package definition

import (
	"fmt"
	"sort"
)

// Severity says whether a finding blocks publication.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding is one defect of a definition (made_validate_ceremony_draft's
// findings): where it is and made-mcp's message for it.
type Finding struct {
	Severity Severity `json:"severity"`
	Locus    Locus    `json:"locus"`
	Message  string   `json:"message"`
}

// Locus is the element a finding is about. Kind is definition, input,
// output, state, transition, step, guard or role; the field of that kind
// (From and Trigger for a transition) names the element.
type Locus struct {
	Kind    string `json:"kind"`
	Input   string `json:"input,omitempty"`
	Output  string `json:"output,omitempty"`
	State   string `json:"state,omitempty"`
	From    string `json:"from,omitempty"`
	Trigger string `json:"trigger,omitempty"`
	Step    string `json:"step,omitempty"`
	Guard   string `json:"guard,omitempty"`
	Role    string `json:"role,omitempty"`
}

// String names the element in words, as made-mcp's explanations do.
func (l Locus) String() string {
	switch l.Kind {
	case "input":
		return fmt.Sprintf("input `%s`", l.Input)
	case "output":
		return fmt.Sprintf("output `%s`", l.Output)
	case "state":
		return fmt.Sprintf("state `%s`", l.State)
	case "transition":
		return fmt.Sprintf("transition `%s` out of state `%s`", l.Trigger, l.From)
	case "step":
		return fmt.Sprintf("step `%s`", l.Step)
	case "guard":
		return fmt.Sprintf("guard `%s`", l.Guard)
	case "role":
		return fmt.Sprintf("role `%s`", l.Role)
	}
	return "the definition"
}

// Validate reports every defect of a parsed definition, in made-mcp's
// check order, so the first error is the one publishing refuses with:
// duplicates, the initial state, the transition graph, steps (and state
// repeats), guards, roles, then reachability (warnings). Errors block
// publication; warnings do not.
func Validate(def *Definition) []Finding {
	v := &validator{ix: def.Index()}
	v.duplicates(def)
	v.initialState()
	v.transitionGraph(def)
	v.steps()
	v.stateRepeats()
	v.guards()
	v.roles(def)
	v.reachability(def)
	return v.findings
}

// FirstError returns the first finding that blocks publication.
func FirstError(findings []Finding) (Finding, bool) {
	for _, f := range findings {
		if f.Severity == SeverityError {
			return f, true
		}
	}
	return Finding{}, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type validator struct {
	ix       Index
	findings []Finding
}

func (v *validator) fail(l Locus, format string, args ...any) {
	v.findings = append(v.findings, Finding{Severity: SeverityError, Locus: l, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) warn(l Locus, message string) {
	v.findings = append(v.findings, Finding{Severity: SeverityWarning, Locus: l, Message: message})
}

func (v *validator) duplicates(def *Definition) {
	seen := map[string]bool{}
	dup := func(kind, id string) bool {
		key := kind + "\x00" + id
		d := seen[key]
		seen[key] = true
		return d
	}
	for _, in := range def.Inputs {
		if dup("input", in.Name) {
			v.fail(Locus{Kind: "input", Input: in.Name}, "already exists: ceremony_input")
		}
	}
	for _, out := range def.Outputs {
		if dup("output", out) {
			v.fail(Locus{Kind: "output", Output: out}, "already exists: ceremony_output")
		}
	}
	for _, s := range def.States {
		if dup("state", s.ID) {
			v.fail(Locus{Kind: "state", State: s.ID}, "already exists: ceremony_state")
		}
	}
	for _, s := range def.Steps {
		if dup("step", s.ID) {
			v.fail(Locus{Kind: "step", Step: s.ID}, "already exists: ceremony_step")
		}
	}
	for _, g := range def.Guards {
		if dup("guard", g.Name) {
			v.fail(Locus{Kind: "guard", Guard: g.Name}, "already exists: ceremony_guard")
		}
	}
	for _, r := range def.Roles {
		if dup("role", r.ID) {
			v.fail(Locus{Kind: "role", Role: r.ID}, "already exists: ceremony_role")
		}
	}
}

func (v *validator) initialState() {
	if len(v.ix.States) == 0 {
		v.fail(Locus{Kind: "definition"}, "collection `ceremony_definition.states` must contain at least one element")
		return
	}
	if len(v.initialStates()) != 1 {
		v.fail(Locus{Kind: "definition"}, "invariant violated: ceremony definition must have exactly one initial state")
	}
}

func (v *validator) initialStates() []string {
	var out []string
	for _, id := range sortedKeys(v.ix.States) {
		if v.ix.States[id].Kind == StateInitial {
			out = append(out, id)
		}
	}
	return out
}

func (v *validator) transitionGraph(def *Definition) {
	pairs := map[[2]string]bool{}
	for _, t := range def.Transitions {
		l := Locus{Kind: "transition", From: t.From, Trigger: t.Trigger}
		from, ok := v.ix.States[t.From]
		switch {
		case !ok:
			v.fail(l, "not found: ceremony_transition.from_state")
			continue
		case !v.hasState(t.To):
			v.fail(l, "not found: ceremony_transition.to_state")
			continue
		case from.Kind == StateTerminal:
			v.fail(l, "invariant violated: terminal ceremony states cannot have outgoing transitions")
			continue
		case pairs[[2]string{t.From, t.Trigger}]:
			v.fail(l, "already exists: ceremony_transition.state_trigger")
			continue
		}
		pairs[[2]string{t.From, t.Trigger}] = true
		for _, g := range t.Guards {
			if _, ok := v.ix.Guards[g]; !ok {
				v.fail(l, "not found: ceremony_transition.guard")
			}
		}
	}
}

func (v *validator) hasState(id string) bool {
	_, ok := v.ix.States[id]
	return ok
}

func (v *validator) steps() {
	for _, id := range sortedKeys(v.ix.Steps) {
		l := Locus{Kind: "step", Step: id}
		state, ok := v.ix.States[v.ix.Steps[id].State]
		if !ok {
			v.fail(l, "not found: ceremony_step.state")
			continue
		}
		if state.Kind == StateTerminal {
			v.fail(l, "invariant violated: terminal ceremony states cannot own executable steps")
		}
	}
}

// stateRepeats checks the newer state repeats: a live state repeating on
// one of its own steps.
func (v *validator) stateRepeats() {
	for _, id := range sortedKeys(v.ix.States) {
		s := v.ix.States[id]
		if s.Repeat == nil {
			continue
		}
		l := Locus{Kind: "state", State: id}
		step, ok := v.ix.Steps[s.Repeat.Until.Step]
		switch {
		case s.Kind == StateTerminal:
			v.fail(l, "invariant violated: terminal ceremony states cannot repeat")
		case !ok:
			v.fail(l, "not found: ceremony_state.repeat.step")
		case step.State != id:
			v.fail(l, "invariant violated: a state repeat must read a step of its own state")
		}
	}
}

func (v *validator) guards() {
	for _, name := range sortedKeys(v.ix.Guards) {
		c := v.ix.Guards[name].Condition
		l := Locus{Kind: "guard", Guard: name}
		switch c.Kind {
		case GuardStepStatus, GuardOutputField, GuardStepRepeatExhausted:
			step, ok := v.ix.Steps[c.Step]
			if !ok {
				v.fail(l, "not found: ceremony_guard.step")
			} else if c.Kind == GuardStepRepeatExhausted && step.Repeat == nil {
				v.fail(l, "invariant violated: step_repeat_exhausted names a step without repeat")
			}
		case GuardStateRepeatExhausted:
			state, ok := v.ix.States[c.State]
			if !ok {
				v.fail(l, "not found: ceremony_guard.state")
			} else if state.Repeat == nil {
				v.fail(l, "invariant violated: state_repeat_exhausted names a state without repeat")
			}
		}
	}
}

func (v *validator) roles(def *Definition) {
	triggers := map[string]bool{}
	for _, t := range def.Transitions {
		triggers[t.Trigger] = true
	}
	for _, id := range sortedKeys(v.ix.Roles) {
		l := Locus{Kind: "role", Role: id}
		for _, a := range v.ix.Roles[id].Actions {
			if _, ok := v.ix.Steps[a.Value]; a.Kind == ActionStep && !ok {
				v.fail(l, "not found: ceremony_role.step_action")
			}
			if a.Kind == ActionTransition && !triggers[a.Value] {
				v.fail(l, "not found: ceremony_role.transition_action")
			}
		}
	}
}

// reachability warns about a machine that can stall. It is skipped when
// the graph is not sound enough to walk.
func (v *validator) reachability(def *Definition) {
	initial := v.initialStates()
	if len(initial) != 1 {
		return
	}
	for _, t := range def.Transitions {
		if !v.hasState(t.From) || !v.hasState(t.To) {
			return
		}
	}
	hasTerminal := false
	for _, s := range v.ix.States {
		hasTerminal = hasTerminal || s.Kind == StateTerminal
	}
	if !hasTerminal {
		v.warn(Locus{Kind: "definition"}, "invariant violated: ceremony definition has no terminal state")
		return
	}
	reached := reachableFrom(initial[0], def.Transitions)
	finishing := reachingTerminal(v.ix.States, def.Transitions)
	for _, id := range sortedKeys(v.ix.States) {
		l := Locus{Kind: "state", State: id}
		if !reached[id] {
			v.warn(l, "invariant violated: ceremony state is unreachable from the initial state")
		} else if !finishing[id] {
			v.warn(l, "invariant violated: no terminal state is reachable from this ceremony state")
		}
	}
}

func reachableFrom(initial string, transitions []Transition) map[string]bool {
	reached := map[string]bool{}
	pending := []string{initial}
	for len(pending) > 0 {
		cur := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if reached[cur] {
			continue
		}
		reached[cur] = true
		for _, t := range transitions {
			if t.From == cur {
				pending = append(pending, t.To)
			}
		}
	}
	return reached
}

func reachingTerminal(states map[string]State, transitions []Transition) map[string]bool {
	can := map[string]bool{}
	for id, s := range states {
		if s.Kind == StateTerminal {
			can[id] = true
		}
	}
	for grew := true; grew; {
		grew = false
		for _, t := range transitions {
			if can[t.To] && !can[t.From] {
				can[t.From] = true
				grew = true
			}
		}
	}
	return can
}
