package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	sdkclient "go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// installTemporal is fakeTemporal whose started workflow ends with result
// or runErr.
type installTemporal struct {
	*fakeTemporal
	result jobs.Record
	runErr error
}

func (f *installTemporal) ExecuteWorkflow(ctx context.Context, opts sdkclient.StartWorkflowOptions, workflow any, args ...any) (sdkclient.WorkflowRun, error) {
	if _, err := f.fakeTemporal.ExecuteWorkflow(ctx, opts, workflow, args...); err != nil {
		return nil, err
	}
	return installRun{fakeRun: fakeRun{id: opts.ID}, result: f.result, err: f.runErr}, nil
}

type installRun struct {
	fakeRun
	result jobs.Record
	err    error
}

func (r installRun) Get(_ context.Context, ptr any) error {
	if r.err != nil {
		return r.err
	}
	return roundTrip(r.result, ptr)
}

// TestInstallJob: the install runs the job's install workflow on this
// host with the registry's record, attaching to one that runs, never
// running one that completed again; its refusals and an axlrd that does
// not answer are told apart.
func TestInstallJob(t *testing.T) {
	merged := jobs.Record{ID: "20261201-1200-parse-fails", Kind: jobs.Repair, Status: jobs.Completed, MergeSHA: "m1",
		Candidate: &jobs.Candidate{Path: "/jobs/20261201-1200-parse-fails.bin", Version: "repair-20261201-1200-parse-fails-0123456789ab"}}
	installed := merged
	installed.Installed = &jobs.Installed{Path: "/usr/local/bin/axlrd", Backup: "/usr/local/bin/axlrd.before-repair-20261201-1200-parse-fails"}
	const cannotWrite = "install over /usr/local/bin/axlrd: the directory /usr/local/bin/ cannot be written: permission denied"
	refusal := sdktemporal.NewNonRetryableApplicationError(cannotWrite, workflows.ErrTypeInstallRefused, nil)
	tests := []struct {
		name       string
		id         string
		executeErr error
		runErr     error
		refused    string // a *RefusedError's message
		err        string
		unreached  bool
	}{
		{name: "installed", id: merged.ID},
		{name: "no such job", id: "nope", err: "no such job: nope"},
		{name: "installed already", id: merged.ID, executeErr: serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "r1"),
			refused: "job 20261201-1200-parse-fails is installed already: restart axlrd to run it"},
		{name: "refused", id: merged.ID, runErr: fmt.Errorf("workflow execution error (type: axlr.JobInstall): %w", refusal),
			refused: cannotWrite},
		{name: "axlrd gone", id: merged.ID, executeErr: serviceerror.NewUnavailable("connection refused"), unreached: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &installTemporal{fakeTemporal: &fakeTemporal{t: t, executeErr: tc.executeErr,
				query: func(_ int, workflowID, queryType string, _ []any) (any, error) {
					if workflowID != workflows.RegistryWorkflowID || queryType != workflows.QueryJobs {
						return nil, fmt.Errorf("query %s of %s", queryType, workflowID)
					}
					return []jobs.Record{merged}, nil
				}}, result: installed, runErr: tc.runErr}
			c := newClient(f, "127.0.0.1:7233", "h")
			rec, err := c.InstallJob(context.Background(), tc.id, "/home/p/bin/axlr-tui")
			var refused *RefusedError
			switch {
			case tc.refused != "":
				if !errors.As(err, &refused) || refused.Message != tc.refused {
					t.Fatalf("InstallJob = %v, want the refusal %q", err, tc.refused)
				}
			case tc.unreached:
				if !errors.As(err, new(*UnreachableError)) {
					t.Fatalf("InstallJob = %v, want an *UnreachableError", err)
				}
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, jobs.ErrNotFound) {
					t.Fatalf("InstallJob = %v, want %q", err, tc.err)
				}
				if len(f.executed) != 0 {
					t.Errorf("an unknown job started %+v", f.executed)
				}
			default:
				if err != nil || rec.Installed == nil || *rec.Installed != *installed.Installed {
					t.Fatalf("InstallJob = %+v, %v", rec, err)
				}
			}
			if tc.err != "" {
				return
			}
			if len(f.executed) != 1 {
				t.Fatalf("started %d workflows", len(f.executed))
			}
			s := f.executed[0]
			if s.opts.ID != "axlr-job-20261201-1200-parse-fails-install" || s.opts.TaskQueue != "axlr-host-h" || s.workflow != workflows.JobInstallWorkflow ||
				s.opts.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING ||
				s.opts.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY || !s.opts.WorkflowExecutionErrorWhenAlreadyStarted {
				t.Errorf("started %+v", s)
			}
			if in, ok := s.args[0].(workflows.JobInstallInput); !ok || in.Record.ID != merged.ID || in.TUIPath != "/home/p/bin/axlr-tui" {
				t.Errorf("input %+v", s.args)
			}
		})
	}
}
