// Package daemon is axlrd: it reads the settings, starts the embedded
// Temporal server (or connects to an existing cluster), and runs the worker
// that executes axlr's workflows and activities until it is told to stop.
//
// cmd/axlrd only calls Main; tests call Run, in process or through a
// re-executed test binary, so a crash test can kill a real daemon.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/underpass-ai/axlr/activities"
	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/internal/embedtemporal"
	"github.com/underpass-ai/axlr/internal/hostid"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/internal/zlog"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/made/mcp"
	"github.com/underpass-ai/axlr/redact"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/tools"
	"github.com/underpass-ai/axlr/workflows"
)

// Defaults of the embedded server.
const (
	DefaultFrontendPort = 7233
	DefaultUIPort       = 8233
	DefaultNamespace    = "default"
)

// Options configure a daemon. Zero values take the defaults on each field.
type Options struct {
	// StateDir holds temporal.db, the session logs and the lock. Default:
	// settings daemon.state_dir, then $XDG_STATE_HOME/axlr.
	StateDir string
	// FrontendPort of the embedded server. Default 7233.
	FrontendPort int
	// UIPort of the Web UI; 0 runs none. Default 8233 (set UIPortSet to
	// honour an explicit 0).
	UIPort    int
	UIPortSet bool
	// TemporalAddress uses an existing cluster and starts no server.
	TemporalAddress string
	// Namespace. Default "default".
	Namespace string
	// LogLevel: trace, debug, info (default), warn, error.
	LogLevel string
	// SettingsPath. Default $XDG_CONFIG_HOME/axlr/settings.json.
	SettingsPath string
	// Getenv reads the environment. Default os.Getenv.
	Getenv func(string) string
	// Environ is the environment exec children are filtered from. Default
	// os.Environ().
	Environ []string
	// Stdout receives the ready line; Stderr the logs.
	Stdout, Stderr io.Writer
	// Ready, when set, is called once the worker runs.
	Ready func(Info)
	// DynamicConfig overrides the embedded server's dynamic configuration
	// (benchmarks compare it with the server's defaults).
	DynamicConfig map[string]any
	// MadeCommand is the made-mcp executable (default: settings
	// made.command; empty runs the embedded MADE engine).
	MadeCommand string
	// SQLiteSync is the embedded database's synchronous mode: "full"
	// (default) survives a power loss; "normal" survives any crash of the
	// process and may lose the last commits on a power loss, for about
	// 1.5 ms less per activity. The session store fsyncs every append in
	// either mode.
	SQLiteSync string
}

// Info describes a running daemon.
type Info struct {
	Frontend  string
	Namespace string
	UIURL     string
	StateDir  string
	HostID    string
	TaskQueue string
}

// Main parses axlrd's command line and runs the daemon until SIGINT or
// SIGTERM. It returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "axlrd:", err)
		return 2
	}
	opts.Stdout, opts.Stderr = stdout, stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, opts); err != nil {
		fmt.Fprintln(stderr, "axlrd:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("axlrd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: axlrd [flags]

axlrd runs axlr's workflows: by default on an embedded Temporal server that
persists to <state-dir>/temporal.db, with the Temporal Web UI, and a worker.
Settings come from $XDG_CONFIG_HOME/axlr/settings.json; flags override them.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.StateDir, "state-dir", "", "state directory (default $XDG_STATE_HOME/axlr)")
	fs.IntVar(&o.FrontendPort, "frontend-port", 0, "embedded Temporal frontend port on 127.0.0.1 (default 7233)")
	fs.IntVar(&o.UIPort, "ui-port", 0, "Temporal Web UI port on 127.0.0.1; 0 turns it off (default 8233)")
	fs.StringVar(&o.TemporalAddress, "temporal-address", "", "host:port of an existing Temporal cluster; starts no embedded server")
	fs.StringVar(&o.Namespace, "namespace", "", "Temporal namespace (default \"default\")")
	fs.StringVar(&o.LogLevel, "log-level", "", "log level: trace, debug, info, warn, error (default info)")
	fs.StringVar(&o.SettingsPath, "settings", "", "settings file (default $XDG_CONFIG_HOME/axlr/settings.json)")
	fs.StringVar(&o.MadeCommand, "made-command", "", "made-mcp executable for the MADE ceremony ledger (default: settings made.command, else the embedded engine)")
	fs.StringVar(&o.SQLiteSync, "sqlite-sync", "", "embedded database durability: full (survives power loss) or normal (survives process crashes; faster) (default full)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (axlrd takes flags only; see --help)", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "ui-port" {
			o.UIPortSet = true
		}
	})
	return o, nil
}

// Run runs the daemon until ctx is done, then stops the worker and the
// server.
func Run(ctx context.Context, o Options) (err error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.SettingsPath == "" {
		if o.SettingsPath, err = settings.DefaultPath(o.Getenv); err != nil {
			return err
		}
	}
	set, err := settings.Load(o.SettingsPath)
	if err != nil {
		return err
	}
	if err := o.fill(set); err != nil {
		return err
	}
	level, err := zlog.ParseLevel(o.LogLevel)
	if err != nil {
		return err
	}
	log := zlog.New(o.Stderr, level)
	for _, k := range set.Unknown {
		log.Warn().Str("file", set.Path).Str("key", k).Msg("unknown settings key ignored")
	}
	host, err := hostid.Get(o.Getenv)
	if err != nil {
		return err
	}
	lock, err := lockStateDir(o.StateDir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lock.release()) }()

	info := Info{Namespace: o.Namespace, StateDir: o.StateDir, HostID: host, TaskQueue: workflows.HostTaskQueue(host)}
	if o.TemporalAddress == "" {
		start := time.Now()
		srv, err := embedtemporal.Start(embedtemporal.Options{
			DatabaseFile:     filepath.Join(o.StateDir, "temporal.db"),
			FrontendPort:     o.FrontendPort,
			UIPort:           o.UIPort,
			Namespaces:       []string{o.Namespace},
			Logger:           log,
			DynamicConfig:    o.DynamicConfig,
			Synchronous:      strings.ToUpper(o.SQLiteSync),
			SearchAttributes: searchAttributes,
		})
		if err != nil {
			return fmt.Errorf("embedded temporal server: %w", err)
		}
		defer srv.Stop()
		info.Frontend, info.UIURL = srv.FrontendAddress(), srv.UIURL()
		log.Debug().Dur("took", time.Since(start)).Msg("embedded temporal server started")
	} else {
		info.Frontend = o.TemporalAddress
	}

	hosts, hostSecrets, err := openHostTools(&o, set, log)
	if err != nil {
		return err
	}
	if hosts.Plugins != nil {
		defer func() { err = errors.Join(err, hosts.Plugins.Close()) }()
	}
	fg := openForge(set, o.Getenv, log)
	red := redact.New(secrets(set, o.Environ, hostSecrets, fg))
	identity, err := workerIdentity(host)
	if err != nil {
		return err
	}
	c, err := client.DialContext(ctx, client.Options{
		HostPort:      info.Frontend,
		Namespace:     o.Namespace,
		Identity:      identity,
		Logger:        zlog.SDK{L: log.With().Str("component", "sdk").Logger()},
		DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), red.Codec()),
	})
	if err != nil {
		return fmt.Errorf("connect to temporal at %s (namespace %s): %w", info.Frontend, o.Namespace, err)
	}
	defer c.Close()
	if err := ensureSearchAttributes(ctx, c, o.Namespace); err != nil {
		return err
	}

	store, err := session.Open(filepath.Join(o.StateDir, "sessions"), session.Options{Redactor: red})
	if err != nil {
		return fmt.Errorf("open session store: %w", err)
	}
	defer func() { err = errors.Join(err, store.Close()) }()

	engine, err := openMade(ctx, o, set, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, engine.Close()) }()
	publishPinned(ctx, engine, log)

	workspaces := &activities.Workspaces{Env: tools.RestrictedEnv(o.Environ)}
	defer func() { err = errors.Join(err, workspaces.Close()) }()
	acts := &activities.Session{
		Store:      store,
		Model:      agent.NewClient(providerConfig(&set.Settings, o.Getenv)),
		Settings:   &set.Settings,
		Workspaces: workspaces,
		Hosts:      hosts,
		Log:        log,
	}
	cer := &activities.Ceremony{Made: engine, Store: store, Workspaces: workspaces, Owner: "axlrd-" + host, Log: log}

	journal, err := openInflight(o.StateDir, identity, log)
	if err != nil {
		return err
	}
	lost := journal.previous()

	// The one wiring point: the worker, the reaper of a dead axlrd's
	// attempts and the wait for the signal run in one group; the first to
	// fail stops the others, and axlrd exits with its reason instead of
	// holding the state dir while it does nothing.
	g, gctx := errgroup.WithContext(ctx)
	fatal := make(chan error, 1)
	w := worker.New(c, info.TaskQueue, worker.Options{
		WorkerStopTimeout: 10 * time.Second,
		BuildID:           "axlrd",
		Interceptors:      []interceptor.WorkerInterceptor{journal.interceptor()},
		OnFatalError: func(err error) {
			select {
			case fatal <- err:
			default:
			}
		},
	})
	Register(w, acts, cer, fg)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker on %s: %w", info.TaskQueue, err)
	}
	defer w.Stop()
	g.Go(func() error {
		select {
		case err := <-fatal:
			return fmt.Errorf("the worker on %s stopped: %w", info.TaskQueue, err)
		case <-gctx.Done():
			return nil
		}
	})
	if len(lost) > 0 {
		g.Go(func() error {
			reapLost(gctx, c, o.Namespace, lost, log)
			return nil
		})
	}

	ui := info.UIURL
	if ui == "" {
		ui = "off"
	}
	fmt.Fprintf(o.Stdout, "axlrd ready: frontend %s namespace %s ui %s state %s task-queue %s\n",
		info.Frontend, info.Namespace, ui, info.StateDir, info.TaskQueue)
	log.Info().Str("frontend", info.Frontend).Str("ui", ui).Str("state_dir", info.StateDir).Str("task_queue", info.TaskQueue).
		Str("identity", identity).Int("lost_attempts", len(lost)).Msg("axlrd ready")
	if o.Ready != nil {
		o.Ready(info)
	}
	if err := g.Wait(); err != nil {
		log.Error().Err(err).Msg("axlrd stopping")
		return err
	}
	log.Info().Msg("axlrd stopping")
	return nil
}

// Register registers axlr's workflows and their activities on a worker.
func Register(w worker.Registry, acts *activities.Session, cer *activities.Ceremony, fg *activities.Forge) {
	w.RegisterWorkflowWithOptions(workflows.Session, workflow.RegisterOptions{Name: workflows.SessionWorkflow})
	w.RegisterWorkflowWithOptions(workflows.Task, workflow.RegisterOptions{Name: workflows.TaskWorkflow})
	w.RegisterWorkflowWithOptions(workflows.JobRegistry, workflow.RegisterOptions{Name: workflows.RegistryWorkflow})
	w.RegisterWorkflowWithOptions(workflows.Job, workflow.RegisterOptions{Name: workflows.JobWorkflow})
	w.RegisterWorkflowWithOptions(workflows.JobInstall, workflow.RegisterOptions{Name: workflows.JobInstallWorkflow})
	w.RegisterWorkflowWithOptions(workflows.MergeQueue, workflow.RegisterOptions{Name: workflows.QueueWorkflow})
	w.RegisterWorkflowWithOptions(workflows.PlanTask, workflow.RegisterOptions{Name: workflows.PlanTaskWorkflow})
	w.RegisterWorkflowWithOptions(workflows.Plan, workflow.RegisterOptions{Name: workflows.PlanWorkflow})
	w.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(cer, activity.RegisterOptions{Name: "ceremony.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(fg, activity.RegisterOptions{Name: "forge.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(&activities.Queue{}, activity.RegisterOptions{Name: "queue.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(&activities.PlanTask{Store: cer.Store, Workspaces: cer.Workspaces}, activity.RegisterOptions{Name: "plantask.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(&activities.Plan{Store: cer.Store}, activity.RegisterOptions{Name: "plan.", DisableAlreadyRegisteredCheck: true})
}

// madeEngine is an engine axlrd closes when it stops.
type madeEngine interface {
	made.Engine
	Close() error
}

// openMade starts made-mcp when settings name it (made.command), else opens
// the embedded engine in <state-dir>/made.
func openMade(ctx context.Context, o Options, set *settings.Loaded, log zerolog.Logger) (madeEngine, error) {
	m := set.Made
	if o.MadeCommand != "" {
		m.Command = o.MadeCommand
	}
	if m.Command == "" {
		e, err := embedded.Open(filepath.Join(o.StateDir, "made"), embedded.Options{})
		if err != nil {
			return nil, fmt.Errorf("open the embedded MADE engine: %w", err)
		}
		log.Debug().Str("engine", "embedded").Msg("MADE ready")
		return e, nil
	}
	env := []string{
		"MADE_MCP_BACKEND=embedded",
		"MADE_MCP_REDB_PATH=" + filepath.Join(o.StateDir, "made", "made.redb"),
		"PATH=" + o.Getenv("PATH"),
		"HOME=" + o.Getenv("HOME"),
	}
	for k, v := range m.Env {
		env = append(env, k+"="+v)
	}
	if err := os.MkdirAll(filepath.Join(o.StateDir, "made"), 0o700); err != nil {
		return nil, fmt.Errorf("create MADE store dir: %w", err)
	}
	c, err := mcp.Start(ctx, mcp.Options{Command: m.Command, Args: m.Args, Env: env, Dir: o.StateDir,
		Stderr: log.With().Str("component", "made-mcp").Logger()})
	if err != nil {
		return nil, fmt.Errorf("start made-mcp (%s): %w", m.Command, err)
	}
	log.Debug().Str("engine", m.Command).Msg("MADE ready")
	return c, nil
}

// publishPinned publishes every pinned definition at start. A definition
// MADE holds under another digest is reported; its ceremony refuses to
// start, the others work.
func publishPinned(ctx context.Context, e made.Engine, log zerolog.Logger) {
	for _, def := range ceremonies.All() {
		if _, err := activities.PublishPinned(ctx, e, def); err != nil {
			log.Error().Str("ceremony", def.Name+" "+def.Version).Err(err).Msg("ceremony unavailable")
			continue
		}
		log.Debug().Str("ceremony", def.Name+" "+def.Version).Str("digest", def.Digest).Msg("ceremony published")
	}
}

// fill applies the settings' daemon defaults under the flags.
func (o *Options) fill(set *settings.Loaded) error {
	d := set.Daemon
	if o.StateDir == "" {
		o.StateDir = d.StateDir
	}
	if o.StateDir == "" {
		dir, err := settings.DefaultStateDir(o.Getenv)
		if err != nil {
			return err
		}
		o.StateDir = dir
	}
	abs, err := filepath.Abs(o.StateDir)
	if err != nil {
		return fmt.Errorf("state dir %s: %w", o.StateDir, err)
	}
	o.StateDir = abs
	if o.FrontendPort == 0 {
		o.FrontendPort = d.FrontendPort
	}
	if o.FrontendPort == 0 {
		o.FrontendPort = DefaultFrontendPort
	}
	if !o.UIPortSet {
		o.UIPort = DefaultUIPort
		if d.UIPort != nil {
			o.UIPort = *d.UIPort
		}
	}
	if o.FrontendPort < 0 || o.FrontendPort > 65535 || o.UIPort < 0 || o.UIPort > 65535 {
		return fmt.Errorf("ports must be 0 to 65535 (frontend %d, ui %d)", o.FrontendPort, o.UIPort)
	}
	if o.TemporalAddress == "" {
		o.TemporalAddress = d.TemporalAddress
	}
	if o.Namespace == "" {
		o.Namespace = d.Namespace
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.LogLevel == "" {
		o.LogLevel = d.LogLevel
	}
	if o.SQLiteSync == "" {
		o.SQLiteSync = d.SQLiteSync
	}
	switch strings.ToLower(o.SQLiteSync) {
	case "":
		o.SQLiteSync = "full"
	case "normal", "full":
		o.SQLiteSync = strings.ToLower(o.SQLiteSync)
	default:
		return fmt.Errorf("sqlite sync %q: use normal or full", o.SQLiteSync)
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	return nil
}

// providerConfig merges the settings' provider with the environment, which
// wins: OPENAI_BASE_URL, OPENAI_API_KEY, OPENROUTER_API_KEY.
func providerConfig(s *settings.Settings, getenv func(string) string) agent.Config {
	env := agent.ConfigFromEnv(getenv)
	return agent.Config{
		BaseURL: cmp.Or(strings.TrimSpace(getenv("OPENAI_BASE_URL")), s.Provider.BaseURL, env.BaseURL),
		APIKey:  cmp.Or(env.APIKey, s.Provider.APIKey),
		Headers: s.Provider.Headers,
	}
}

// searchAttributes are the search attributes axlr's workflows upsert:
// the sessions a session workflow holds; a job's id, kind, repository,
// pull request and status; a plan's id and status, and its task workers'
// plan, task and wave.
var searchAttributes = map[string]enumspb.IndexedValueType{
	workflows.SearchAttributeSessions:    enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
	workflows.SearchAttributeJob:         enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributeJobKind:     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributeRepository:  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributePullRequest: enumspb.INDEXED_VALUE_TYPE_INT,
	workflows.SearchAttributeJobStatus:   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributePlan:        enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributePlanTask:    enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	workflows.SearchAttributePlanWave:    enumspb.INDEXED_VALUE_TYPE_INT,
	workflows.SearchAttributePlanStatus:  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// secrets are what axlrd redacts before a payload leaves it: the
// settings' secrets and provider key, the environment's credentials, the
// host tools' (plugins' environments) and the forge's token, which may
// come from gh's own config rather than the environment.
func secrets(set *settings.Loaded, environ, hostSecrets []string, fg *activities.Forge) []string {
	return slices.Concat(set.Secrets, []string{set.Provider.APIKey, fg.Git.Token}, redact.Secrets(environ), hostSecrets)
}

// ensureSearchAttributes registers on the namespace those of
// searchAttributes it misses: the workflows upsert them, and an unknown
// attribute would fail their workflow tasks. One registered with another
// type is an error.
func ensureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	var names, create []string
	for _, name := range slices.Sorted(maps.Keys(searchAttributes)) {
		want := searchAttributes[name]
		if t, ok := list.GetCustomAttributes()[name]; ok {
			if t != want {
				return fmt.Errorf("search attribute %s of namespace %s is %s, not %s", name, namespace, t, want)
			}
			continue
		}
		missing[name] = want
		names = append(names, fmt.Sprintf("%s (%s)", name, want))
		create = append(create, fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type %s", namespace, name, want))
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	}); err != nil {
		return fmt.Errorf("register search attributes %s on namespace %s: %w; an operator can add them with: %s",
			strings.Join(names, ", "), namespace, err, strings.Join(create, "; "))
	}
	return nil
}
