package jobs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/jsontest"
)

func exit(code int) *int { return &code }

// fullRecord has every field set, the nested ones included.
func fullRecord() Record {
	at := time.Date(2026, 10, 17, 9, 30, 0, 0, time.UTC)
	return Record{
		ID: "20261017-0930-parser-drops-the-last-line", Kind: Repair, Signature: "0123456789abcdef",
		Repository: "underpass-ai/axlr", OriginSession: "s-origin", Person: true, Session: "s-job", Sessions: []string{"s-job"},
		Clone: "/data/axlr/repairs/x", Brief: "parser drops the last line", Status: AwaitingMerge,
		Step: "decide", StepAttempt: 1, StepLimit: 3, State: "DECIDE", Instance: "inst-1",
		Check:       &Check{Command: "go test ./parser", ExitCode: exit(0), LastLine: "ok"},
		Pending:     &Pending{Kind: PendingMerge, Command: "go test ./parser", PullRequest: 7, HeadSHA: "abc"},
		PullRequest: 7, URL: "https://github.com/underpass-ai/axlr/pull/7", HeadSHA: "abc", MergeSHA: "def",
		Reason: "r", Rounds: 2, RedRounds: []string{"test: failure"}, Recoveries: 1, Recovery: "recovery 1 continued instance i at watch", Attempt: 1, Base: "main", Queue: &QueuePlace{Position: 2, State: QueueWaiting, Note: "queued"},
		Candidate: &Candidate{Path: "/data/x.bin", Version: "repair-x-abc", Commit: "abc"},
		Installed: &Installed{Path: "/usr/local/bin/axlrd", Backup: "/usr/local/bin/axlrd.before-repair-x"},
		Build:     "v1.2.3", Created: at, Updated: at,
	}
}

func TestRecordFields(t *testing.T) {
	data, err := json.Marshal(fullRecord())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"attempt", "base", "brief", "build", "candidate", "candidate.commit", "candidate.path", "candidate.version",
		"check", "check.command", "check.exit_code", "check.last_line", "clone", "created", "head_sha", "id",
		"installed", "installed.backup", "installed.path", "instance", "kind", "merge_sha", "origin_session",
		"pending", "pending.command", "pending.head_sha", "pending.kind", "pending.pull_request", "person", "pull_request",
		"queue", "queue.note", "queue.position", "queue.state",
		"reason", "recoveries", "recovery", "red_rounds", "repository", "rounds", "session", "sessions", "signature", "state", "status", "step", "step_attempt",
		"step_limit", "updated", "url",
	}
	if got := jsontest.Keys(t, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("record keys\n got %v\nwant %v", got, want)
	}
	var back Record
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, fullRecord()) {
		t.Fatalf("round trip: %v\n%+v", err, back)
	}
}

func TestRecordAbsentParts(t *testing.T) {
	data, err := json.Marshal(Record{ID: "x", Check: &Check{Command: "go test"}, Pending: &Pending{Kind: PendingCheck, Command: "go test"}})
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	// No exit code is invented for a command that did not exit, and a
	// pending check names no pull request.
	for _, want := range []string{`"exit_code":null`, `"pending":{"kind":"check","command":"go test"}`, `"candidate":null`, `"installed":null`} {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %s", text, want)
		}
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		status           Status
		terminal, active bool
	}{
		{Preparing, false, true},
		{Running, false, true},
		{AwaitingApproval, false, true},
		{AwaitingMerge, false, true},
		{Completed, true, false},
		{Blocked, true, false},
		{Failed, true, false},
		{Interrupted, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			r := Record{Status: tt.status}
			if r.Terminal() != tt.terminal || r.Active() != tt.active {
				t.Fatalf("terminal %v active %v, want %v %v", r.Terminal(), r.Active(), tt.terminal, tt.active)
			}
		})
	}
}

func TestKind(t *testing.T) {
	tests := []struct {
		kind             Kind
		valid            bool
		noun, definition string
	}{
		{Repair, true, "repair", "axlr_repair"},
		{Improve, true, "improvement", "axlr_improve"},
		{"improvement", false, "repair", "axlr_repair"},
		{"", false, "repair", "axlr_repair"},
	}
	for _, tt := range tests {
		if tt.kind.Valid() != tt.valid || tt.kind.Noun() != tt.noun || tt.kind.Definition() != tt.definition {
			t.Errorf("%q: valid %v noun %q definition %q", tt.kind, tt.kind.Valid(), tt.kind.Noun(), tt.kind.Definition())
		}
	}
}

func TestFind(t *testing.T) {
	records := []Record{{ID: "a"}, {ID: "b", Status: Running}}
	if r, err := Find(records, "b"); err != nil || r.Status != Running {
		t.Fatalf("find b: %+v %v", r, err)
	}
	_, err := Find(records, "c")
	if !errors.Is(err, ErrNotFound) || err.Error() != "no such job: c (axlr-tui jobs lists the jobs)" {
		t.Fatalf("find c: %v", err)
	}
}
