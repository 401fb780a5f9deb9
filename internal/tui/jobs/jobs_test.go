package jobs

import (
	"context"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/underpass-ai/axlr/forge/pull"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/list"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden views")

// fakeClient records the calls the panel makes; the issue asks for a fake
// client in the components' model tests.
type fakeClient struct {
	records []jobs.Record
	calls   []string
	decided []workflows.JobDecision
	launch  []workflows.LaunchRequest
	err     error
}

func (f *fakeClient) Jobs(context.Context) ([]jobs.Record, error) {
	f.calls = append(f.calls, "jobs")
	return f.records, f.err
}

// PullRequest answers every job's pull request as open and blocked, with
// checks of each class.
func (f *fakeClient) PullRequest(_ context.Context, id string) (client.PullRequestView, error) {
	f.calls = append(f.calls, "pull request "+id)
	r, err := jobs.Find(f.records, id)
	if err = errors.Join(err, f.err); err != nil {
		return client.PullRequestView{}, err
	}
	return client.PullRequestView{Job: r.ID, Repository: "underpass-ai/axlr",
		PullRequest: pull.Request{Number: r.PullRequest, State: "open", MergeableState: "blocked",
			HeadRef: "axlr/" + r.ID, HeadSHA: "0123456789abcdef0123456789abcdef01234567", BaseRef: "main"},
		Checks: pull.Checks{SHA: "0123456789abcdef0123456789abcdef01234567", Passed: []string{"test", "vet"}, Pending: []string{"e2e"},
			Failed: []string{"lint: failure https://ci.example/lint/1"}},
	}, nil
}

func (f *fakeClient) DecideJob(_ context.Context, dec workflows.JobDecision) (jobs.Record, error) {
	f.calls = append(f.calls, "decide "+dec.Job)
	f.decided = append(f.decided, dec)
	return jobs.Record{}, f.err
}

func (f *fakeClient) RecoverJob(_ context.Context, id, model string) (jobs.Record, error) {
	f.calls = append(f.calls, "recover "+id+" "+model)
	return jobs.Record{}, f.err
}

func (f *fakeClient) InstallJob(_ context.Context, id, tuiPath string) (jobs.Record, error) {
	f.calls = append(f.calls, "install "+id+" "+tuiPath)
	return jobs.Record{}, f.err
}

func (f *fakeClient) QueueJob(_ context.Context, id string) (workflows.QueueView, error) {
	f.calls = append(f.calls, "queue "+id)
	return workflows.QueueView{}, f.err
}

func (f *fakeClient) UnqueueJob(_ context.Context, id, reason string) (workflows.QueueView, error) {
	f.calls = append(f.calls, "unqueue "+id+": "+reason)
	return workflows.QueueView{}, f.err
}

func (f *fakeClient) LaunchJob(_ context.Context, req workflows.LaunchRequest) (jobs.Record, error) {
	f.calls = append(f.calls, "launch")
	f.launch = append(f.launch, req)
	return jobs.Record{}, f.err
}

var _ Client = (*client.Client)(nil)

func exit(n int) *int { return &n }

var day = time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)

// sample is three jobs, oldest first, so the panel has to sort them.
func sample() []jobs.Record {
	return []jobs.Record{
		{ID: "hello-probe-fails", Kind: jobs.Repair, Status: jobs.Completed, Step: "merge", Sessions: []string{"s1", "s2"},
			PullRequest: 41, Check: &jobs.Check{Command: "go test ./...", ExitCode: exit(0), LastLine: "ok"}, Created: day,
			Brief: "hello_probe fails", Clone: "/var/axlr/clones/hello"},
		{ID: "grep-tool-slow", Kind: jobs.Improve, Status: jobs.AwaitingMerge, Step: "build", StepAttempt: 2, StepLimit: 3,
			Sessions: []string{"s3"}, PullRequest: 42, Check: &jobs.Check{Command: "go test ./tools", ExitCode: exit(1), LastLine: "FAIL tools 0.2s"},
			Pending: &jobs.Pending{Kind: jobs.PendingMerge, PullRequest: 42, HeadSHA: "abcdef0123456"},
			Queue:   &jobs.QueuePlace{Position: 1, State: jobs.QueueChecks}, Created: day.Add(time.Hour),
			Brief: "grep is slow on\nbig trees", OriginSession: "s0", Clone: "/var/axlr/clones/grep"},
		{ID: "exec-timeout", Kind: jobs.Repair, Status: jobs.AwaitingApproval, Step: "reproduce", StepAttempt: 1, StepLimit: 3,
			Pending: &jobs.Pending{Kind: jobs.PendingCheck, Command: "go test -run TestTimeout ./tools"}, Created: day.Add(2 * time.Hour),
			Brief: "exec ignores its timeout"},
	}
}

func loaded(t *testing.T, f *fakeClient) Model {
	t.Helper()
	m := New(context.Background(), f, common.New(80, 24, false), Options{MaxActive: 2, Model: "m1", TUIPath: "/usr/bin/axlr-tui"})
	msg := m.Init()()
	m, _ = m.Update(msg)
	return m
}

func TestPanelSortsNewestFirst(t *testing.T) {
	m := loaded(t, &fakeClient{records: sample()})
	var ids []string
	for _, r := range m.Rows() {
		ids = append(ids, r.ID)
	}
	if want := []string{"exec-timeout", "grep-tool-slow", "hello-probe-fails"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("rows %v, want %v", ids, want)
	}
}

func TestPanelKeys(t *testing.T) {
	tests := []struct {
		name  string
		keys  []string
		calls []string
		dec   []workflows.JobDecision
	}{
		{name: "approve the check", keys: []string{"a"}, calls: []string{"decide exec-timeout"},
			dec: []workflows.JobDecision{{Job: "exec-timeout", Kind: jobs.PendingCheck, Approve: true}}},
		{name: "approve the merge at its head", keys: []string{"down", "a"}, calls: []string{"decide grep-tool-slow"},
			dec: []workflows.JobDecision{{Job: "grep-tool-slow", Kind: jobs.PendingMerge, Approve: true, HeadSHA: "abcdef0123456"}}},
		{name: "decline the merge with a reason", keys: []string{"pgdown", "up", "d", "t", "o", "o", " ", "b", "i", "g", "enter"}, calls: []string{"decide grep-tool-slow"},
			dec: []workflows.JobDecision{{Job: "grep-tool-slow", Kind: jobs.PendingMerge, Reason: "too big"}}},
		{name: "recover", keys: []string{"pgdown", "r"}, calls: []string{"recover hello-probe-fails m1"}},
		{name: "install", keys: []string{"pgdown", "i"}, calls: []string{"install hello-probe-fails /usr/bin/axlr-tui"}},
		{name: "queue", keys: []string{"m"}, calls: []string{"queue exec-timeout"}},
		{name: "unqueue the queued one", keys: []string{"down", "m"}, calls: []string{"unqueue grep-tool-slow: unqueued from the jobs panel"}},
		{name: "read the pull request", keys: []string{"down", "g"}, calls: []string{"pull request grep-tool-slow"}},
		{name: "nothing to approve", keys: []string{"pgdown", "a"}},
		{name: "deny cancelled with esc", keys: []string{"d", "n", "o", "esc"}},
		{name: "no pull request to read", keys: []string{"g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{records: sample()}
			m := loaded(t, f)
			f.calls = nil
			m, cmd := tuitest.Press(m, tt.keys...)
			if len(tt.calls) > 0 {
				if cmd == nil {
					t.Fatal("no command")
				}
				m, _ = m.Update(cmd())
			}
			if !reflect.DeepEqual(f.calls, tt.calls) {
				t.Errorf("calls %q, want %q", f.calls, tt.calls)
			}
			if !reflect.DeepEqual(f.decided, tt.dec) {
				t.Errorf("decisions %+v, want %+v", f.decided, tt.dec)
			}
			if m.Editing() {
				t.Error("still editing")
			}
		})
	}
}

func TestPanelDenyNeedsReason(t *testing.T) {
	f := &fakeClient{records: sample()}
	m, cmd := tuitest.Press(loaded(t, f), "d", "enter")
	if cmd != nil || !m.Editing() || !strings.Contains(m.View(), "a reason is needed") {
		t.Errorf("an empty reason was not refused in place: editing %v, view:\n%s", m.Editing(), m.View())
	}
}

// TestPanelNewJob: n starts the person's job, of the kind Tab chose, in the
// TUI's session with the panel's model, so the session receives its
// outcome; the brief stays on the prompt, not typed into, until axlrd
// answers.
func TestPanelNewJob(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
		want jobs.Kind
	}{
		{"repair", []string{"n"}, jobs.Repair},
		{"tab toggles to improvement", []string{"n", "tab"}, jobs.Improve},
		{"tab twice is repair again", []string{"n", "tab", "tab"}, jobs.Repair},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{records: sample()}
			m := loaded(t, f)
			m.SetSession("s-tui")
			m, _ = tuitest.Press(m, tt.keys...)
			for _, k := range tuitest.Type("#12") {
				m, _ = m.Update(k)
			}
			m, cmd := tuitest.Press(m, "enter")
			if cmd == nil {
				t.Fatal("no command")
			}
			if !m.Held() || statusLine(m) != "starting the "+tt.want.Noun()+"…" {
				t.Errorf("while it starts: held %v, status %q", m.Held(), statusLine(m))
			}
			m, _ = m.Update(cmd())
			want := []workflows.LaunchRequest{{Kind: tt.want, Brief: "#12", Model: "m1", OriginSession: "s-tui", Person: true}}
			if !reflect.DeepEqual(f.launch, want) {
				t.Errorf("launched %+v, want %+v", f.launch, want)
			}
			if m.Editing() || !strings.HasPrefix(statusLine(m), string(tt.want)+" ") {
				t.Errorf("after the admission: editing %v, status %q", m.Editing(), statusLine(m))
			}
		})
	}
}

// TestPanelBriefLines: Shift+Enter adds a line to the brief and Enter
// starts the job with every line; the panel shows the lines above its
// keys, in its height.
func TestPanelBriefLines(t *testing.T) {
	f := &fakeClient{records: sample()}
	m, _ := tuitest.Press(loaded(t, f), "n")
	for _, line := range []string{"TestParse fails", "on empty input"} {
		if line != "TestParse fails" {
			m, _ = tuitest.Press(m, "shift+enter")
		}
		for _, k := range tuitest.Type(line) {
			m, _ = m.Update(k)
		}
	}
	view := m.View()
	if n := strings.Count(view, "\n") + 1; n != 24 {
		t.Errorf("view has %d lines, want 24", n)
	}
	if typed(view, -2) != "TestParse fails" || typed(view, -1) != "on empty input" {
		t.Errorf("the brief's lines are not the last ones:\n%s", view)
	}
	m, cmd := tuitest.Press(m, "enter")
	if cmd == nil {
		t.Fatal("no command")
	}
	m.Update(cmd())
	if len(f.launch) != 1 || f.launch[0].Brief != "TestParse fails\non empty input" {
		t.Errorf("launched %+v", f.launch)
	}
}

// TestPanelBriefKeptOnRefusal: a start the registry refuses says why on
// the status line and gives the brief back to fix; the fixed brief starts
// the job. Esc while a brief is held drops it; the answer then only says
// how it went.
func TestPanelBriefKeptOnRefusal(t *testing.T) {
	f := &fakeClient{records: sample()}
	m, _ := tuitest.Press(loaded(t, f), "n", "tab")
	for _, k := range tuitest.Type("grep is slow") {
		m, _ = m.Update(k)
	}
	const dup = "duplicate: improvement grep-tool-slow is already awaiting_merge for the same improvement; follow it with axlr-tui jobs watch grep-tool-slow or axlr_repair_status instead of starting another"
	f.err = &workflows.JobRefusedError{Refusal: jobs.Refusal{Code: jobs.RefuseDuplicate, Job: "grep-tool-slow", Reason: dup}}
	m, cmd := tuitest.Press(m, "enter")
	m, _ = tuitest.Press(m, "x", "tab") // a held brief takes no keys
	m, _ = m.Update(cmd())
	if !m.Editing() || m.Held() || m.Asking() != list.Briefing || !strings.HasPrefix(dup, strings.TrimSuffix(statusLine(m), "…")) {
		t.Fatalf("after the refusal: editing %v, held %v, status %q", m.Editing(), m.Held(), statusLine(m))
	}
	if got := typed(m.View(), -1); got != "grep is slow" {
		t.Fatalf("the brief after the refusal is %q:\n%s", got, m.View())
	}
	f.err = nil
	for _, k := range tuitest.Type(" on big trees") {
		m, _ = m.Update(k)
	}
	m, cmd = tuitest.Press(m, "enter")
	m, _ = m.Update(cmd())
	want := []workflows.LaunchRequest{
		{Kind: jobs.Improve, Brief: "grep is slow", Model: "m1", Person: true},
		{Kind: jobs.Improve, Brief: "grep is slow on big trees", Model: "m1", Person: true},
	}
	if !reflect.DeepEqual(f.launch, want) || m.Editing() {
		t.Fatalf("launched %+v, editing %v; want %+v", f.launch, m.Editing(), want)
	}

	f.err = errors.New("axlrd not reachable at 127.0.0.1:7233")
	m, _ = tuitest.Press(m, "n")
	for _, k := range tuitest.Type("exec hangs") {
		m, _ = m.Update(k)
	}
	m, cmd = tuitest.Press(m, "enter")
	if m, _ = tuitest.Press(m, "esc"); m.Editing() {
		t.Fatal("Esc kept a held brief")
	}
	m, _ = m.Update(cmd())
	if m.Editing() || statusLine(m) != "axlrd not reachable at 127.0.0.1:7233" {
		t.Errorf("an answer after Esc: editing %v, status %q", m.Editing(), statusLine(m))
	}
}

// TestPanelLaunch: a brief given elsewhere (the composer's /repair) is
// started as n's, held on the prompt, and given back there after a
// refusal.
func TestPanelLaunch(t *testing.T) {
	f := &fakeClient{records: sample()}
	m := loaded(t, f)
	f.err = &workflows.JobRefusedError{Refusal: jobs.Refusal{Code: jobs.RefuseMaxActive, Reason: "another job is active"}}
	m.SetSession("s-tui")
	m, cmd := m.Launch(jobs.Improve, "show the budget\nin the footer")
	if !m.Held() || !strings.Contains(m.View(), "new improvement") {
		t.Fatalf("the launch holds no brief:\n%s", m.View())
	}
	m, _ = m.Update(cmd())
	want := []workflows.LaunchRequest{{Kind: jobs.Improve, Brief: "show the budget\nin the footer", Model: "m1", OriginSession: "s-tui", Person: true}}
	if !reflect.DeepEqual(f.launch, want) {
		t.Errorf("launched %+v, want %+v", f.launch, want)
	}
	view := m.View()
	if !m.Editing() || m.Held() || statusLine(m) != "another job is active" || typed(view, -2) != "show the budget" || typed(view, -1) != "in the footer" {
		t.Errorf("after the refusal: editing %v, held %v, status %q:\n%s", m.Editing(), m.Held(), statusLine(m), view)
	}
}

func TestPanelActionErrorShows(t *testing.T) {
	f := &fakeClient{records: sample()}
	m := loaded(t, f)
	f.err = errors.New("job exec-timeout waits for nothing now")
	m, cmd := tuitest.Press(m, "a")
	m, _ = m.Update(cmd())
	if !strings.Contains(m.View(), "waits for nothing now") {
		t.Errorf("error not shown:\n%s", m.View())
	}
}

func TestPanelRefreshKeepsSelection(t *testing.T) {
	f := &fakeClient{records: sample()}
	m, _ := tuitest.Press(loaded(t, f), "down")
	recs := append(sample(), jobs.Record{ID: "newer", Kind: jobs.Repair, Status: jobs.Running, Created: day.Add(3 * time.Hour)})
	m, _ = m.Update(RecordsMsg{Records: recs})
	if r, _ := m.Selected(); r.ID != "grep-tool-slow" {
		t.Errorf("selected %s after a refresh, want grep-tool-slow", r.ID)
	}
}

// TestPanelPullRequest: g reads the selected job's pull request in a
// command, never in Update, and its answer is the status line; a job
// without one says so without a call.
func TestPanelPullRequest(t *testing.T) {
	for _, tt := range []struct {
		name    string
		keys    []string
		err     error
		reading string // the status line while the command runs
		calls   []string
		status  string
	}{
		{name: "open", keys: []string{"down", "g"}, reading: "reading pull request #42…", calls: []string{"pull request grep-tool-slow"},
			status: "#42 open at 0123456 · merge state BLOCKED · 2 passed, 1 pending, 1 failed: lint"},
		{name: "forge refuses", keys: []string{"down", "g"}, err: errors.New("job grep-tool-slow, pull request #42: not found"),
			reading: "reading pull request #42…", calls: []string{"pull request grep-tool-slow"},
			status: "pull request: job grep-tool-slow, pull request #42: not found"},
		{name: "no pull request yet", keys: []string{"g"}, status: "exec-timeout has no pull request yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{records: sample()}
			m := loaded(t, f)
			f.calls, f.err = nil, tt.err
			m, cmd := tuitest.Press(m, tt.keys...)
			if len(f.calls) > 0 {
				t.Fatalf("Update called %q", f.calls)
			}
			if tt.calls == nil {
				if cmd != nil {
					t.Fatalf("a command for a job without a pull request: %v", cmd())
				}
			} else {
				if got := statusLine(m); got != tt.reading {
					t.Errorf("status while reading %q, want %q", got, tt.reading)
				}
				if cmd == nil {
					t.Fatal("no command")
				}
				msg, ok := cmd().(PullRequestMsg)
				if !ok {
					t.Fatalf("the command answered %T, want a PullRequestMsg", msg)
				}
				if m, cmd = m.Update(msg); cmd != nil {
					t.Error("the answer asked for more")
				}
			}
			if !reflect.DeepEqual(f.calls, tt.calls) {
				t.Errorf("calls %q, want %q", f.calls, tt.calls)
			}
			if got := statusLine(m); got != tt.status {
				t.Errorf("status %q, want %q", got, tt.status)
			}
		})
	}
}

// typed is line n of a view (as tuitest.Line counts) as the person reads
// it: without the cursor's reverse video and the padding.
func typed(view string, n int) string {
	return strings.TrimRight(ansi.Strip(tuitest.Line(view, n)), " ")
}

// statusLine is the view's status line, unpadded: above the last line,
// and above the brief's lines while one is typed.
func statusLine(m Model) string {
	lines := strings.Split(m.View(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "new repair · ") || strings.HasPrefix(l, "new improvement · ") {
			return strings.TrimRight(lines[i-1], " ")
		}
	}
	return strings.TrimRight(lines[len(lines)-2], " ")
}

func TestPullRequestLine(t *testing.T) {
	const sha = "89abcdef0123456789abcdef0123456789abcdef"
	for _, tt := range []struct {
		name string
		view client.PullRequestView
		want string
	}{
		{name: "green", view: client.PullRequestView{PullRequest: pull.Request{Number: 7, State: "open", MergeableState: "clean", HeadSHA: sha},
			Checks: pull.Checks{Passed: []string{"test", "vet", "lint"}}},
			want: "#7 open at 89abcde · merge state CLEAN · 3 passed, 0 pending, 0 failed"},
		{name: "failed names without their conclusion and link", view: client.PullRequestView{PullRequest: pull.Request{Number: 7, State: "open", MergeableState: "unstable", HeadSHA: sha},
			Checks: pull.Checks{Failed: []string{"CI / test: failure https://ci.example/1", "ci/build: error"}}},
			want: "#7 open at 89abcde · merge state UNSTABLE · 0 passed, 0 pending, 2 failed: CI / test, ci/build"},
		{name: "merged", view: client.PullRequestView{PullRequest: pull.Request{Number: 7, State: "closed", Merged: true, MergeSHA: "fedcba9876543210",
			MergeableState: "unknown", HeadSHA: sha}, Checks: pull.Checks{Passed: []string{"test"}}},
			want: "#7 merged as fedcba9 · 1 passed, 0 pending, 0 failed"},
		{name: "closed", view: client.PullRequestView{PullRequest: pull.Request{Number: 7, State: "closed", MergeableState: "unknown", HeadSHA: sha}},
			want: "#7 closed at 89abcde · 0 passed, 0 pending, 0 failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := pullRequestLine(tt.view); got != tt.want {
				t.Errorf("pullRequestLine = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPanelView(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
	}{
		{"rows", nil},
		{"details", []string{"down", "enter"}},
		{"pull request", []string{"down", "g"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{records: sample()}
			m, cmd := tuitest.Press(loaded(t, f), tt.keys...)
			if tt.name == "pull request" {
				m, _ = m.Update(cmd())
			}
			view := m.View()
			if n := strings.Count(view, "\n") + 1; n != 24 {
				t.Errorf("view has %d lines, want 24", n)
			}
			tuitest.Golden(t, view, *update)
		})
	}
}

// TestPanelRefreshesOnce: however many answers come (the panel opened
// again, an action's refresh), one timed refresh is scheduled at a time.
// The list's tests follow the tick to the next read.
func TestPanelRefreshesOnce(t *testing.T) {
	f := &fakeClient{records: sample()}
	m := New(context.Background(), f, common.New(80, 24, false), Options{MaxActive: 2})
	m, cmd := m.Update(m.Init()())
	if cmd == nil {
		t.Fatal("the first answer schedules no timed refresh")
	}
	m, cmd = m.Update(ActedMsg{Done: "queued exec-timeout"})
	if cmd == nil {
		t.Fatal("an action's answer asks for no refresh")
	}
	if _, cmd = m.Update(cmd()); cmd != nil {
		t.Fatal("a second answer scheduled a second timed refresh: they would stack")
	}
	if want := []string{"jobs", "jobs"}; !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls %q, want %q", f.calls, want)
	}
}
