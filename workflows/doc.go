// Package workflows holds axlr's Temporal workflows: the session
// (axlr.Session), which runs executions one at a time for as long as the
// session lives, and the one-shot task (axlr.Task); a /repair or /improve
// job (axlr.Job, job.go), the job registry that admits them
// (axlr.JobRegistry, registry.go), a job's install (axlr.JobInstall), a
// read of a job's pull request for the jobs panel's g (axlr.PullRead,
// pullread.go) and the merge queue of a repository and base
// (axlr.MergeQueue, queue.go); a
// plan (axlr.Plan, plan.go) and its task workers (axlr.PlanTask,
// plantask.go). Those that run a model are hosts (host.go): each keeps a
// HostState and builds the same two components over it with newHost, the
// turn (turn.go), the model/tool loop over an explicit state with four
// hooks, and the ceremony driver (ceremony.go, handback.go), which plugs
// into those hooks to run a MADE ceremony. A host opens its ceremony with
// Driver.Open (a pinned definition, its inputs, and the CeremonyHooks of
// what the host adds: a plan task's red and green checks) and runs its
// console steps itself; the driver knows no host.
//
// Workflow code is deterministic: it decides with pure functions
// (agent/policy), keeps only compact state, and reaches files, models and
// processes through the activities it declares here, called by name. It
// imports no I/O, nor does any project package it imports: it decides a
// pull request with the forge's vocabulary (forge/pull), never the forge
// (TestImportsNoIO holds this). `make test` runs workflowcheck over this
// package (workflowcheck.config.yaml lists what it allows and why).
//
// # Versioning: workflows run for days
//
// A workflow started by one axlrd is continued by the next, which replays
// its history with the new code. So:
//
//   - A change to what workflow code does in flight — the commands it
//     issues (activities, local activities, timers, markers, search
//     attributes, continue-as-new) or their order — is guarded with
//     workflow.GetVersion(ctx, "<change-id>", workflow.DefaultVersion, N):
//     the old branch stays for histories recorded before the change. The
//     first such change is "worker-lost-retry" in activity.go; the next
//     one gets its own id (never reuse one) and keeps every older branch
//     until no run of it can be in flight.
//   - Names in history (workflow types, activity names, update and query
//     names, search attributes) never change.
//   - State carried over continue-as-new only gains fields; a renamed or
//     removed field loses what a running workflow carries
//     (TestOldStateContinuesAsNew decodes the previous shape).
//   - Inputs of activities recorded before a field existed arrive without
//     it: read the zero value as what the old code meant (an empty
//     ceremony version is 2.0).
//   - A published ceremony version's steps never change
//     (ceremonies.TestStepsPinned).
//
// The histories captured under testdata/ are append-only and all of them
// replay in CI (TestReplay): a change adds a capture of the new shape and
// never rewrites an old one; testdata/README.md says how.
package workflows
