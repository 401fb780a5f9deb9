// Package jobs is the domain of axlr's /repair and /improve jobs: the job
// record the registry keeps, the names a job takes (slug, ID, branch text),
// the failure and job signatures, the pull request's title, body and commit
// trailer, the registry's admission rules, and the validation of the
// requests a running session makes through axlr_request_repair and
// axlr_request_improvement.
//
// Everything here is a pure function of its arguments: no I/O, no clock, no
// randomness, no goroutines and no dependence on map order. The registry and
// job workflows call it directly, so a replay decides exactly what the first
// run decided; the activities and axlr-tui call the same functions, so a
// refusal reads the same wherever it is made. Time enters as an argument
// (Slug), and the session's calls arrive as CallOutcome values the caller
// builds from the session's transcript.
//
// What it leaves to callers: reading and writing the registry, cloning,
// git and the forge (package forge), the MADE instance, and turning a
// *Refusal into the error type of its boundary (a Temporal application
// error whose type is the refusal's Code, a tool error for the model, an
// exit code for axlr-tui).
package jobs
