package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/jsonargs"
)

type testSchema struct {
	Type                 string                 `json:"type"`
	Description          string                 `json:"description"`
	Properties           map[string]*testSchema `json:"properties"`
	Required             []string               `json:"required"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
	Items                *testSchema            `json:"items"`
	Enum                 []string               `json:"enum"`
	Minimum              *int64                 `json:"minimum"`
	Maximum              *int64                 `json:"maximum"`
}

func TestSchema(t *testing.T) {
	argTypes := map[string]any{Read: &ReadArgs{}, Write: &WriteArgs{}, Edit: &EditArgs{}, Exec: &ExecArgs{}, Search: &SearchArgs{}, List: &ListArgs{}}
	required := map[string][]string{Read: {"path"}, Write: {"path", "content", "mode"}, Edit: {"path", "old_text", "new_text"}, Exec: {"program"}, Search: {"pattern"}, List: nil}
	for _, tool := range Names() {
		t.Run(tool, func(t *testing.T) {
			var s testSchema
			dec := json.NewDecoder(strings.NewReader(string(Schema(tool))))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("schema %s: %v", Schema(tool), err)
			}
			if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("schema is not a closed object: %s", Schema(tool))
			}
			names := slices.Sorted(maps.Keys(s.Properties))
			if want := slices.Sorted(slices.Values(jsonargs.Names(argTypes[tool]))); !slices.Equal(names, want) {
				t.Errorf("properties %v, arguments %v", names, want)
			}
			if !slices.Equal(s.Required, required[tool]) {
				t.Errorf("required %v, want %v", s.Required, required[tool])
			}
			for name, p := range s.Properties {
				if p.Description == "" {
					t.Errorf("%s has no description", name)
				}
				// The schema's bounds are the ones Check enforces.
				if p.Type == "integer" {
					checkBound(t, tool, name, *p.Minimum, true)
					if p.Maximum != nil {
						checkBound(t, tool, name, *p.Maximum, false)
					}
				}
			}
			if d := Description(tool); len(d) < 100 {
				t.Errorf("Description(%s) = %q", tool, d)
			}
		})
	}
	if Schema("delete") != nil || Description("delete") != "" {
		t.Error("unknown tool has a schema or description")
	}
}

// checkBound checks that Check accepts bound and refuses one past it.
func checkBound(t *testing.T, tool, name string, bound int64, isMin bool) {
	t.Helper()
	base := map[string]string{Read: `"path":"a"`, Write: `"path":"a","content":"","mode":"create"`, Edit: `"path":"a","old_text":"x","new_text":""`,
		Exec: `"program":"true"`, Search: `"pattern":"x"`, List: `"recursive":true`}[tool]
	at := fmt.Sprintf(`{%s,%q:%d}`, base, name, bound)
	past := bound + 1
	if isMin {
		past = bound - 1
	}
	beyond := fmt.Sprintf(`{%s,%q:%d}`, base, name, past)
	if err := Check(tool, []byte(at)); err != nil {
		t.Errorf("Check %s = %v, want accepted", at, err)
	}
	if err := Check(tool, []byte(beyond)); err == nil {
		t.Errorf("Check %s accepted it", beyond)
	}
}

func TestSchemaStatesDefaultsAndMaxima(t *testing.T) {
	tests := []struct{ tool, prop, text string }{
		{Read, "max_bytes", "default 65536, at most 1048576"},
		{Exec, "timeout_ms", "default 30000, at most 300000"},
		{Exec, "max_output_bytes", "default 262144, at most 1048576"},
		{Search, "max_results", "default 50, at most 200"},
		{Search, "max_bytes", "default 65536, at most 1048576"},
		{Search, "context_lines", "default 0, at most 20"},
		{List, "max_entries", "default 200, at most 500"},
		{List, "max_bytes", "default 65536, at most 1048576"},
		{List, "max_depth", "default 3"},
		{Write, "content", "at most 1048576 bytes"},
	}
	for _, tt := range tests {
		var s testSchema
		if err := json.Unmarshal(Schema(tt.tool), &s); err != nil {
			t.Fatal(err)
		}
		if d := s.Properties[tt.prop].Description; !strings.Contains(d, tt.text) {
			t.Errorf("%s.%s description %q lacks %q", tt.tool, tt.prop, d, tt.text)
		}
	}
}
