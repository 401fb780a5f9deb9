package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestAlias(t *testing.T) {
	long := strings.Repeat("x", 40)
	id32 := strings.Repeat("p", 32)
	cases := []struct {
		plugin, tool, want string
	}{
		{"notes", "search", "notes__search"},
		{"notes", "Search-Files_2", "notes__Search-Files_2"},
		{"my-tools", "_x", "my-tools___x"},
		{"notes", "notes.search", "notes__notes_search_ee3c0278"},
		{"notes", "a.b", "notes__a_b_" + hash8("a.b")},
		// 7 + 57 = 64 bytes fits as is.
		{"notes", strings.Repeat("y", 57), "notes__" + strings.Repeat("y", 57)},
		{"notes", strings.Repeat("y", 58), "notes__" + strings.Repeat("y", 48) + "_" + hash8(strings.Repeat("y", 58))},
		{id32, long, id32 + "__" + long[:21] + "_" + hash8(long)},
		{id32, strings.Repeat("z.", 64), id32 + "__" + strings.Repeat("z_", 10) + "z_" + hash8(strings.Repeat("z.", 64))},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			got := Alias(c.plugin, c.tool)
			if got != c.want || !functionName.MatchString(got) {
				t.Errorf("Alias(%q, %q) = %q, want %q, a function name", c.plugin, c.tool, got, c.want)
			}
		})
	}
}

// hash8 is the first 8 hex digits of the SHA-256 of s.
func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

// TestAliasesDistinct: distinct tool names of one plugin, altered or not,
// get distinct aliases, and the plugin id splits out of each.
func TestAliasesDistinct(t *testing.T) {
	seen := map[string]string{}
	for i := range 5000 {
		for _, name := range []string{fmt.Sprintf("t%d", i), fmt.Sprintf("t.%d", i), fmt.Sprintf("t_%d", i), strings.Repeat("n", 60) + fmt.Sprint(i)} {
			a := Alias("plug", name)
			if other, dup := seen[a]; dup && other != name {
				t.Fatalf("%q and %q share alias %q", other, name, a)
			}
			seen[a] = name
			if id, _, _ := strings.Cut(a, aliasSeparator); id != "plug" || !functionName.MatchString(a) {
				t.Fatalf("alias %q of %q", a, name)
			}
		}
	}
}

func TestSplitCanonical(t *testing.T) {
	cases := []struct {
		name, plugin, tool string
		ok                 bool
	}{
		{"notes/search", "notes", "search", true},
		{"notes/notes.search", "notes", "notes.search", true},
		{Canonical("my-tools", "a.b"), "my-tools", "a.b", true},
		{"notes", "", "", false},
		{"Notes/search", "", "", false},
		{"notes/", "", "", false},
		{"notes/a/b", "", "", false},
		{"notes/bad name", "", "", false},
	}
	for _, c := range cases {
		plugin, tool, ok := SplitCanonical(c.name)
		if plugin != c.plugin || tool != c.tool || ok != c.ok {
			t.Errorf("SplitCanonical(%q) = %q, %q, %v", c.name, plugin, tool, ok)
		}
	}
}

func TestResolve(t *testing.T) {
	tools := []Tool{
		{Plugin: "a", Name: "x.y", Canonical: "a/x.y", Alias: Alias("a", "x.y")},
		{Plugin: "b", Name: "x", Canonical: "b/x", Alias: "b__x"},
	}
	cases := []struct {
		name, want string
	}{
		{Alias("a", "x.y"), "a/x.y"},
		{"a/x.y", "a/x.y"},
		{"b__x", "b/x"},
		{"b/x", "b/x"},
		{"x", ""},
		{"a__x_y", ""},
	}
	for _, c := range cases {
		got, ok := Resolve(tools, c.name)
		if got.Canonical != c.want || ok != (c.want != "") {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.name, got.Canonical, ok, c.want)
		}
	}
}
