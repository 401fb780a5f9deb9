package launch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/cmd/cmdtest"
	"github.com/underpass-ai/axlr/internal/cmd/factory"
	domain "github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

func flags(o LaunchOptions) LaunchOptions {
	return LaunchOptions{Kind: o.Kind, Brief: o.Brief, Model: o.Model, JSON: o.JSON, Detach: o.Detach}
}

func TestNewCmdRepair(t *testing.T) {
	cmdtest.Parse(t, NewCmdRepair, flags, []cmdtest.ParseCase[LaunchOptions]{
		{Name: "brief", Args: []string{"Parse fails on empty input"}, Want: LaunchOptions{Kind: domain.Repair, Brief: "Parse fails on empty input"}},
		{Name: "issue", Args: []string{"#12", "--model", "m2", "--json", "--detach"}, Want: LaunchOptions{Kind: domain.Repair, Brief: "#12", Model: "m2", JSON: true, Detach: true}},
		{Name: "brief that reads like a verb", Args: []string{"--", "watch"}, Want: LaunchOptions{Kind: domain.Repair, Brief: "watch"}},
		{Name: "no brief", Args: []string{"  "}, Err: `jobs repair needs a brief: what fails, or "#123" for an issue of repair.repository`},
		{Name: "brief too long", Args: []string{strings.Repeat("x", domain.MaxBrief+1)}, Err: "jobs repair: the brief is 8193 bytes, over the limit of 8192"},
		{Name: "stray argument", Args: []string{"a", "b"}, Err: `unexpected argument "b"`},
	})
}

func TestNewCmdImprove(t *testing.T) {
	cmdtest.Parse(t, NewCmdImprove, flags, []cmdtest.ParseCase[LaunchOptions]{
		{Name: "flags before the brief", Args: []string{"--model", "m2", "add a changelog"}, Want: LaunchOptions{Kind: domain.Improve, Brief: "add a changelog", Model: "m2"}},
		{Name: "no brief", Args: []string{}, Err: "jobs improve needs a brief"},
	})
}

// TestLaunchRun: the job is admitted with its brief and model and
// followed; the exit code is the job's: 3 while it waits for the person,
// 0 merged and completed, 1 blocked; --detach returns the id once
// admitted; a refusal is exit 1 with its sentence.
func TestLaunchRun(t *testing.T) {
	const id = "20261201-1200-parse-fails"
	merged := domain.Record{ID: id, Status: domain.Completed, PullRequest: 7, URL: "https://x/pull/7", MergeSHA: "0123456789abcdef"}
	blocked := domain.Record{ID: id, Status: domain.Blocked, Reason: "the pull request conflicts with its base"}
	behind := domain.Record{ID: id, Status: domain.AwaitingMerge, PullRequest: 7, URL: "https://x/pull/7",
		Pending: &domain.Pending{Kind: domain.PendingMerge, PullRequest: 7, HeadSHA: "0123456789abcdef", Behind: true}}
	tests := []struct {
		name   string
		opts   LaunchOptions
		fake   *cmdtest.Jobs
		ran    cmdtest.Ran
		launch bool
	}{
		{name: "waits for the check", opts: LaunchOptions{Kind: domain.Repair, Brief: "Parse fails on empty input"}, fake: &cmdtest.Jobs{End: client.JobEnd{Record: cmdtest.WaitingCheck}},
			ran: cmdtest.Ran{Code: 3, Stdout: "job " + id + " waits for your approval of its check command: go test ./...\n",
				Stderr: "axlr-tui: job " + id + " (repair of underpass-ai/axlr): preparing\n" +
					"axlr-tui: axlr-tui jobs approve " + id + " runs it; axlr-tui jobs deny " + id + " --reason TEXT sends the model back\n"}},
		{name: "green but behind", opts: LaunchOptions{Kind: domain.Improve, Brief: "add a changelog"}, fake: &cmdtest.Jobs{End: client.JobEnd{Record: behind}},
			ran: cmdtest.Ran{Code: 3, Stdout: "job " + id + " waits for your merge decision: pull request #7 https://x/pull/7 is green at 0123456789ab\n",
				Stderr: "axlr-tui: job " + id + " (improvement of underpass-ai/axlr): preparing\n" +
					"axlr-tui: its base moved on again after its branch was updated, and must be up to date: axlr-tui jobs queue " + id + " updates it and merges it once it is green; " +
					"axlr-tui jobs decline " + id + " --reason TEXT leaves it open and blocks the job\n"}},
		{name: "merged", opts: LaunchOptions{Kind: domain.Improve, Brief: "add a changelog", Model: "m2"}, fake: &cmdtest.Jobs{End: client.JobEnd{Record: merged}},
			ran: cmdtest.Ran{Stdout: "job " + id + " completed: pull request #7 https://x/pull/7 merged as 0123456789ab\n",
				Stderr: "axlr-tui: job " + id + " (improvement of underpass-ai/axlr): preparing\n"}},
		{name: "blocked", opts: LaunchOptions{Kind: domain.Repair, Brief: "#12"}, fake: &cmdtest.Jobs{End: client.JobEnd{Record: blocked}},
			ran: cmdtest.Ran{Code: 1, Stdout: "job " + id + " blocked: the pull request conflicts with its base\n",
				Stderr: "axlr-tui: job " + id + " (repair of underpass-ai/axlr): preparing\n"}},
		{name: "detach", opts: LaunchOptions{Kind: domain.Repair, Brief: "x fails", Detach: true}, fake: &cmdtest.Jobs{},
			ran: cmdtest.Ran{Stdout: id + "\n", Stderr: "axlr-tui: job " + id + " admitted; axlr-tui jobs watch " + id + " follows it\n"}},
		{name: "refused", opts: LaunchOptions{Kind: domain.Repair, Brief: "x fails"},
			fake: &cmdtest.Jobs{LaunchErr: &workflows.JobRefusedError{Refusal: domain.Refusal{Code: domain.RefuseMaxActive, Reason: "another job is active (2 of 2 allowed by jobs.max_active)"}}},
			ran:  cmdtest.Ran{Code: 1, Stderr: "axlr-tui: another job is active (2 of 2 allowed by jobs.max_active)\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cmdtest.Run(func(ios *factory.IOStreams) error {
				opts := tt.opts
				opts.IO, opts.Client, opts.Now = ios, cmdtest.Dial[Client](tt.fake), time.Now
				return launchRun(context.Background(), &opts)
			})
			if got != tt.ran {
				t.Fatalf("ran\n%+v\nwant\n%+v", got, tt.ran)
			}
			want := workflows.LaunchRequest{Kind: tt.opts.Kind, Brief: tt.opts.Brief, Model: tt.opts.Model, Person: true}
			if len(tt.fake.Launched) != 1 || tt.fake.Launched[0] != want || !tt.fake.Closed {
				t.Fatalf("launched %+v, want %+v", tt.fake.Launched, want)
			}
		})
	}
}

// TestLaunchRunJSON: the first line is the admitted job, then the
// session's events, then the result: the runtime contract's, its status
// the job's, with the record under "job".
func TestLaunchRunJSON(t *testing.T) {
	fake := &cmdtest.Jobs{Events: []contract.Event{{Type: contract.EventSession, SessionID: "s1"}}, End: client.JobEnd{Record: cmdtest.WaitingCheck}}
	got := cmdtest.Run(func(ios *factory.IOStreams) error {
		return launchRun(context.Background(), &LaunchOptions{IO: ios, Client: cmdtest.Dial[Client](fake), Now: time.Now, Kind: domain.Repair, Brief: "Parse fails", JSON: true})
	})
	lines := strings.Split(strings.TrimSpace(got.Stdout), "\n")
	if got.Code != 3 || len(lines) != 3 {
		t.Fatalf("exit %d, lines %q", got.Code, lines)
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
