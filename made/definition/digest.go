package definition

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
)

// digestScheme is MADE's domain separator for definition digests.
const digestScheme = "underpass.made.ceremony-definition.v1"

// Digest is a definition's semantic digest: hex SHA-256 of MADE's scheme
// name followed by the canonical JSON of the definition (§7 of the
// reference), so formatting, comments and key order do not change it.
//
// For what made-mcp 0.1.6 knows, the canonical JSON is exactly 0.1.6's:
//
//	{"name","version","description"|null,"inputs":{…},"outputs":{…},
//	 "states":{…},"transitions":[…],"steps":{…},"step_order":[…],
//	 "guards":{…},"roles":{…}}
//
// with maps (nested config maps too) and required_guards sorted by bytes,
// allowed_actions sorted by kind then value, backoff and timeout in
// milliseconds, serde_json escaping and number forms.
//
// The newer constructs extend it, and only when a definition uses them, so
// a 0.1.6 definition keeps its 0.1.6 digest:
//
//   - a step whose num_agents is not 1, see_prior not true or that has a
//     repeat gets, after "timeout", "num_agents":N,"see_prior":B,
//     "repeat":{"max_iterations":N,"until":{"output_field":F,"equals":V}}|null;
//   - a state with a repeat gets, after "kind", "repeat":{"max_iterations":N,
//     "until":{"step_id":S,"output_field":F,"equals":V}};
//   - guard conditions {"kind":"output_field","step_id":S,"field":F,"value":V},
//     {"kind":"step_repeat_exhausted","step_id":S} and
//     {"kind":"state_repeat_exhausted","state_id":S};
//   - a definition declaring any limit gets, after "roles",
//     "limits":{"max_parallel":N|null,"max_transitions":N|null,"max_bounces":N|null}.
//
// The first declaration of a duplicated id is the one hashed; a definition
// with duplicates cannot be published anyway.
func Digest(def *Definition) string {
	var w canonicalWriter
	w.definition(def)
	sum := sha256.Sum256(append([]byte(digestScheme), w.b.String()...))
	return hex.EncodeToString(sum[:])
}

// canonicalWriter writes compact JSON as serde_json does.
type canonicalWriter struct {
	b strings.Builder
}

func (w *canonicalWriter) raw(s string) { w.b.WriteString(s) }

// key writes a member name and colon, with a comma before it unless first.
func (w *canonicalWriter) key(first bool, name string) {
	if !first {
		w.raw(",")
	}
	w.str(name)
	w.raw(":")
}

// str writes a JSON string escaping only '"', '\' and control characters,
// as serde_json does.
func (w *canonicalWriter) str(s string) {
	const hexDigits = "0123456789abcdef"
	w.raw(`"`)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			w.raw(`\"`)
		case c == '\\':
			w.raw(`\\`)
		case c == '\n':
			w.raw(`\n`)
		case c == '\r':
			w.raw(`\r`)
		case c == '\t':
			w.raw(`\t`)
		case c == '\b':
			w.raw(`\b`)
		case c == '\f':
			w.raw(`\f`)
		case c < 0x20:
			w.raw(`\u00`)
			w.b.WriteByte(hexDigits[c>>4])
			w.b.WriteByte(hexDigits[c&0xf])
		default:
			w.b.WriteByte(c)
		}
	}
	w.raw(`"`)
}

func (w *canonicalWriter) strOrNull(s string) {
	if s == "" {
		w.raw("null")
		return
	}
	w.str(s)
}

func (w *canonicalWriter) intOrNull(n *int) {
	if n == nil {
		w.raw("null")
		return
	}
	w.raw(strconv.Itoa(*n))
}

func (w *canonicalWriter) strList(items []string) {
	w.raw("[")
	for i, s := range items {
		if i > 0 {
			w.raw(",")
		}
		w.str(s)
	}
	w.raw("]")
}

// value writes a configuration or comparison value.
func (w *canonicalWriter) value(v any) {
	switch x := v.(type) {
	case nil:
		w.raw("null")
	case bool:
		w.raw(strconv.FormatBool(x))
	case string:
		w.str(x)
	case int:
		w.raw(strconv.Itoa(x))
	case int64:
		w.raw(strconv.FormatInt(x, 10))
	case uint64:
		w.raw(strconv.FormatUint(x, 10))
	case float64:
		w.raw(formatFloat(x))
	case []any:
		w.raw("[")
		for i, item := range x {
			if i > 0 {
				w.raw(",")
			}
			w.value(item)
		}
		w.raw("]")
	case map[string]any:
		w.raw("{")
		for i, k := range sortedKeys(x) {
			w.key(i == 0, k)
			w.value(x[k])
		}
		w.raw("}")
	default:
		w.raw("null")
	}
}

// formatFloat writes a float the way serde_json (ryu) does: the shortest
// digits that round-trip, ".0" on integral values below 1e16, scientific
// notation outside [1e-5, 1e16).
func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(exp)
	n := len(digits)
	kk := e + 1 // the value is 0.digits × 10^kk
	k := kk - n // and digits × 10^k
	switch {
	case k >= 0 && kk <= 16:
		return sign + digits + strings.Repeat("0", k) + ".0"
	case kk > 0 && kk <= 16:
		return sign + digits[:kk] + "." + digits[kk:]
	case kk > -5 && kk <= 0:
		return sign + "0." + strings.Repeat("0", -kk) + digits
	case n == 1:
		return sign + digits + "e" + strconv.Itoa(kk-1)
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + strconv.Itoa(kk-1)
}

func (w *canonicalWriter) definition(def *Definition) {
	ix := def.Index()
	w.raw("{")
	w.key(true, "name")
	w.str(def.Name)
	w.key(false, "version")
	w.str(def.Version)
	w.key(false, "description")
	w.strOrNull(def.Description)
	w.key(false, "inputs")
	w.inputs(def.Inputs)
	w.key(false, "outputs")
	w.outputs(def.Outputs)
	w.key(false, "states")
	w.states(ix.States)
	w.key(false, "transitions")
	w.transitions(def.Transitions)
	w.key(false, "steps")
	w.steps(ix.Steps, def)
	w.key(false, "step_order")
	w.strList(def.StepIDs())
	w.key(false, "guards")
	w.guards(ix.Guards)
	w.key(false, "roles")
	w.roles(ix.Roles)
	if def.MaxParallel != nil || def.MaxTransitions != nil || def.MaxBounces != nil {
		w.key(false, "limits")
		w.raw("{")
		w.key(true, "max_parallel")
		w.intOrNull(def.MaxParallel)
		w.key(false, "max_transitions")
		w.intOrNull(def.MaxTransitions)
		w.key(false, "max_bounces")
		w.intOrNull(def.MaxBounces)
		w.raw("}")
	}
	w.raw("}")
}

func (w *canonicalWriter) inputs(inputs []Input) {
	byName := map[string]Input{}
	for _, in := range inputs {
		if _, dup := byName[in.Name]; !dup {
			byName[in.Name] = in
		}
	}
	w.raw("{")
	for i, name := range sortedKeys(byName) {
		w.key(i == 0, name)
		w.raw(`{"name":`)
		w.str(name)
		w.raw(`,"requirement":`)
		if byName[name].Required {
			w.str("required")
		} else {
			w.str("optional")
		}
		w.raw("}")
	}
	w.raw("}")
}

func (w *canonicalWriter) outputs(outputs []string) {
	names := sortedUnique(append([]string(nil), outputs...))
	w.raw("{")
	for i, name := range names {
		w.key(i == 0, name)
		w.raw(`{"name":`)
		w.str(name)
		w.raw("}")
	}
	w.raw("}")
}

func (w *canonicalWriter) states(states map[string]State) {
	w.raw("{")
	for i, id := range sortedKeys(states) {
		s := states[id]
		w.key(i == 0, id)
		w.raw(`{"id":`)
		w.str(id)
		w.raw(`,"kind":`)
		w.str(string(s.Kind))
		if s.Repeat != nil {
			w.raw(`,"repeat":`)
			w.repeat(s.Repeat, true)
		}
		w.raw("}")
	}
	w.raw("}")
}

func (w *canonicalWriter) repeat(r *Repeat, forState bool) {
	w.raw(`{"max_iterations":`)
	w.raw(strconv.Itoa(r.MaxIterations))
	w.raw(`,"until":{`)
	if forState {
		w.key(true, "step_id")
		w.str(r.Until.Step)
	}
	w.key(!forState, "output_field")
	w.str(r.Until.OutputField)
	w.key(false, "equals")
	w.value(r.Until.Equals)
	w.raw("}}")
}

func (w *canonicalWriter) transitions(transitions []Transition) {
	w.raw("[")
	for i, t := range transitions {
		if i > 0 {
			w.raw(",")
		}
		w.raw(`{"from":`)
		w.str(t.From)
		w.raw(`,"to":`)
		w.str(t.To)
		w.raw(`,"trigger":`)
		w.str(t.Trigger)
		w.raw(`,"required_guards":`)
		w.strList(sortedUnique(append([]string(nil), t.Guards...)))
		w.raw("}")
	}
	w.raw("]")
}

func (w *canonicalWriter) steps(steps map[string]Step, def *Definition) {
	w.raw("{")
	for i, id := range sortedKeys(steps) {
		s := steps[id]
		w.key(i == 0, id)
		w.raw(`{"id":`)
		w.str(id)
		w.raw(`,"state_id":`)
		w.str(s.State)
		w.raw(`,"handler_kind":`)
		w.str(s.Handler)
		w.raw(`,"handler_config":`)
		w.value(orEmpty(s.Config))
		w.raw(`,"retry_policy":{"max_attempts":`)
		w.raw(strconv.Itoa(def.Retry.MaxAttempts))
		w.raw(`,"backoff":`)
		w.raw(strconv.FormatInt(def.Retry.Backoff.Milliseconds(), 10))
		w.raw(`},"timeout":`)
		if def.StepTimeout > 0 {
			w.raw(strconv.FormatInt(def.StepTimeout.Milliseconds(), 10))
		} else {
			w.raw("null")
		}
		if s.NumAgents != 1 || !s.SeePrior || s.Repeat != nil {
			w.stepExtension(s)
		}
		w.raw("}")
	}
	w.raw("}")
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func (w *canonicalWriter) stepExtension(s Step) {
	w.raw(`,"num_agents":`)
	w.raw(strconv.Itoa(s.NumAgents))
	w.raw(`,"see_prior":`)
	w.raw(strconv.FormatBool(s.SeePrior))
	w.raw(`,"repeat":`)
	if s.Repeat == nil {
		w.raw("null")
		return
	}
	w.repeat(s.Repeat, false)
}

func (w *canonicalWriter) guards(guards map[string]Guard) {
	w.raw("{")
	for i, name := range sortedKeys(guards) {
		w.key(i == 0, name)
		w.raw(`{"name":`)
		w.str(name)
		w.raw(`,"condition":`)
		w.condition(guards[name].Condition)
		w.raw("}")
	}
	w.raw("}")
}

func (w *canonicalWriter) condition(c GuardCondition) {
	w.raw(`{"kind":`)
	w.str(string(c.Kind))
	switch c.Kind {
	case GuardStepStatus:
		w.raw(`,"step_id":`)
		w.str(c.Step)
		w.raw(`,"status":`)
		w.str(c.Status)
	case GuardOutputField:
		w.raw(`,"step_id":`)
		w.str(c.Step)
		w.raw(`,"field":`)
		w.str(c.Field)
		w.raw(`,"value":`)
		w.value(c.Value)
	case GuardStepRepeatExhausted:
		w.raw(`,"step_id":`)
		w.str(c.Step)
	case GuardStateRepeatExhausted:
		w.raw(`,"state_id":`)
		w.str(c.State)
	}
	w.raw("}")
}

func (w *canonicalWriter) roles(roles map[string]Role) {
	w.raw("{")
	for i, id := range sortedKeys(roles) {
		w.key(i == 0, id)
		w.raw(`{"id":`)
		w.str(id)
		w.raw(`,"allowed_actions":[`)
		for j, a := range sortActions(append([]RoleAction(nil), roles[id].Actions...)) {
			if j > 0 {
				w.raw(",")
			}
			w.raw(`{"kind":`)
			w.str(string(a.Kind))
			if a.Kind == ActionStep || a.Kind == ActionTransition {
				w.raw(`,"value":`)
				w.str(a.Value)
			}
			w.raw("}")
		}
		w.raw("]}")
	}
	w.raw("}")
}
