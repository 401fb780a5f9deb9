package cluster

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TemporalOptions configure StartTemporal.
type TemporalOptions struct {
	// Postgres holds Temporal's persistence (databases temporal and
	// temporal_visibility, created if need be).
	Postgres *Postgres
	// Dir holds the binaries, the configuration and the logs.
	Dir string
	// Namespace is registered once the server answers ("default").
	Namespace string
	// Log receives the server's and the SQL tool's output; nil discards it.
	Log io.Writer
}

// Temporal is a Temporal server this process started: built from the
// pinned go.temporal.io/server module (cmd/server), its schemas created by
// the module's own SQL tool (cmd/tools/sql), persisting to PostgreSQL.
type Temporal struct {
	// Address is the frontend's host:port on 127.0.0.1.
	Address string
	// Namespace is the registered namespace.
	Namespace string

	o    TemporalOptions
	cmd  *exec.Cmd
	done chan error
}

// StartTemporal builds the server and its SQL tool into o.Dir (cached by
// the Go build cache after the first time), sets up the schemas, starts
// the server's four services on free ports of 127.0.0.1, and registers
// the namespace.
func StartTemporal(ctx context.Context, o TemporalOptions) (*Temporal, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	bin := filepath.Join(o.Dir, "bin")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", "go.temporal.io/server/cmd/server", "go.temporal.io/server/cmd/tools/sql")
	build.Stdout, build.Stderr = o.Log, o.Log
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("temporal: build the server and its SQL tool: %w", err)
	}
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server").Output()
	if err != nil {
		return nil, fmt.Errorf("temporal: find the server module: %w", err)
	}
	schema := filepath.Join(strings.TrimSpace(string(out)), "schema", "postgresql", "v12")
	for _, db := range []struct{ name, dir string }{{"temporal", "temporal"}, {"temporal_visibility", "visibility"}} {
		if _, err := o.Postgres.CreateDatabase(ctx, db.name); err != nil {
			return nil, fmt.Errorf("temporal: %w", err)
		}
		steps := [][]string{{"setup-schema", "-v", "0.0"}, {"update-schema", "-d", filepath.Join(schema, db.dir, "versioned")}}
		if set, err := o.Postgres.hasTable(ctx, db.name, "schema_version"); err != nil {
			return nil, fmt.Errorf("temporal: %w", err)
		} else if set {
			steps = steps[1:] // set up before: only brought up to date
		}
		for _, args := range steps {
			tool := exec.CommandContext(ctx, filepath.Join(bin, "sql"), append([]string{"--plugin", "postgres12", "--ep", "127.0.0.1",
				"-p", fmt.Sprint(o.Postgres.Port), "-u", o.Postgres.User, "--db", db.name}, args...)...)
			tool.Stdout, tool.Stderr = o.Log, o.Log
			if err := tool.Run(); err != nil {
				return nil, fmt.Errorf("temporal: %s of %s: %w", args[0], db.name, err)
			}
		}
	}
	t := &Temporal{Namespace: o.Namespace, o: o}
	if err := t.writeConfig(); err != nil {
		return nil, err
	}
	if err := t.start(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// serverConfig is the server's configuration: PostgreSQL persistence, one
// process for the four services, static ports.
var serverConfig = template.Must(template.New("config").Parse(`log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "127.0.0.1:{{.PG}}"
        connectProtocol: tcp
        user: {{.User}}
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    visibility:
      sql:
        pluginName: postgres12
        databaseName: temporal_visibility
        connectAddr: "127.0.0.1:{{.PG}}"
        connectProtocol: tcp
        user: {{.User}}
        maxConns: 4
        maxIdleConns: 4
        maxConnLifetime: 1h
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
{{- range .Services}}
  {{.Name}}:
    rpc:
      grpcPort: {{.GRPC}}
      membershipPort: {{.Membership}}
      bindOnLocalHost: true
{{- if .HTTP}}
      httpPort: {{.HTTP}}
{{- end}}
{{- end}}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{.Frontend}}"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "{{.Dynamic}}"
  pollInterval: 10s
`))

// dynamicConfig lifts the rate limits that set a floor under every
// activity (design.md: the transfer queue's 20 loads a second).
const dynamicConfig = `history.transferProcessorMaxPollRPS:
  - value: 1000
history.timerProcessorMaxPollRPS:
  - value: 1000
matching.numTaskqueueReadPartitions:
  - value: 1
matching.numTaskqueueWritePartitions:
  - value: 1
`

// lowPorts finds n free ports on 127.0.0.1 below 32768: Temporal keeps
// the membership ports in a smallint column.
func lowPorts(n int) ([]int, error) {
	var out []int
	start := 20000 + rand.IntN(10000)
	for p := start; p < 32768 && len(out) < n; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("no %d free ports between %d and 32767", n, start)
	}
	return out, nil
}

type service struct {
	Name                   string
	GRPC, Membership, HTTP int
}

func (t *Temporal) writeConfig() error {
	ports, err := lowPorts(9)
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	services := []service{
		{Name: "frontend", GRPC: ports[0], Membership: ports[1], HTTP: ports[2]},
		{Name: "history", GRPC: ports[3], Membership: ports[4]},
		{Name: "matching", GRPC: ports[5], Membership: ports[6]},
		{Name: "worker", GRPC: ports[7], Membership: ports[8]},
	}
	t.Address = fmt.Sprintf("127.0.0.1:%d", ports[0])
	dir := filepath.Join(t.o.Dir, "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	dynamic := filepath.Join(dir, "dynamicconfig.yaml")
	if err := os.WriteFile(dynamic, []byte(dynamicConfig), 0o644); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "development.yaml"))
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	defer f.Close()
	return serverConfig.Execute(f, map[string]any{"PG": t.o.Postgres.Port, "User": t.o.Postgres.User,
		"Services": services, "Frontend": ports[0], "Dynamic": dynamic})
}

// start runs the server and waits until its frontend answers and the
// namespace is registered.
func (t *Temporal) start(ctx context.Context) error {
	t.cmd = exec.Command(filepath.Join(t.o.Dir, "bin", "server"), "--root", t.o.Dir, "--config", "config", "--env", "development", "start")
	t.cmd.Stdout, t.cmd.Stderr = t.o.Log, t.o.Log
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := t.cmd.Start(); err != nil {
		return fmt.Errorf("temporal: start the server: %w", err)
	}
	t.done = make(chan error, 1)
	go func() { t.done <- t.cmd.Wait() }()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		err := t.register(ctx)
		if err == nil {
			return nil
		}
		select {
		case werr := <-t.done:
			t.done <- werr
			return fmt.Errorf("temporal: the server exited before it was ready: %v (last: %v)", werr, err)
		case <-ctx.Done():
			_ = t.Kill()
			return fmt.Errorf("temporal: not ready at %s: %w", t.Address, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// register registers the server's namespace unless it exists.
func (t *Temporal) register(ctx context.Context) error { return t.RegisterNamespace(ctx, t.Namespace) }

// RegisterNamespace registers a namespace unless it exists; a new one
// reaches every service of the server within seconds.
func (t *Temporal) RegisterNamespace(ctx context.Context, namespace string) error {
	c, err := client.Dial(client.Options{HostPort: t.Address, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer c.Close()
	ws := c.WorkflowService()
	if _, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err == nil {
		return nil
	}
	_, err = ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour), HistoryArchivalState: enumspb.ARCHIVAL_STATE_DISABLED})
	return err
}

// Kill ends the server with SIGKILL (a crash), waiting for it to exit.
func (t *Temporal) Kill() error {
	if t.cmd == nil || t.cmd.Process == nil {
		return nil
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	<-t.done
	t.cmd = nil
	return nil
}

// Restart starts the server again on the same configuration and
// databases, after Kill or Stop.
func (t *Temporal) Restart(ctx context.Context) error { return t.start(ctx) }

// Stop shuts the server down (SIGTERM, then SIGKILL after 30 s).
func (t *Temporal) Stop() error {
	if t.cmd == nil || t.cmd.Process == nil {
		return nil
	}
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.done
	}
	t.cmd = nil
	return nil
}

// quietLogger drops the SDK client's log lines while the server starts.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
