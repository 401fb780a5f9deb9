package embedded

import (
	"maps"
	"slices"

	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/definition"
)

// published is a definition the embedded engine serves: parsed, indexed,
// with the digest it was published under. broken is set when the stored
// YAML no longer parses or no longer has that digest (an older store read
// by a newer engine); its instances cannot be rehydrated then.
type published struct {
	def    *definition.Definition
	ix     definition.Index
	digest string
	yaml   string
	roles  []definition.Role // by id, the order made-mcp picks a seat in
	broken *made.Error
}

func publishedKey(name, version string) string { return name + "\x00" + version }

func newPublished(def *definition.Definition, digest, yaml string) *published {
	ix := def.Index()
	p := &published{def: def, ix: ix, digest: digest, yaml: yaml}
	for _, id := range slices.Sorted(maps.Keys(ix.Roles)) {
		p.roles = append(p.roles, ix.Roles[id])
	}
	return p
}

// loadPublished re-reads a stored definition and checks its digest.
func loadPublished(d storedDefinition) *published {
	def, err := definition.Parse([]byte(d.YAML))
	if err != nil {
		def = &definition.Definition{Name: d.Name, Version: d.Version}
	}
	p := newPublished(def, d.Digest, d.YAML)
	if err != nil || definition.Digest(def) != d.Digest {
		p.broken = newError(made.KindConflict, "%s", msgDigestMismatch)
	}
	return p
}

// roleFor is the first role, in id order, allowed the action.
func (p *published) roleFor(a definition.RoleAction) (definition.Role, bool) {
	for _, r := range p.roles {
		if r.Allows(a) {
			return r, true
		}
	}
	return definition.Role{}, false
}

func (p *published) isTerminal(state string) bool {
	return p.ix.States[state].Kind == definition.StateTerminal
}

// stepsOf are a state's steps in declaration order.
func (p *published) stepsOf(state string) []definition.Step {
	var out []definition.Step
	for _, id := range p.def.StepIDs() {
		if s := p.ix.Steps[id]; s.State == state {
			out = append(out, s)
		}
	}
	return out
}

// transitionsFrom are a state's outgoing transitions in declaration order.
func (p *published) transitionsFrom(state string) []definition.Transition {
	var out []definition.Transition
	for _, t := range p.def.Transitions {
		if t.From == state {
			out = append(out, t)
		}
	}
	return out
}

// requiredFrom reports whether a transition out of the state needs the
// guard.
func (p *published) requiredFrom(state, guard string) bool {
	for _, t := range p.transitionsFrom(state) {
		if contains(t.Guards, guard) {
			return true
		}
	}
	return false
}

// mayApprove reports whether the role may fire a transition that needs the
// guard.
func (p *published) mayApprove(role definition.Role, guard string) bool {
	for _, t := range p.def.Transitions {
		if contains(t.Guards, guard) && role.Allows(definition.RoleAction{Kind: definition.ActionTransition, Value: t.Trigger}) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
