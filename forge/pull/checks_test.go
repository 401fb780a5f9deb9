package pull_test

import (
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/forge/pull"
)

var (
	evalNow  = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	evalHead = strings.Repeat("a", 40)
	evalOld  = strings.Repeat("b", 40)
)

func evalPR(state string) pull.Request {
	return pull.Request{Number: 7, State: "open", MergeableState: state, HeadRef: "repair/x", HeadSHA: evalHead, BaseRef: "main"}
}

func evalChecks(passed, pending, failed int) pull.Checks {
	c := pull.Checks{SHA: evalHead}
	for i := range passed {
		c.Passed = append(c.Passed, "ok"+string(rune('a'+i)))
	}
	for i := range pending {
		c.Pending = append(c.Pending, "wait"+string(rune('a'+i)))
	}
	for i := range failed {
		c.Failed = append(c.Failed, "test"+string(rune('a'+i))+": failure https://ci.example/"+string(rune('a'+i)))
	}
	return c
}

// seen is the memory of a watch that has read evalHead since d ago.
func seen(d time.Duration) pull.WatchState {
	return pull.WatchState{Now: evalNow, Reads: 3, HeadSHA: evalHead, HeadSince: evalNow.Add(-d)}
}

func TestEvaluate(t *testing.T) {
	merged := evalPR("unknown")
	merged.State, merged.Merged, merged.MergeSHA = "closed", true, evalOld
	closed := evalPR("unknown")
	closed.State = "closed"
	upper := evalPR("CLEAN")
	otherSHA := evalChecks(1, 0, 0)
	otherSHA.SHA = evalOld
	blockedTwice := seen(time.Minute)
	blockedTwice.BlockedReads = 2
	blockedOldHead := pull.WatchState{Now: evalNow, HeadSHA: evalOld, HeadSince: evalNow.Add(-time.Hour), BlockedReads: 2}
	updating := seen(time.Minute)
	updating.UpdatedFrom = evalHead
	updated := pull.WatchState{Now: evalNow, HeadSHA: evalOld, HeadSince: evalNow.Add(-time.Hour), UpdatedFrom: evalOld}
	tight := seen(0)
	tight.BlockedLimit = 1
	shortGrace := seen(2 * time.Minute)
	shortGrace.Grace = time.Minute

	tests := []struct {
		name   string
		pr     pull.Request
		c      pull.Checks
		w      pull.WatchState
		want   pull.VerdictKind
		reason string
		next   func(t *testing.T, n pull.WatchState)
	}{
		{name: "merged outside", pr: merged, c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.MergedOutside, reason: "merged outside"},
		{name: "merged wins over failed checks", pr: merged, c: evalChecks(0, 0, 1), w: seen(time.Minute), want: pull.MergedOutside},
		{name: "closed", pr: closed, c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Closed, reason: "closed outside"},
		{name: "update not shown yet", pr: evalPR("clean"), c: evalChecks(1, 0, 0), w: updating, want: pull.Waiting,
			reason: "updated branch", next: func(t *testing.T, n pull.WatchState) {
				if n.UpdatedFrom != evalHead {
					t.Errorf("UpdatedFrom = %q, want kept", n.UpdatedFrom)
				}
			}},
		{name: "update shown: the new head is watched", pr: evalPR("clean"), c: evalChecks(0, 0, 0), w: updated, want: pull.Waiting,
			reason: "register", next: func(t *testing.T, n pull.WatchState) {
				if n.UpdatedFrom != "" || n.HeadSHA != evalHead || !n.HeadSince.Equal(evalNow) {
					t.Errorf("next = %+v, want UpdatedFrom cleared and the new head since now", n)
				}
			}},
		{name: "checks of another sha are not this head's", pr: evalPR("clean"), c: otherSHA, w: seen(time.Hour), want: pull.Waiting, reason: "checks read are of bbbbbbbbbbbb"},
		{name: "red", pr: evalPR("unstable"), c: evalChecks(2, 0, 2), w: seen(time.Minute), want: pull.Red,
			reason: "checks failed: testa: failure https://ci.example/a; testb: failure https://ci.example/b"},
		{name: "red waits for the pending", pr: evalPR("unstable"), c: evalChecks(1, 1, 1), w: seen(time.Minute), want: pull.Waiting, reason: "1 pending, 1 passed, 1 failed"},
		{name: "red before behind", pr: evalPR("behind"), c: evalChecks(0, 0, 1), w: seen(time.Minute), want: pull.Red},
		{name: "conflict", pr: evalPR("dirty"), c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Conflict, reason: "conflicts with its base"},
		{name: "conflict does not wait for checks", pr: evalPR("dirty"), c: evalChecks(0, 2, 0), w: seen(time.Minute), want: pull.Conflict},
		{name: "behind", pr: evalPR("behind"), c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Behind, reason: "behind its base"},
		{name: "behind with no checks yet", pr: evalPR("behind"), c: evalChecks(0, 0, 0), w: seen(0), want: pull.Behind},
		{name: "behind waits for the pending", pr: evalPR("behind"), c: evalChecks(1, 1, 0), w: seen(time.Minute), want: pull.Waiting},
		{name: "no checks within the grace", pr: evalPR("clean"), c: evalChecks(0, 0, 0), w: seen(4 * time.Minute), want: pull.Waiting, reason: "waiting for checks to register on aaaaaaaaaaaa"},
		{name: "no checks after the grace", pr: evalPR("clean"), c: evalChecks(0, 0, 0), w: seen(5 * time.Minute), want: pull.NoChecks, reason: "no checks registered on aaaaaaaaaaaa within 5m0s"},
		{name: "a set grace", pr: evalPR("clean"), c: evalChecks(0, 0, 0), w: shortGrace, want: pull.NoChecks, reason: "within 1m0s"},
		{name: "a new head starts its grace now", pr: evalPR("clean"), c: evalChecks(0, 0, 0),
			w: pull.WatchState{Now: evalNow, HeadSHA: evalOld, HeadSince: evalNow.Add(-time.Hour)}, want: pull.Waiting, reason: "register"},
		{name: "the first read starts the grace", pr: evalPR("clean"), c: evalChecks(0, 0, 0), w: pull.WatchState{Now: evalNow}, want: pull.Waiting,
			next: func(t *testing.T, n pull.WatchState) {
				if n.Reads != 1 || n.HeadSHA != evalHead || !n.HeadSince.Equal(evalNow) {
					t.Errorf("next = %+v", n)
				}
			}},
		{name: "pending", pr: evalPR("unstable"), c: evalChecks(1, 2, 0), w: seen(time.Minute), want: pull.Waiting, reason: "waiting for checks: 2 pending, 1 passed, 0 failed (unstable)"},
		{name: "pending but blocked is still pending", pr: evalPR("blocked"), c: evalChecks(0, 1, 0), w: seen(time.Minute), want: pull.Waiting,
			next: func(t *testing.T, n pull.WatchState) {
				if n.BlockedReads != 0 {
					t.Errorf("BlockedReads = %d, want 0: the checks are not green", n.BlockedReads)
				}
			}},
		{name: "green clean", pr: evalPR("clean"), c: evalChecks(2, 0, 0), w: seen(time.Minute), want: pull.Green, reason: "checks green (2 passed)"},
		{name: "green has_hooks", pr: evalPR("has_hooks"), c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Green},
		{name: "green unstable", pr: evalPR("unstable"), c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Green},
		{name: "green in GraphQL's upper case", pr: upper, c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Green},
		{name: "green but blocked once", pr: evalPR("blocked"), c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Waiting, reason: "1 of 3 reads",
			next: func(t *testing.T, n pull.WatchState) {
				if n.BlockedReads != 1 {
					t.Errorf("BlockedReads = %d, want 1", n.BlockedReads)
				}
			}},
		{name: "green but blocked on the third read", pr: evalPR("blocked"), c: evalChecks(1, 0, 0), w: blockedTwice, want: pull.ForgeBlocks, reason: "forge blocks the merge (review or protection rule)"},
		{name: "blocked reads restart on a new head", pr: evalPR("blocked"), c: evalChecks(1, 0, 0), w: blockedOldHead, want: pull.Waiting,
			next: func(t *testing.T, n pull.WatchState) {
				if n.BlockedReads != 1 {
					t.Errorf("BlockedReads = %d, want 1", n.BlockedReads)
				}
			}},
		{name: "a set blocked limit", pr: evalPR("blocked"), c: evalChecks(1, 0, 0), w: tight, want: pull.ForgeBlocks},
		{name: "green while the forge computes", pr: evalPR("unknown"), c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Waiting, reason: "waiting for the forge (unknown)"},
		{name: "green but draft", pr: evalPR("draft"), c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Waiting, reason: "(draft)"},
		{name: "green without a mergeable state", pr: evalPR(""), c: evalChecks(1, 0, 0), w: seen(time.Minute), want: pull.Waiting, reason: "no mergeable state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := pull.Evaluate(tt.pr, tt.c, tt.w)
			if v.Kind != tt.want {
				t.Fatalf("kind = %s (%s), want %s", v.Kind, v.Reason, tt.want)
			}
			if !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", v.Reason, tt.reason)
			}
			if v.Next.Reads != tt.w.Reads+1 {
				t.Errorf("Next.Reads = %d, want %d", v.Next.Reads, tt.w.Reads+1)
			}
			if v.HeadSHA != tt.pr.HeadSHA || v.MergeableState != tt.pr.MergeableState || v.Passed != len(tt.c.Passed) || v.Pending != len(tt.c.Pending) {
				t.Errorf("verdict = %+v does not echo the read", v)
			}
			if tt.next != nil {
				tt.next(t, v.Next)
			}
			if again := pull.Evaluate(tt.pr, tt.c, tt.w); again.Kind != v.Kind || again.Reason != v.Reason || again.Next != v.Next {
				t.Errorf("a second call gave %+v, want %+v", again, v)
			}
		})
	}
}

func TestEvaluateRedReasonIsBounded(t *testing.T) {
	c := pull.Checks{SHA: evalHead}
	for range 200 {
		c.Failed = append(c.Failed, "a check with a long name: failure https://ci.example/"+strings.Repeat("x", 40))
	}
	v := pull.Evaluate(evalPR("unstable"), c, seen(time.Minute))
	if v.Kind != pull.Red || len(v.Reason) > 4096+len("checks failed: ") || !strings.HasSuffix(v.Reason, "…") {
		t.Errorf("reason of %d bytes, kind %s, ends %q", len(v.Reason), v.Kind, v.Reason[len(v.Reason)-10:])
	}
	if len(v.Failed) != 200 {
		t.Errorf("Failed has %d lines, want all 200", len(v.Failed))
	}
	one := pull.Checks{SHA: evalHead, Failed: []string{"é" + strings.Repeat("é", 3000)}}
	if v := pull.Evaluate(evalPR("unstable"), one, seen(time.Minute)); !strings.HasSuffix(v.Reason, "…") || !utf8Valid(v.Reason) {
		t.Errorf("one long line gives %d bytes, valid UTF-8: %v", len(v.Reason), utf8Valid(v.Reason))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
