package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/underpass-ai/axlr/internal/daemon"
)

// TestWorkerFatalErrorStopsAxlrd: when the worker stops with a fatal error
// (here its namespace is deleted under it), the part that failed stops the
// rest, and axlrd exits 1 naming it and releases the state dir, instead of
// holding it while it does nothing. The SDK's pollers retry such an error
// for two minutes before they give up, so this test takes that long.
func TestWorkerFatalErrorStopsAxlrd(t *testing.T) {
	cluster := newEnv(t, "http://127.0.0.1:1")
	cluster.vars["AXLR_HOST_ID"] = "cluster-host"
	// Short long polls: the worker's next poll, the one that finds the
	// namespace gone, comes within seconds of the deletion.
	first := cluster.startWith(func(o *daemon.Options) {
		o.DynamicConfig = map[string]any{"matching.longPollExpirationInterval": 5 * time.Second}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := dialSDK(t, cluster)
	if _, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: "doomed", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	}); err != nil {
		t.Fatal(err)
	}

	e := newEnv(t, "http://127.0.0.1:1")
	e.vars["AXLR_HOST_ID"] = "doomed-host"
	// A new namespace reaches the frontend's cache within seconds.
	var second *process
	var err error
	for deadline := time.Now().Add(time.Minute); ; {
		second, err = e.trySpawn("--temporal-address", first.info.Frontend, "--namespace", "doomed")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.OperatorService().DeleteNamespace(ctx, &operatorservice.DeleteNamespaceRequest{Namespace: "doomed"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.waited:
	case <-time.After(4 * time.Minute):
		t.Fatalf("axlrd still runs with its namespace deleted\n%s", second.stderr)
	}
	// The last thing axlrd says is why it stopped: the worker, and no part
	// that failed to stop after it.
	stderr := second.stderr.String()
	last := stderr[strings.LastIndex(stderr, "\naxlrd: ")+1:]
	// Either of its workers (this host's queue, the cluster's) may be the
	// first to find the namespace gone.
	worker := strings.HasPrefix(last, "axlrd: the worker on axlr-host-doomed-host stopped: ") ||
		strings.HasPrefix(last, "axlrd: the worker on axlr-cluster stopped: ")
	if code := second.cmd.ProcessState.ExitCode(); code != 1 || !worker ||
		strings.Contains(last, "\nstop ") {
		t.Fatalf("axlrd exited %d\n%s", code, stderr)
	}
	t.Logf("axlrd stopped: %s", last)
}
