package daemon

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/workflows"
)

// The in-flight journal: one small file under <state-dir>/inflight for
// each attempt of a regular activity this axlrd runs, written when the
// attempt starts and removed when it ends. After a crash the files left
// name the attempts the dead axlrd was running. Temporal would notice them
// only when their heartbeat timeouts expire (10 s); the next axlrd fails
// them at once with workflows.ErrTypeWorkerLost, and the workflows
// schedule them again (see workflows/activity.go). The files are not
// synced: a process crash keeps them, and a power loss that drops one only
// brings back the heartbeat timeout.

// inflightAttempt is one journal file.
type inflightAttempt struct {
	WorkflowID   string `json:"workflow_id"`
	RunID        string `json:"run_id"`
	ActivityID   string `json:"activity_id"`
	ActivityType string `json:"activity_type"`
	Attempt      int32  `json:"attempt"`
	// Identity is the worker identity of the axlrd that ran it.
	Identity string `json:"identity"`
	// file is the journal file's path.
	file string
}

// inflightJournal writes and reads <state-dir>/inflight.
type inflightJournal struct {
	dir      string
	identity string
	log      zerolog.Logger
}

// workerIdentity names this axlrd's worker: the host, the process and a
// random part, so the attempts of an earlier process on the same host
// never pass for its own.
func workerIdentity(host string) (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("worker identity: %w", err)
	}
	return fmt.Sprintf("axlrd@%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b)), nil
}

func openInflight(stateDir, identity string, log zerolog.Logger) (*inflightJournal, error) {
	dir := filepath.Join(stateDir, "inflight")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create in-flight journal %s: %w", dir, err)
	}
	return &inflightJournal{dir: dir, identity: identity, log: log}, nil
}

// previous reads the attempts an earlier axlrd left; call it before this
// axlrd's worker starts.
func (j *inflightJournal) previous() []inflightAttempt {
	entries, err := os.ReadDir(j.dir)
	if err != nil {
		j.log.Warn().Err(err).Str("dir", j.dir).Msg("in-flight journal not read")
		return nil
	}
	var out []inflightAttempt
	for _, e := range entries {
		path := filepath.Join(j.dir, e.Name())
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(path)
		var a inflightAttempt
		if err == nil {
			err = json.Unmarshal(b, &a)
		}
		if err != nil || a.WorkflowID == "" || a.ActivityID == "" {
			// A file torn by the crash names nothing to fail.
			j.log.Debug().Err(err).Str("file", path).Msg("in-flight journal entry dropped")
			_ = os.Remove(path)
			continue
		}
		a.file = path
		out = append(out, a)
	}
	return out
}

// begin writes the attempt's file; the returned func removes it.
func (j *inflightJournal) begin(info activity.Info) func() {
	a := inflightAttempt{
		WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		ActivityID: info.ActivityID, ActivityType: info.ActivityType.Name, Attempt: info.Attempt, Identity: j.identity,
	}
	sum := sha256.Sum256([]byte(a.WorkflowID + "\x00" + a.RunID + "\x00" + a.ActivityID))
	path := filepath.Join(j.dir, hex.EncodeToString(sum[:16])+".json")
	b, err := json.Marshal(a)
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		j.log.Warn().Err(err).Str("workflow_id", a.WorkflowID).Msg("in-flight journal not written; a crash now is noticed at the heartbeat timeout")
		return func() {}
	}
	return func() {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			j.log.Warn().Err(err).Str("file", path).Msg("in-flight journal entry not removed")
		}
	}
}

// interceptor journals every regular activity the worker runs.
func (j *inflightJournal) interceptor() interceptor.WorkerInterceptor {
	return &inflightInterceptor{j: j}
}

type inflightInterceptor struct {
	interceptor.WorkerInterceptorBase
	j *inflightJournal
}

func (i *inflightInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	a := &inflightActivity{j: i.j}
	a.Next = next
	return a
}

type inflightActivity struct {
	interceptor.ActivityInboundInterceptorBase
	j *inflightJournal
}

func (a *inflightActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity {
		return a.Next.ExecuteActivity(ctx, in)
	}
	done := a.j.begin(info)
	defer done()
	return a.Next.ExecuteActivity(ctx, in)
}

// reapLost fails the attempts an earlier axlrd was running when it died,
// so their workflows schedule them again now rather than at their
// heartbeat timeouts. An attempt that has moved on since (completed, timed
// out and retried, or run by someone else) is left alone. Each is done
// once: its file goes whatever the outcome.
func reapLost(ctx context.Context, c client.Client, namespace string, lost []inflightAttempt, log zerolog.Logger) {
	for _, a := range lost {
		if ctx.Err() != nil {
			return
		}
		reapOne(ctx, c, namespace, a, log)
		if err := os.Remove(a.file); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Warn().Err(err).Str("file", a.file).Msg("in-flight journal entry not removed")
		}
	}
}

func reapOne(ctx context.Context, c client.Client, namespace string, a inflightAttempt, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l := log.With().Str("workflow_id", a.WorkflowID).Str("run_id", a.RunID).Str("activity", a.ActivityType).Str("activity_id", a.ActivityID).Int32("attempt", a.Attempt).Logger()
	desc, err := c.DescribeWorkflowExecution(ctx, a.WorkflowID, a.RunID)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return
	}
	if err != nil {
		l.Warn().Err(err).Msg("lost attempt not checked; it is retried at its heartbeat timeout")
		return
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return
	}
	var pending bool
	for _, p := range desc.GetPendingActivities() {
		if p.GetActivityId() == a.ActivityID && p.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED &&
			p.GetAttempt() == a.Attempt && p.GetLastWorkerIdentity() == a.Identity {
			pending = true
		}
	}
	if !pending {
		return
	}
	// The workflow's next task goes to the task queue, not to the dead
	// worker's sticky queue, where it would wait out its schedule-to-start
	// timeout.
	exec := &commonpb.WorkflowExecution{WorkflowId: a.WorkflowID, RunId: a.RunID}
	if _, err := c.WorkflowService().ResetStickyTaskQueue(ctx, &workflowservice.ResetStickyTaskQueueRequest{Namespace: namespace, Execution: exec}); err != nil {
		l.Debug().Err(err).Msg("sticky task queue not reset")
	}
	lost := temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("worker lost: axlrd (%s) stopped while attempt %d ran", a.Identity, a.Attempt), workflows.ErrTypeWorkerLost, nil)
	if err := c.CompleteActivityByID(ctx, namespace, a.WorkflowID, a.RunID, a.ActivityID, nil, lost); err != nil {
		l.Warn().Err(err).Msg("lost attempt not failed; it is retried at its heartbeat timeout")
		return
	}
	l.Info().Msg("lost attempt failed; its workflow runs it again")
}
