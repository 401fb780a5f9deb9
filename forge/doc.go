// Package forge is where a job meets its repository: the clone, commit and
// push of the job's branch with go-git (git*.go, marker.go), and the pull
// request on GitHub through go-gh's REST client (github*.go, checks*.go).
//
// The GitHub half is a thin, typed client: each method is one REST call or
// a bounded few, never a retry loop. Retrying, waiting and deciding belong
// to the caller (an activity, and the job's workflow above it), which tells
// the failures apart with errors.Is on the sentinels of package pull:
//
//   - ErrNotFound: the issue, pull request or ref does not exist.
//   - ErrStaleHead: a SHA guard failed (the head moved): re-read, re-decide.
//   - ErrNotMergeable: GitHub refused the merge (405): re-evaluate.
//   - ErrRejected: GitHub refused the request (validation, permissions).
//   - ErrUnreadable: no usable answer (network, 5xx, rate limit, malformed).
//
// Calls that create something are safe to repeat: OpenPullRequest returns
// the open pull request of its head branch when there is one, Merge reports
// a pull request already merged at the same head as merged, DeleteBranch
// accepts a branch already gone.
//
// Checks reads what the forge says about a head SHA; pull.Evaluate turns it
// into one verdict for a watch (waiting, green, red, behind, conflict,
// closed, merged outside, blocked by the forge, no checks). The types a
// workflow decides with (the pull request, the issue, the checks, the
// watch's memory, the commit message) and the sentinels live in forge/pull,
// which imports no I/O, so package workflows never imports this one.
//
// forge/githubtest serves the same REST calls from a local bare repository
// for tests.
package forge
