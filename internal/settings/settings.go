// Package settings reads axlr's settings.json: the person's defaults for
// models, approvals, the model provider, the daemon and the /repair and
// /improve jobs. Both axlrd and
// axlr-tui read it through Open: the AXLR_* variables (Vars) override its
// keys, flags override both, and OPENAI_BASE_URL, OPENAI_API_KEY and
// OPENROUTER_API_KEY override the provider's fields.
//
// Keys the file does not know are reported as warnings, never silently
// ignored and never fatal, so a settings file shared with a newer release
// keeps working. A malformed file or a known key with a wrong type is an
// error naming the file.
package settings

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/sandbox"
)

// MaxSize is the largest settings file accepted.
const MaxSize = 64 << 10

// Settings is the content of settings.json. Zero values mean "not set"; use
// the accessor methods for the effective values with their defaults.
type Settings struct {
	Model              string           `json:"model,omitempty"`
	Language           string           `json:"language,omitempty"`
	Theme              string           `json:"theme,omitempty"`
	Icons              string           `json:"icons,omitempty"`
	ReduceMotion       bool             `json:"reduce_motion,omitempty"`
	FavoriteModels     []string         `json:"favorite_models,omitempty"`
	ReviewerModel      string           `json:"reviewer_model,omitempty"`
	ContextTokens      int              `json:"context_tokens,omitempty"`
	PromptTokens       int              `json:"prompt_tokens,omitempty"`
	TraceRetentionDays *int             `json:"trace_retention_days,omitempty"`
	Approvals          Approvals        `json:"approvals,omitzero"`
	Provider           Provider         `json:"provider,omitzero"`
	Daemon             Daemon           `json:"daemon,omitzero"`
	Models             map[string]Model `json:"models,omitempty"`
	// Secrets are extra values redacted from transcripts and workflow
	// history, beside the provider key and the credentials of the
	// environment.
	Secrets []string `json:"secrets,omitempty"`

	// Repair and Jobs configure /repair and /improve jobs; Forge is where
	// their pull requests are.
	Repair Repair `json:"repair,omitzero"`
	Jobs   Jobs   `json:"jobs,omitzero"`
	Forge  Forge  `json:"forge,omitzero"`

	// Plan configures /plan.
	Plan Plan `json:"plan,omitzero"`

	// Keys of later features: known, kept, not used yet.
	Ceremonies  Ceremonies      `json:"ceremonies,omitzero"`
	Jev         json.RawMessage `json:"jev,omitempty" settings:"opaque"`
	LocalModels json.RawMessage `json:"local_models,omitempty" settings:"opaque"`
	Made        Made            `json:"made,omitzero"`
	// Kmp configures memory: kmp-mcp when its command is set, else the
	// embedded store in <state-dir>/memory.
	Kmp Kmp `json:"kmp,omitzero"`
	// Cluster configures axlrd as one host of many on one Temporal
	// cluster.
	Cluster Cluster `json:"cluster,omitzero"`
	// Tools configures the host tools beside the workspace's.
	Tools Tools `json:"tools,omitzero"`
	// Plugins are the MCP plugins whose tools axlrd sessions offer.
	Plugins []Plugin `json:"plugins,omitempty"`
	// Service configures the HTTP service API axlrd serves.
	Service Service `json:"service,omitzero"`
}

// Defaults and ranges of the job settings.
const (
	// DefaultRepairRepository is this project's own repository.
	DefaultRepairRepository = "underpass-ai/axlr"
	DefaultWatchMinutes     = 45
	MaxWatchMinutes         = 720
	DefaultPollSeconds      = 30
	MaxPollSeconds          = 300
	DefaultMaxAttempts      = jobs.DefaultMaxAttempts
	MaxMaxAttempts          = 5
	DefaultMaxActive        = jobs.DefaultMaxActive
	MaxMaxActive            = 8
)

// Repair configures the jobs of axlr-tui --repair and --improve.
type Repair struct {
	// Repository is the repository jobs work on, owner/name (default
	// DefaultRepairRepository).
	Repository string `json:"repository,omitempty"`
	// Remote is the URL jobs clone and push, any git URL or an absolute
	// local path (default: the forge's URL of Repository).
	Remote string `json:"remote,omitempty"`
	// Directory holds the clones, an absolute path (default
	// <data>/axlr/repairs).
	Directory string `json:"directory,omitempty"`
	// AutoMerge merges a repair's green pull request without the person
	// (default false; an improvement always waits for the person).
	AutoMerge bool `json:"auto_merge,omitempty"`
	// WatchMinutes bounds a watch of the pull request's checks, 1 to 720
	// (0: 45).
	WatchMinutes int `json:"watch_minutes,omitempty"`
	// PollSeconds is how often a watch reads the pull request, 1 to 300
	// (0: 30).
	PollSeconds int `json:"poll_seconds,omitempty"`
	// MaxAttempts bounds the repair sessions one failure signature starts,
	// 1 to 5 (0: 2).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// About is the memory about of the jobs (default
	// repo:<owner>/<name> of repair.repository).
	About string `json:"about,omitempty"`
	// Install installs a merged job's candidate right after the merge
	// (default false: axlr-tui jobs install does).
	Install bool `json:"install,omitempty"`
	// Autonomous runs a job's tools as --approve all would (default
	// false: --approve local, under which the workspace's own tools
	// already run without a card). The destructive list and the first
	// check command still ask.
	Autonomous bool `json:"autonomous,omitempty"`
}

// Jobs configures the job registry.
type Jobs struct {
	// MaxActive bounds the jobs active at once across every client, 1 to 8
	// (0: 2).
	MaxActive int `json:"max_active,omitempty"`
	// MaxActivePerHost bounds the jobs one host runs at once, 1 to 8 (0:
	// max_active): what the host announces to the cluster as its capacity.
	MaxActivePerHost int `json:"max_active_per_host,omitempty"`
}

// Cluster configures the hosts of one cluster.
type Cluster struct {
	// Database is the PostgreSQL database the hosts share (a postgres://
	// URL): MADE's ledger and the memory live there, each in its own
	// schema. Empty: the single-host stores in the state dir.
	Database string `json:"database,omitempty"`
	// HostLostSeconds is how long a host's queue goes unpolled, after its
	// activity's heartbeat timed out, before its jobs move (0: 60).
	HostLostSeconds int `json:"host_lost_seconds,omitempty"`
}

// DefaultHostLostSeconds is cluster.host_lost_seconds when settings name
// none.
const DefaultHostLostSeconds = 60

// HostLost returns cluster.host_lost_seconds as a duration.
func (c Cluster) HostLost() time.Duration {
	return time.Duration(cmp.Or(c.HostLostSeconds, DefaultHostLostSeconds)) * time.Second
}

// Forge says where the pull requests are.
type Forge struct {
	// APIURL is the REST base of GitHub Enterprise or of a server on
	// loopback (default: api.github.com). Plain http only on loopback.
	APIURL string `json:"api_url,omitempty"`
}

// RepairRepository returns repair.repository.
func (s *Settings) RepairRepository() string {
	return cmp.Or(s.Repair.Repository, DefaultRepairRepository)
}

// RepairDirectory returns repair.directory, by default dataDir/repairs
// (dataDir is axlr's data directory, DefaultDataDir).
func (s *Settings) RepairDirectory(dataDir string) string {
	return cmp.Or(s.Repair.Directory, filepath.Join(dataDir, "repairs"))
}

// RepairWatch returns repair.watch_minutes as a duration.
func (s *Settings) RepairWatch() time.Duration {
	return time.Duration(cmp.Or(s.Repair.WatchMinutes, DefaultWatchMinutes)) * time.Minute
}

// RepairPoll returns repair.poll_seconds as a duration.
func (s *Settings) RepairPoll() time.Duration {
	return time.Duration(cmp.Or(s.Repair.PollSeconds, DefaultPollSeconds)) * time.Second
}

// RepairMaxAttempts returns repair.max_attempts.
func (s *Settings) RepairMaxAttempts() int { return cmp.Or(s.Repair.MaxAttempts, DefaultMaxAttempts) }

// RepairAbout returns repair.about, the memory about of the jobs, by
// default repo:<owner>/<name> of the repository.
func (s *Settings) RepairAbout() string {
	if s.Repair.About != "" {
		return s.Repair.About
	}
	return "repo:" + s.RepairRepository()
}

// JobsMaxActive returns jobs.max_active.
func (s *Settings) JobsMaxActive() int { return cmp.Or(s.Jobs.MaxActive, DefaultMaxActive) }

// JobLimits returns the registry's limits as the settings give them.
func (s *Settings) JobLimits() jobs.Limits {
	return jobs.Limits{MaxActive: s.JobsMaxActive(), MaxAttempts: s.RepairMaxAttempts()}
}

// Plan configures /plan.
type Plan struct {
	// Model is the planner's model: empty or "session" is the session's
	// (--model, then settings.json's model).
	Model string `json:"model,omitempty"`
	// AutoApprove approves a verified plan without the person; the
	// commands it runs as the baseline still ask.
	AutoApprove bool `json:"auto_approve,omitempty"`
}

// PlanModel returns the planner's model for a session of model.
func (s *Settings) PlanModel(model string) string {
	if s.Plan.Model == "" || s.Plan.Model == "session" {
		return model
	}
	return s.Plan.Model
}

// Tools configures the host tools.
type Tools struct {
	// Web offers web_fetch and web_search (default true); a session may
	// still remove them (axlr-tui --web=false).
	Web *bool `json:"web,omitempty"`
	// Sandbox confines the commands the model runs and the checks:
	// auto (default), required or off (package sandbox).
	Sandbox string `json:"sandbox,omitempty"`
	// SandboxRead are directories a confined command may also read, and
	// SandboxWrite those it may also write (absent: the Go build cache,
	// so go test builds; present, even empty, it replaces that).
	// SandboxConnect are the TCP ports it may connect to (Landlock ABI 4
	// and later; default none). SandboxNetwork "open" lifts the network
	// rules altogether (a repository whose tests dial their own servers
	// on ephemeral ports, which no port list can name); "ports", the
	// default, keeps them.
	SandboxRead    []string  `json:"sandbox_read,omitempty"`
	SandboxWrite   *[]string `json:"sandbox_write,omitempty"`
	SandboxConnect []int     `json:"sandbox_connect,omitempty"`
	SandboxNetwork string    `json:"sandbox_network,omitempty"`
}

// SandboxMode is tools.sandbox, read (validate refused any other value).
func (t Tools) SandboxMode() sandbox.Mode {
	m, _ := sandbox.ParseMode(t.Sandbox)
	return m
}

func (t Tools) validate() error {
	if _, err := sandbox.ParseMode(t.Sandbox); err != nil {
		return fmt.Errorf("tools.sandbox: %w", err)
	}
	var writes []string
	if t.SandboxWrite != nil {
		writes = *t.SandboxWrite
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"tools.sandbox_read", t.SandboxRead}, {"tools.sandbox_write", writes}} {
		for _, p := range l.paths {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("%s holds %q: each entry is an absolute path", l.key, p)
			}
		}
	}
	if n := t.SandboxNetwork; n != "" && n != "ports" && n != "open" {
		return fmt.Errorf("tools.sandbox_network %q: use ports (only tools.sandbox_connect's) or open", n)
	}
	for _, p := range t.SandboxConnect {
		if p < 1 || p > 65535 {
			return fmt.Errorf("tools.sandbox_connect holds %d: each entry is a TCP port, 1 to 65535", p)
		}
	}
	return nil
}

// Plugin registers an MCP plugin by its manifest (version 1).
type Plugin struct {
	// Manifest is the manifest's absolute path.
	Manifest string `json:"manifest"`
	// Env and EnvFrom are the complete environment of a stdio plugin's
	// child: values as given, and values read from axlrd's environment
	// (KEY: HOST_VAR). Nothing else is inherited, and a provider's key is
	// never forwarded.
	Env     map[string]string `json:"env,omitempty"`
	EnvFrom map[string]string `json:"env_from,omitempty"`
}

// WebTools reports whether the web tools are offered.
func (s *Settings) WebTools() bool { return s.Tools.Web == nil || *s.Tools.Web }

// Approvals are the settings' approval rules.
type Approvals struct {
	// Autonomous approves every call the execution's policy and the
	// destructive list leave to approval (default false).
	Autonomous bool `json:"autonomous,omitempty"`
	// Allowed names tools approved without asking, exactly as the model
	// calls them (default none).
	Allowed []string `json:"allowed,omitempty"`
	// AlwaysAsk is the destructive list: commands ("git push --force") and
	// tool names that ask for a decision under every approval level. Absent,
	// DefaultAlwaysAsk applies; present, it replaces it.
	AlwaysAsk *[]string `json:"always_ask,omitempty"`
}

// Provider configures the OpenAI-compatible model provider.
type Provider struct {
	// BaseURL, default https://api.openai.com/v1 (OPENAI_BASE_URL wins).
	BaseURL string `json:"base_url,omitempty"`
	// APIKey (OPENAI_API_KEY or OPENROUTER_API_KEY win).
	APIKey string `json:"api_key,omitempty"`
	// Stream asks for server-sent events (default true).
	Stream *bool `json:"stream,omitempty"`
	// Headers are sent with every request.
	Headers map[string]string `json:"headers,omitempty"`
	// MaxTokens caps each response (0: the provider's default).
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Ceremonies configures the console-driven ceremonies.
type Ceremonies struct {
	// Profile is auto (default: compact when the model's window is 65,536
	// tokens or less), standard or compact.
	Profile string `json:"profile,omitempty"`
}

// Made configures the MADE engine: made-mcp when Command is set, else the
// embedded engine in the state directory.
type Made struct {
	// Command is the made-mcp executable; Args its arguments.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env adds variables to made-mcp's environment (beside
	// MADE_MCP_BACKEND=embedded and MADE_MCP_REDB_PATH in the state dir).
	Env map[string]string `json:"env,omitempty"`
}

// Kmp configures memory: kmp-mcp when Command is set, else the embedded
// store.
type Kmp struct {
	// Command is the kmp-mcp executable; Args its arguments.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env adds variables to kmp-mcp's environment (beside
	// KMP_MCP_BACKEND=embedded and KMP_MCP_DATA_DIR in the state dir).
	Env map[string]string `json:"env,omitempty"`
}

// Model holds per-model options.
type Model struct {
	// ContextTokens is the model's context cap; 0 falls back to the global
	// context_tokens.
	ContextTokens int `json:"context_tokens,omitempty"`
}

// Daemon holds axlrd's defaults; its flags override them.
type Daemon struct {
	StateDir        string `json:"state_dir,omitempty"`
	FrontendPort    int    `json:"frontend_port,omitempty"`
	UIPort          *int   `json:"ui_port,omitempty"`
	TemporalAddress string `json:"temporal_address,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	LogLevel        string `json:"log_level,omitempty"`
	// SQLiteSync is the embedded database's synchronous mode: normal or
	// full (see axlrd --sqlite-sync).
	SQLiteSync string `json:"sqlite_sync,omitempty"`
	// AbandonHours is how long a session's record stays open without a
	// prompt before axlrd's start ends it as abandoned (0: 168, a week).
	AbandonHours int `json:"abandon_hours,omitempty"`
}

// DefaultAbandonHours is daemon.abandon_hours when settings name none.
const DefaultAbandonHours = 168

// AbandonAfter returns daemon.abandon_hours as a duration.
func (d Daemon) AbandonAfter() time.Duration {
	return time.Duration(cmp.Or(d.AbandonHours, DefaultAbandonHours)) * time.Hour
}

// DefaultAlwaysAsk is the destructive list when settings name none.
var DefaultAlwaysAsk = []string{
	"git push --force",
	"git push -f",
	"git push --force-with-lease",
	"git push --mirror",
	"git push --delete",
	"git reset --hard",
	"git clean -f",
	"git clean -fd",
	"git clean -fdx",
	"git clean -ffdx",
	"git branch -D",
	"git checkout -- .",
	"git restore .",
	"rm -rf",
	"rm -fr",
	"rm -r",
}

// AlwaysAsk returns the effective destructive list.
func (s *Settings) AlwaysAsk() []string {
	if s.Approvals.AlwaysAsk == nil {
		return append([]string(nil), DefaultAlwaysAsk...)
	}
	return append([]string(nil), (*s.Approvals.AlwaysAsk)...)
}

// ContextCap returns the context cap for a model in tokens; 0 is no cap.
func (s *Settings) ContextCap(model string) int {
	if m, ok := s.Models[model]; ok && m.ContextTokens > 0 {
		return m.ContextTokens
	}
	return s.ContextTokens
}

// Stream reports whether model requests use server-sent events.
func (s *Settings) Stream() bool {
	return s.Provider.Stream == nil || *s.Provider.Stream
}

// Loaded is a settings file read from disk.
type Loaded struct {
	Settings
	// Path is the file read, or would have been read when it is absent.
	Path string
	// Found reports whether the file exists.
	Found bool
	// Unknown lists the dotted keys the file holds that axlr does not know.
	Unknown []string
	// Env lists the AXLR_* variables that set a key over the file's.
	Env []string
}

// DefaultPath returns $XDG_CONFIG_HOME/axlr/settings.json, falling back to
// ~/.config/axlr/settings.json.
func DefaultPath(getenv func(string) string) (string, error) {
	dir, err := xdgDir(getenv, "XDG_CONFIG_HOME", ".config")
	if err != nil {
		return "", fmt.Errorf("find settings: %w", err)
	}
	return filepath.Join(dir, "axlr", "settings.json"), nil
}

// DefaultDataDir returns $XDG_DATA_HOME/axlr, falling back to
// ~/.local/share/axlr.
func DefaultDataDir(getenv func(string) string) (string, error) {
	dir, err := xdgDir(getenv, "XDG_DATA_HOME", filepath.Join(".local", "share"))
	if err != nil {
		return "", fmt.Errorf("find data dir: %w", err)
	}
	return filepath.Join(dir, "axlr"), nil
}

// DefaultStateDir returns $XDG_STATE_HOME/axlr, falling back to
// ~/.local/state/axlr.
func DefaultStateDir(getenv func(string) string) (string, error) {
	dir, err := xdgDir(getenv, "XDG_STATE_HOME", filepath.Join(".local", "state"))
	if err != nil {
		return "", fmt.Errorf("find state dir: %w", err)
	}
	return filepath.Join(dir, "axlr"), nil
}

// StateDirOr returns daemon.state_dir (AXLR_STATE_DIR over it), else
// DefaultStateDir: where axlrd keeps its state when no flag names it.
func (d Daemon) StateDirOr(getenv func(string) string) (string, error) {
	if d.StateDir != "" {
		return d.StateDir, nil
	}
	return DefaultStateDir(getenv)
}

// xdgDir is an XDG base directory: the variable when it holds an absolute
// path (the spec ignores relative ones), else the fallback under $HOME.
func xdgDir(getenv func(string) string, variable, fallback string) (string, error) {
	if dir := getenv(variable); dir != "" && filepath.IsAbs(dir) {
		return dir, nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no %s and no home directory: %w", variable, err)
		}
		home = h
	}
	return filepath.Join(home, fallback), nil
}

// Load reads the settings file at path. A missing file is not an error: it
// yields empty settings with Found false.
func Load(path string) (*Loaded, error) {
	l := &Loaded{Path: path}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read settings %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read settings %s: %w", path, err)
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("settings %s is over the %d KiB limit", path, MaxSize>>10)
	}
	l.Found = true
	if err := l.parse(data); err != nil {
		return nil, fmt.Errorf("settings %s: %w", path, err)
	}
	return l, nil
}

// Parse reads settings from a JSON document.
func Parse(data []byte) (*Loaded, error) {
	l := &Loaded{Found: true}
	if err := l.parse(data); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Loaded) parse(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if _, ok := raw.(map[string]any); !ok {
		return errors.New("not a JSON object")
	}
	if err := json.Unmarshal(data, &l.Settings); err != nil {
		return fmt.Errorf("wrong type: %w", err)
	}
	l.Unknown = unknownKeys("", raw, reflect.TypeFor[Settings]())
	sort.Strings(l.Unknown)
	return l.validate()
}

func (l *Loaded) validate() error {
	if l.ContextTokens < 0 {
		return errors.New("context_tokens must be 0 (no cap) or positive")
	}
	if p := l.Daemon.FrontendPort; p < 0 || p > 65535 {
		return fmt.Errorf("daemon.frontend_port %d is not a port", p)
	}
	if p := l.Daemon.UIPort; p != nil && (*p < 0 || *p > 65535) {
		return fmt.Errorf("daemon.ui_port %d is not a port", *p)
	}
	switch l.Ceremonies.Profile {
	case "", "auto", "standard", "compact":
	default:
		return fmt.Errorf("ceremonies.profile %q: use auto, standard or compact", l.Ceremonies.Profile)
	}
	for _, entry := range l.AlwaysAsk() {
		if strings.TrimSpace(entry) == "" {
			return errors.New("approvals.always_ask holds an empty entry")
		}
	}
	if err := l.Repair.validate(); err != nil {
		return err
	}
	if err := l.Tools.validate(); err != nil {
		return err
	}
	if err := inRange("jobs.max_active", l.Jobs.MaxActive, MaxMaxActive, DefaultMaxActive); err != nil {
		return err
	}
	if err := inRange("jobs.max_active_per_host", l.Jobs.MaxActivePerHost, MaxMaxActive, l.JobsMaxActive()); err != nil {
		return err
	}
	if err := l.Cluster.validate(); err != nil {
		return err
	}
	if err := l.Service.validate(); err != nil {
		return err
	}
	return l.Forge.validate()
}

// MaxHostLostSeconds bounds cluster.host_lost_seconds (an hour).
const MaxHostLostSeconds = 3600

func (c Cluster) validate() error {
	if err := inRange("cluster.host_lost_seconds", c.HostLostSeconds, MaxHostLostSeconds, DefaultHostLostSeconds); err != nil {
		return err
	}
	if c.HostLostSeconds != 0 && c.HostLostSeconds < MinHostLostSeconds {
		return fmt.Errorf("cluster.host_lost_seconds %d is too short: use %d to %d (default %d), longer than a heartbeat", c.HostLostSeconds, MinHostLostSeconds, MaxHostLostSeconds, DefaultHostLostSeconds)
	}
	if c.Database != "" && !strings.HasPrefix(c.Database, "postgres://") && !strings.HasPrefix(c.Database, "postgresql://") {
		return errors.New("cluster.database: want a postgres:// URL, such as postgres://axlr@db:5432/axlr")
	}
	return nil
}

// MinHostLostSeconds is the shortest cluster.host_lost_seconds: a few
// heartbeats of a host-bound activity.
const MinHostLostSeconds = 5

// JobsPerHost returns jobs.max_active_per_host: this host's capacity.
func (s *Settings) JobsPerHost() int { return cmp.Or(s.Jobs.MaxActivePerHost, s.JobsMaxActive()) }

func (r Repair) validate() error {
	if r.Repository != "" {
		owner, name, ok := strings.Cut(r.Repository, "/")
		if !ok || !repoPart(owner) || !repoPart(name) {
			return fmt.Errorf("repair.repository %q: want owner/name, such as %s", r.Repository, DefaultRepairRepository)
		}
	}
	if r.Remote != "" && !gitURL(r.Remote) && !filepath.IsAbs(r.Remote) {
		return fmt.Errorf("repair.remote %q: want a git URL (https://…, ssh://…, git@host:path) or an absolute path", r.Remote)
	}
	if r.Directory != "" && !filepath.IsAbs(r.Directory) {
		return fmt.Errorf("repair.directory %q must be an absolute path", r.Directory)
	}
	if r.About != "" && strings.TrimSpace(r.About) == "" {
		return errors.New("repair.about is blank: leave it out for repo:<owner>/<name>")
	}
	for _, n := range []struct {
		key              string
		value, max, dflt int
	}{
		{"repair.watch_minutes", r.WatchMinutes, MaxWatchMinutes, DefaultWatchMinutes},
		{"repair.poll_seconds", r.PollSeconds, MaxPollSeconds, DefaultPollSeconds},
		{"repair.max_attempts", r.MaxAttempts, MaxMaxAttempts, DefaultMaxAttempts},
	} {
		if err := inRange(n.key, n.value, n.max, n.dflt); err != nil {
			return err
		}
	}
	return nil
}

// inRange refuses a value outside 1..hi; 0 is "not set".
func inRange(key string, value, hi, dflt int) error {
	if value < 0 || value > hi {
		return fmt.Errorf("%s %d is out of range: use 1 to %d (default %d)", key, value, hi, dflt)
	}
	return nil
}

// repoPart reports whether s is a GitHub owner or repository name.
func repoPart(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// gitURL reports whether s is a git URL: scheme://host/path or the
// scp-like [user@]host:path.
func gitURL(s string) bool {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && strings.Contains(s, "://") {
		return u.Host != "" || u.Scheme == "file"
	}
	host, path, ok := strings.Cut(s, ":")
	return ok && host != "" && path != "" && !strings.ContainsAny(host, "/\\")
}

// Web is the forge's web address, scheme and host, that a repository's
// default remote is on: https://github.com, or the host of forge.api_url
// over its scheme (plain http only for a loopback server, which validate
// holds). An api_url that is not an http(s) URL is an error.
func (f Forge) Web() (string, error) {
	if f.APIURL == "" {
		return "https://github.com", nil
	}
	u, err := url.Parse(f.APIURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("forge.api_url %q: want an http(s) URL, such as https://github.example.com/api/v3", f.APIURL)
	}
	if u.Hostname() == "api.github.com" {
		return u.Scheme + "://github.com", nil
	}
	return u.Scheme + "://" + u.Host, nil
}

func (f Forge) validate() error {
	if f.APIURL == "" {
		return nil
	}
	u, err := url.Parse(f.APIURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("forge.api_url %q: want an http(s) URL, such as https://github.example.com/api/v3", f.APIURL)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return fmt.Errorf("forge.api_url %q: plain http only on loopback (localhost, 127.0.0.0/8, ::1), since the token is sent to it; use https", f.APIURL)
	}
	return nil
}

// loopback reports whether host names this machine's loopback.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// unknownKeys walks a decoded JSON object against a struct type and returns
// the dotted paths of keys the type does not declare. Fields tagged
// settings:"opaque" and maps of non-struct values are not walked.
func unknownKeys(prefix string, raw any, t reflect.Type) []string {
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	switch t.Kind() {
	case reflect.Map:
		elem := t.Elem()
		for k, v := range obj {
			out = append(out, unknownKeys(prefix+k+".", v, elem)...)
		}
		return out
	case reflect.Struct:
	default:
		return nil
	}
	fields := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = f
		}
	}
	for k, v := range obj {
		f, ok := fields[k]
		if !ok {
			out = append(out, prefix+k)
			continue
		}
		if f.Tag.Get("settings") == "opaque" {
			continue
		}
		out = append(out, unknownKeys(prefix+k+".", v, f.Type)...)
	}
	return out
}
