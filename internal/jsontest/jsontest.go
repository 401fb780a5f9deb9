// Package jsontest holds what tests that pin a record's JSON share: the
// keys a value encodes to, nested objects' keys as parent.child.
package jsontest

import (
	"encoding/json"
	"slices"
	"testing"
)

// Keys returns the sorted keys of the JSON object data, and of its nested
// objects as parent.child (an array's are its first element's).
func Keys(t testing.TB, data []byte) []string {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k, v := range obj {
		out = append(out, k)
		if len(v) > 0 && v[0] == '[' {
			var items []json.RawMessage
			if err := json.Unmarshal(v, &items); err != nil {
				t.Fatal(err)
			}
			if len(items) == 0 {
				continue
			}
			v = items[0]
		}
		if len(v) > 0 && v[0] == '{' {
			for _, sub := range Keys(t, v) {
				out = append(out, k+"."+sub)
			}
		}
	}
	slices.Sort(out)
	return out
}
