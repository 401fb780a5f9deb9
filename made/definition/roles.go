package definition

import (
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

func (p *defParser) roles() error {
	nodes, err := p.top.seq("roles")
	if err != nil {
		return err
	}
	steps := map[string]bool{}
	for _, s := range p.def.Steps {
		steps[s.ID] = true
	}
	triggers := map[string]bool{}
	for _, t := range p.def.Transitions {
		triggers[t.Trigger] = true
	}
	for i, n := range nodes {
		r, err := parseRole(n, itemPlace("role", "roles", n, i), steps, triggers)
		if err != nil {
			return err
		}
		p.def.Roles = append(p.def.Roles, r)
	}
	return nil
}

func parseRole(n *yaml.Node, place string, steps, triggers map[string]bool) (Role, error) {
	m, err := newYAMLMap(n, place)
	if err != nil {
		return Role{}, err
	}
	if err := m.only("id", "allowed_actions"); err != nil {
		return Role{}, err
	}
	id, err := m.reqStr("id")
	if err != nil {
		return Role{}, err
	}
	labels, err := m.strList("allowed_actions")
	if err != nil {
		return Role{}, err
	}
	r := Role{}
	if r.ID, err = CheckText("role_id", id, 0); err != nil {
		return Role{}, err
	}
	for _, label := range labels {
		a, err := resolveAction(strings.TrimSpace(label), steps, triggers)
		if err != nil {
			return Role{}, err
		}
		r.Actions = append(r.Actions, a)
	}
	if len(r.Actions) == 0 {
		return Role{}, parseError("collection `ceremony_role.allowed_actions` must contain at least one element")
	}
	r.Actions = sortActions(r.Actions)
	return r, nil
}

// resolveAction reads an allowed_actions label: a step id, a trigger or a
// capability, never two of them. A label naming nothing is taken as a step
// when it reads as a step id and as a trigger otherwise; Validate reports it.
func resolveAction(label string, steps, triggers map[string]bool) (RoleAction, error) {
	var capability ActionKind
	switch label {
	case string(ActionRequestIntervention), string(ActionRespondToIntervention):
		capability = ActionKind(label)
	}
	isStep, isTrigger := steps[label], triggers[label]
	switch {
	case boolCount(isStep, isTrigger, capability != "") > 1:
		return RoleAction{}, parseError("invariant violated: ceremony role action is ambiguous")
	case capability != "":
		return RoleAction{Kind: capability}, nil
	case isStep:
		return RoleAction{Kind: ActionStep, Value: label}, nil
	case isTrigger:
		return RoleAction{Kind: ActionTransition, Value: label}, nil
	}
	if id, err := CheckID("step_id", label, 0); err == nil {
		return RoleAction{Kind: ActionStep, Value: id}, nil
	}
	trigger, err := CheckText("transition_trigger", label, 0)
	return RoleAction{Kind: ActionTransition, Value: trigger}, err
}

func boolCount(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

var actionRank = map[ActionKind]int{
	ActionStep: 0, ActionTransition: 1, ActionRequestIntervention: 2, ActionRespondToIntervention: 3,
}

func sortActions(actions []RoleAction) []RoleAction {
	sort.Slice(actions, func(i, j int) bool {
		a, b := actions[i], actions[j]
		if actionRank[a.Kind] != actionRank[b.Kind] {
			return actionRank[a.Kind] < actionRank[b.Kind]
		}
		return a.Value < b.Value
	})
	out := actions[:0]
	for i, a := range actions {
		if i == 0 || a != actions[i-1] {
			out = append(out, a)
		}
	}
	return out
}
