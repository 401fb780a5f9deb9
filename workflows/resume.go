package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
)

// A run that takes over an instance an earlier run left (a recovered
// job's) resumes it rather than open a new one: MADE is the authority on
// where the instance stands, so the driver reads it back (the steps
// completed with their outputs, the check command the person accepted,
// the step to claim) and claims that step again, under keys of its own
// epoch so that nothing the earlier run did is found under them. No step
// that completed runs again, and the accepted command is not asked for
// again.

// ActivityCeremonyResume reads an instance back for a run that takes it
// over.
const ActivityCeremonyResume = "ceremony.Resume"

// CeremonyResumeInput names the instance a run takes over and the pinned
// definition it must run.
type CeremonyResumeInput struct {
	Definition string `json:"definition"`
	Version    string `json:"version"`
	InstanceID string `json:"instance_id"`
}

// CeremonyResumeResult is the instance as MADE holds it, for the driver to
// take over; Ended says why it cannot go on.
type CeremonyResumeResult struct {
	CeremonyStartResult
	// Open is the step to claim: the one in progress, else the claimable
	// one; empty when neither is (a transition is due).
	Open string `json:"open,omitempty"`
	// Done are the steps MADE holds completed, with their outputs, in the
	// definition's order.
	Done []contract.StepRecord `json:"done,omitempty"`
	// Command is the check command the person accepted, when a step that
	// proposes one ran it.
	Command *ceremonies.CheckCommand `json:"command,omitempty"`
	// Ended: the instance cannot go on (it ended, is gone, or runs another
	// definition).
	Ended string `json:"ended,omitempty"`
}

// Resuming is what a run takes an instance over with.
type Resuming struct {
	InstanceID string
	// Brief is the request that began the ceremony.
	Brief string
	// Execution drives the ceremony from now on.
	Execution string
	// Epoch counts the runs that took the instance over, this one
	// included: it names their keys (CeremonyState.Epoch).
	Epoch int
	// Memory is what the host's wake showed (Opening.Memory).
	Memory *CeremonyMemory
}

// Resume takes over an instance an earlier run left: it reads where the
// instance stands, claims the step that is open (the earlier run's claim,
// found in progress, or the claimable one) or applies the transition that
// is due, and tells the model where it stands when the step is its. It
// returns why the instance cannot go on, and then changes nothing: the
// host opens a new one.
func (d *Driver) Resume(ctx workflow.Context, definition, version string, in Resuming, hooks CeremonyHooks) (string, error) {
	def, ok := ceremonies.Lookup(definition, version)
	if !ok {
		return "", fmt.Errorf("resume ceremony: no pinned definition %s %s", definition, version)
	}
	var res CeremonyResumeResult
	err := executeLocal(ctx, CeremonyOptions, ActivityCeremonyResume, CeremonyResumeInput{
		Definition: def.Name, Version: def.Version, InstanceID: in.InstanceID,
	}).Get(ctx, &res)
	if err != nil {
		return "", fmt.Errorf("read ceremony %s back: %w", in.InstanceID, err)
	}
	if res.Ended != "" {
		return res.Ended, nil
	}
	d.hooks = hooks
	*d.slot = &CeremonyState{
		Mode: def.Mode, Definition: res.Definition, Version: res.Version, InstanceID: in.InstanceID,
		Compact:      !def.Job && d.t.st.Snapshot.compactProfile(),
		Instructions: res.Instructions, Limits: res.Limits, StepTimeout: res.StepTimeout, Brief: in.Brief,
		Entries: map[string]int{}, Command: res.Command, Records: res.Done, State: res.Instance.State,
		Execution: in.Execution, Epoch: in.Epoch, Memory: in.Memory,
	}
	*d.mode = def.Mode
	c := d.c()
	var reply stepReply
	if res.Open != "" {
		st, _ := res.Instance.step(res.Open)
		err = d.claim(ctx, res.Open, max(st.Iteration, 1), &reply)
	} else {
		err = d.advance(ctx, res.Instance, &reply)
	}
	if err != nil {
		return "", err
	}
	if !c.Active() || c.Step == "" || c.step().Console {
		return "", nil
	}
	return "", d.note(ctx, "resumed", c.resumeNote())
}

// resumeNote tells the model of a resumed ceremony what the earlier run
// settled, and the step it works now.
func (c *CeremonyState) resumeNote() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[AXLR] Ceremony %s %s continues where the earlier run left instance %s. MADE holds these steps completed, and they do not run again:\n", c.Definition, c.Version, c.InstanceID)
	if len(c.Records) == 0 {
		b.WriteString("- none yet\n")
	}
	for _, r := range c.Records {
		fmt.Fprintf(&b, "- %s (iteration %d)", r.Step, r.Iteration)
		if r.Check != nil {
			fmt.Fprintf(&b, ": check %s %s", (ceremonies.CheckCommand{Program: r.Check.Program, Args: r.Check.Args}).String(), r.Check.Ending())
		}
		b.WriteString("\n")
	}
	if c.Command != nil {
		fmt.Fprintf(&b, "The person approved the check command %s; AXLR reruns it and does not ask again.\n", c.Command)
	}
	b.WriteString(c.stepNote(false))
	return b.String()
}
