package made

// published is a definition the embedded engine serves: parsed, indexed,
// with the digest it was published under. broken is set when the stored
// YAML no longer parses or no longer has that digest (an older store read
// by a newer engine); its instances cannot be rehydrated then.
type published struct {
	def    *Definition
	ix     index
	digest string
	yaml   string
	roles  []RoleDef // by id, the order made-mcp picks a seat in
	broken *Error
}

func publishedKey(name, version string) string { return name + "\x00" + version }

func newPublished(def *Definition, digest, yaml string) *published {
	ix := indexDefinition(def)
	p := &published{def: def, ix: ix, digest: digest, yaml: yaml}
	for _, id := range sortedKeys(ix.roles) {
		p.roles = append(p.roles, ix.roles[id])
	}
	return p
}

// loadPublished re-reads a stored definition and checks its digest.
func loadPublished(d storedDefinition) *published {
	def, err := Parse([]byte(d.YAML))
	if err != nil {
		def = &Definition{Name: d.Name, Version: d.Version}
	}
	p := newPublished(def, d.Digest, d.YAML)
	if err != nil || Digest(def) != d.Digest {
		p.broken = newError(KindConflict, "%s", msgDigestMismatch)
	}
	return p
}

// roleFor is the first role, in id order, allowed the action.
func (p *published) roleFor(a RoleAction) (RoleDef, bool) {
	for _, r := range p.roles {
		if r.Allows(a) {
			return r, true
		}
	}
	return RoleDef{}, false
}

func (p *published) isTerminal(state string) bool {
	return p.ix.states[state].Kind == StateTerminal
}

// stepsOf are a state's steps in declaration order.
func (p *published) stepsOf(state string) []StepDef {
	var out []StepDef
	for _, id := range stepOrder(p.def) {
		if s := p.ix.steps[id]; s.State == state {
			out = append(out, s)
		}
	}
	return out
}

// transitionsFrom are a state's outgoing transitions in declaration order.
func (p *published) transitionsFrom(state string) []TransitionDef {
	var out []TransitionDef
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
func (p *published) mayApprove(role RoleDef, guard string) bool {
	for _, t := range p.def.Transitions {
		if contains(t.Guards, guard) && role.Allows(RoleAction{Kind: ActionTransition, Value: t.Trigger}) {
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
