// Package daemon is axlrd: it reads the settings, starts the embedded
// Temporal server (or connects to an existing cluster), and runs the worker
// that executes axlr's workflows and activities until it is told to stop.
//
// This file is the one wiring point. New opens every part, each failure
// wrapped with what it was opening; Run runs the worker and the reaper of a
// dead axlrd's attempts in one errgroup, where the first part to fail
// stops the others; Shutdown stops them in order under a deadline. Serve
// (serve.go) composes the three, and Main owns the command line and the
// signals. cmd/axlrd only calls Main; tests call Serve, in process, or Main
// through a re-executed test binary, so a crash test can kill a real
// daemon.
package daemon

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/underpass-ai/axlr/activities"
	"github.com/underpass-ai/axlr/agent"
	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/internal/buildinfo"
	axlrclient "github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/database"
	"github.com/underpass-ai/axlr/internal/embedtemporal"
	"github.com/underpass-ai/axlr/internal/hostid"
	"github.com/underpass-ai/axlr/internal/live"
	"github.com/underpass-ai/axlr/internal/service"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/internal/zlog"
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

// Options configure a daemon. Zero values take the defaults on each
// field; a flag's field wins over its AXLR_* variable, which wins over
// settings.json.
type Options struct {
	// StateDir holds temporal.db, the session logs, the scopes plan tasks
	// keep (scopes/) and the lock. Default: $AXLR_STATE_DIR, settings
	// daemon.state_dir, then $XDG_STATE_HOME/axlr.
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
	// SettingsPath. Default $AXLR_SETTINGS, then
	// $XDG_CONFIG_HOME/axlr/settings.json.
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
	// Database is the PostgreSQL database the hosts of a cluster share
	// (a postgres:// URL): MADE's ledger and the memory live there.
	// Default: $AXLR_DATABASE, then settings cluster.database; empty
	// keeps them in the state dir.
	Database string
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
	// ServiceURL is the service API's ("" when off); ProbeAddr its
	// probe listener's.
	ServiceURL string
	ProbeAddr  string
}

// Daemon is axlrd as New opened it: Run runs it, Shutdown stops it.
type Daemon struct {
	log      zerolog.Logger
	stdout   io.Writer
	ready    func(Info)
	info     Info
	identity string
	temporal client.Client
	// workers poll this host's queue, then the cluster's.
	workers []queueWorker
	// external: axlrd uses a cluster (--temporal-address), not its own
	// embedded server.
	external bool
	// lost are the attempts a dead axlrd left in the in-flight journal.
	lost []inflightAttempt
	// chores run beside the worker once axlrd is ready: they never hold
	// the ready line, and Run's group waits for them before the parts
	// they use close.
	chores []func(context.Context)
	// parts are what New opened beside the worker, in the order opened;
	// Shutdown stops them in the reverse order.
	parts []part
	// service is the HTTP service API, nil when service.listen and
	// service.probe are both off.
	service *service.Server

	// stop is closed by Shutdown: Run's group stops.
	stop chan struct{}
	mu   sync.Mutex
	// shut: Shutdown has begun; ran is closed when Run returns (nil
	// before Run).
	shut bool
	ran  chan struct{}

	shutOnce sync.Once
	shutErr  error
}

// queueWorker is a worker and the task queue it polls.
type queueWorker struct {
	queue string
	w     worker.Worker
}

// part is something the daemon stops, by the name its errors give it.
type part struct {
	name string
	stop func() error
}

// errShutDown is Run after Shutdown.
var errShutDown = errors.New("axlrd is shut down")

// New opens every part of the daemon: the settings, the log, the state
// dir's lock, the embedded server, the host tools, the Temporal client,
// the session store, MADE and the worker. A failure names what it was
// opening, and closes what New opened before it.
func New(ctx context.Context, o Options) (*Daemon, error) {
	o.defaults()
	set, err := settings.Open(o.SettingsPath, o.Getenv)
	if err == nil {
		err = o.fill(set)
	}
	if err != nil {
		return nil, fmt.Errorf("open settings: %w", err)
	}
	level, err := zlog.ParseLevel(o.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("open the log: %w", err)
	}
	d := &Daemon{log: zlog.New(o.Stderr, level), stdout: o.Stdout, ready: o.Ready, stop: make(chan struct{})}
	for _, k := range set.Unknown {
		d.log.Warn().Str("file", set.Path).Str("key", k).Msg("unknown settings key ignored")
	}
	if len(set.Env) > 0 {
		d.log.Debug().Strs("variables", set.Env).Msg("settings from the environment")
	}
	if err := d.open(ctx, o, set); err != nil {
		return nil, errors.Join(err, d.stopParts(context.Background()))
	}
	return d, nil
}

func (o *Options) defaults() {
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
}

// open opens the parts after the log, in order; each one that needs
// stopping is added to d.parts as soon as it is open.
func (d *Daemon) open(ctx context.Context, o Options, set *settings.Loaded) error {
	ss, err := sessionSettings(&set.Settings, o.Getenv)
	if err != nil {
		return fmt.Errorf("open settings: %w", err)
	}
	host, err := hostid.Get(o.Getenv)
	if err != nil {
		return fmt.Errorf("name this host: %w", err)
	}
	lock, err := lockStateDir(o.StateDir)
	if err != nil {
		return fmt.Errorf("lock the state dir: %w", err)
	}
	d.add("the state dir lock", lock.release)
	var madeDB, memoryDB *sql.DB
	if o.Database != "" {
		if madeDB, err = d.openDatabase(ctx, o.Database, database.SchemaMade); err != nil {
			return err
		}
		if memoryDB, err = d.openDatabase(ctx, o.Database, database.SchemaMemory); err != nil {
			return err
		}
	}
	d.info = Info{Frontend: o.TemporalAddress, Namespace: o.Namespace, StateDir: o.StateDir, HostID: host, TaskQueue: workflows.HostTaskQueue(host)}
	d.external = o.TemporalAddress != ""
	if o.TemporalAddress == "" {
		if err := d.startServer(o); err != nil {
			return fmt.Errorf("start the embedded Temporal server: %w", err)
		}
	}
	hosts, hostSecrets, err := openHostTools(&o, set, d.log)
	if err != nil {
		return fmt.Errorf("open host tools: %w", err)
	}
	if hosts.Plugins != nil {
		d.add("the plugins", hosts.Plugins.Close)
	}
	fg := openForge(set, o.Getenv, d.log)
	if data, err := settings.DefaultDataDir(o.Getenv); err == nil {
		fg.Jobs = set.RepairDirectory(data)
	}
	red := redact.New(append(secrets(set, o.Environ, hostSecrets, fg), database.Password(o.Database)))
	if err := d.dial(ctx, red); err != nil {
		return err
	}
	store, err := session.Open(filepath.Join(o.StateDir, "sessions"), session.Options{Redactor: red})
	if err != nil {
		return fmt.Errorf("open session store: %w", err)
	}
	d.add("the session store", store.Close)
	engine, err := openMade(ctx, o, set, madeDB, d.log)
	if err != nil {
		return err
	}
	d.add("MADE", engine.Close)
	publishPinned(ctx, engine, d.log)
	memory, err := openMemory(ctx, o, set, memoryDB, d.log)
	if err != nil {
		return err
	}
	d.add("the memory", memory.Close)
	mem := &activities.Memory{Store: memory, Sidecars: filepath.Join(o.StateDir, "memory", "sidecar"), Sessions: store, Log: d.log}
	hosts.Memory = mem
	// After the ready line, beside the worker: what the sidecars kept
	// while memory was down, and the records of abandoned sessions.
	abandonAfter := set.Daemon.AbandonAfter()
	d.chores = append(d.chores,
		func(ctx context.Context) { flushSidecars(ctx, mem, d.log) },
		func(ctx context.Context) { endAbandoned(ctx, engine, store, abandonAfter, time.Now(), d.log) })
	env := tools.RestrictedEnv(o.Environ)
	box, warning := tools.NewSandbox(tools.SandboxConfig{Mode: set.Tools.SandboxMode(), Read: set.Tools.SandboxRead,
		Write: set.Tools.SandboxWrite, Connect: set.Tools.SandboxConnect, Network: set.Tools.SandboxNetwork}, env)
	if warning != "" {
		d.log.Warn().Str("setting", "tools.sandbox").Msg(warning)
	} else {
		d.log.Info().Str("sandbox", box.Plan.Status()).Msg("commands run confined")
	}
	workspaces := &activities.Workspaces{Env: env, Sandbox: box}
	fg.Sandbox = box
	d.add("the workspaces", workspaces.Close)
	provider := providerConfig(&set.Settings, o.Getenv)
	model := agent.NewClient(provider)
	drafts := filepath.Join(o.StateDir, "incidents")
	deltas := &live.Broker{}
	acts := &activities.Session{Store: store, Model: model, Settings: ss,
		Workspaces: workspaces, Hosts: hosts, Drafts: drafts, Log: d.log, Live: deltas}
	cer := &activities.Ceremony{Made: engine, Store: store, Workspaces: workspaces, Owner: "axlrd-" + host, Log: d.log,
		Definitions: filepath.Join(o.StateDir, "ceremonies"), Drafts: drafts, Model: model,
		ReviewerModel: set.Settings.ReviewerModel, MaxTokens: ss.MaxTokens}
	journal, err := openInflight(o.StateDir, d.identity, d.log)
	if err != nil {
		return err
	}
	d.lost = journal.previous()
	tasks := &activities.PlanTask{Store: store, Workspaces: workspaces, Scopes: filepath.Join(o.StateDir, "scopes")}
	// The same workflows and activities on both queues: what runs where is
	// the workflows' choice (workflows/cluster.go).
	for _, queue := range []string{d.info.TaskQueue, workflows.ClusterTaskQueue} {
		w := worker.New(d.temporal, queue, worker.Options{
			WorkerStopTimeout: 10 * time.Second,
			BuildID:           "axlrd",
			Interceptors:      []interceptor.WorkerInterceptor{journal.interceptor()},
		})
		Register(w, acts, cer, fg, tasks, mem)
		d.workers = append(d.workers, queueWorker{queue, w})
	}
	d.chores = append(d.chores, func(ctx context.Context) {
		announceHost(ctx, d.temporal, workflows.HostAnnounce{ID: host, Capacity: set.JobsPerHost(), Build: buildinfo.String()}, d.log)
	})
	return d.openService(o, set, deltas, &ready{temporal: d.temporal, made: engine, memory: memory, model: set.Settings.Model, provider: provider})
}

// openDatabase opens a pool on the cluster's database confined to schema;
// Shutdown closes it after the store on it.
func (d *Daemon) openDatabase(ctx context.Context, addr, schema string) (*sql.DB, error) {
	db, err := database.Open(ctx, addr, schema)
	if err != nil {
		return nil, fmt.Errorf("open the cluster's database: %w", err)
	}
	d.add("the database ("+schema+")", db.Close)
	d.log.Debug().Str("database", database.Redact(addr)).Str("schema", schema).Msg("database ready")
	return db, nil
}

// add records an opened part for Shutdown.
func (d *Daemon) add(name string, stop func() error) { d.parts = append(d.parts, part{name, stop}) }

// startServer starts the embedded Temporal server, persisted in the state
// dir.
func (d *Daemon) startServer(o Options) error {
	start := time.Now()
	srv, err := embedtemporal.Start(embedtemporal.Options{
		DatabaseFile:     filepath.Join(o.StateDir, "temporal.db"),
		FrontendPort:     o.FrontendPort,
		UIPort:           o.UIPort,
		Namespaces:       []string{o.Namespace},
		Logger:           d.log,
		DynamicConfig:    o.DynamicConfig,
		Synchronous:      strings.ToUpper(o.SQLiteSync),
		SearchAttributes: searchAttributes,
	})
	if err != nil {
		return err
	}
	d.add("the embedded Temporal server", func() error { srv.Stop(); return nil })
	d.info.Frontend, d.info.UIURL = srv.FrontendAddress(), srv.UIURL()
	d.log.Debug().Dur("took", time.Since(start)).Msg("embedded temporal server started")
	return nil
}

// dial connects the worker's Temporal client under this axlrd's identity,
// its payloads redacted, and registers the search attributes the
// workflows upsert.
func (d *Daemon) dial(ctx context.Context, red *redact.Redactor) error {
	identity, err := workerIdentity(d.info.HostID)
	if err != nil {
		return err
	}
	c, err := client.DialContext(ctx, client.Options{
		HostPort:      d.info.Frontend,
		Namespace:     d.info.Namespace,
		Identity:      identity,
		Logger:        zlog.SDK{L: d.log.With().Str("component", "sdk").Logger()},
		DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), red.Codec()),
	})
	if err != nil {
		return fmt.Errorf("connect to temporal at %s (namespace %s): %w", d.info.Frontend, d.info.Namespace, err)
	}
	d.add("the Temporal client", func() error { c.Close(); return nil })
	d.temporal, d.identity = c, identity
	// The embedded server's services share one namespace registry, which
	// learns new attributes at once; a cluster's learn them at their next
	// refresh.
	settle := time.Duration(0)
	if d.external {
		settle = searchAttributesSettle
	}
	return ensureSearchAttributes(ctx, c, d.info.Namespace, settle)
}

// Run runs the worker (w.Run, interrupted when ctx is done or Shutdown
// begins) and, after a crash, the reaper of the dead axlrd's attempts, in
// one group: the first to fail stops the others, and Run returns its
// error, which names it. Run is called once; Shutdown stops what it
// leaves.
func (d *Daemon) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.shut || d.ran != nil {
		d.mu.Unlock()
		return errShutDown
	}
	ran := make(chan struct{})
	d.ran = ran
	d.mu.Unlock()
	defer close(ran)

	// The ready line waits for the worker's start; w.Run below starts it
	// no second time (Start is memoized).
	for _, qw := range d.workers {
		if err := qw.w.Start(); err != nil {
			return fmt.Errorf("start worker on %s: %w", qw.queue, err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	interrupt := make(chan any)
	go func() {
		select {
		case <-gctx.Done():
		case <-d.stop:
		}
		close(interrupt)
	}()
	for _, qw := range d.workers {
		g.Go(func() error {
			if err := qw.w.Run(interrupt); err != nil {
				return fmt.Errorf("the worker on %s stopped: %w", qw.queue, err)
			}
			return nil
		})
	}
	if len(d.lost) > 0 {
		g.Go(func() error {
			reapLost(gctx, d.temporal, d.info.Namespace, d.lost, d.log)
			return nil
		})
	}
	for _, chore := range d.chores {
		g.Go(func() error {
			chore(gctx)
			return nil
		})
	}
	if d.service != nil {
		sctx, stopService := context.WithCancel(gctx)
		go func() {
			<-interrupt
			stopService()
		}()
		g.Go(func() error {
			if err := d.service.Serve(sctx); err != nil {
				return fmt.Errorf("the service API stopped: %w", err)
			}
			return nil
		})
	}
	d.announce()
	err := g.Wait()
	d.log.Info().Msg("axlrd stopping")
	return err
}

// announce prints the ready line and calls Options.Ready.
func (d *Daemon) announce() {
	i := d.info
	ui := i.UIURL
	if ui == "" {
		ui = "off"
	}
	svc := i.ServiceURL
	if svc == "" {
		svc = "off"
	}
	fmt.Fprintf(d.stdout, "axlrd ready: frontend %s namespace %s ui %s state %s task-queue %s service %s\n",
		i.Frontend, i.Namespace, ui, i.StateDir, i.TaskQueue, svc)
	d.log.Info().Str("frontend", i.Frontend).Str("ui", ui).Str("state_dir", i.StateDir).Str("task_queue", i.TaskQueue).
		Str("service", svc).Str("probe", i.ProbeAddr).
		Str("identity", d.identity).Int("lost_attempts", len(d.lost)).Msg("axlrd ready")
	if d.ready != nil {
		d.ready(i)
	}
}

// Shutdown stops the daemon under ctx's deadline: Run's group first (the
// worker gives its running tasks 10 s), then what New opened, in the
// reverse order, the state dir's lock last. A part that fails to stop is
// named and the rest still stop; a part that outlives the deadline ends
// Shutdown with its name, and those after it are left to the process's
// exit. Later calls return the first call's result.
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.shutOnce.Do(func() { d.shutErr = d.shutdown(ctx) })
	return d.shutErr
}

func (d *Daemon) shutdown(ctx context.Context) error {
	d.mu.Lock()
	d.shut = true
	ran := d.ran
	d.mu.Unlock()
	close(d.stop)
	if ran != nil {
		select {
		case <-ran:
		case <-ctx.Done():
			return fmt.Errorf("stop the worker on %s: %w", d.info.TaskQueue, ctx.Err())
		}
	}
	return d.stopParts(ctx)
}

// stopParts stops the parts in the reverse order of their opening.
func (d *Daemon) stopParts(ctx context.Context) error {
	var errs []error
	for _, p := range slices.Backward(d.parts) {
		done := make(chan error, 1)
		go func() { done <- p.stop() }()
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("stop %s: %w", p.name, err))
			}
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("stop %s: %w", p.name, ctx.Err()))...)
		}
	}
	return errors.Join(errs...)
}

// Register registers axlr's workflows and their activities on a worker.
func Register(w worker.Registry, acts *activities.Session, cer *activities.Ceremony, fg *activities.Forge, tasks *activities.PlanTask, mem *activities.Memory) {
	w.RegisterWorkflowWithOptions(workflows.Session, workflow.RegisterOptions{Name: workflows.SessionWorkflow})
	w.RegisterWorkflowWithOptions(workflows.Task, workflow.RegisterOptions{Name: workflows.TaskWorkflow})
	w.RegisterWorkflowWithOptions(workflows.JobRegistry, workflow.RegisterOptions{Name: workflows.RegistryWorkflow})
	w.RegisterWorkflowWithOptions(workflows.Job, workflow.RegisterOptions{Name: workflows.JobWorkflow})
	w.RegisterWorkflowWithOptions(workflows.JobInstall, workflow.RegisterOptions{Name: workflows.JobInstallWorkflow})
	w.RegisterWorkflowWithOptions(workflows.PullRead, workflow.RegisterOptions{Name: workflows.PullReadWorkflow})
	w.RegisterWorkflowWithOptions(workflows.DefinitionPublish, workflow.RegisterOptions{Name: workflows.DefinitionPublishWorkflow})
	w.RegisterWorkflowWithOptions(workflows.DefinitionList, workflow.RegisterOptions{Name: workflows.DefinitionListWorkflow})
	w.RegisterWorkflowWithOptions(workflows.MergeQueue, workflow.RegisterOptions{Name: workflows.QueueWorkflow})
	w.RegisterWorkflowWithOptions(workflows.PlanTask, workflow.RegisterOptions{Name: workflows.PlanTaskWorkflow})
	w.RegisterWorkflowWithOptions(workflows.Plan, workflow.RegisterOptions{Name: workflows.PlanWorkflow})
	w.RegisterWorkflowWithOptions(workflows.MemoryRead, workflow.RegisterOptions{Name: workflows.MemoryReadWorkflow})
	w.RegisterWorkflowWithOptions(workflows.SessionTurnsRead, workflow.RegisterOptions{Name: workflows.SessionTurnsWorkflow})
	w.RegisterActivityWithOptions(acts, activity.RegisterOptions{Name: "session.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(cer, activity.RegisterOptions{Name: "ceremony.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(fg, activity.RegisterOptions{Name: "forge.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(&activities.Queue{}, activity.RegisterOptions{Name: "queue.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(tasks, activity.RegisterOptions{Name: "plantask.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(&activities.Plan{Store: cer.Store}, activity.RegisterOptions{Name: "plan.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(mem, activity.RegisterOptions{Name: "memory.", DisableAlreadyRegisteredCheck: true})
	w.RegisterActivityWithOptions(&activities.Cluster{}, activity.RegisterOptions{Name: "cluster.", DisableAlreadyRegisteredCheck: true})
}

// fill applies the settings (the file, then its AXLR_* variables) under
// the flags, then the defaults.
func (o *Options) fill(set *settings.Loaded) error {
	d := set.Daemon
	if o.StateDir == "" {
		dir, err := d.StateDirOr(o.Getenv)
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
	if o.Database == "" {
		o.Database = set.Cluster.Database
	}
	if made := cmp.Or(o.MadeCommand, set.Made.Command); made != "" && o.Database != "" {
		return fmt.Errorf("made-mcp (%s) keeps its ledger on this host, and --database shares it between hosts: drop one of them", made)
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

// secrets are what axlrd redacts before a payload leaves it: the
// settings' secrets and provider key, the environment's credentials, the
// host tools' (plugins' environments) and the forge's token, which may
// come from gh's own config rather than the environment.
func secrets(set *settings.Loaded, environ, hostSecrets []string, fg *activities.Forge) []string {
	return slices.Concat(set.Secrets, []string{set.Provider.APIKey, fg.Git.Token}, redact.Secrets(environ), hostSecrets)
}

// sessionSettings are the settings the session activities apply, as the
// plain values they take.
func sessionSettings(set *settings.Settings, getenv func(string) string) (activities.SessionSettings, error) {
	jobs, err := axlrclient.JobLaunchSettings(set, getenv)
	if err != nil {
		return activities.SessionSettings{}, err
	}
	caps := map[string]int{}
	for name := range set.Models {
		caps[name] = set.ContextCap(name)
	}
	return activities.SessionSettings{
		Model:           set.Model,
		Approvals:       policy.Settings{Autonomous: set.Approvals.Autonomous, Allowed: set.Approvals.Allowed, AlwaysAsk: set.AlwaysAsk()},
		ContextCaps:     caps,
		ContextTokens:   set.ContextTokens,
		MaxTokens:       set.Provider.MaxTokens,
		Stream:          set.Stream(),
		CeremonyProfile: set.Ceremonies.Profile,
		Jobs:            jobs,
	}, nil
}
