package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/jobs"
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
	// repair is typed now: a key it does not declare is reported.
	want := []string{"approvals.mystery", "colour", "models.small.temperature", "repair.anything"}
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
	if p, _ := DefaultDataDir(get); p != "/home/p/.local/share/axlr" {
		t.Fatalf("data dir %s", p)
	}
	env["XDG_DATA_HOME"] = "/x/data"
	if p, _ := DefaultDataDir(get); p != "/x/data/axlr" {
		t.Fatalf("data dir %s", p)
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

func TestJobSettings(t *testing.T) {
	l, err := Parse([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defaults := []struct {
		name      string
		got, want any
	}{
		{"repository", l.RepairRepository(), "underpass-ai/axlr"},
		{"directory", l.RepairDirectory("/d/axlr"), "/d/axlr/repairs"},
		{"watch", l.RepairWatch(), 45 * time.Minute},
		{"poll", l.RepairPoll(), 30 * time.Second},
		{"max attempts", l.RepairMaxAttempts(), 2},
		{"about", l.RepairAbout(), "repo:underpass-ai/axlr"},
		{"max active", l.JobsMaxActive(), 2},
		{"limits", l.JobLimits(), jobs.Limits{MaxActive: 2, MaxAttempts: 2}},
		{"auto merge", l.Repair.AutoMerge, false},
		{"install", l.Repair.Install, false},
		{"autonomous", l.Repair.Autonomous, false},
		{"api url", l.Forge.APIURL, ""},
	}
	for _, d := range defaults {
		if !reflect.DeepEqual(d.got, d.want) {
			t.Errorf("default %s: %v, want %v", d.name, d.got, d.want)
		}
	}
	doc := `{
		"repair": {"repository": "Acme/My-App", "remote": "/srv/git/app.git", "directory": "/var/clones", "auto_merge": true,
			"watch_minutes": 720, "poll_seconds": 1, "max_attempts": 5, "install": true, "autonomous": true},
		"jobs": {"max_active": 8},
		"forge": {"api_url": "http://127.0.0.1:8080/api/v3"}
	}`
	l, err = Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	set := []struct {
		name      string
		got, want any
	}{
		{"repository", l.RepairRepository(), "Acme/My-App"},
		{"remote", l.Repair.Remote, "/srv/git/app.git"},
		{"directory", l.RepairDirectory("/d/axlr"), "/var/clones"},
		{"watch", l.RepairWatch(), 12 * time.Hour},
		{"poll", l.RepairPoll(), time.Second},
		{"max attempts", l.RepairMaxAttempts(), 5},
		{"about from the repository", l.RepairAbout(), "repo:Acme/My-App"},
		{"max active", l.JobsMaxActive(), 8},
		{"auto merge", l.Repair.AutoMerge, true},
		{"install", l.Repair.Install, true},
		{"autonomous", l.Repair.Autonomous, true},
		{"api url", l.Forge.APIURL, "http://127.0.0.1:8080/api/v3"},
	}
	for _, d := range set {
		if !reflect.DeepEqual(d.got, d.want) {
			t.Errorf("%s: %v, want %v", d.name, d.got, d.want)
		}
	}
	if len(l.Unknown) != 0 {
		t.Errorf("unknown %v", l.Unknown)
	}
	if l, _ := Parse([]byte(`{"repair": {"about": "project:other"}}`)); l.RepairAbout() != "project:other" {
		t.Errorf("about %q", l.RepairAbout())
	}
	l, err = Parse([]byte(`{"repair": {"autonomy": true}, "jobs": {"queue": 1}, "forge": {"token": "x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"forge.token", "jobs.queue", "repair.autonomy"}; !reflect.DeepEqual(l.Unknown, want) {
		t.Errorf("unknown %v, want %v", l.Unknown, want)
	}
}

func TestJobSettingsRefused(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"repository without owner", `{"repair": {"repository": "axlr"}}`, `repair.repository "axlr": want owner/name, such as underpass-ai/axlr`},
		{"repository with a path", `{"repair": {"repository": "a/b/c"}}`, `repair.repository "a/b/c": want owner/name`},
		{"repository with a space", `{"repair": {"repository": "a/b c"}}`, `repair.repository "a/b c": want owner/name`},
		{"repository of dots", `{"repair": {"repository": "../x"}}`, `repair.repository "../x": want owner/name`},
		{"relative remote", `{"repair": {"remote": "../app.git"}}`, `repair.remote "../app.git": want a git URL (https://…, ssh://…, git@host:path) or an absolute path`},
		{"remote URL without host", `{"repair": {"remote": "https:///x"}}`, `repair.remote "https:///x": want a git URL`},
		{"relative directory", `{"repair": {"directory": "clones"}}`, `repair.directory "clones" must be an absolute path`},
		{"blank about", `{"repair": {"about": "  "}}`, "repair.about is blank"},
		{"watch too long", `{"repair": {"watch_minutes": 721}}`, "repair.watch_minutes 721 is out of range: use 1 to 720 (default 45)"},
		{"watch negative", `{"repair": {"watch_minutes": -1}}`, "repair.watch_minutes -1 is out of range: use 1 to 720 (default 45)"},
		{"poll too slow", `{"repair": {"poll_seconds": 301}}`, "repair.poll_seconds 301 is out of range: use 1 to 300 (default 30)"},
		{"attempts too many", `{"repair": {"max_attempts": 6}}`, "repair.max_attempts 6 is out of range: use 1 to 5 (default 2)"},
		{"active too many", `{"jobs": {"max_active": 9}}`, "jobs.max_active 9 is out of range: use 1 to 8 (default 2)"},
		{"active negative", `{"jobs": {"max_active": -2}}`, "jobs.max_active -2 is out of range: use 1 to 8 (default 2)"},
		{"api url not http", `{"forge": {"api_url": "ftp://x/api"}}`, `forge.api_url "ftp://x/api": want an http(s) URL, such as https://github.example.com/api/v3`},
		{"api url without host", `{"forge": {"api_url": "api/v3"}}`, `forge.api_url "api/v3": want an http(s) URL`},
		{"plain http off loopback", `{"forge": {"api_url": "http://github.example.com/api/v3"}}`,
			`forge.api_url "http://github.example.com/api/v3": plain http only on loopback (localhost, 127.0.0.0/8, ::1), since the token is sent to it; use https`},
		{"plain http to a private address", `{"forge": {"api_url": "http://10.0.0.1/api"}}`, "plain http only on loopback"},
		{"wrong type", `{"jobs": {"max_active": "2"}}`, "wrong type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	accepted := []string{
		`{"repair": {"remote": "https://github.com/acme/app.git"}}`,
		`{"repair": {"remote": "ssh://git@github.com/acme/app.git"}}`,
		`{"repair": {"remote": "git@github.com:acme/app.git"}}`,
		`{"repair": {"remote": "file:///srv/git/app.git"}}`,
		`{"repair": {"watch_minutes": 1, "poll_seconds": 300, "max_attempts": 1}, "jobs": {"max_active": 1}}`,
		`{"forge": {"api_url": "https://github.example.com/api/v3"}}`,
		`{"forge": {"api_url": "http://localhost:9/api"}}`,
		`{"forge": {"api_url": "http://[::1]:9/"}}`,
		`{"forge": {"api_url": "http://127.8.0.1/"}}`,
	}
	for _, doc := range accepted {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// TestForgeWeb: a repository's default remote is on github.com, or on the
// host of forge.api_url over its scheme; api.github.com's web is
// github.com.
func TestForgeWeb(t *testing.T) {
	for _, tt := range []struct{ api, want string }{
		{"", "https://github.com"},
		{"https://api.github.com/", "https://github.com"},
		{"https://api.github.com:443", "https://github.com"},
		{"https://ghe.example.com/api/v3/", "https://ghe.example.com"},
		{"http://127.0.0.1:9999/api/v3/", "http://127.0.0.1:9999"},
		{"http://[::1]:9/", "http://[::1]:9"},
	} {
		if got, err := (Forge{APIURL: tt.api}).Web(); err != nil || got != tt.want {
			t.Errorf("Web of %q = %q, %v; want %q", tt.api, got, err, tt.want)
		}
	}
	for _, bad := range []string{"api/v3", "ftp://x/api", "https:///api"} {
		if _, err := (Forge{APIURL: bad}).Web(); err == nil || !strings.Contains(err.Error(), "forge.api_url") {
			t.Errorf("Web of %q: %v", bad, err)
		}
	}
}

// TestSandboxSettings: bad values of tools.sandbox and its lists are
// refused with what each takes, good ones read back as given, and a
// misspelt key is among the unknown ones axlrd warns of.
func TestSandboxSettings(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{`{"tools": {"sandbox": "strict"}}`, `tools.sandbox: unknown sandbox mode "strict": use auto, required or off`},
		{`{"tools": {"sandbox_read": ["cache"]}}`, `tools.sandbox_read holds "cache": each entry is an absolute path`},
		{`{"tools": {"sandbox_write": ["/ok", "rel"]}}`, `tools.sandbox_write holds "rel": each entry is an absolute path`},
		{`{"tools": {"sandbox_connect": [0]}}`, "tools.sandbox_connect holds 0: each entry is a TCP port, 1 to 65535"},
		{`{"tools": {"sandbox_network": "any"}}`, `tools.sandbox_network "any": use ports (only tools.sandbox_connect's) or open`},
	} {
		if _, err := Parse([]byte(tt.doc)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.doc, err, tt.want)
		}
	}
	s, err := Parse([]byte(`{"tools": {"sandbox": "required", "sandbox_read": ["/srv/data"], "sandbox_write": [], "sandbox_connect": [5432], "sandbox_network": "open"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if tl := s.Tools; tl.SandboxMode() != "required" || tl.SandboxRead[0] != "/srv/data" || tl.SandboxWrite == nil || len(*tl.SandboxWrite) != 0 ||
		tl.SandboxConnect[0] != 5432 || tl.SandboxNetwork != "open" {
		t.Fatalf("read back %+v", s.Tools)
	}
	if l, err := Parse([]byte(`{"tools": {"sandbox_ports": [80]}}`)); err != nil || len(l.Unknown) != 1 || l.Unknown[0] != "tools.sandbox_ports" {
		t.Fatalf("a misspelt key: %v %v", l, err)
	}
}
