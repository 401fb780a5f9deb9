package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestApplyEnv: each AXLR_* variable sets its key over the file's; an
// empty one leaves the file's; a value that does not parse is an error
// naming the variable.
func TestApplyEnv(t *testing.T) {
	file := `{"model": "file-model", "daemon": {"state_dir": "/file/state", "frontend_port": 7001, "ui_port": 8001,
		"temporal_address": "file:7233", "namespace": "file-ns", "log_level": "warn", "sqlite_sync": "full"},
		"made": {"command": "/file/made-mcp"}}`
	fromFile := func() Settings {
		l, err := Parse([]byte(file))
		if err != nil {
			t.Fatal(err)
		}
		return l.Settings
	}
	tests := []struct {
		name string
		env  map[string]string
		// want edits the file's settings into the expected ones.
		want    func(s *Settings)
		wantEnv []string
		wantErr string
	}{
		{name: "none", env: nil, want: func(*Settings) {}},
		{name: "empty is unset", env: map[string]string{EnvModel: "", EnvFrontendPort: ""}, want: func(*Settings) {}},
		{name: "model", env: map[string]string{EnvModel: "env-model"}, want: func(s *Settings) { s.Model = "env-model" }, wantEnv: []string{EnvModel}},
		{name: "every daemon key", env: map[string]string{
			EnvStateDir: "/env/state", EnvFrontendPort: "7002", EnvUIPort: "0", EnvTemporalAddress: "env.example:7233",
			EnvNamespace: "env-ns", EnvLogLevel: "debug", EnvSQLiteSync: "NORMAL", EnvMadeCommand: "/env/made-mcp",
		}, want: func(s *Settings) {
			zero := 0
			s.Daemon = Daemon{StateDir: "/env/state", FrontendPort: 7002, UIPort: &zero, TemporalAddress: "env.example:7233",
				Namespace: "env-ns", LogLevel: "debug", SQLiteSync: "normal"}
			s.Made.Command = "/env/made-mcp"
		}, wantEnv: []string{EnvStateDir, EnvFrontendPort, EnvUIPort, EnvTemporalAddress, EnvNamespace, EnvLogLevel, EnvSQLiteSync, EnvMadeCommand}},
		{name: "port not a number", env: map[string]string{EnvFrontendPort: "seven"}, wantErr: `AXLR_FRONTEND_PORT "seven": want a port number, 1 to 65535`},
		{name: "frontend port 0", env: map[string]string{EnvFrontendPort: "0"}, wantErr: `AXLR_FRONTEND_PORT "0": want a port number, 1 to 65535`},
		{name: "ui port too high", env: map[string]string{EnvUIPort: "65536"}, wantErr: `AXLR_UI_PORT "65536": want a port number, 0 to 65535`},
		{name: "address without port", env: map[string]string{EnvTemporalAddress: "localhost"}, wantErr: `AXLR_TEMPORAL_ADDRESS "localhost": want host:port`},
		{name: "unknown log level", env: map[string]string{EnvLogLevel: "loud"}, wantErr: `AXLR_LOG_LEVEL "loud": use trace, debug, info, warn, error`},
		{name: "unknown sync mode", env: map[string]string{EnvSQLiteSync: "off"}, wantErr: `AXLR_SQLITE_SYNC "off": use full or normal`},
		{name: "blank", env: map[string]string{EnvModel: "  "}, wantErr: "AXLR_MODEL is blank: unset it for model from settings.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse([]byte(file))
			if err != nil {
				t.Fatal(err)
			}
			err = l.ApplyEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := fromFile()
			tt.want(&want)
			if !reflect.DeepEqual(l.Settings, want) || !reflect.DeepEqual(l.Env, tt.wantEnv) {
				t.Fatalf("settings %+v, env %v\nwant %+v, env %v", l.Settings, l.Env, want, tt.wantEnv)
			}
		})
	}
}

// TestOpen: the file is the one passed, else AXLR_SETTINGS's, else the
// default; the environment is applied over it.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	def := write("config/axlr/settings.json", `{"model": "default-file"}`)
	named := write("named.json", `{"model": "named-file"}`)
	flag := write("flag.json", `{"model": "flag-file"}`)
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "config")}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name, path, settingsVar, modelVar string
		wantPath, wantModel               string
	}{
		{name: "default", wantPath: def, wantModel: "default-file"},
		{name: "AXLR_SETTINGS", settingsVar: named, wantPath: named, wantModel: "named-file"},
		{name: "path over AXLR_SETTINGS", path: flag, settingsVar: named, wantPath: flag, wantModel: "flag-file"},
		{name: "AXLR_MODEL over the file", settingsVar: named, modelVar: "env-model", wantPath: named, wantModel: "env-model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env[EnvSettings], env[EnvModel] = tt.settingsVar, tt.modelVar
			l, err := Open(tt.path, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if l.Path != tt.wantPath || l.Model != tt.wantModel {
				t.Fatalf("path %s model %q, want %s %q", l.Path, l.Model, tt.wantPath, tt.wantModel)
			}
		})
	}
	env[EnvSettings], env[EnvModel] = "", ""
	env[EnvUIPort] = "x"
	if _, err := Open(named, getenv); err == nil || !strings.Contains(err.Error(), "AXLR_UI_PORT") {
		t.Fatalf("a bad variable: %v", err)
	}
	write("bad.json", `{"model": `)
	env[EnvSettings] = filepath.Join(dir, "bad.json")
	if _, err := Open("", getenv); err == nil || !strings.Contains(err.Error(), "bad.json: not valid JSON") {
		t.Fatalf("a bad file named by AXLR_SETTINGS: %v", err)
	}
}

// TestEnvDocumented: README.md's axlrd table lists every variable.
func TestEnvDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{EnvSettings}
	for _, v := range envVars {
		names = append(names, v.name)
	}
	for _, name := range names {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("README.md does not document %s", name)
		}
	}
}
