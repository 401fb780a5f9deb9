// Package pull is the forge's vocabulary, shared by the workflows that
// decide with it and the forge that speaks it: the pull request and the
// issue as a job reads them, the checks of a head, the watch's memory and
// Evaluate, which turns a read into one verdict; the commit message of a
// job; and the sentinels the forge's failures match with errors.Is.
//
// It imports no I/O, so package workflows may import it: Evaluate is pure,
// and a workflow calls it deterministically with workflow.Now in its
// WatchState. Reading and changing the forge is package forge's.
package pull

import (
	"errors"
	"strings"
)

// Request is a pull request as a watch reads it.
type Request struct {
	Number int    `json:"number"`
	URL    string `json:"url"`   // the page, html_url
	State  string `json:"state"` // "open" or "closed" (a merged one is closed)
	Merged bool   `json:"merged"`
	// MergeSHA is the squash or merge commit on the base, once merged.
	MergeSHA string `json:"merge_sha,omitempty"`
	// MergeableState is GitHub's mergeable_state: clean, has_hooks,
	// unstable, dirty, blocked, behind, unknown (still computing) or draft.
	// Lists do not carry it: it is empty in FindPullRequest's answer.
	MergeableState string `json:"mergeable_state,omitempty"`
	HeadRef        string `json:"head_ref"`
	HeadSHA        string `json:"head_sha"`
	BaseRef        string `json:"base_ref"`
}

// Issue is what a brief needs of a GitHub issue.
type Issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	URL    string `json:"url"`
}

// CommitMessage is a job's commit: Title, a blank line, Body, a blank line
// and Trailer (such as "Repaired-by: AXLR axlr_repair 1.0 <instance>").
// Empty parts are left out with their blank line.
type CommitMessage struct {
	Title   string
	Body    string
	Trailer string
}

// Text is the message as stored in the commit, ending with a newline as git
// commit -m writes it.
func (c CommitMessage) Text() (string, error) {
	title := strings.TrimSpace(c.Title)
	if title == "" {
		return "", errors.New("the commit message has no title")
	}
	if strings.ContainsAny(title, "\r\n") {
		return "", errors.New("the commit title must be one line")
	}
	parts := []string{title}
	for _, p := range []string{c.Body, c.Trailer} {
		if p = strings.TrimRight(strings.TrimLeft(p, "\r\n"), " \t\r\n"); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n\n") + "\n", nil
}

// The kinds of a forge's refusal or failure (forge.GitHubError's Kind),
// for errors.Is.
var (
	// ErrNotFound: the repository, issue, pull request, ref or run does
	// not exist (or the token may not see it).
	ErrNotFound = errors.New("not found")
	// ErrStaleHead: a SHA guard failed; the pull request's head is not the
	// SHA the caller named. Re-read it and decide again.
	ErrStaleHead = errors.New("stale head")
	// ErrNotMergeable: GitHub refused the merge (conflict, protection,
	// review, out of date). Re-evaluate; a blind retry cannot help.
	ErrNotMergeable = errors.New("not mergeable")
	// ErrRejected: GitHub refused the request (validation, permission,
	// credentials). A retry of the same request cannot help.
	ErrRejected = errors.New("refused by the forge")
	// ErrUnreadable: no usable answer (network, timeout, 5xx, rate limit,
	// a malformed or oversized body). A later retry may help.
	ErrUnreadable = errors.New("forge unreadable")
)

// ErrNothingChanged is returned by Commit when staging the worktree leaves
// the index equal to HEAD: the model handed back without changing a file.
var ErrNothingChanged = errors.New("the repair changed no file in the clone")

// ErrRemoteRefused: the remote answered that the repository is not there
// or is empty, or that the credentials are missing or not enough. A retry
// cannot help: repair.remote or the token is to be fixed.
var ErrRemoteRefused = errors.New("the remote refused")

// ErrBranchMoved is what each refusal of Sync matches with errors.Is: the
// job's branch moved on the forge in a way the clone does not follow by
// itself. Fetching again finds the same.
var ErrBranchMoved = errors.New("the branch moved on the forge")
