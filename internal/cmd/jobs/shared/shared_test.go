package shared

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

func TestRecordFields(t *testing.T) {
	if got := cmdtest.JSONFields(domain.Record{}); !slices.Equal(got, RecordFields) {
		t.Errorf("job record fields are %q, declared %q", got, RecordFields)
	}
}

func TestRetryText(t *testing.T) {
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		r    client.Retry
		want string
	}{
		{client.Retry{Activity: "forge.Prepare", Attempt: 2, MaxAttempts: 6, Failure: "refused\nat line 2", Next: now.Add(3600 * time.Millisecond)},
			"forge.Prepare, attempt 2 of 6 in 4s; the last failed: refused"},
		{client.Retry{Activity: "session.ModelRequest", Attempt: 5, Failure: "429", Next: now.Add(-time.Second)},
			"session.ModelRequest, attempt 5 due; the last failed: 429"},
	} {
		if got := RetryText(tt.r, now); got != tt.want {
			t.Errorf("RetryText(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

// TestDecide: approve takes what waits (the check, or the merge); deny
// only a check and decline only a merge, each with its reason; a job that
// waits for nothing is refused with its status.
func TestDecide(t *testing.T) {
	merge := domain.Record{ID: "m", Status: domain.AwaitingMerge, PullRequest: 9, Pending: &domain.Pending{Kind: domain.PendingMerge, PullRequest: 9, HeadSHA: "abc"}}
	check := cmdtest.WaitingCheck
	check.ID = "c"
	running := domain.Record{ID: "r", Status: domain.Running}
	tests := []struct {
		verb, id, reason string
		want             *workflows.JobDecision
		ran              cmdtest.Ran
	}{
		{verb: "approve", id: "c", want: &workflows.JobDecision{Job: "c", Kind: domain.PendingCheck, Approve: true},
			ran: cmdtest.Ran{Stdout: "approved the check command go test ./... of job c; it is running now (axlr-tui jobs watch c follows it)\n"}},
		{verb: "approve", id: "m", want: &workflows.JobDecision{Job: "m", Kind: domain.PendingMerge, Approve: true},
			ran: cmdtest.Ran{Stdout: "approved the merge of pull request #9 of job m; it is running now (axlr-tui jobs watch m follows it)\n"}},
		{verb: "deny", id: "c", reason: "not that one", want: &workflows.JobDecision{Job: "c", Kind: domain.PendingCheck, Reason: "not that one"},
			ran: cmdtest.Ran{Stdout: "denied the check command go test ./... of job c; it is running now (axlr-tui jobs watch c follows it)\n"}},
		{verb: "decline", id: "m", reason: "wrong fix", want: &workflows.JobDecision{Job: "m", Kind: domain.PendingMerge, Reason: "wrong fix"},
			ran: cmdtest.Ran{Stdout: "declined the merge of pull request #9 of job m; it is running now (axlr-tui jobs watch m follows it)\n"}},
		{verb: "deny", id: "m", reason: "x", ran: cmdtest.Ran{Code: 1,
			Stderr: "axlr-tui: job m waits for its merge decision, not a check command: axlr-tui jobs decline m --reason TEXT\n"}},
		{verb: "decline", id: "c", reason: "x", ran: cmdtest.Ran{Code: 1,
			Stderr: "axlr-tui: job c waits for its check command, not a merge decision: axlr-tui jobs deny c --reason TEXT\n"}},
		{verb: "approve", id: "r", ran: cmdtest.Ran{Code: 1, Stderr: "axlr-tui: job r waits for no decision: it is running\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.verb+" "+tt.id, func(t *testing.T) {
			fake := &cmdtest.Jobs{Records: []domain.Record{merge, check, running}}
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				return Decide(context.Background(), fake, ios.Out, false, tt.verb, tt.id, tt.reason)
			})
			if got != tt.ran {
				t.Fatalf("ran %+v, want %+v", got, tt.ran)
			}
			switch {
			case tt.want == nil && len(fake.Decisions) != 0:
				t.Fatalf("decided %+v", fake.Decisions)
			case tt.want != nil && (len(fake.Decisions) != 1 || fake.Decisions[0] != *tt.want):
				t.Fatalf("decided %+v, want %+v", fake.Decisions, *tt.want)
			}
		})
	}
}

// TestFollowInterrupt: the first Ctrl+C interrupts the job (its workflow
// is cancelled) and the watch goes on; the second leaves with 130.
func TestFollowInterrupt(t *testing.T) {
	fake := &cmdtest.Jobs{Block: true, Watched: make(chan struct{})}
	sig := make(chan os.Signal, 2)
	go func() {
		<-fake.Watched
		sig <- os.Interrupt
		sig <- os.Interrupt
	}()
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return Follow(context.Background(), FollowOptions{IO: ios, Interrupts: sig, Now: time.Now}, fake, cmdtest.WaitingCheck)
	})
	if got.Code != 130 || !strings.Contains(got.Stderr, "interrupting job 20261201-1200-parse-fails") {
		t.Fatalf("ran %+v", got)
	}
	if len(fake.Interrupted) != 1 || fake.Interrupted[0] != "20261201-1200-parse-fails" {
		t.Fatalf("interrupted %v", fake.Interrupted)
	}
}

// TestFollowTellsRetries: while the job's watch waits, each attempt of an
// activity after a failed one is told once on stderr, however often the
// watch asks; with --json nothing is asked.
func TestFollowTellsRetries(t *testing.T) {
	defer func(d time.Duration) { RetryEvery = d }(RetryEvery)
	RetryEvery = time.Millisecond
	clone := client.Retry{ID: "7", Activity: workflows.ActivityForgePrepare, Attempt: 2, MaxAttempts: 6, Failure: "connection refused"}
	asked := make(chan struct{})
	fake := &cmdtest.Jobs{Block: true, RetriesAt: func(n int) []client.Retry {
		r := clone
		if n > 3 {
			r.Attempt = 3
		}
		if n == 6 {
			close(asked)
		}
		return []client.Retry{r}
	}}
	follow := func(fake *cmdtest.Jobs, asJSON bool, sig <-chan os.Signal) cmdtest.Ran {
		return cmdtest.Run(func(ios *factory.IOStreams) error {
			return Follow(context.Background(), FollowOptions{IO: ios, Interrupts: sig, Now: time.Now, JSON: asJSON}, fake, cmdtest.WaitingCheck)
		})
	}
	sig := make(chan os.Signal, 2)
	go func() {
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
			t.Error("the watch did not ask for retries six times")
		}
		sig <- os.Interrupt
		sig <- os.Interrupt
	}()
	stderr := follow(fake, false, sig).Stderr
	want := "axlr-tui: retrying forge.Prepare, attempt 2 of 6 running; the last failed: connection refused\n" +
		"axlr-tui: retrying forge.Prepare, attempt 3 of 6 running; the last failed: connection refused\n"
	if got := strings.Join(slices.DeleteFunc(strings.SplitAfter(stderr, "\n"), func(l string) bool { return !strings.Contains(l, "retrying") }), ""); got != want {
		t.Fatalf("stderr's retry lines\n%s\nwant\n%s\nstderr\n%s", got, want, stderr)
	}

	// With --json: a watch that waits as long as twenty asks would take.
	fake = &cmdtest.Jobs{Block: true, Watched: make(chan struct{}), RetriesAt: func(int) []client.Retry {
		t.Error("asked for retries with --json")
		return nil
	}}
	sig = make(chan os.Signal, 2)
	go func() {
		<-fake.Watched
		time.Sleep(20 * RetryEvery)
		sig <- os.Interrupt
		sig <- os.Interrupt
	}()
	follow(fake, true, sig)
}
