package definition

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Parse reads a ceremony definition. It refuses what made-mcp 0.1.6 cannot
// parse (with its messages: bad YAML, a malformed identifier, an
// unsupported guard check, an ambiguous role action…) and, unlike 0.1.6,
// any key it does not know, naming the key and its place. Structural
// defects (an unknown state, a missing guard…) are Validate's.
//
// A failure is a *made.Error of kind made.KindNotPublishable whose message
// is the one made-mcp puts after "ceremony draft could not be parsed: ".
func Parse(data []byte) (*Definition, error) {
	root, err := decodeDocument(data)
	if err != nil {
		return nil, err
	}
	top, err := newYAMLMap(root, "the definition")
	if err != nil {
		return nil, err
	}
	if err := top.only("version", "name", "description", "inputs", "outputs", "states", "transitions",
		"steps", "guards", "roles", "timeouts", "retry_policies", "max_parallel", "max_transitions",
		"max_bounces"); err != nil {
		return nil, err
	}
	p := &defParser{top: top, def: &Definition{}}
	// The order is made-mcp's: what it checks first is reported first.
	for _, step := range []func() error{
		p.header, p.retryPolicy, p.timeouts, p.steps, p.transitions, p.guards, p.roles,
		p.identity, p.inputs, p.outputs, p.states, p.limits,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p.def, nil
}

type defParser struct {
	top           *yamlMap
	def           *Definition
	name, version string
	description   *string
}

// header reads the required keys first, as serde does.
func (p *defParser) header() error {
	var err error
	if p.version, err = p.top.reqStr("version"); err != nil {
		return err
	}
	if p.name, err = p.top.reqStr("name"); err != nil {
		return err
	}
	if d, ok, err := p.top.str("description"); err != nil {
		return err
	} else if ok {
		p.description = &d
	}
	return nil
}

func (p *defParser) retryPolicy() error {
	p.def.Retry = RetryPolicy{MaxAttempts: 1}
	policies, ok, err := p.top.mapping("retry_policies", "retry_policies")
	if err != nil || !ok {
		return err
	}
	if err := policies.only("default"); err != nil {
		return err
	}
	def, ok, err := policies.mapping("default", "retry_policies.default")
	if err != nil || !ok {
		return err
	}
	if err := def.only("max_attempts", "backoff_seconds"); err != nil {
		return err
	}
	attempts, ok, err := def.count("max_attempts", math.MaxUint32)
	if err != nil {
		return err
	}
	if !ok {
		return invalidYAML("missing key %q in %s", "max_attempts", def.place)
	}
	backoff, _, err := def.count("backoff_seconds", math.MaxInt64/uint64(time.Second))
	if err != nil {
		return err
	}
	if attempts == 0 {
		return parseError("value `step_attempt` must be non-zero")
	}
	p.def.Retry = RetryPolicy{MaxAttempts: int(attempts), Backoff: time.Duration(backoff) * time.Second}
	return nil
}

func (p *defParser) timeouts() error {
	t, ok, err := p.top.mapping("timeouts", "timeouts")
	if err != nil || !ok {
		return err
	}
	if err := t.only("step_default"); err != nil {
		return err
	}
	secs, _, err := t.count("step_default", math.MaxInt64/uint64(time.Second))
	p.def.StepTimeout = time.Duration(secs) * time.Second
	return err
}

func (p *defParser) steps() error {
	nodes, err := p.top.seq("steps")
	if err != nil {
		return err
	}
	for i, n := range nodes {
		s, err := parseStep(n, itemPlace("step", "steps", n, i))
		if err != nil {
			return err
		}
		p.def.Steps = append(p.def.Steps, s)
	}
	return nil
}

func parseStep(n *yaml.Node, place string) (Step, error) {
	m, err := newYAMLMap(n, place)
	if err != nil {
		return Step{}, err
	}
	if err := m.only("id", "state", "handler", "config", "num_agents", "see_prior", "repeat"); err != nil {
		return Step{}, err
	}
	raw := map[string]string{}
	for _, k := range []string{"id", "state", "handler"} {
		if raw[k], err = m.reqStr(k); err != nil {
			return Step{}, err
		}
	}
	s := Step{NumAgents: 1, SeePrior: true, Config: map[string]any{}}
	if c := m.node("config"); c != nil {
		cfg, err := newYAMLMap(c, place+" config")
		if err != nil {
			return Step{}, err
		}
		for _, k := range cfg.keys {
			if s.Config[k], err = configValue(cfg.vals[k], place+" config"); err != nil {
				return Step{}, err
			}
		}
	}
	agents, hasAgents, err := m.count("num_agents", math.MaxInt32)
	if err != nil {
		return Step{}, err
	}
	if see, ok, err := m.boolean("see_prior"); err != nil {
		return Step{}, err
	} else if ok {
		s.SeePrior = see
	}
	if s.Repeat, err = parseRepeat(m, false, "ceremony_step"); err != nil {
		return Step{}, err
	}
	if s.ID, err = CheckID("step_id", raw["id"], 0); err != nil {
		return Step{}, err
	}
	if s.State, err = CheckText("state_id", raw["state"], 0); err != nil {
		return Step{}, err
	}
	if s.Handler, err = handlerKind(raw["handler"]); err != nil {
		return Step{}, err
	}
	if err := attributeKeys(s.Config); err != nil {
		return Step{}, err
	}
	if hasAgents {
		if agents == 0 {
			return Step{}, parseError("value `ceremony_step.num_agents` must be non-zero")
		}
		s.NumAgents = int(agents)
	}
	return s, nil
}

// parseRepeat reads a step's (forState false) or a state's repeat.
func parseRepeat(owner *yamlMap, forState bool, field string) (*Repeat, error) {
	m, ok, err := owner.mapping("repeat", owner.place+" repeat")
	if err != nil || !ok {
		return nil, err
	}
	if err := m.only("max_iterations", "until"); err != nil {
		return nil, err
	}
	iterations, ok, err := m.count("max_iterations", math.MaxInt32)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, invalidYAML("missing key %q in %s", "max_iterations", m.place)
	}
	if m.node("until") == nil {
		return nil, invalidYAML("missing key %q in %s", "until", m.place)
	}
	until, err := parseUntil(m, forState)
	if err != nil {
		return nil, err
	}
	if iterations == 0 {
		return nil, parseError("value `%s.repeat.max_iterations` must be non-zero", field)
	}
	return &Repeat{MaxIterations: int(iterations), Until: until}, nil
}

func parseUntil(repeat *yamlMap, forState bool) (Until, error) {
	m, _, err := repeat.mapping("until", repeat.place+".until")
	if err != nil {
		return Until{}, err
	}
	keys := []string{"output_field", "equals"}
	if forState {
		keys = append(keys, "step")
	}
	if err := m.only(keys...); err != nil {
		return Until{}, err
	}
	var u Until
	if forState {
		step, err := m.reqStr("step")
		if err != nil {
			return Until{}, err
		}
		if u.Step, err = CheckID("step_id", step, 0); err != nil {
			return Until{}, err
		}
	}
	field, err := m.reqStr("output_field")
	if err != nil {
		return Until{}, err
	}
	if u.OutputField = strings.TrimSpace(field); u.OutputField == "" {
		return Until{}, parseError("field `repeat.until.output_field` must not be empty")
	}
	eq := m.node("equals")
	if eq == nil {
		return Until{}, invalidYAML("key %q in %s must be a boolean, number or string", "equals", m.place)
	}
	if eq.Kind != yaml.ScalarNode {
		return Until{}, invalidYAML("key %q in %s must be a boolean, number or string", "equals", m.place)
	}
	if u.Equals, err = scalarValue(eq, m.place); err != nil || u.Equals == nil {
		return Until{}, invalidYAML("key %q in %s must be a boolean, number or string", "equals", m.place)
	}
	return u, nil
}

func (p *defParser) transitions() error {
	nodes, err := p.top.seq("transitions")
	if err != nil {
		return err
	}
	for i, n := range nodes {
		t, err := parseTransition(n, i)
		if err != nil {
			return err
		}
		p.def.Transitions = append(p.def.Transitions, t)
	}
	return nil
}

func parseTransition(n *yaml.Node, i int) (Transition, error) {
	place := fmt.Sprintf("transitions[%d]", i)
	trigger, okT := scalarField(n, "trigger")
	from, okF := scalarField(n, "from")
	if okT && okF {
		place = fmt.Sprintf("transition %q from %q", trigger, from)
	}
	m, err := newYAMLMap(n, place)
	if err != nil {
		return Transition{}, err
	}
	if err := m.only("from", "to", "trigger", "guards"); err != nil {
		return Transition{}, err
	}
	raw := map[string]string{}
	for _, k := range []string{"from", "to", "trigger"} {
		if raw[k], err = m.reqStr(k); err != nil {
			return Transition{}, err
		}
	}
	guards, err := m.strList("guards")
	if err != nil {
		return Transition{}, err
	}
	var t Transition
	if t.From, err = CheckText("state_id", raw["from"], 0); err != nil {
		return Transition{}, err
	}
	if t.To, err = CheckText("state_id", raw["to"], 0); err != nil {
		return Transition{}, err
	}
	if t.Trigger, err = CheckText("transition_trigger", raw["trigger"], 0); err != nil {
		return Transition{}, err
	}
	t.Guards = []string{}
	for _, g := range guards {
		name, err := CheckID("guard_name", g, 0)
		if err != nil {
			return Transition{}, err
		}
		t.Guards = append(t.Guards, name)
	}
	t.Guards = sortedUnique(t.Guards)
	return t, nil
}

func (p *defParser) guards() error {
	m, ok, err := p.top.mapping("guards", "guards")
	if err != nil || !ok {
		return err
	}
	names := append([]string(nil), m.keys...)
	sort.Strings(names)
	for _, name := range names {
		g, err := parseGuard(name, m.vals[name])
		if err != nil {
			return err
		}
		p.def.Guards = append(p.def.Guards, g)
	}
	sort.SliceStable(p.def.Guards, func(i, j int) bool { return p.def.Guards[i].Name < p.def.Guards[j].Name })
	return nil
}

func parseGuard(rawName string, n *yaml.Node) (Guard, error) {
	m, err := newYAMLMap(n, fmt.Sprintf("guard %q", rawName))
	if err != nil {
		return Guard{}, err
	}
	if err := m.only("type", "check"); err != nil {
		return Guard{}, err
	}
	g := Guard{}
	if g.Type, err = m.reqStr("type"); err != nil {
		return Guard{}, err
	}
	if g.Check, err = m.reqStr("check"); err != nil {
		return Guard{}, err
	}
	if g.Condition, err = parseGuardCheck(g.Type, g.Check); err != nil {
		return Guard{}, err
	}
	if g.Name, err = CheckID("guard_name", rawName, 0); err != nil {
		return Guard{}, err
	}
	return g, nil
}

// identity checks the name, version and description.
func (p *defParser) identity() error {
	var err error
	if p.def.Name, err = CheckID("ceremony_name", p.name, 128); err != nil {
		return err
	}
	if p.def.Version, err = CheckVersion(p.version); err != nil {
		return err
	}
	if p.description != nil {
		p.def.Description, err = CheckText("ceremony_description", *p.description, 4096)
	}
	return err
}

func (p *defParser) inputs() error {
	m, ok, err := p.top.mapping("inputs", "inputs")
	if err != nil || !ok {
		return err
	}
	if err := m.only("required", "optional"); err != nil {
		return err
	}
	for _, req := range []bool{true, false} {
		key := map[bool]string{true: "required", false: "optional"}[req]
		names, err := m.strList(key)
		if err != nil {
			return err
		}
		for _, raw := range names {
			name, err := CheckText("input_name", raw, 0)
			if err != nil {
				return err
			}
			p.def.Inputs = append(p.def.Inputs, Input{Name: name, Required: req})
		}
	}
	return nil
}

func (p *defParser) outputs() error {
	m, ok, err := p.top.mapping("outputs", "outputs")
	if err != nil || !ok {
		return err
	}
	for _, raw := range m.keys {
		name, err := CheckText("output_name", raw, 0)
		if err != nil {
			return err
		}
		p.def.Outputs = append(p.def.Outputs, name)
	}
	return nil
}

func (p *defParser) states() error {
	nodes, err := p.top.seq("states")
	if err != nil {
		return err
	}
	for i, n := range nodes {
		s, err := parseState(n, itemPlace("state", "states", n, i))
		if err != nil {
			return err
		}
		p.def.States = append(p.def.States, s)
	}
	return nil
}

func parseState(n *yaml.Node, place string) (State, error) {
	m, err := newYAMLMap(n, place)
	if err != nil {
		return State{}, err
	}
	if err := m.only("id", "initial", "terminal", "repeat"); err != nil {
		return State{}, err
	}
	id, err := m.reqStr("id")
	if err != nil {
		return State{}, err
	}
	initial, _, err := m.boolean("initial")
	if err != nil {
		return State{}, err
	}
	terminal, _, err := m.boolean("terminal")
	if err != nil {
		return State{}, err
	}
	s := State{Kind: StateIntermediate}
	if s.Repeat, err = parseRepeat(m, true, "ceremony_state"); err != nil {
		return State{}, err
	}
	if initial && terminal {
		return State{}, parseError("invariant violated: ceremony state cannot be both initial and terminal")
	}
	if s.ID, err = CheckText("state_id", id, 0); err != nil {
		return State{}, err
	}
	switch {
	case initial:
		s.Kind = StateInitial
	case terminal:
		s.Kind = StateTerminal
	}
	return s, nil
}

func (p *defParser) limits() error {
	for _, l := range []struct {
		key string
		min uint64
		dst **int
	}{
		{"max_parallel", 1, &p.def.MaxParallel},
		{"max_transitions", 1, &p.def.MaxTransitions},
		{"max_bounces", 0, &p.def.MaxBounces},
	} {
		v, ok, err := p.top.count(l.key, math.MaxInt32)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if v < l.min {
			return parseError("value `ceremony_definition.%s` must be non-zero", l.key)
		}
		n := int(v)
		*l.dst = &n
	}
	return nil
}
