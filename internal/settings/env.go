package settings

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// The AXLR_* variables, each over a settings.json key (envVars). A flag of
// the same name wins over its variable.
const (
	EnvSettings        = "AXLR_SETTINGS"
	EnvModel           = "AXLR_MODEL"
	EnvStateDir        = "AXLR_STATE_DIR"
	EnvFrontendPort    = "AXLR_FRONTEND_PORT"
	EnvUIPort          = "AXLR_UI_PORT"
	EnvTemporalAddress = "AXLR_TEMPORAL_ADDRESS"
	EnvNamespace       = "AXLR_NAMESPACE"
	EnvLogLevel        = "AXLR_LOG_LEVEL"
	EnvSQLiteSync      = "AXLR_SQLITE_SYNC"
	EnvMadeCommand     = "AXLR_MADE_COMMAND"
	EnvDatabase        = "AXLR_DATABASE"
	EnvServiceListen   = "AXLR_SERVICE_LISTEN"
	EnvServiceProbe    = "AXLR_SERVICE_PROBE"
)

// logLevels are the levels AXLR_LOG_LEVEL takes, as axlrd's --log-level.
var logLevels = []string{"trace", "debug", "info", "warn", "error"}

// envVar is a variable of the overlay: name over the settings.json key,
// which set parses a non-empty value into, or says what it wants.
type envVar struct {
	name, key string
	set       func(s *Settings, v string) error
}

// envVars are the variables ApplyEnv reads, in the order it reads them.
// AXLR_SETTINGS, which names the file itself, is read by Open.
var envVars = []envVar{
	{EnvModel, "model", func(s *Settings, v string) error { s.Model = v; return nil }},
	{EnvStateDir, "daemon.state_dir", func(s *Settings, v string) error { s.Daemon.StateDir = v; return nil }},
	{EnvFrontendPort, "daemon.frontend_port", func(s *Settings, v string) error {
		p, err := port(v, 1)
		if err == nil {
			s.Daemon.FrontendPort = p
		}
		return err
	}},
	{EnvUIPort, "daemon.ui_port", func(s *Settings, v string) error {
		p, err := port(v, 0)
		if err == nil {
			s.Daemon.UIPort = &p
		}
		return err
	}},
	{EnvTemporalAddress, "daemon.temporal_address", func(s *Settings, v string) error {
		if _, p, err := net.SplitHostPort(v); err != nil || p == "" {
			return errors.New("want host:port, such as 127.0.0.1:7233")
		}
		s.Daemon.TemporalAddress = v
		return nil
	}},
	{EnvNamespace, "daemon.namespace", func(s *Settings, v string) error { s.Daemon.Namespace = v; return nil }},
	{EnvLogLevel, "daemon.log_level", func(s *Settings, v string) error {
		if !slices.Contains(logLevels, v) {
			return fmt.Errorf("use %s", strings.Join(logLevels, ", "))
		}
		s.Daemon.LogLevel = v
		return nil
	}},
	{EnvSQLiteSync, "daemon.sqlite_sync", func(s *Settings, v string) error {
		if v = strings.ToLower(v); v != "full" && v != "normal" {
			return errors.New("use full or normal")
		}
		s.Daemon.SQLiteSync = v
		return nil
	}},
	{EnvMadeCommand, "made.command", func(s *Settings, v string) error { s.Made.Command = v; return nil }},
	{EnvDatabase, "cluster.database", func(s *Settings, v string) error { s.Cluster.Database = v; return nil }},
	{EnvServiceListen, "service.listen", func(s *Settings, v string) error { s.Service.Listen = v; return nil }},
	{EnvServiceProbe, "service.probe", func(s *Settings, v string) error { s.Service.Probe = v; return nil }},
}

// port parses a port number from lo to 65535.
func port(v string, lo int) (int, error) {
	p, err := strconv.Atoi(v)
	if err != nil || p < lo || p > 65535 {
		return 0, fmt.Errorf("want a port number, %d to 65535", lo)
	}
	return p, nil
}

// Open reads the settings axlrd and axlr-tui run under: the file at path,
// else at $AXLR_SETTINGS, else at DefaultPath, then the AXLR_* variables
// over it (ApplyEnv). The caller's flags win over both.
func Open(path string, getenv func(string) string) (*Loaded, error) {
	if path == "" {
		path = getenv(EnvSettings)
	}
	if path == "" {
		p, err := DefaultPath(getenv)
		if err != nil {
			return nil, err
		}
		path = p
	}
	l, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := l.ApplyEnv(getenv); err != nil {
		return nil, err
	}
	return l, nil
}

// ApplyEnv sets the keys whose AXLR_* variable getenv gives a value, over
// the file's, and lists the variables in Env. An empty variable is unset; a value that
// does not parse is an error naming the variable.
func (l *Loaded) ApplyEnv(getenv func(string) string) error {
	for _, v := range envVars {
		val := getenv(v.name)
		if val == "" {
			continue
		}
		if strings.TrimSpace(val) == "" {
			return fmt.Errorf("%s is blank: unset it for %s from settings.json", v.name, v.key)
		}
		if err := v.set(&l.Settings, val); err != nil {
			return fmt.Errorf("%s %q: %w", v.name, val, err)
		}
		l.Env = append(l.Env, v.name)
	}
	// The service's rules span keys a variable may have changed.
	return l.Service.validate()
}
