package workflows

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplay replays histories captured from real runs on the embedded
// server (go test ./internal/e2e -update-replay adds new ones): a change
// to a workflow that breaks determinism for runs in flight fails here, and
// needs workflow.GetVersion. The captures are append-only: each must be
// listed in testdata/captures.sum with its digest unchanged.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no captured histories in testdata")
	}
	sums := captureSums(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			switch want, ok := sums[filepath.Base(f)]; {
			case !ok:
				t.Fatalf("%s is not in testdata/captures.sum: add its digest (%s) with the capture", f, hex.EncodeToString(sum[:]))
			case want != hex.EncodeToString(sum[:]):
				t.Fatalf("%s changed since it was captured (digest %s, recorded %s): captures are append-only; restore it and add a new capture instead", f, hex.EncodeToString(sum[:]), want)
			}
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(Session, workflow.RegisterOptions{Name: SessionWorkflow})
			r.RegisterWorkflowWithOptions(Task, workflow.RegisterOptions{Name: TaskWorkflow})
			r.RegisterWorkflowWithOptions(Job, workflow.RegisterOptions{Name: JobWorkflow})
			r.RegisterWorkflowWithOptions(JobRegistry, workflow.RegisterOptions{Name: RegistryWorkflow})
			r.RegisterWorkflowWithOptions(MergeQueue, workflow.RegisterOptions{Name: QueueWorkflow})
			r.RegisterWorkflowWithOptions(Plan, workflow.RegisterOptions{Name: PlanWorkflow})
			r.RegisterWorkflowWithOptions(PlanTask, workflow.RegisterOptions{Name: PlanTaskWorkflow})
			r.RegisterWorkflowWithOptions(PullRead, workflow.RegisterOptions{Name: PullReadWorkflow})
			r.RegisterWorkflowWithOptions(DefinitionPublish, workflow.RegisterOptions{Name: DefinitionPublishWorkflow})
			r.RegisterWorkflowWithOptions(DefinitionList, workflow.RegisterOptions{Name: DefinitionListWorkflow})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
	for name := range sums {
		if _, err := os.Stat(filepath.Join("testdata", name)); err != nil {
			t.Errorf("capture %s is listed in captures.sum but gone: runs it stands for may be in flight; restore it", name)
		}
	}
}

// captureSums reads testdata/captures.sum: "<sha256>  <file>" per line.
func captureSums(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "captures.sum"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(strings.TrimSpace(sc.Text()), "  ")
		if !ok {
			t.Fatalf("captures.sum: malformed line %q", sc.Text())
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}
