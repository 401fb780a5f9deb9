package definition

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"gopkg.in/yaml.v3"

	"github.com/underpass-ai/axlr/made"
)

// parseError is a definition that cannot be parsed. Its message is the
// domain error made-mcp puts after "ceremony draft could not be parsed: ".
func parseError(format string, args ...any) *made.Error {
	return &made.Error{Kind: made.KindNotPublishable, Message: fmt.Sprintf(format, args...)}
}

// invalidYAML is made-mcp's message for YAML it cannot read, with what was
// wrong and where when the document parsed but had the wrong shape.
func invalidYAML(format string, args ...any) *made.Error {
	if format == "" {
		return parseError("invariant violated: invalid ceremony yaml")
	}
	return parseError("invariant violated: invalid ceremony yaml: "+format, args...)
}

// decodeDocument reads exactly one YAML document.
func decodeDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, invalidYAML("the document is empty")
		}
		return nil, invalidYAML("")
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, invalidYAML("more than one YAML document")
	}
	if len(doc.Content) != 1 {
		return nil, invalidYAML("the document is empty")
	}
	return resolveAlias(doc.Content[0]), nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// isString reports whether a scalar reads as a string (serde_yaml has no
// timestamp type: a date is a string).
func isString(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	tag := n.ShortTag()
	return tag == "!!str" || tag == "!!timestamp"
}

// yamlMap is a YAML mapping being read, named by its place in the
// definition for messages ("step \"reproduce\"").
type yamlMap struct {
	place string
	keys  []string
	vals  map[string]*yaml.Node
}

func newYAMLMap(n *yaml.Node, place string) (*yamlMap, error) {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, invalidYAML("%s must be a mapping", place)
	}
	m := &yamlMap{place: place, vals: make(map[string]*yaml.Node, len(n.Content)/2)}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolveAlias(n.Content[i])
		if !isString(k) {
			return nil, invalidYAML("a key in %s is not a string", place)
		}
		if _, dup := m.vals[k.Value]; dup {
			return nil, invalidYAML("duplicate key %q in %s", k.Value, place)
		}
		m.keys = append(m.keys, k.Value)
		m.vals[k.Value] = resolveAlias(n.Content[i+1])
	}
	return m, nil
}

// only refuses the first key, in document order, that is not allowed.
func (m *yamlMap) only(allowed ...string) error {
	for _, k := range m.keys {
		known := false
		for _, a := range allowed {
			if k == a {
				known = true
				break
			}
		}
		if !known {
			return parseError("unknown key %q in %s", k, m.place)
		}
	}
	return nil
}

// node returns a key's value; nil when absent or null.
func (m *yamlMap) node(key string) *yaml.Node {
	n := m.vals[key]
	if isNull(n) {
		return nil
	}
	return n
}

func (m *yamlMap) str(key string) (string, bool, error) {
	n := m.node(key)
	if n == nil {
		return "", false, nil
	}
	if !isString(n) {
		return "", false, invalidYAML("key %q in %s must be a string", key, m.place)
	}
	return n.Value, true, nil
}

func (m *yamlMap) reqStr(key string) (string, error) {
	s, ok, err := m.str(key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", invalidYAML("missing key %q in %s", key, m.place)
	}
	return s, nil
}

func (m *yamlMap) boolean(key string) (value, ok bool, err error) {
	n := m.node(key)
	if n == nil {
		return false, false, nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, false, invalidYAML("key %q in %s must be true or false", key, m.place)
	}
	if err := n.Decode(&value); err != nil {
		return false, false, invalidYAML("key %q in %s must be true or false", key, m.place)
	}
	return value, true, nil
}

// count reads a non-negative integer no larger than limit.
func (m *yamlMap) count(key string, limit uint64) (uint64, bool, error) {
	n := m.node(key)
	if n == nil {
		return 0, false, nil
	}
	var v uint64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil || v > limit {
		return 0, false, invalidYAML("key %q in %s must be a non-negative integer", key, m.place)
	}
	return v, true, nil
}

func (m *yamlMap) mapping(key, place string) (*yamlMap, bool, error) {
	n := m.node(key)
	if n == nil {
		return nil, false, nil
	}
	sub, err := newYAMLMap(n, place)
	return sub, err == nil, err
}

func (m *yamlMap) seq(key string) ([]*yaml.Node, error) {
	n := m.node(key)
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, invalidYAML("key %q in %s must be a list", key, m.place)
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolveAlias(c)
	}
	return out, nil
}

func (m *yamlMap) strList(key string) ([]string, error) {
	items, err := m.seq(key)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, n := range items {
		if !isString(n) {
			return nil, invalidYAML("key %q in %s must be a list of strings", key, m.place)
		}
		out = append(out, n.Value)
	}
	return out, nil
}

// itemPlace names a list item by its id when it has a string one.
func itemPlace(kind, list string, n *yaml.Node, i int) string {
	if id, ok := scalarField(n, "id"); ok {
		return fmt.Sprintf("%s %q", kind, id)
	}
	return fmt.Sprintf("%s[%d]", list, i)
}

// scalarField returns a mapping's string value for a key, if it has one.
func scalarField(n *yaml.Node, key string) (string, bool) {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return "", false
	}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := resolveAlias(n.Content[j]), resolveAlias(n.Content[j+1])
		if k.Value == key && isString(v) {
			return v.Value, true
		}
	}
	return "", false
}

// scalarValue reads a scalar as serde_yaml reads it into JSON: a string,
// bool, int64, uint64, float64 or nil (also for a non-finite float, which
// JSON cannot carry).
func scalarValue(n *yaml.Node, place string) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, invalidYAML("%s: %q is not a boolean", place, n.Value)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return u, nil
		}
		return nil, invalidYAML("%s: %q is not an integer", place, n.Value)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, invalidYAML("%s: %q is not a number", place, n.Value)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, nil
		}
		return f, nil
	}
	return nil, invalidYAML("%s: unsupported value %q", place, n.Value)
}

// configValue reads a step's opaque configuration value.
func configValue(n *yaml.Node, place string) (any, error) {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		m, err := newYAMLMap(n, place)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m.keys))
		for _, k := range m.keys {
			v, err := configValue(m.vals[k], place)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := configValue(c, place)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		return scalarValue(n, place)
	}
	return nil, invalidYAML("%s: unsupported value", place)
}
