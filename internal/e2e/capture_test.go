package e2e

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/underpass-ai/axlr/workflows"
)

// updateReplay rewrites workflows/testdata/*.json from the runs of these
// tests, for workflows' replay test: go test ./internal/e2e -update-replay.
var updateReplay = flag.Bool("update-replay", false, "rewrite the captured histories in workflows/testdata")

// captureHistory saves a session workflow's history for the replay test.
func captureHistory(t *testing.T, e *env, sessionID, name string) {
	t.Helper()
	if !*updateReplay {
		return
	}
	c, err := client.Dial(client.Options{HostPort: e.address(), Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	it := c.GetWorkflowHistory(context.Background(), workflows.SessionWorkflowID(sessionID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
	path := filepath.Join("..", "..", "workflows", "testdata", name+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d events)", path, len(h.Events))
}
