package jobs

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdutil"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// launch runs --repair or --improve with args against fake.
func launch(t *testing.T, fake *fakeClient, interrupts <-chan os.Signal, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := factory.Test()
	f := &factory.Factory{IOStreams: ios, Interrupts: interrupts}
	cmd := NewCmdLaunch(f, func(ctx context.Context, o *LaunchOptions) error {
		o.Client = func(context.Context) (Client, error) { return fake, nil }
		return launchRun(ctx, o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	code = cmdutil.ExitCode(cmd.Execute(), errOut)
	return code, out.String(), errOut.String()
}

var waitingCheck = domain.Record{ID: "20261201-1200-parse-fails", Kind: domain.Repair, Status: domain.AwaitingApproval, Session: "s1", Sessions: []string{"s1"},
	Pending: &domain.Pending{Kind: domain.PendingCheck, Command: "go test ./..."}}

// TestLaunch: --repair and --improve admit the job with their brief and
// model and follow it; the exit code is the job's: 3 while it waits for
// the person, 0 merged and completed, 1 blocked; --detach returns the id
// once admitted; a refusal is exit 1 with its sentence; bad flags are
// usage errors.
func TestLaunch(t *testing.T) {
	merged := domain.Record{ID: "20261201-1200-parse-fails", Status: domain.Completed, PullRequest: 7, URL: "https://x/pull/7", MergeSHA: "0123456789abcdef"}
	blocked := domain.Record{ID: "20261201-1200-parse-fails", Status: domain.Blocked, Reason: "the pull request conflicts with its base"}
	tests := []struct {
		name           string
		args           []string
		fake           *fakeClient
		want           *client.LaunchRequest
		code           int
		stdout, stderr string
	}{
		{name: "waits for the check", args: []string{"--repair", "Parse fails on empty input"}, fake: &fakeClient{end: client.JobEnd{Record: waitingCheck}},
			want: &client.LaunchRequest{Kind: domain.Repair, Brief: "Parse fails on empty input"}, code: 3,
			stdout: "job 20261201-1200-parse-fails waits for your approval of its check command: go test ./...\n",
			stderr: "axlr-tui: job 20261201-1200-parse-fails (repair of underpass-ai/axlr): preparing\n" +
				"axlr-tui: axlr-tui jobs approve 20261201-1200-parse-fails runs it; axlr-tui jobs deny 20261201-1200-parse-fails --reason TEXT sends the model back\n"},
		{name: "green but behind", args: []string{"--improve", "add a changelog"}, fake: &fakeClient{end: client.JobEnd{Record: domain.Record{
			ID: "20261201-1200-parse-fails", Status: domain.AwaitingMerge, PullRequest: 7, URL: "https://x/pull/7",
			Pending: &domain.Pending{Kind: domain.PendingMerge, PullRequest: 7, HeadSHA: "0123456789abcdef", Behind: true}}}},
			want: &client.LaunchRequest{Kind: domain.Improve, Brief: "add a changelog"}, code: 3,
			stdout: "job 20261201-1200-parse-fails waits for your merge decision: pull request #7 https://x/pull/7 is green at 0123456789ab\n",
			stderr: "axlr-tui: job 20261201-1200-parse-fails (improvement of underpass-ai/axlr): preparing\n" +
				"axlr-tui: its base moved on again after its branch was updated, and must be up to date: axlr-tui jobs queue 20261201-1200-parse-fails updates it and merges it once it is green; " +
				"axlr-tui jobs decline 20261201-1200-parse-fails --reason TEXT leaves it open and blocks the job\n"},
		{name: "flags before the brief", args: []string{"--improve", "--model", "m2", "add a changelog"}, fake: &fakeClient{end: client.JobEnd{Record: merged}},
			want:   &client.LaunchRequest{Kind: domain.Improve, Brief: "add a changelog", Model: "m2"},
			stdout: "job 20261201-1200-parse-fails completed: pull request #7 https://x/pull/7 merged as 0123456789ab\n",
			stderr: "axlr-tui: job 20261201-1200-parse-fails (improvement of underpass-ai/axlr): preparing\n"},
		{name: "blocked", args: []string{"--repair=#12"}, fake: &fakeClient{end: client.JobEnd{Record: blocked}},
			want: &client.LaunchRequest{Kind: domain.Repair, Brief: "#12"}, code: 1,
			stdout: "job 20261201-1200-parse-fails blocked: the pull request conflicts with its base\n",
			stderr: "axlr-tui: job 20261201-1200-parse-fails (repair of underpass-ai/axlr): preparing\n"},
		{name: "detach", args: []string{"--repair", "x fails", "--detach"}, fake: &fakeClient{},
			want:   &client.LaunchRequest{Kind: domain.Repair, Brief: "x fails"},
			stdout: "20261201-1200-parse-fails\n", stderr: "axlr-tui: job 20261201-1200-parse-fails admitted; axlr-tui jobs watch 20261201-1200-parse-fails follows it\n"},
		{name: "refused", args: []string{"--repair", "x fails"},
			fake: &fakeClient{launchErr: &client.JobRefusedError{Refusal: domain.Refusal{Code: domain.RefuseMaxActive, Reason: "another job is active (2 of 2 allowed by jobs.max_active)"}}},
			want: &client.LaunchRequest{Kind: domain.Repair, Brief: "x fails"}, code: 1,
			stderr: "axlr-tui: another job is active (2 of 2 allowed by jobs.max_active)\n"},
		{name: "both", args: []string{"--repair", "a", "--improve", "b"}, fake: &fakeClient{}, code: 2,
			stderr: "axlr-tui: --repair and --improve cannot be used together\n"},
		{name: "no brief", args: []string{"--improve", "  "}, fake: &fakeClient{}, code: 2,
			stderr: "axlr-tui: --improve needs a brief: what fails, or \"#123\" for an issue of repair.repository\n"},
		{name: "brief too long", args: []string{"--repair", strings.Repeat("x", domain.MaxBrief+1)}, fake: &fakeClient{}, code: 2,
			stderr: "axlr-tui: --repair: the brief is 8193 bytes, over the limit of 8192\n"},
		{name: "stray argument", args: []string{"--repair", "a", "b"}, fake: &fakeClient{}, code: 2,
			stderr: "axlr-tui: unexpected argument \"b\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := launch(t, tt.fake, nil, tt.args...)
			if code != tt.code || stdout != tt.stdout || stderr != tt.stderr {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
			}
			switch {
			case tt.want == nil && len(tt.fake.launched) != 0:
				t.Fatalf("launched %+v", tt.fake.launched)
			case tt.want != nil && (len(tt.fake.launched) != 1 || tt.fake.launched[0] != *tt.want):
				t.Fatalf("launched %+v, want %+v", tt.fake.launched, *tt.want)
			}
		})
	}
}

// TestLaunchJSON: the first line is the admitted job, then the session's
// events, then the result: the runtime contract's, its status the job's,
// with the record under "job".
func TestLaunchJSON(t *testing.T) {
	fake := &fakeClient{events: []contract.Event{{Type: contract.EventSession, SessionID: "s1"}}, end: client.JobEnd{Record: waitingCheck}}
	code, stdout, _ := launch(t, fake, nil, "--repair", "Parse fails", "--json")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 3 || len(lines) != 3 {
		t.Fatalf("exit %d, lines %q", code, lines)
	}
	var first struct {
		Type string        `json:"type"`
		Job  domain.Record `json:"job"`
	}
	var ev contract.Event
	var last struct {
		Type   string         `json:"type"`
		Result map[string]any `json:"result"`
	}
	if json.Unmarshal([]byte(lines[0]), &first) != nil || first.Type != "job" || first.Job.Status != domain.Preparing {
		t.Fatalf("first line %s", lines[0])
	}
	if json.Unmarshal([]byte(lines[1]), &ev) != nil || ev.Type != contract.EventSession {
		t.Fatalf("event line %s", lines[1])
	}
	if json.Unmarshal([]byte(lines[2]), &last) != nil || last.Type != "result" || last.Result["status"] != "needs_decision" ||
		last.Result["schema"] != contract.Schema || last.Result["session_id"] != "s1" {
		t.Fatalf("result line %s", lines[2])
	}
	job, _ := last.Result["job"].(map[string]any)
	if pending, _ := job["pending"].(map[string]any); pending["kind"] != "check" || pending["command"] != "go test ./..." {
		t.Fatalf("result's job %v", job)
	}
}

// TestLaunchInterrupt: the first Ctrl+C interrupts the job (its workflow
// is cancelled) and the watch goes on; the second leaves with 130.
func TestLaunchInterrupt(t *testing.T) {
	fake := &fakeClient{block: true, watched: make(chan struct{})}
	sig := make(chan os.Signal, 2)
	go func() {
		<-fake.watched
		sig <- os.Interrupt
		sig <- os.Interrupt
	}()
	code, _, stderr := launch(t, fake, sig, "--repair", "x fails")
	if code != cmdutil.ExitSignal || !strings.Contains(stderr, "interrupting job 20261201-1200-parse-fails") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if len(fake.interrupted) != 1 || fake.interrupted[0] != "20261201-1200-parse-fails" {
		t.Fatalf("interrupted %v", fake.interrupted)
	}
}

// TestLaunchTellsRetries: while the job's watch waits, each attempt of an
// activity after a failed one is told once on stderr, however often the
// watch asks; with --json nothing is asked.
func TestLaunchTellsRetries(t *testing.T) {
	defer func(d time.Duration) { retryEvery = d }(retryEvery)
	retryEvery = time.Millisecond
	clone := client.Retry{ID: "7", Activity: workflows.ActivityForgePrepare, Attempt: 2, MaxAttempts: 6, Failure: "connection refused"}
	asked := make(chan struct{})
	fake := &fakeClient{block: true, retriesAt: func(n int) []client.Retry {
		r := clone
		if n > 3 {
			r.Attempt = 3
		}
		if n == 6 {
			close(asked)
		}
		return []client.Retry{r}
	}}
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
	_, _, stderr := launch(t, fake, sig, "--repair", "x fails")
	want := "axlr-tui: retrying forge.Prepare, attempt 2 of 6 running; the last failed: connection refused\n" +
		"axlr-tui: retrying forge.Prepare, attempt 3 of 6 running; the last failed: connection refused\n"
	if got := strings.Join(slices.DeleteFunc(strings.SplitAfter(stderr, "\n"), func(l string) bool { return !strings.Contains(l, "retrying") }), ""); got != want {
		t.Fatalf("stderr's retry lines\n%s\nwant\n%s\nstderr\n%s", got, want, stderr)
	}

	// With --json: a watch that waits as long as twenty asks would take.
	fake = &fakeClient{block: true, watched: make(chan struct{}), retriesAt: func(int) []client.Retry {
		t.Error("asked for retries with --json")
		return nil
	}}
	sig = make(chan os.Signal, 2)
	go func() {
		<-fake.watched
		time.Sleep(20 * retryEvery)
		sig <- os.Interrupt
		sig <- os.Interrupt
	}()
	launch(t, fake, sig, "--repair", "x fails", "--json")
}

// TestDecide: approve takes what waits (the check, or the merge); deny
// only a check and decline only a merge, each with its reason; a job that
// waits for nothing is refused with its status.
func TestDecide(t *testing.T) {
	merge := domain.Record{ID: "m", Status: domain.AwaitingMerge, PullRequest: 9, Pending: &domain.Pending{Kind: domain.PendingMerge, PullRequest: 9, HeadSHA: "abc"}}
	check := waitingCheck
	check.ID = "c"
	running := domain.Record{ID: "r", Status: domain.Running}
	all := []domain.Record{merge, check, running}
	tests := []struct {
		args   []string
		want   *workflows.JobDecision
		code   int
		stdout string
		stderr string
	}{
		{args: []string{"approve", "c"}, want: &workflows.JobDecision{Job: "c", Kind: domain.PendingCheck, Approve: true},
			stdout: "approved the check command go test ./... of job c; it is running now (axlr-tui jobs watch c follows it)\n"},
		{args: []string{"approve", "m"}, want: &workflows.JobDecision{Job: "m", Kind: domain.PendingMerge, Approve: true},
			stdout: "approved the merge of pull request #9 of job m; it is running now (axlr-tui jobs watch m follows it)\n"},
		{args: []string{"deny", "c", "--reason", "not that one"}, want: &workflows.JobDecision{Job: "c", Kind: domain.PendingCheck, Reason: "not that one"},
			stdout: "denied the check command go test ./... of job c; it is running now (axlr-tui jobs watch c follows it)\n"},
		{args: []string{"decline", "m", "--reason", "wrong fix"}, want: &workflows.JobDecision{Job: "m", Kind: domain.PendingMerge, Reason: "wrong fix"},
			stdout: "declined the merge of pull request #9 of job m; it is running now (axlr-tui jobs watch m follows it)\n"},
		{args: []string{"deny", "m", "--reason", "x"}, code: 1,
			stderr: "axlr-tui: job m waits for its merge decision, not a check command: axlr-tui jobs decline m --reason TEXT\n"},
		{args: []string{"decline", "c", "--reason", "x"}, code: 1,
			stderr: "axlr-tui: job c waits for its check command, not a merge decision: axlr-tui jobs deny c --reason TEXT\n"},
		{args: []string{"approve", "r"}, code: 1, stderr: "axlr-tui: job r waits for no decision: it is running\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, out, errOut := factory.Test()
			fake := &fakeClient{records: all}
			cmd := NewCmdJobs(&factory.Factory{IOStreams: ios}, func(ctx context.Context, o *Options) error {
				o.Client = func(context.Context) (Client, error) { return fake, nil }
				return jobsRun(ctx, o)
			})
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			code := cmdutil.ExitCode(cmd.Execute(), errOut)
			if code != tt.code || out.String() != tt.stdout || errOut.String() != tt.stderr {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out.String(), errOut.String())
			}
			switch {
			case tt.want == nil && len(fake.decisions) != 0:
				t.Fatalf("decided %+v", fake.decisions)
			case tt.want != nil && (len(fake.decisions) != 1 || fake.decisions[0] != *tt.want):
				t.Fatalf("decided %+v, want %+v", fake.decisions, *tt.want)
			}
		})
	}
}
