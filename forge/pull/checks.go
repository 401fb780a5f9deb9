package pull

import (
	"fmt"
	"strings"
	"time"
)

// Checks is what the forge reports about one commit: its check runs and its
// commit statuses, each in one of three classes.
type Checks struct {
	SHA     string   `json:"sha"`
	Passed  []string `json:"passed,omitempty"`  // names: success, neutral, skipped
	Pending []string `json:"pending,omitempty"` // names: not completed or no conclusion yet
	// Failed holds "<name>: <conclusion> <url>" for every other outcome.
	Failed []string `json:"failed,omitempty"`
	// Ignored counts results that reported another head SHA.
	Ignored int `json:"ignored,omitempty"`
}

// Total is the number of checks classified.
func (c Checks) Total() int { return len(c.Passed) + len(c.Pending) + len(c.Failed) }

// class is what a check's status and conclusion mean for a merge.
type class int

const (
	classPending class = iota
	classPassed
	classFailed
)

// classify maps a check run's status and conclusion, or a commit status's
// state (as conclusion, status ""), to its class.
func classify(status, conclusion string) class {
	if s := strings.ToLower(status); s != "" && s != "completed" {
		return classPending
	}
	switch strings.ToLower(conclusion) {
	case "success", "neutral", "skipped":
		return classPassed
	case "", "pending", "expected", "queued", "in_progress", "waiting", "requested":
		return classPending
	}
	return classFailed
}

// Add classifies one check run (status and conclusion) or commit status
// (its state as conclusion, status "") named name, with its page link.
func (c *Checks) Add(name, status, conclusion, link string) {
	switch classify(status, conclusion) {
	case classPassed:
		c.Passed = append(c.Passed, name)
	case classPending:
		c.Pending = append(c.Pending, name)
	default:
		line := name + ": " + strings.ToLower(conclusion)
		if link != "" {
			line += " " + link
		}
		c.Failed = append(c.Failed, line)
	}
}

// VerdictKind is what a watch does next with a pull request.
type VerdictKind string

// The verdicts of Evaluate.
const (
	// Waiting: read again later (checks pending or not registered yet,
	// the forge still computing, or an update not shown yet).
	Waiting VerdictKind = "waiting"
	// Green: 0 pending, 0 failed, at least 1 passed, and mergeable_state
	// clean, has_hooks or unstable.
	Green VerdictKind = "green"
	// Red: at least 1 failed and 0 pending; Verdict.Failed names them.
	Red VerdictKind = "red"
	// Behind: 0 pending, the head is behind its base: update the branch.
	Behind VerdictKind = "behind"
	// Conflict: the head conflicts with its base (dirty).
	Conflict VerdictKind = "conflict"
	// Closed: closed without a merge.
	Closed VerdictKind = "closed"
	// MergedOutside: merged, not by this watch.
	MergedOutside VerdictKind = "merged_outside"
	// ForgeBlocks: the checks are green but the forge reported blocked on
	// WatchState.BlockedLimit reads of this head (review or protection).
	ForgeBlocks VerdictKind = "forge_blocks"
	// NoChecks: the grace has passed and the head has no checks at all;
	// an empty list is never a pass.
	NoChecks VerdictKind = "no_checks"
)

// Defaults of WatchState's settings.
const (
	DefaultGrace        = 5 * time.Minute
	DefaultBlockedLimit = 3
)

// maxFailedReason bounds the failed lines a Red verdict's reason joins.
const maxFailedReason = 4096

// WatchState is a watch's memory between reads, plus the settings of a read.
// Carry Verdict.Next into the next call.
type WatchState struct {
	// Now is the time of this read (in a workflow, workflow.Now).
	Now time.Time `json:"now"`
	// Grace is how long a new head may show no check before NoChecks.
	// Default: DefaultGrace.
	Grace time.Duration `json:"grace,omitempty"`
	// BlockedLimit is how many green-but-blocked reads of one head give
	// ForgeBlocks. Default: DefaultBlockedLimit.
	BlockedLimit int `json:"blocked_limit,omitempty"`

	// Reads counts the reads so far.
	Reads int `json:"reads"`
	// HeadSHA is the head the memory below belongs to; a new head resets it.
	HeadSHA string `json:"head_sha,omitempty"`
	// HeadSince is when HeadSHA was first seen.
	HeadSince time.Time `json:"head_since"`
	// BlockedReads counts the green-but-blocked reads of HeadSHA.
	BlockedReads int `json:"blocked_reads,omitempty"`
	// UpdatedFrom is the head before an update of the branch: while the
	// pull request still shows it, the watch waits. Set it to the head
	// after UpdateBranch succeeds; Evaluate clears it once the head moves.
	UpdatedFrom string `json:"updated_from,omitempty"`
}

// Verdict is Evaluate's answer.
type Verdict struct {
	Kind VerdictKind `json:"kind"`
	// Reason says why, in a sentence for the person and the log.
	Reason string `json:"reason"`
	// Failed holds the failed checks' lines (Red, and Waiting with some
	// still pending).
	Failed         []string   `json:"failed,omitempty"`
	Passed         int        `json:"passed"`
	Pending        int        `json:"pending"`
	HeadSHA        string     `json:"head_sha"`
	MergeableState string     `json:"mergeable_state"`
	Next           WatchState `json:"next"`
}

// Evaluate decides what a watch does with pull request pr, given the checks
// c read for pr's head and the watch's memory w. It is pure: same inputs,
// same verdict. The first matching case wins: merged, closed, an update
// not shown yet, checks of another SHA, red, conflict, behind, no checks
// (within the grace: waiting), pending, green, green but blocked.
func Evaluate(pr Request, c Checks, w WatchState) Verdict {
	if w.Grace <= 0 {
		w.Grace = DefaultGrace
	}
	if w.BlockedLimit <= 0 {
		w.BlockedLimit = DefaultBlockedLimit
	}
	next := w
	next.Reads++
	v := Verdict{
		Passed:         len(c.Passed),
		Pending:        len(c.Pending),
		HeadSHA:        pr.HeadSHA,
		MergeableState: pr.MergeableState,
	}
	short := ShortSHA(pr.HeadSHA)
	done := func(k VerdictKind, reason string) Verdict {
		v.Kind, v.Reason, v.Next = k, reason, next
		return v
	}

	switch {
	case pr.Merged:
		return done(MergedOutside, "the pull request was merged outside the job")
	case pr.State == "closed":
		return done(Closed, "the pull request was closed outside the job")
	}
	if w.UpdatedFrom != "" {
		if pr.HeadSHA == w.UpdatedFrom {
			return done(Waiting, "waiting for the forge to show the updated branch")
		}
		next.UpdatedFrom = ""
	}
	if pr.HeadSHA != w.HeadSHA {
		next.HeadSHA, next.HeadSince, next.BlockedReads = pr.HeadSHA, w.Now, 0
	}
	if c.SHA != pr.HeadSHA {
		return done(Waiting, fmt.Sprintf("the checks read are of %s, the head is %s", ShortSHA(c.SHA), short))
	}

	failed, pending, passed := len(c.Failed), len(c.Pending), len(c.Passed)
	if failed > 0 {
		v.Failed = append([]string(nil), c.Failed...)
	}
	state := strings.ToLower(pr.MergeableState)
	switch {
	case failed > 0 && pending == 0:
		return done(Red, "checks failed: "+joinBounded(c.Failed, "; ", maxFailedReason))
	case state == "dirty":
		return done(Conflict, "the pull request conflicts with its base")
	case pending == 0 && state == "behind":
		return done(Behind, "the branch is behind its base: update it")
	case c.Total() == 0:
		if w.Now.Sub(next.HeadSince) < w.Grace {
			return done(Waiting, "waiting for checks to register on "+short)
		}
		return done(NoChecks, fmt.Sprintf("no checks registered on %s within %s", short, w.Grace))
	case pending > 0:
		return done(Waiting, fmt.Sprintf("waiting for checks: %d pending, %d passed, %d failed (%s)", pending, passed, failed, stateText(state)))
	}
	// failed == 0, pending == 0, passed > 0.
	switch state {
	case "clean", "has_hooks", "unstable":
		return done(Green, fmt.Sprintf("checks green (%d passed)", passed))
	case "blocked":
		next.BlockedReads++
		if next.BlockedReads >= w.BlockedLimit {
			return done(ForgeBlocks, "checks passed but the forge blocks the merge (review or protection rule)")
		}
		return done(Waiting, fmt.Sprintf("checks green (%d passed) but the forge blocks the merge (%d of %d reads)", passed, next.BlockedReads, w.BlockedLimit))
	}
	return done(Waiting, fmt.Sprintf("checks green (%d passed), waiting for the forge (%s)", passed, stateText(state)))
}

func stateText(s string) string {
	if s == "" {
		return "no mergeable state"
	}
	return s
}

// ShortSHA is a commit SHA cut to 12 digits for a sentence, or "no commit".
func ShortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	if s == "" {
		return "no commit"
	}
	return s
}

// joinBounded joins items with sep, cut to at most limit bytes on an item
// boundary, ending with "…" when items were left out.
func joinBounded(items []string, sep string, limit int) string {
	var b strings.Builder
	for i, it := range items {
		add := it
		if i > 0 {
			add = sep + it
		}
		if b.Len()+len(add) > limit-len("…") {
			if i == 0 {
				return truncateUTF8(it, limit-len("…")) + "…"
			}
			b.WriteString("…")
			break
		}
		b.WriteString(add)
	}
	return b.String()
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
