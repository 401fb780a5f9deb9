package ceremonies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// A person's own definition, published with axlr-tui ceremonies publish,
// runs through the generic loop (/ceremony, --ceremony): AXLR knows
// nothing of its steps but what the definition says, so the model is
// given each step's config.prompt with HandBackPrompt, and the step is
// completed with exactly the fields the model hands back.

// ModeCeremony is the work mode of the generic loop; the session keeps
// the definition it runs beside it.
const ModeCeremony = "ceremony"

// ReservedPrefix begins the names of axlrd's own definitions: a person's
// definition may not take one, so it can neither replace a built-in one
// nor be mistaken for one.
const ReservedPrefix = "axlr_"

// HandBackPrompt follows each step's config.prompt in a person's
// definition.
const HandBackPrompt = "Hand it back with axlr_step_done, giving the fields the step asks for as JSON fields."

// Limits of a hand-back of a person's step, which MADE keeps whole.
const (
	MaxPublishedFields   = 64
	MaxPublishedHandBack = 64 << 10
)

// ParseRef reads NAME or NAME@VERSION, the way a person names a published
// definition; an empty version is the newest published one.
func ParseRef(ref string) (name, version string, err error) {
	name, version, _ = strings.Cut(strings.TrimSpace(ref), "@")
	if !only(name, "abcdefghijklmnopqrstuvwxyz0123456789_", 128) {
		return "", "", fmt.Errorf("definition %q: the name is lowercase letters, digits and _ (NAME or NAME@VERSION)", ref)
	}
	if strings.Contains(ref, "@") {
		if !only(version, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", 64) {
			return "", "", fmt.Errorf("definition %q: the version after @ is letters, digits, . _ and - (NAME@VERSION)", ref)
		}
	}
	if strings.HasPrefix(name, ReservedPrefix) {
		return "", "", fmt.Errorf("%s is one of axlrd's own definitions: %s", name, builtInStarts(name))
	}
	return name, version, nil
}

// builtInStarts says how one of axlrd's own definitions is run.
func builtInStarts(name string) string {
	for _, d := range definitions {
		if d.Name != name {
			continue
		}
		switch {
		case d.Job:
			return "axlr-tui --" + d.Mode + " runs it"
		case d.Plan:
			return "axlr-tui --plan runs it"
		}
		return "--mode " + d.Mode + " runs it"
	}
	return "names that begin with " + ReservedPrefix + " are not yours to run with --ceremony"
}

// PublishedStepDoneSchema is axlr_step_done's schema in a person's step:
// the step, and any field the step's prompt asks for.
func PublishedStepDoneSchema() (json.RawMessage, error) {
	return json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"step": map[string]any{"type": "string", "description": "The step you hand back (the open step)."},
		},
		"additionalProperties": true,
	})
}

// ValidatePublished checks a hand-back of a person's step: a JSON object
// whose step, when given, is the open one; every other field is the
// step's, handed to MADE as it is, within MaxPublishedFields fields and
// MaxPublishedHandBack bytes.
func ValidatePublished(step string, args []byte) (HandBack, error) {
	if len(args) > MaxPublishedHandBack {
		return HandBack{}, fmt.Errorf("the hand-back is %d bytes: at most %d; keep long text in a workspace file and hand back its path", len(args), MaxPublishedHandBack)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(orEmpty(args)))
	if err := dec.Decode(&raw); err != nil || raw == nil || dec.More() {
		return HandBack{}, errors.New("the hand-back is not one JSON object of the step's fields")
	}
	if s, ok := raw["step"]; ok {
		var name string
		if json.Unmarshal(s, &name) != nil || name != step {
			return HandBack{}, fmt.Errorf("the open step is %s, not %s", step, strings.Trim(string(s), `"`))
		}
		delete(raw, "step")
	}
	if len(raw) > MaxPublishedFields {
		return HandBack{}, fmt.Errorf("the hand-back has %d fields: at most %d", len(raw), MaxPublishedFields)
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	hb := HandBack{Fields: map[string]any{}}
	for _, name := range names {
		if strings.TrimSpace(name) == "" || !utf8.ValidString(name) || len(name) > 128 {
			return HandBack{}, fmt.Errorf("field %q: a field's name is 1 to 128 characters", name)
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw[name]))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return HandBack{}, fmt.Errorf("%s: %w", name, err)
		}
		hb.Fields[name] = v
	}
	return hb, nil
}

// only reports whether s is 1 to max bytes of the characters in set, as
// MADE checks a definition's name and version.
func only(s, set string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune(set, r) {
			return false
		}
	}
	return true
}
