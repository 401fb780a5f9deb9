package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/internal/daemon"
)

// TestWebUIAndSettingsWarnings: the Web UI answers on its port, and a key
// settings.json does not know is reported in the log.
func TestWebUIAndSettingsWarnings(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:1")
	e.writeSettings(`{"model": "m", "modle": "typo", "approvals": {"allowd": []}}`)
	uiPort := freePort(t)
	d := e.startWith(func(o *daemon.Options) { o.UIPort = uiPort; o.LogLevel = "info" })
	if d.info.UIURL == "" || !strings.HasSuffix(d.info.UIURL, fmt.Sprintf(":%d", uiPort)) {
		t.Fatalf("ui url %q", d.info.UIURL)
	}
	resp, err := http.Get(d.info.UIURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") || !strings.Contains(string(body), "_app/") {
		t.Fatalf("web ui: %d %.300s", resp.StatusCode, body)
	}
	logs := d.logs.String()
	for _, key := range []string{`"key":"modle"`, `"key":"approvals.allowd"`} {
		if !strings.Contains(logs, key) || !strings.Contains(logs, "unknown settings key") {
			t.Errorf("log does not report %s:\n%s", key, logs)
		}
	}
}

// TestExternalCluster: a second axlrd pointed at the first one's frontend
// starts no server and serves its own host's task queue there.
func TestExternalCluster(t *testing.T) {
	model := agenttest.NewServer(t, func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Text: "served by the second axlrd"} })
	cluster := newEnv(t, model.URL)
	cluster.vars["AXLR_HOST_ID"] = "cluster-host"
	first := cluster.start()

	e := newEnv(t, model.URL)
	e.vars["AXLR_HOST_ID"] = "worker-host"
	e.port = cluster.port
	second := e.startWith(func(o *daemon.Options) { o.TemporalAddress = first.info.Frontend })
	if second.info.Frontend != first.info.Frontend || second.info.UIURL != "" || second.info.TaskQueue != "axlr-host-worker-host" {
		t.Fatalf("second axlrd %+v", second.info)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := e.tui(ctx, "--exec", "hello", "--model", "m")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "served by the second axlrd" {
		t.Fatalf("exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestSIGTERMStopsCleanly: SIGTERM stops the worker and the server, exits
// 0, and releases the state dir for the next start.
func TestSIGTERMStopsCleanly(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:1")
	d := e.spawn()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.waited:
	case <-time.After(time.Minute):
		t.Fatalf("axlrd did not stop after SIGTERM\n%s", d.stderr)
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, d.stderr)
	}
	e.spawn()
}
