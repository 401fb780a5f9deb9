package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	const path = "/etc/axlr/notes.json"
	long := strings.Repeat("a", 33)
	cases := []struct {
		name string
		data string
		// field and reason of the *ManifestError; both empty: accepted.
		field, reason string
		want          *Manifest
	}{
		{name: "stdio", data: `{"manifest_version": 1, "id": "notes", "command": "/opt/notes-mcp", "args": ["--ro"], "allow_tools": ["search", "notes.get"]}`,
			want: &Manifest{Path: path, ID: "notes", Command: "/opt/notes-mcp", Args: []string{"--ro"}, AllowTools: []string{"search", "notes.get"}}},
		{name: "stdio without args", data: `{"manifest_version": 1, "id": "notes", "command": "/opt/notes-mcp", "allow_tools": ["*"]}`,
			want: &Manifest{Path: path, ID: "notes", Command: "/opt/notes-mcp", AllowTools: []string{"*"}}},
		{name: "http", data: `{"manifest_version": 1, "id": "web-tools_2", "url": "https://mcp.example.com/mcp?x=1", "allow_tools": ["fetch"]}`,
			want: &Manifest{Path: path, ID: "web-tools_2", URL: "https://mcp.example.com/mcp?x=1", AllowTools: []string{"fetch"}}},

		{name: "empty", data: ``, reason: "empty; a manifest is one JSON object"},
		{name: "not JSON", data: `{"id": }`, reason: "not valid JSON: invalid character '}' looking for beginning of value"},
		{name: "array", data: `[]`, reason: "not a JSON object"},
		{name: "null", data: `null`, reason: "not a JSON object"},
		{name: "two documents", data: `{"manifest_version": 1} {}`, reason: "more than one JSON document"},
		{name: "duplicate field", data: `{"manifest_version": 1, "id": "a", "id": "b", "command": "/x", "allow_tools": ["t"]}`,
			reason: `field "id" appears twice in the document`},
		{name: "duplicate nested field", data: `{"x": {"k": 1, "k": 2}}`, reason: `field "k" appears twice in field "x"`},
		{name: "unknown field", data: `{"manifest_version": 1, "id": "a", "command": "/x", "allow_tools": ["t"], "env": {}}`,
			field: `"env"`, reason: "unknown field; a version 1 manifest has manifest_version, id, command, args, url, allow_tools"},

		{name: "no version", data: `{"id": "a"}`, field: "manifest_version", reason: "missing"},
		{name: "version 2", data: `{"manifest_version": 2}`, field: "manifest_version", reason: "version 2 is not supported; this axlr reads manifest_version 1"},
		{name: "version string", data: `{"manifest_version": "1"}`, field: "manifest_version", reason: "must be the integer 1"},
		{name: "version null", data: `{"manifest_version": null}`, field: "manifest_version", reason: "must be the integer 1, not null"},

		{name: "no id", data: `{"manifest_version": 1}`, field: "id", reason: "missing"},
		{name: "id number", data: `{"manifest_version": 1, "id": 7}`, field: "id", reason: "must be a string"},
		{name: "id empty", data: `{"manifest_version": 1, "id": ""}`, field: "id", reason: `"" is not a plugin id: ` + IDRule},
		{name: "id upper case", data: `{"manifest_version": 1, "id": "Notes"}`, field: "id", reason: `"Notes" is not a plugin id`},
		{name: "id digit first", data: `{"manifest_version": 1, "id": "1notes"}`, field: "id", reason: `"1notes" is not a plugin id`},
		{name: "id double separator", data: `{"manifest_version": 1, "id": "a__b"}`, field: "id", reason: `"a__b" is not a plugin id`},
		{name: "id trailing separator", data: `{"manifest_version": 1, "id": "a_"}`, field: "id", reason: `"a_" is not a plugin id`},
		{name: "id slash", data: `{"manifest_version": 1, "id": "a/b"}`, field: "id", reason: `"a/b" is not a plugin id`},
		{name: "id colon", data: `{"manifest_version": 1, "id": "a:b"}`, field: "id", reason: `"a:b" is not a plugin id`},
		{name: "id too long", data: `{"manifest_version": 1, "id": "` + long + `"}`, field: "id", reason: `"` + long + `" is not a plugin id`},

		{name: "both transports", data: `{"manifest_version": 1, "id": "a", "command": "/x", "url": "https://h/mcp", "allow_tools": ["t"]}`,
			field: "url", reason: "a manifest names exactly one transport: command (stdio) or url (Streamable HTTP), not both"},
		{name: "no transport", data: `{"manifest_version": 1, "id": "a", "allow_tools": ["t"]}`,
			reason: "no transport: give command (stdio) or url (Streamable HTTP)"},
		{name: "command relative", data: `{"manifest_version": 1, "id": "a", "command": "notes-mcp", "allow_tools": ["t"]}`,
			field: "command", reason: `"notes-mcp" is not an absolute path`},
		{name: "command empty", data: `{"manifest_version": 1, "id": "a", "command": "", "allow_tools": ["t"]}`,
			field: "command", reason: `"" is not an absolute path`},
		{name: "command array", data: `{"manifest_version": 1, "id": "a", "command": ["/x"], "allow_tools": ["t"]}`,
			field: "command", reason: "must be a string"},
		{name: "args not strings", data: `{"manifest_version": 1, "id": "a", "command": "/x", "args": [1], "allow_tools": ["t"]}`,
			field: "args", reason: "must be an array of strings"},
		{name: "args with url", data: `{"manifest_version": 1, "id": "a", "url": "https://h/mcp", "args": [], "allow_tools": ["t"]}`,
			field: "args", reason: "only a stdio manifest (command) takes args"},
		{name: "url scheme", data: `{"manifest_version": 1, "id": "a", "url": "ftp://h/mcp", "allow_tools": ["t"]}`,
			field: "url", reason: `"ftp://h/mcp" is not an http or https URL`},
		{name: "url relative", data: `{"manifest_version": 1, "id": "a", "url": "/mcp", "allow_tools": ["t"]}`,
			field: "url", reason: `"/mcp" is not an http or https URL`},
		{name: "url no host", data: `{"manifest_version": 1, "id": "a", "url": "https:///mcp", "allow_tools": ["t"]}`,
			field: "url", reason: `"https:///mcp" names no host`},
		{name: "url credentials", data: `{"manifest_version": 1, "id": "a", "url": "https://u:p@h/mcp", "allow_tools": ["t"]}`,
			field: "url", reason: "the URL carries credentials (user info); a version 1 manifest takes none"},
		{name: "url fragment", data: `{"manifest_version": 1, "id": "a", "url": "https://h/mcp#x", "allow_tools": ["t"]}`,
			field: "url", reason: `"https://h/mcp#x" has a fragment, which an endpoint does not`},
		{name: "url not parsed", data: `{"manifest_version": 1, "id": "a", "url": "https://h:port/", "allow_tools": ["t"]}`,
			field: "url", reason: `"https://h:port/" is not a URL`},

		{name: "no allow_tools", data: `{"manifest_version": 1, "id": "a", "command": "/x"}`, field: "allow_tools", reason: "missing"},
		{name: "allow_tools empty", data: `{"manifest_version": 1, "id": "a", "command": "/x", "allow_tools": []}`,
			field: "allow_tools", reason: `must list at least one tool name, or be ["*"] for every tool the server advertises`},
		{name: "allow_tools null", data: `{"manifest_version": 1, "id": "a", "command": "/x", "allow_tools": null}`,
			field: "allow_tools", reason: "must be an array of strings, not null"},
		{name: "allow_tools string", data: `{"manifest_version": 1, "id": "a", "command": "/x", "allow_tools": "*"}`,
			field: "allow_tools", reason: "must be an array of strings"},
		{name: "wildcard with a name", data: `{"manifest_version": 1, "id": "a", "command": "/x", "allow_tools": ["t", "*"]}`,
			field: "allow_tools", reason: `the wildcard "*" must stand alone: ["*"]`},
		{name: "duplicate tool", data: `{"manifest_version": 1, "id": "a", "command": "/x", "allow_tools": ["t", "u", "t"]}`,
			field: "allow_tools", reason: `"t" is listed twice`},
		{name: "bad tool name", data: `{"manifest_version": 1, "id": "a", "command": "/x", "allow_tools": ["search files"]}`,
			field: "allow_tools", reason: `"search files" is not a tool name: ` + ToolNameRule},
		{name: "pattern is not a name", data: `{"manifest_version": 1, "id": "a", "command": "/x", "allow_tools": ["search*"]}`,
			field: "allow_tools", reason: `"search*" is not a tool name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseManifest(path, []byte(c.data))
			if c.want != nil {
				if err != nil || !equalManifest(m, c.want) {
					t.Errorf("ParseManifest = %+v, %v; want %+v", m, err, c.want)
				}
				return
			}
			var me *ManifestError
			if !errors.As(err, &me) || me.Path != path || me.Field != c.field || !strings.HasPrefix(me.Reason, c.reason) {
				t.Fatalf("ParseManifest error = %#v; want field %q, reason %q", err, c.field, c.reason)
			}
		})
	}
}

func equalManifest(a, b *Manifest) bool {
	return a.Path == b.Path && a.ID == b.ID && a.Command == b.Command && slices.Equal(a.Args, b.Args) &&
		a.URL == b.URL && slices.Equal(a.AllowTools, b.AllowTools)
}

func TestManifestErrorMessage(t *testing.T) {
	_, err := ParseManifest("/m/a.json", []byte(`{"manifest_version": 1, "id": "a", "command": "x", "allow_tools": ["t"]}`))
	if want := `plugin manifest /m/a.json: field command: "x" is not an absolute path`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	_, err = ParseManifest("/m/a.json", []byte(`[]`))
	if want := "plugin manifest /m/a.json: not a JSON object"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestReadManifest(t *testing.T) {
	dir := t.TempDir()
	valid := `{"manifest_version": 1, "id": "notes", "command": "/opt/notes-mcp", "allow_tools": ["search"]}`
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	atLimit := write("at-limit.json", valid+strings.Repeat(" ", MaxManifestBytes-len(valid)))
	overLimit := write("over-limit.json", valid+strings.Repeat(" ", MaxManifestBytes-len(valid)+1))
	cases := []struct {
		name, path, reason string
	}{
		{"valid", write("notes.json", valid), ""},
		{"at the size limit", atLimit, ""},
		{"over the size limit", overLimit, "the file exceeds the 65536 byte limit"},
		{"relative path", "notes.json", "the path is not absolute; name the manifest by its absolute path"},
		{"missing", filepath.Join(dir, "missing.json"), "no such file or directory"},
		{"a directory", dir, "not a regular file"},
		{"invalid", write("bad.json", `{"manifest_version": 1, "id": "notes"}`), "no transport"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := ReadManifest(c.path)
			if c.reason == "" {
				if err != nil || m.ID != "notes" || m.Path != c.path {
					t.Errorf("ReadManifest = %+v, %v", m, err)
				}
				return
			}
			var me *ManifestError
			if !errors.As(err, &me) || me.Path != c.path || !strings.HasPrefix(me.Reason, c.reason) {
				t.Errorf("ReadManifest error = %v; want reason %q", err, c.reason)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	exact := &Manifest{AllowTools: []string{"search", "get"}}
	all := &Manifest{AllowTools: []string{AllowAll}}
	cases := []struct {
		m    *Manifest
		tool string
		want bool
	}{
		{exact, "search", true},
		{exact, "get", true},
		{exact, "Search", false},
		{exact, "*", false},
		{all, "anything", true},
		{all, "*", true},
	}
	for _, c := range cases {
		if got := c.m.Allows(c.tool); got != c.want {
			t.Errorf("%v allows %q = %v", c.m.AllowTools, c.tool, got)
		}
	}
}
