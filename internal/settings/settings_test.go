package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	doc := `{
		"model": "gpt-x",
		"theme": "dark",
		"approvals": {"autonomous": false, "allowed": ["local_read"], "always_ask": ["git push --force"], "mystery": 1},
		"provider": {"base_url": "http://127.0.0.1:9/v1", "stream": false},
		"models": {"small": {"context_tokens": 32768, "temperature": 0.2}},
		"repair": {"repository": "acme/app", "anything": true},
		"daemon": {"ui_port": 0, "sqlite_sync": "full"},
		"colour": "blue"
	}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Found || l.Model != "gpt-x" || l.Stream() || l.ContextCap("small") != 32768 || l.ContextCap("other") != 0 {
		t.Fatalf("loaded %+v", l.Settings)
	}
	if got := l.AlwaysAsk(); !reflect.DeepEqual(got, []string{"git push --force"}) {
		t.Fatalf("always_ask %v", got)
	}
	if l.Daemon.UIPort == nil || *l.Daemon.UIPort != 0 || l.Daemon.SQLiteSync != "full" {
		t.Fatalf("daemon %+v", l.Daemon)
	}
	want := []string{"approvals.mystery", "colour", "models.small.temperature"}
	if !reflect.DeepEqual(l.Unknown, want) {
		t.Fatalf("unknown %v, want %v", l.Unknown, want)
	}
}

func TestLoadDefaultsAndErrors(t *testing.T) {
	dir := t.TempDir()
	l, err := Load(filepath.Join(dir, "absent.json"))
	if err != nil || l.Found || !l.Stream() || len(l.AlwaysAsk()) != len(DefaultAlwaysAsk) {
		t.Fatalf("absent file: %+v %v", l, err)
	}
	tests := []struct{ name, doc, want string }{
		{"not JSON", `{"model": `, "not valid JSON"},
		{"not an object", `["model"]`, "not a JSON object"},
		{"wrong type", `{"model": 3}`, "wrong type"},
		{"negative cap", `{"context_tokens": -1}`, "context_tokens"},
		{"bad port", `{"daemon": {"frontend_port": 70000}}`, "not a port"},
		{"empty always_ask entry", `{"approvals": {"always_ask": [" "]}}`, "empty entry"},
		{"too large", `{"model": "` + strings.Repeat("x", MaxSize) + `"}`, "over the 64 KiB limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".json")
			if err := os.WriteFile(path, []byte(tt.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, path, tt.want)
			}
		})
	}
}

func TestDefaultPaths(t *testing.T) {
	env := map[string]string{"HOME": "/home/p"}
	get := func(k string) string { return env[k] }
	if p, _ := DefaultPath(get); p != "/home/p/.config/axlr/settings.json" {
		t.Fatalf("settings path %s", p)
	}
	if p, _ := DefaultStateDir(get); p != "/home/p/.local/state/axlr" {
		t.Fatalf("state dir %s", p)
	}
	env["XDG_CONFIG_HOME"], env["XDG_STATE_HOME"] = "/x/config", "/x/state"
	if p, _ := DefaultPath(get); p != "/x/config/axlr/settings.json" {
		t.Fatalf("settings path %s", p)
	}
	if p, _ := DefaultStateDir(get); p != "/x/state/axlr" {
		t.Fatalf("state dir %s", p)
	}
	// A relative XDG path is ignored, as the XDG spec says.
	env["XDG_STATE_HOME"] = "rel"
	if p, _ := DefaultStateDir(get); p != "/home/p/.local/state/axlr" {
		t.Fatalf("state dir %s", p)
	}
}
