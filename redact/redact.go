// Package redact masks credentials before anything is serialized: known
// credential fields in JSON objects, and configured secret values anywhere in
// strings.
//
// It owns the masking rules only. Which secrets to mask is the caller's
// choice (Secrets collects the usual ones from an environment), and so is
// where a Redactor is applied: the session store runs it over event data, and
// Codec plugs it into a Temporal data converter so that secrets never reach
// workflow history.
//
// Secret values shorter than MinSecretLen bytes are ignored: masking them
// would also mask ordinary words and numbers. Every occurrence of a configured
// value is replaced by Marker; where occurrences of several values overlap,
// their union becomes a single Marker, so the outcome does not depend on the
// order of the values (longer values win, as if they were replaced first).
package redact

import (
	"cmp"
	"slices"
	"strings"
)

// Marker replaces every masked value.
const Marker = "[REDACTED]"

// MinSecretLen is the shortest secret value New keeps, in bytes.
const MinSecretLen = 8

// Redactor masks a fixed set of secret values. It is immutable after New and
// safe for concurrent use. A nil *Redactor masks no values but still masks
// credential fields in JSON.
type Redactor struct {
	secrets []string // distinct, at least MinSecretLen bytes, longest first
}

// New returns a Redactor for the given secret values. Values shorter than
// MinSecretLen bytes (8) are ignored because they would mask ordinary words;
// empty strings and duplicates are dropped. Longer values are matched first.
func New(secrets []string) *Redactor {
	kept := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if len(s) < MinSecretLen || slices.Contains(kept, s) {
			continue
		}
		kept = append(kept, s)
	}
	slices.SortStableFunc(kept, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return &Redactor{secrets: kept}
}

// String replaces every occurrence of a secret value in s with Marker.
// Overlapping occurrences are merged into one Marker. It returns s itself
// when nothing matches.
func (r *Redactor) String(s string) string {
	spans := r.spans(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(Marker)
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// contains reports whether s holds any secret value.
func (r *Redactor) contains(s string) bool {
	if r == nil {
		return false
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

type span struct{ start, end int }

// spans returns the byte ranges of s covered by secret values, sorted and
// with overlapping ranges merged.
func (r *Redactor) spans(s string) []span {
	if !r.contains(s) {
		return nil
	}
	var all []span
	for _, sec := range r.secrets {
		for i := 0; i+len(sec) <= len(s); {
			j := strings.Index(s[i:], sec)
			if j < 0 {
				break
			}
			start := i + j
			all = append(all, span{start, start + len(sec)})
			i = start + 1 // occurrences of one value may overlap
		}
	}
	slices.SortFunc(all, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := all[:1]
	for _, sp := range all[1:] {
		last := &merged[len(merged)-1]
		if sp.start < last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}
