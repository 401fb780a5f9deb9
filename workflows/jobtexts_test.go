package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
)

// TestJobTexts: the pull request's title is the first sentence of the
// model's summary of its change, and its body carries the diagnosis's
// cause and fix and the repair's summary; the squash merge takes the same
// title.
func TestJobTexts(t *testing.T) {
	model := replies(repairModel[:2], []reply{
		{calls: []scriptCall{stepDoneCall(map[string]any{"summary": "Parse returns ErrSyntax for empty input. It no longer slices s.", "summary_en": "Parse errs on empty input."})}},
		{text: "AXLR proposes it now."},
	})
	h := newPinnedHarness(t, jobs.Repair, model, greenChecks)
	h.pinned.texts = map[string]map[string]string{
		"diagnose": {"root_cause": "r", "proposed_fix": "f"},
		"repair":   {"summary": "Parse returns ErrSyntax for empty input. It no longer slices s."},
	}
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Completed {
		t.Fatalf("record %+v", rec)
	}
	p := h.forge.proposals[0]
	if p.Title != "Repair: Parse returns ErrSyntax for empty input" || p.Commit.Title != p.Title {
		t.Fatalf("title %q, commit %q", p.Title, p.Commit.Title)
	}
	for _, want := range []string{"## Cause\n\nr", "## Fix\n\nf", "## Summary\n\nParse returns ErrSyntax for empty input. It no longer slices s."} {
		if !strings.Contains(p.Body, want) {
			t.Fatalf("body lacks %q:\n%s", want, p.Body)
		}
	}
	if m := h.forge.merges[0]; m.Title != p.Title {
		t.Fatalf("merged as %q", m.Title)
	}
}

// TestJobRerunShownLate: after a rerun of the failed jobs, reads that
// still show the failed runs it replaces are not a new red round; the
// rerun's green is the round's verdict.
func TestJobRerunShownLate(t *testing.T) {
	flaky := []reply{
		{calls: []scriptCall{stepDoneCall(map[string]any{"summary": "the failure is a flaky test; nothing changed", "summary_en": "Flaky test."})}},
		{text: "Nothing to change; AXLR reruns the checks."},
	}
	h := newPinnedHarness(t, jobs.Repair, replies(repairModel, flaky), redChecks, redChecks, redChecks, greenChecks)
	h.forge.unchanged = map[int]bool{2: true}
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Completed || rec.MergeSHA == "" {
		t.Fatalf("record %+v", rec)
	}
	if got, want := h.calls(), (forgeCalls{Proposes: 2, Commits: 1, Reruns: 1, Merges: 1}); got != want {
		t.Fatalf("forge calls %+v, want %+v", got, want)
	}
	if notes := h.redNotes(); len(notes) != 1 {
		t.Fatalf("red notes %q: a stale read made a second red round", notes)
	}
}

// TestJobThirdRedRoundReason: the reason a third red round blocks with
// names the failing checks once.
func TestJobThirdRedRoundReason(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, replies(repairModel, repairAgain, repairAgain), redChecks)
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if want := "checks failed after 2 repair rounds: test: failure https://ci/1"; rec.Status != jobs.Blocked || rec.Reason != want {
		t.Fatalf("record %s %q, want %q", rec.Status, rec.Reason, want)
	}
}

// TestJobIssue: a job asked for issue #12 reads it through the forge into
// its brief before it clones, and the clone's marker names the issue.
func TestJobIssue(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	h.record.Brief = "#12"
	h.approveCheck(t)
	var prompt string
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, args []any) {
		if in, ok := args[0].(BeginTurnInput); ok && info.ActivityType.Name == ActivityBeginTurn && prompt == "" {
			prompt = in.Prompt
		}
	})
	rec := h.runInput(t, JobInput{Record: h.record, SessionID: sessionID, Host: "test", Settings: jobSettings(true), Issue: 12})
	want := "Issue #12 of o/r: Parse panics on empty input\n\ngo test ./... panics.\n\nhttps://github.com/o/r/issues/12"
	if rec.Brief != want || prompt != want {
		t.Fatalf("brief %q, first prompt %q", rec.Brief, prompt)
	}
	if len(h.forge.issues) != 1 || h.forge.issues[0] != (IssueInput{Repository: "o/r", Number: 12}) {
		t.Fatalf("issues read %+v", h.forge.issues)
	}
}

// TestJobInterruptedAndRecovered: a job cancelled while its check waits
// ends interrupted with where it stood, and its instance is left as it
// stands for the recovery to take over; a recovery whose instance cannot
// go on (this stand-in holds none) says why in its record and to the
// model, and starts a new one; its first prompt says why the earlier run
// stopped.
func TestJobInterruptedAndRecovered(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	h.atTime(5*time.Minute, h.env.CancelWorkflow)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Interrupted || rec.Reason != "interrupted while step reproduce of axlr_repair (awaiting_approval)" || rec.Pending != nil || rec.Instance == "" {
		t.Fatalf("record %s %q %+v", rec.Status, rec.Reason, rec.Pending)
	}
	if got := h.triggers(); got != "" {
		t.Fatalf("triggers %q, want the instance left for the recovery", got)
	}

	h = newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	h.approveCheck(t)
	var prompt string
	var notes []string
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, args []any) {
		if in, ok := args[0].(BeginTurnInput); ok && info.ActivityType.Name == ActivityBeginTurn && prompt == "" {
			prompt = in.Prompt
		}
		if in, ok := args[0].(AppendNoteInput); ok {
			notes = append(notes, in.Text)
		}
	})
	why := rec.Reason
	rec.Status, rec.Reason, rec.Recoveries = jobs.Preparing, "", 1
	again := h.runInput(t, JobInput{Record: rec, SessionID: sessionID, Host: "test", Settings: jobSettings(true), Recovered: why})
	if again.Status != jobs.Completed || !strings.HasSuffix(prompt, ResumedNote(why)) || !strings.HasPrefix(prompt, h.record.Brief) {
		t.Fatalf("recovered %s, first prompt %q", again.Status, prompt)
	}
	if !strings.HasPrefix(again.Recovery, "recovery 1 started a new instance from the first step: the stand-in holds no instance "+rec.Instance) ||
		again.Instance == rec.Instance || len(notes) == 0 || !strings.Contains(notes[0], "cannot go on") {
		t.Fatalf("recovery %q, instance %s (was %s), notes %q", again.Recovery, again.Instance, rec.Instance, notes)
	}
}

// TestJobDecisionAnswersTaken: the decide Update answers the record once
// the job has taken the decision: nothing pending, running again.
func TestJobDecisionAnswersTaken(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	var got jobs.Record
	var err error
	h.atTime(time.Minute, func() {
		h.env.UpdateWorkflow(UpdateJobDecide, "d-check", &testsuite.TestUpdateCallback{
			OnReject: func(e error) { err = e }, OnAccept: func() {},
			OnComplete: func(v any, e error) {
				err = e
				if r, ok := v.(jobs.Record); ok {
					got = r
				}
			},
		}, JobDecision{RequestID: "d-check", Job: h.record.ID, Kind: jobs.PendingCheck, Approve: true})
	})
	h.run(t, jobSettings(true))
	if err != nil || got.Pending != nil || got.Status != jobs.Running {
		t.Fatalf("the decision answered %s, pending %+v (%v)", got.Status, got.Pending, err)
	}
}

// TestJobBranchMoved: a round the forge's moved branch refuses (an update
// changed the files the round changes too) ends the job BLOCKED with the
// reason and the pull request left as it is, not failed.
func TestJobBranchMoved(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, replies(repairModel, repairAgain), redChecks)
	const why = "the branch repair/x was updated on the forge with changes to files this round changes too: calc.go"
	h.forge.moved = map[int]string{2: why}
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Blocked || rec.Reason != why || rec.PullRequest != 7 {
		t.Fatalf("record %s %q #%d", rec.Status, rec.Reason, rec.PullRequest)
	}
	if got := h.calls(); got.Merges != 0 || got.Commits != 1 {
		t.Fatalf("forge calls %+v", got)
	}
}

// TestJobRecordStepAndCheck: the record names the open step with its
// iteration and limit, and the check command the ceremony ran last with its
// exit code and last line.
func TestJobRecordStepAndCheck(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	h.approveCheck(t)
	rec := h.run(t, jobSettings(true))
	if rec.Status != jobs.Completed {
		t.Fatalf("record %+v", rec)
	}
	var waiting *jobs.Record
	for i, r := range h.reports {
		if r.Status == jobs.AwaitingApproval {
			waiting = &h.reports[i]
			break
		}
	}
	if waiting == nil || waiting.Step != "reproduce" || waiting.StepAttempt != 1 || waiting.StepLimit != 3 || waiting.Check != nil {
		t.Fatalf("awaiting the check: %+v", waiting)
	}
	failed := lastCheck(&CeremonyState{Records: []contract.StepRecord{
		{Step: "reproduce", Check: &contract.CheckRecord{Program: "go", Args: []string{"test", "./..."}, ExitCode: contract.Exit(1), OutputTail: "--- FAIL: TestParse\nFAIL\n"}},
		{Step: "diagnose"},
	}})
	if failed == nil || failed.Command != "go test ./..." || *failed.ExitCode != 1 || failed.LastLine != "FAIL" {
		t.Fatalf("the reproduction's check %+v", failed)
	}
	if rec.Check == nil || *rec.Check.ExitCode != 0 || rec.Check.LastLine != "ok  \tgithub.com/o/r/parser\t0.02s" {
		t.Fatalf("the last check %+v", rec.Check)
	}
}

// TestJobMergeOfTheApprovedHead: an approval that names the head it saw
// green (the merge queue's, after it updated the branch) merges that head;
// a head on anything but a merge's approval is refused.
func TestJobMergeOfTheApprovedHead(t *testing.T) {
	h := newPinnedHarness(t, jobs.Repair, repairModel, greenChecks)
	h.approveCheck(t)
	var wrong, merge outcome
	h.decideAt(10*time.Minute, JobDecision{RequestID: "d-wrong", Job: h.record.ID, Kind: jobs.PendingMerge, Reason: "no", HeadSHA: "head9"}, &wrong)
	h.decideAt(11*time.Minute, JobDecision{RequestID: "d-merge", Job: h.record.ID, Kind: jobs.PendingMerge, Approve: true, HeadSHA: "head9"}, &merge)
	rec := h.run(t, jobSettings(false))
	wrong.mustReject(t, "a head on a decline", "a head SHA goes with a merge's approval only")
	merge.mustAccept(t, "approve the merge of head9")
	if rec.Status != jobs.Completed || rec.HeadSHA != "head9" || len(h.forge.merges) != 1 || h.forge.merges[0].SHA != "head9" {
		t.Fatalf("record %+v, merges %+v", rec, h.forge.merges)
	}
}

// TestInstanceClash: a recovered job started in the second its earlier
// run's instance took waits into the next one; later, or with an instance
// of another session, it does not wait.
func TestInstanceClash(t *testing.T) {
	now := time.Unix(1796138310, 400_000_000)
	for _, tc := range []struct {
		earlier string
		want    time.Duration
	}{
		{"axlr-s1-1796138310", 600 * time.Millisecond},
		{"axlr-s1-1796138309", 0},
		{"axlr-s2-1796138310", 0},
		{"", 0},
	} {
		if got := instanceClash(tc.earlier, "s1", now); got != tc.want {
			t.Errorf("instanceClash(%q) = %s, want %s", tc.earlier, got, tc.want)
		}
	}
}
