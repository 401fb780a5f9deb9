package ceremonies

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct{ ref, name, version, err string }{
		{ref: "team_note", name: "team_note"},
		{ref: "team_note@1.10", name: "team_note", version: "1.10"},
		{ref: "Team", err: "the name is lowercase letters, digits and _"},
		{ref: "team_note@", err: "the version after @"},
		{ref: "team_note@1 0", err: "the version after @"},
		{ref: "axlr_incident", err: "axlr_incident is one of axlrd's own definitions: --mode incident runs it"},
		{ref: "axlr_repair", err: "axlr-tui --repair runs it"},
		{ref: "axlr_next", err: "names that begin with axlr_ are not yours"},
	} {
		name, version, err := ParseRef(tc.ref)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseRef(%q) = %v, want %q", tc.ref, err, tc.err)
		case tc.err == "" && (err != nil || name != tc.name || version != tc.version):
			t.Errorf("ParseRef(%q) = %q %q %v", tc.ref, name, version, err)
		}
	}
}

func TestValidatePublished(t *testing.T) {
	hb, err := ValidatePublished("draft", []byte(`{"step": "draft", "note": "x", "n": 3, "list": [1, "a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(hb.Fields); string(b) != `{"list":[1,"a"],"n":3,"note":"x"}` {
		t.Fatalf("fields %s", b)
	}
	many := map[string]int{}
	for i := range MaxPublishedFields + 1 {
		many[strings.Repeat("f", i+1)] = i
	}
	manyJSON, _ := json.Marshal(many)
	for args, want := range map[string]string{
		`{"step": "check"}`: "the open step is draft, not check",
		`[1]`:               "not one JSON object",
		`{"a": 1} {"b": 2}`: "not one JSON object",
		`{" ": 1}`:          "a field's name is 1 to 128 characters",
		string(manyJSON):    "at most 64",
		`{"text": "` + strings.Repeat("x", 65<<10) + `"}`: "at most 65536",
	} {
		if _, err := ValidatePublished("draft", []byte(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40s: %v, want %q", args, err, want)
		}
	}
}
