package queue

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

func TestFields(t *testing.T) {
	if got := cmdtest.JSONFields(workflows.QueueView{}); !slices.Equal(got, QueueFields) {
		t.Errorf("queue fields are %q, declared %q", got, QueueFields)
	}
}

type fakeClient struct{ queues []workflows.QueueView }

func (f *fakeClient) Queues(context.Context) ([]workflows.QueueView, error) { return f.queues, nil }
func (f *fakeClient) Close()                                                {}

// TestQueue: each queue prints its entries in order with what the queue
// does with each, then the jobs it gave up with their reasons; no queue
// yet says how to queue one; --json prints the views.
func TestQueue(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	queues := []workflows.QueueView{{Repository: "acme/app", Base: "main",
		Entries: []workflows.QueueEntry{
			{Job: "20261201-1200-a", PullRequest: 3, State: jobs.QueueChecks, Note: "waiting for checks: 1 pending, 0 passed (clean)"},
			{Job: "20261201-1201-b", PullRequest: 4, State: jobs.QueueWaiting, Note: "queued"},
		},
		Ejected: []workflows.QueueEjection{{Job: "20261201-1100-c", PullRequest: 2, Code: workflows.EjectFailedChecks, Reason: "checks failed: test: failure", At: at}},
	}}
	tests := []struct {
		name           string
		args           []string
		queues         []workflows.QueueView
		stdout, stderr string
	}{
		{name: "queues", queues: queues, stdout: "" +
			"acme/app (main): 2 queued\n" +
			"  #1  20261201-1200-a  #3  checking  waiting for checks: 1 pending, 0 passed (clean)\n" +
			"  #2  20261201-1201-b  #4  queued    queued\n" +
			"  off the queue 2026-12-01T12:00:00Z: 20261201-1100-c #2 (failed_checks): checks failed: test: failure\n"},
		{name: "none", stderr: "axlr-tui: no merge queue yet; queue a job's merge with axlr-tui jobs queue ID\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, errOut := factory.Test()
			fake := &fakeClient{queues: tt.queues}
			cmd := NewCmdQueue(&factory.Factory{IOStreams: ios}, func(ctx context.Context, o *Options) error {
				o.Client = func(context.Context) (Client, error) { return fake, nil }
				return queueRun(ctx, o)
			})
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			if code := cmdutil.ExitCode(cmd.Execute(), errOut); code != 0 || out.String() != tt.stdout || errOut.String() != tt.stderr {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out.String(), errOut.String())
			}
		})
	}
	ios, _, out, _ := factory.Test()
	opts := &Options{IO: ios, JSON: true, Client: func(context.Context) (Client, error) { return &fakeClient{queues: queues}, nil }}
	if err := queueRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var got []workflows.QueueView
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 1 || got[0].Entries[1].Job != "20261201-1201-b" {
		t.Fatalf("--json %s: %v", out.String(), err)
	}
}
