package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/worker"

	"github.com/underpass-ai/axlr/activities"
	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/internal/settings"
)

// TestNewNamesWhatFailed: a failure to open a part names the part, and
// what New opened before it is closed again (the state dir is free).
// None of these starts a Temporal server.
func TestNewNamesWhatFailed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bad := write("bad.json", `{"model": `)
	plugin := write("plugin.json", `{"plugins": [{"manifest": "relative.json"}]}`)
	absent := filepath.Join(dir, "absent.json")
	tests := []struct {
		name string
		opts Options
		env  map[string]string
		hold bool
		want []string
	}{
		{name: "bad settings file", opts: Options{SettingsPath: bad}, want: []string{"open settings: settings " + bad + ": not valid JSON"}},
		{name: "bad variable", opts: Options{SettingsPath: absent}, env: map[string]string{"AXLR_FRONTEND_PORT": "x"},
			want: []string{`open settings: AXLR_FRONTEND_PORT "x": want a port number, 1 to 65535`}},
		{name: "bad sync mode", opts: Options{SettingsPath: absent, SQLiteSync: "off"}, want: []string{`open settings: sqlite sync "off": use normal or full`}},
		{name: "bad log level", opts: Options{SettingsPath: absent, LogLevel: "loud"}, want: []string{`open the log: unknown log level "loud"`}},
		{name: "held lock", opts: Options{SettingsPath: absent}, hold: true,
			want: []string{"lock the state dir: state dir ", " is in use by another axlrd (pid ", "stop it, or pass --state-dir for a separate one"}},
		{name: "bad plugin", opts: Options{SettingsPath: plugin, TemporalAddress: "127.0.0.1:1"}, want: []string{"open host tools: " + plugin + ": plugins[0]"}},
		{name: "made-mcp and a database", opts: Options{SettingsPath: absent, MadeCommand: "/bin/made-mcp", Database: "postgres://axlr@127.0.0.1:1/axlr"},
			want: []string{"open settings: made-mcp (/bin/made-mcp) keeps its ledger on this host, and --database shares it between hosts: drop one of them"}},
		{name: "unreachable database", opts: Options{SettingsPath: absent, Database: "postgres://axlr:s3cret@127.0.0.1:1/axlr?connect_timeout=2"},
			want: []string{"open the cluster's database: database postgres://axlr:xxxxx@127.0.0.1:1/axlr?connect_timeout=2: schema axlr_made: "}},
		{name: "service off loopback without TLS", opts: Options{SettingsPath: absent}, env: map[string]string{"AXLR_SERVICE_LISTEN": "0.0.0.0:7280"},
			want: []string{"open settings: service.listen 0.0.0.0:7280 is not loopback: it needs service.tls.cert and key"}},
		{name: "unreachable cluster", opts: Options{SettingsPath: absent, TemporalAddress: "127.0.0.1:1"},
			want: []string{"connect to temporal at 127.0.0.1:1 (namespace default): "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.StateDir = t.TempDir()
			// A token in the environment keeps the forge from reading (and
			// go-gh from caching) gh's own config.
			env := map[string]string{"HOME": dir, "AXLR_HOST_ID": "unit", "GH_TOKEN": "ghp-unit"}
			for k, v := range tt.env {
				env[k] = v
			}
			o.Getenv, o.Environ = func(k string) string { return env[k] }, []string{}
			if tt.hold {
				l, err := lockStateDir(o.StateDir)
				if err != nil {
					t.Fatal(err)
				}
				defer l.release()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			d, err := New(ctx, o)
			if d != nil || err == nil {
				t.Fatalf("New: %v, %v", d, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error %q shows the database's password", err)
			}
			if !tt.hold {
				assertFree(t, o.StateDir)
			}
		})
	}
}

// assertFree fails unless the state dir's lock can be taken.
func assertFree(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "axlrd.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("state dir %s still held: %v", dir, err)
	}
}

// TestPrecedence: a flag wins over its AXLR_* variable, which wins over
// settings.json, which wins over the default.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(path, []byte(`{"daemon": {"frontend_port": 7001, "ui_port": 8001, "namespace": "file-ns", "state_dir": "/file/state"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	type got struct {
		FrontendPort, UIPort int
		Namespace, StateDir  string
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want got
	}{
		{name: "defaults", file: filepath.Join(dir, "absent.json"), want: got{DefaultFrontendPort, DefaultUIPort, DefaultNamespace, filepath.Join(dir, "state", "axlr")}},
		{name: "file", file: path, want: got{7001, 8001, "file-ns", "/file/state"}},
		{name: "environment over the file", file: path,
			env:  map[string]string{"AXLR_FRONTEND_PORT": "7002", "AXLR_UI_PORT": "0", "AXLR_NAMESPACE": "env-ns", "AXLR_STATE_DIR": "/env/state"},
			want: got{7002, 0, "env-ns", "/env/state"}},
		{name: "flags over the environment", file: path, args: []string{"--frontend-port", "7003", "--ui-port", "8003", "--namespace", "flag-ns", "--state-dir", "/flag/state"},
			env:  map[string]string{"AXLR_FRONTEND_PORT": "7002", "AXLR_UI_PORT": "0", "AXLR_NAMESPACE": "env-ns", "AXLR_STATE_DIR": "/env/state"},
			want: got{7003, 8003, "flag-ns", "/flag/state"}},
		{name: "an explicit --ui-port 0", file: path, args: []string{"--ui-port", "0"}, env: map[string]string{"AXLR_UI_PORT": "8002"},
			want: got{7001, 0, "file-ns", "/file/state"}},
		{name: "AXLR_SETTINGS", env: map[string]string{"AXLR_SETTINGS": path}, want: got{7001, 8001, "file-ns", "/file/state"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.file != "" {
				args = append([]string{"--settings", tt.file}, args...)
			}
			o, err := parseFlags(args, &strings.Builder{})
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"XDG_STATE_HOME": filepath.Join(dir, "state")}
			for k, v := range tt.env {
				env[k] = v
			}
			o.Getenv = func(k string) string { return env[k] }
			set, err := settings.Open(o.SettingsPath, o.Getenv)
			if err == nil {
				err = o.fill(set)
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := (got{o.FrontendPort, o.UIPort, o.Namespace, o.StateDir}); g != tt.want {
				t.Fatalf("options %+v, want %+v", g, tt.want)
			}
		})
	}
}

// fakeWorker stands for the SDK's worker: Run returns fail at once, or
// nil when interrupted. Its other methods are not called.
type fakeWorker struct {
	worker.Worker
	fail error
}

func (w *fakeWorker) Start() error { return nil }

func (w *fakeWorker) Run(interrupt <-chan any) error {
	if w.fail != nil {
		return w.fail
	}
	<-interrupt
	return nil
}

// stops records the order the parts stop in.
type stops struct {
	mu    sync.Mutex
	names []string
}

func (s *stops) part(name string, err error, block <-chan struct{}) part {
	return part{name, func() error {
		if block != nil {
			<-block
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.names = append(s.names, name)
		return err
	}}
}

func (s *stops) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names
}

func testDaemon(w worker.Worker, parts ...part) *Daemon {
	return &Daemon{log: zerolog.Nop(), stdout: &strings.Builder{}, workers: []queueWorker{{"axlr-host-unit", w}}, parts: parts, stop: make(chan struct{}),
		info: Info{TaskQueue: "axlr-host-unit"}}
}

// TestRunStopsOnAFailedPart: the worker failing ends Run with its name;
// Shutdown then stops the rest, last opened first.
func TestRunStopsOnAFailedPart(t *testing.T) {
	var s stops
	d := testDaemon(&fakeWorker{fail: errors.New("namespace doomed is not found")}, s.part("lock", nil, nil), s.part("server", nil, nil), s.part("store", nil, nil))
	err := d.Run(context.Background())
	if err == nil || err.Error() != "the worker on axlr-host-unit stopped: namespace doomed is not found" {
		t.Fatalf("run: %v", err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"store", "server", "lock"}; !reflect.DeepEqual(s.got(), want) {
		t.Fatalf("stopped %v, want %v", s.got(), want)
	}
	if err := d.Run(context.Background()); !errors.Is(err, errShutDown) {
		t.Fatalf("run after shutdown: %v", err)
	}
}

// TestShutdownStopsRun: Shutdown interrupts a running worker, waits for
// Run, and stops the parts; a part that fails is named and the others
// still stop.
func TestShutdownStopsRun(t *testing.T) {
	var s stops
	d := testDaemon(&fakeWorker{}, s.part("lock", nil, nil), s.part("store", errors.New("sync sessions: disk full"), nil), s.part("made", nil, nil))
	ready := make(chan Info, 1)
	d.ready = func(i Info) { ready <- i }
	ran := make(chan error, 1)
	go func() { ran <- d.Run(context.Background()) }()
	<-ready
	err := d.Shutdown(context.Background())
	if err == nil || err.Error() != "stop store: sync sessions: disk full" {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-ran; err != nil {
		t.Fatalf("run: %v", err)
	}
	if want := []string{"made", "store", "lock"}; !reflect.DeepEqual(s.got(), want) {
		t.Fatalf("stopped %v, want %v", s.got(), want)
	}
	if again := d.Shutdown(context.Background()); again != err {
		t.Fatalf("second shutdown: %v", again)
	}
}

// TestShutdownDeadline: a part that outlives the deadline ends Shutdown
// with its name; the parts opened before it are left alone.
func TestShutdownDeadline(t *testing.T) {
	var s stops
	block := make(chan struct{})
	defer close(block)
	d := testDaemon(&fakeWorker{}, s.part("lock", nil, nil), s.part("server", nil, block), s.part("store", nil, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := d.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "stop server: ") {
		t.Fatalf("shutdown: %v", err)
	}
	if want := []string{"store"}; !reflect.DeepEqual(s.got(), want) {
		t.Fatalf("stopped %v, want %v", s.got(), want)
	}
}

// TestShutdownWaitsForTheWorker: a worker that does not stop by the
// deadline is named, and nothing else is stopped under it.
func TestShutdownWaitsForTheWorker(t *testing.T) {
	var s stops
	d := testDaemon(&fakeWorker{}, s.part("store", nil, nil))
	d.ran = make(chan struct{}) // a Run that never returns
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "stop the worker on axlr-host-unit: ") {
		t.Fatalf("shutdown: %v", err)
	}
	if len(s.got()) != 0 {
		t.Fatalf("stopped %v under a running worker", s.got())
	}
}

// TestSessionSettings: the activities take settings.json's values with
// their defaults applied.
func TestSessionSettings(t *testing.T) {
	getenv := func(k string) string { return map[string]string{"XDG_DATA_HOME": "/x/data"}[k] }
	l, err := settings.Parse([]byte(`{"model": "m", "context_tokens": 1000, "models": {"big": {"context_tokens": 9000}, "same": {}},
		"approvals": {"autonomous": true, "allowed": ["local_write"]}, "provider": {"max_tokens": 50}, "ceremonies": {"profile": "compact"},
		"repair": {"repository": "acme/app"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := sessionSettings(&l.Settings, getenv)
	if err != nil {
		t.Fatal(err)
	}
	jobs := got.Jobs
	got.Jobs = activities.SessionSettings{}.Jobs
	want := activities.SessionSettings{Model: "m",
		Approvals:   policy.Settings{Autonomous: true, Allowed: []string{"local_write"}, AlwaysAsk: settings.DefaultAlwaysAsk},
		ContextCaps: map[string]int{"big": 9000, "same": 1000}, ContextTokens: 1000, MaxTokens: 50, Stream: true, CeremonyProfile: "compact"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settings %+v\nwant %+v", got, want)
	}
	if jobs.Repository != "acme/app" || jobs.Directory != "/x/data/axlr/repairs" || jobs.Build == "" {
		t.Fatalf("job settings %+v", jobs)
	}
}
