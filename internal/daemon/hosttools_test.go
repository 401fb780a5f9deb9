package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/redact"
)

// TestOpenHostTools: the settings' plugins are registered with a complete
// environment, and what cannot be registered stops axlrd with its reason;
// tools.web false offers no web tools; the job request tools are always
// offered.
func TestOpenHostTools(t *testing.T) {
	dir := t.TempDir()
	stdio := filepath.Join(dir, "notes.json")
	remote := filepath.Join(dir, "remote.json")
	os.WriteFile(stdio, []byte(`{"manifest_version": 1, "id": "notes", "command": "/bin/true", "args": [], "allow_tools": ["*"]}`), 0o600)
	os.WriteFile(remote, []byte(`{"manifest_version": 1, "id": "remote", "url": "https://example.com/mcp", "allow_tools": ["*"]}`), 0o600)
	env := map[string]string{"NOTES_TOKEN": "t-123", "OPENAI_API_KEY": "sk-provider"}
	no := false
	tests := []struct {
		name    string
		set     settings.Settings
		err     string
		secrets []string
	}{
		{name: "web and a plugin", set: settings.Settings{Plugins: []settings.Plugin{{Manifest: stdio, Env: map[string]string{"A": "1"}, EnvFrom: map[string]string{"TOKEN": "NOTES_TOKEN"}}}},
			secrets: []string{"t-123"}},
		{name: "no web", set: settings.Settings{Tools: settings.Tools{Web: &no}}},
		{name: "relative manifest", set: settings.Settings{Plugins: []settings.Plugin{{Manifest: "notes.json"}}}, err: "plugins[0]"},
		{name: "provider key by name", set: settings.Settings{Plugins: []settings.Plugin{{Manifest: stdio, EnvFrom: map[string]string{"KEY": "OPENAI_API_KEY"}}}},
			err: "names a provider's key, which is never forwarded to a plugin"},
		{name: "provider key by value", set: settings.Settings{Provider: settings.Provider{APIKey: "t-123"}, Plugins: []settings.Plugin{{Manifest: stdio, EnvFrom: map[string]string{"KEY": "NOTES_TOKEN"}}}},
			err: "holds the provider's key"},
		{name: "unset variable", set: settings.Settings{Plugins: []settings.Plugin{{Manifest: stdio, EnvFrom: map[string]string{"KEY": "MISSING"}}}},
			err: "env_from KEY names MISSING, which is not set in axlrd's environment"},
		{name: "env for an HTTP plugin", set: settings.Settings{Plugins: []settings.Plugin{{Manifest: remote, Env: map[string]string{"A": "1"}}}},
			err: "(remote) is a Streamable HTTP plugin: it takes no env or env_from"},
		{name: "same id twice", set: settings.Settings{Plugins: []settings.Plugin{{Manifest: stdio}, {Manifest: stdio}}}, err: "notes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{Getenv: func(k string) string { return env[k] }, Environ: []string{"PATH=/bin"}}
			h, secrets, err := openHostTools(o, &settings.Loaded{Settings: tt.set, Path: "settings.json"}, zerolog.Nop())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (h.Web == nil) != (tt.set.Tools.Web != nil) || (h.Plugins == nil) != (len(tt.set.Plugins) == 0) || strings.Join(secrets, ",") != strings.Join(tt.secrets, ",") {
				t.Fatalf("web %v, plugins %v, secrets %q", h.Web != nil, h.Plugins != nil, secrets)
			}
			if h.Jobs == nil {
				t.Fatal("no job client: the job request tools are not offered")
			}
			if h.Plugins != nil {
				h.Plugins.Close()
			}
		})
	}
}

// TestForgeTokenRedacted: a token that comes from gh's own config, not the
// environment, is among the secrets axlrd redacts.
func TestForgeTokenRedacted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hosts.yml"), []byte("github.com:\n    oauth_token: gho-from-gh-config-0123456789\n    user: octo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GH_CONFIG_DIR": dir, "GH_PATH": filepath.Join(dir, "no-gh")}
	for k, v := range env {
		t.Setenv(k, v)
	}
	for _, k := range []string{"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"} {
		t.Setenv(k, "")
	}
	set := &settings.Loaded{}
	fg := openForge(set, func(k string) string { return env[k] }, zerolog.Nop())
	if fg.GitHub == nil || fg.Git.Token != "gho-from-gh-config-0123456789" {
		t.Fatalf("forge %+v: the gh config's token was not taken", fg)
	}
	red := redact.New(secrets(set, nil, nil, fg))
	if got := red.String("push with gho-from-gh-config-0123456789"); strings.Contains(got, "gho-from") {
		t.Fatalf("redacted %q", got)
	}
}
