package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/underpass-ai/axlr/workflows"
)

// updateReplay adds captures to workflows/testdata for workflows' replay
// test: go test ./internal/e2e -update-replay. Captures are append-only: a
// capture whose file exists is left as it is.
var updateReplay = flag.Bool("update-replay", false, "add the captured histories missing from workflows/testdata")

// captureHistory saves a session workflow's history for the replay test.
func captureHistory(t *testing.T, e *env, sessionID, name string) {
	t.Helper()
	captureWorkflow(t, e, workflows.SessionWorkflowID(sessionID), name)
}

// captureWorkflow saves a workflow's history as workflows/testdata/<name>.json
// when no capture of that name exists, and appends its digest to
// captures.sum.
func captureWorkflow(t *testing.T, e *env, workflowID, name string) {
	t.Helper()
	captureRun(t, e, workflowID, "", name)
}

// captureRun is captureWorkflow of one run of a workflow (runID empty:
// the latest).
func captureRun(t *testing.T, e *env, workflowID, runID, name string) {
	t.Helper()
	if !*updateReplay {
		return
	}
	dir := filepath.Join("..", "..", "workflows", "testdata")
	path := filepath.Join(dir, name+".json")
	if _, err := os.Stat(path); err == nil {
		t.Logf("%s exists: captures are append-only, it stays as it is", path)
		return
	}
	it := dialSDK(t, e).GetWorkflowHistory(context.Background(), workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	f, err := os.OpenFile(filepath.Join(dir, "captures.sum"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s  %s\n", hex.EncodeToString(sum[:]), name+".json"); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d events)", path, len(h.Events))
}
