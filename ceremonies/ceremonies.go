// Package ceremonies holds the AXLR definitions axlr drives in MADE — the
// YAML, embedded, with each definition's semantic digest pinned in code —
// and what the driver needs to know of each step: the fields the model hands
// back, how they are checked, and what AXLR runs and records itself.
//
// A definition whose published digest differs from its pin must not be
// started: the driver stops that ceremony's start with both digests, and the
// others still work. TestPins checks every pin against its YAML.
//
// Three kinds of definition live here. A work mode's (axlr_debug,
// axlr_delivery) starts from a session's --mode and the model works every
// step. A job's (axlr_repair, axlr_improve) starts from a job's workflow
// (axlr-tui --repair, --improve), never from --mode: the model works its
// first steps, and the console steps after them (propose, watch, decide,
// merge) are AXLR's own, run without the model (Step.Console). A plan's
// (axlr_plan, axlr_task, axlr_sync) start from a plan's workflows
// (axlr-tui --plan): the plan's own, each task's worker and each wave's
// sync (ForPlan).
package ceremonies

import (
	"embed"
	"fmt"
	"slices"
	"sort"
	"time"
)

//go:embed *.yaml
var files embed.FS

// Definition is a pinned AXLR definition.
type Definition struct {
	// Name and Version as published in MADE.
	Name    string
	Version string
	// Mode is the work mode that runs it (debug, delivery); for a job's
	// definition the job's kind (repair, improve); for a plan's, the part
	// of the plan it runs (PartPlan, PartTask, PartSync).
	Mode string
	// Digest is the pinned semantic digest.
	Digest string
	// BriefInput is the input the person's prompt fills (a task's: the
	// context pack its worker starts from); empty for one that starts
	// without a prompt (axlr_sync).
	BriefInput string
	// File is the embedded YAML's name.
	File string
	// Superseded: a newer version starts in this mode. The old one stays
	// published and pinned for the instances that run it.
	Superseded bool
	// Cancel: the definition has CancelTrigger from every live state.
	Cancel bool
	// Job: a job's workflow starts it (ForJob), never a session's --mode:
	// Modes and ForMode leave it out.
	Job bool
	// Plan: a plan's workflows start it (ForPlan), never a session's
	// --mode nor a job's workflow: Modes, ForMode and ForJob leave it out.
	Plan bool
	// Record: axlrd keeps it as the record of every session a person
	// drives (axlr_session, Session); no mode, job or plan starts it.
	Record bool
	// Standard: it runs under the standard profile whatever the settings
	// choose, as a job's does (its steps have no compact instruction).
	Standard bool
}

// CancelTrigger is the trigger that ends an instance in CANCELLED from any
// live state (MADE has no cancel verb). Versions before 2.1 have none.
const CancelTrigger = "cancel"

// definitions are the pinned definitions, by mode. 2.1 adds the cancel
// trigger to 2.0; the steps are the same. The jobs' and the plan's 1.0
// have the cancel trigger from the start.
var definitions = []Definition{
	{Name: "axlr_debug", Version: "2.1", Mode: "debug", BriefInput: "failure_brief", File: "axlr_debug-2.1.yaml", Cancel: true,
		Digest: "043fb2fb48528bc71c9a6d9431250310e06e62b8d471ce9fea1fe9eaf574d74d"},
	{Name: "axlr_delivery", Version: "2.1", Mode: "delivery", BriefInput: "task_brief", File: "axlr_delivery-2.1.yaml", Cancel: true,
		Digest: "ae1db65e9626b3daadbd0aec10916124fcae41fc237561f8fe6d70bd80ead76a"},
	{Name: "axlr_incident", Version: "1.0", Mode: "incident", BriefInput: "incident_brief", File: "axlr_incident-1.0.yaml", Cancel: true, Standard: true,
		Digest: "33a0641f2f6bfbefbb4ca12092bf8cf2e373ced9c40febf82a1a823d1eaed13c"},
	{Name: "axlr_debug", Version: "2.0", Mode: "debug", BriefInput: "failure_brief", File: "axlr_debug-2.0.yaml", Superseded: true,
		Digest: "dd10c78c432d8c3bfcc8ed0f7af93a3aeebc2be0dadb0c708ad8dc76ca14873c"},
	{Name: "axlr_delivery", Version: "2.0", Mode: "delivery", BriefInput: "task_brief", File: "axlr_delivery-2.0.yaml", Superseded: true,
		Digest: "c1ba37bc3ed4af191456695b0cbaaff5f5745e495e0bcfdc594e8c7f9bbac8c1"},
	{Name: "axlr_repair", Version: "1.0", Mode: "repair", BriefInput: "failure_brief", File: "axlr_repair-1.0.yaml", Cancel: true, Job: true,
		Digest: "2e3793caf9c7a09c19c5ffd8ad3f689949d653f5c06b3fe365b27a0043672316"},
	{Name: "axlr_improve", Version: "1.0", Mode: "improve", BriefInput: "improvement_brief", File: "axlr_improve-1.0.yaml", Cancel: true, Job: true,
		Digest: "82772615e74400b0e26c8c7c33af99ce5564a78e76b1de219b029c860c6598c1"},
	{Name: "axlr_plan", Version: "1.0", Mode: PartPlan, BriefInput: "brief", File: "axlr_plan-1.0.yaml", Cancel: true, Plan: true,
		Digest: "0ce5dff08f81b518d793e7bf23603b948a6d2bfa5b9050f83441c498dc0c9124"},
	{Name: "axlr_task", Version: "1.0", Mode: PartTask, BriefInput: "context_pack", File: "axlr_task-1.0.yaml", Cancel: true, Plan: true,
		Digest: "6c30eb77518923d3760a51867346df053cc02131fc9efe2b24a6b6e16fb2d64f"},
	{Name: "axlr_sync", Version: "1.0", Mode: PartSync, File: "axlr_sync-1.0.yaml", Cancel: true, Plan: true,
		Digest: "ecf08ff0842147c099534bda72ae2dc4bbb05982d4067033be575a0cbc7ca280"},
	{Name: SessionRecord, Version: SessionRecordVersion, File: "axlr_session-1.0.yaml", Cancel: true, Record: true,
		Digest: "52fb5d8abc9afb030c29391930daa0e30678cd04bcb4d83a7f23215cab256011"},
}

// The session record: every session a person drives is an instance of it,
// axlr-session-<session id> (then -2, -3… past its turn step's 1,000
// rounds), which axlrd alone drives.
const (
	SessionRecord        = "axlr_session"
	SessionRecordVersion = "1.0"
	// SessionTurnStep is its one step, a turn, repeating inside OPEN.
	SessionTurnStep = "turn"
	// SessionTurns is how many turns one instance holds (the step's
	// max_iterations).
	SessionTurns = 1000
	// Its triggers: closed (after the closing turn) and abandoned.
	SessionClosed    = "closed"
	SessionAbandoned = "abandoned"
)

// Cancellable reports whether a definition's version has the cancel
// trigger.
func Cancellable(name, version string) bool {
	return slices.ContainsFunc(definitions, func(d Definition) bool { return d.Name == name && d.Version == version && d.Cancel })
}

// Lookup returns the pinned definition of a name and version.
func Lookup(name, version string) (Definition, bool) {
	i := slices.IndexFunc(definitions, func(d Definition) bool { return d.Name == name && d.Version == version })
	if i < 0 {
		return Definition{}, false
	}
	return definitions[i], true
}

// All returns the pinned definitions, the superseded ones included.
func All() []Definition { return slices.Clone(definitions) }

// ForMode returns the definition a work mode starts; a job's kind is not
// a work mode (ForJob), nor is a part of a plan (ForPlan).
func ForMode(mode string) (Definition, bool) {
	return current(mode, false, false)
}

// ForJob returns the definition a job of the kind (repair, improve)
// starts.
func ForJob(kind string) (Definition, bool) {
	return current(kind, true, false)
}

// ForPlan returns the definition a part of a plan runs: PartPlan the
// plan's own (axlr_plan), PartTask each task's worker (axlr_task),
// PartSync each wave's sync (axlr_sync).
func ForPlan(part string) (Definition, bool) {
	return current(part, false, true)
}

func current(mode string, job, plan bool) (Definition, bool) {
	for _, d := range definitions {
		if d.Mode == mode && d.Job == job && d.Plan == plan && !d.Superseded && !d.Record {
			return d, true
		}
	}
	return Definition{}, false
}

// Modes lists the work modes that run a ceremony, sorted: what --mode
// takes. The jobs' kinds and the plan's parts are not among them.
func Modes() []string {
	var out []string
	for _, d := range definitions {
		if !d.Superseded && !d.Job && !d.Plan && !d.Record {
			out = append(out, d.Mode)
		}
	}
	sort.Strings(out)
	return out
}

// Claim leases of the console steps that outlast timeouts.step_default
// (3600 s in every definition here: the one step timeout MADE stores,
// which the host enforces on the model's steps). The job's workflow
// claims a console step with them; MADE only keeps another owner from
// claiming the step while the lease holds.
const (
	// WatchLeaseMargin is what the watch step's lease adds to the watch's
	// deadline: the lease is repair.watch_minutes plus this.
	WatchLeaseMargin = 15 * time.Minute
	// DecideLease is the decide step's lease, and the plan's verify and
	// approve steps': they wait for the person (the merge decision, the
	// plan's commands on the approval card, the plan's approval), as the
	// incident's approval does.
	DecideLease = 7 * 24 * time.Hour
	// PlanRunLease is the plan's run step's lease, and the sync's
	// reconcile step's: they last as long as the task workers they start.
	PlanRunLease = 7 * 24 * time.Hour
)

// YAML returns a definition's embedded YAML.
func (d Definition) YAML() ([]byte, error) {
	b, err := files.ReadFile(d.File)
	if err != nil {
		return nil, fmt.Errorf("ceremony %s %s: %w", d.Name, d.Version, err)
	}
	return b, nil
}
