package activities

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made/definition"
)

// ValidateYAML reads and validates a definition a person wrote, before it
// is published: MADE's parser and validator (made/definition), with errors
// that name the line. A YAML error is yaml's own, with its line; for a
// value holding ": " unquoted, the most common, it says to quote it. Each
// error finding of the validator is given on the line of the element it
// is about, all of them at once; warnings come back beside the definition,
// each with its line too.
func ValidateYAML(y []byte) (*definition.Definition, []string, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(y, &root); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if strings.Contains(msg, "mapping values are not allowed in this context") {
			msg += `: a value that holds ": " must be quoted, as in description: "Review: the change"`
		}
		return nil, nil, errors.New(msg)
	}
	def, err := definition.Parse(y)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasPrefix(def.Name, ceremonies.ReservedPrefix) {
		return nil, nil, fmt.Errorf("line %d: name %s: names that begin with %s are axlrd's own definitions; publish yours under another name",
			keyLine(&root, "name"), def.Name, ceremonies.ReservedPrefix)
	}
	var errs, warnings []string
	for _, f := range definition.Validate(def) {
		line := fmt.Sprintf("line %d: %s: %s", locusLine(&root, f.Locus), f.Locus, f.Message)
		if f.Severity == definition.SeverityError {
			errs = append(errs, line)
		} else {
			warnings = append(warnings, line)
		}
	}
	if len(errs) > 0 {
		return nil, warnings, fmt.Errorf("%s %s is not publishable:\n%s", def.Name, def.Version, strings.Join(errs, "\n"))
	}
	return def, warnings, nil
}

// locusLine is the line of the element a finding is about, or of its
// section, or 1.
func locusLine(root *yaml.Node, l definition.Locus) int {
	doc := document(root)
	byID := func(section string, match func(item *yaml.Node) bool) int {
		seq := value(doc, section)
		if seq == nil {
			return keyLine(root, section)
		}
		for _, item := range seq.Content {
			if match(item) {
				return item.Line
			}
		}
		return keyLine(root, section)
	}
	is := func(key, want string) func(*yaml.Node) bool {
		return func(item *yaml.Node) bool {
			v := value(item, key)
			return v != nil && v.Value == want
		}
	}
	switch l.Kind {
	case "state":
		return byID("states", is("id", l.State))
	case "step":
		return byID("steps", is("id", l.Step))
	case "role":
		return byID("roles", is("id", l.Role))
	case "transition":
		return byID("transitions", func(item *yaml.Node) bool { return is("from", l.From)(item) && is("trigger", l.Trigger)(item) })
	case "guard":
		if g := value(value(doc, "guards"), l.Guard); g != nil {
			return g.Line
		}
		return keyLine(root, "guards")
	case "output":
		if o := value(value(doc, "outputs"), l.Output); o != nil {
			return o.Line
		}
		return keyLine(root, "outputs")
	case "input":
		return keyLine(root, "inputs")
	}
	return 1
}

// keyLine is the line of a top-level key, or 1.
func keyLine(root *yaml.Node, key string) int {
	doc := document(root)
	if doc == nil {
		return 1
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == key {
			return doc.Content[i].Line
		}
	}
	return 1
}

// document is the top-level mapping of a parsed YAML document.
func document(root *yaml.Node) *yaml.Node {
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 && root.Content[0].Kind == yaml.MappingNode {
		return root.Content[0]
	}
	return nil
}

// value is the value of key in mapping m, or nil.
func value(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
