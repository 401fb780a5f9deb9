package definition

import (
	"sort"
	"strings"
	"unicode"
)

// The identifier checks of made-mcp's value objects, with its messages. A
// failure is a *made.Error of kind made.KindNotPublishable; an engine
// checking a verb's arguments with them reports it as its own kind.

// CheckID checks a step id, guard name or ceremony name and returns it
// trimmed: [a-z0-9_], at most maxLen bytes when maxLen > 0.
func CheckID(field, raw string, maxLen int) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", parseError("field `%s` must not be empty", field)
	}
	if err := checkLen(field, s, maxLen); err != nil {
		return "", err
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return "", parseError("field `%s` contains invalid characters", field)
		}
	}
	return s, nil
}

// CheckText checks a state, role, trigger, input or output name or a
// description and returns it trimmed: not empty, no control characters, at
// most maxLen bytes when maxLen > 0.
func CheckText(field, raw string, maxLen int) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", parseError("field `%s` must not be empty", field)
	}
	if err := checkLen(field, s, maxLen); err != nil {
		return "", err
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return "", parseError("field `%s` contains invalid characters", field)
	}
	return s, nil
}

func checkLen(field, s string, maxLen int) error {
	if maxLen > 0 && len(s) > maxLen {
		return parseError("field `%s` exceeds maximum length: %d > %d", field, len(s), maxLen)
	}
	return nil
}

// CheckVersion checks a ceremony version and returns it trimmed: [A-Za-z0-9._-],
// at most 64 bytes.
func CheckVersion(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", parseError("field `ceremony_version` must not be empty")
	}
	if err := checkLen("ceremony_version", s, 64); err != nil {
		return "", err
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			return "", parseError("field `ceremony_version` contains invalid characters")
		}
	}
	return s, nil
}

func handlerKind(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", parseError("field `step_handler_kind` must not be empty")
	}
	if err := checkLen("step_handler_kind", s, 128); err != nil {
		return "", err
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.", r)) {
			return "", parseError("field `step_handler_kind` contains invalid characters")
		}
	}
	return s, nil
}

func attributeKeys(config map[string]any) error {
	if len(config) > 1024 {
		return parseError("value `attributes.keys` out of range: %d not in [0, 1024]", len(config))
	}
	for k := range config {
		if strings.TrimSpace(k) == "" {
			return parseError("field `attributes.key` must not be empty")
		}
	}
	return nil
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
