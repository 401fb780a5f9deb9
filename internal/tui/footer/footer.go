// Package footer is the TUI's status line: the model, the mode, the
// ceremony step (step repair 2/3), the approval level (approve local), the
// active job (repair <name> · <status>), the running plan (plan <id> ·
// wave 2/3 · <task> <status>) and "reconnecting" while axlrd does not
// answer. The parent sets its State from what the client returned; the
// footer only draws it.
package footer

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/plans"
)

// State is what the footer shows; zero fields are left out.
type State struct {
	Model, Mode string
	// Approval is the prompts' approval level (none, local, all).
	Approval string
	// Step, StepAttempt and StepLimit are the ceremony step that runs.
	Step                   string
	StepAttempt, StepLimit int
	// Waiting is the state a ceremony with no step open waits in.
	Waiting string
	// Job is the job this console follows, Plan the plan that runs, and
	// TaskStep the step its running task works ("green 2/3"), when known.
	Job          *jobs.Record
	Plan         *plans.Record
	TaskStep     string
	Reconnecting bool
	// Keys are the shortcuts the next key takes, when it is one.
	Keys string
}

// ActiveJob is the newest job still at work or waiting for the person
// (records newest first, as the registry lists them), or nil.
func ActiveJob(recs []jobs.Record) *jobs.Record {
	for i := range recs {
		if recs[i].Status.Active() {
			return &recs[i]
		}
	}
	return nil
}

// RunningTask is the plan's first running task, or nil.
func RunningTask(p *plans.Record) *plans.Task {
	if p == nil {
		return nil
	}
	for i, t := range p.Tasks {
		if t.Status == plans.TaskRunning {
			return &p.Tasks[i]
		}
	}
	return nil
}

// RunningPlan is the newest plan not ended nor interrupted (records
// newest first), or nil.
func RunningPlan(recs []plans.Record) *plans.Record {
	for i := range recs {
		if s := recs[i].Status; !s.Terminal() && s != plans.Interrupted {
			return &recs[i]
		}
	}
	return nil
}

// Model is the footer.
type Model struct {
	common.Common
	State State
}

// New returns the footer.
func New(com common.Common) Model { return Model{Common: com} }

// Parts are the footer's pieces, in order.
func (s State) Parts() []string {
	var parts []string
	for _, p := range []string{s.Model, s.Mode} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if s.Step != "" {
		step := "step " + s.Step
		if s.StepLimit > 0 {
			step += fmt.Sprintf(" %d/%d", s.StepAttempt, s.StepLimit)
		}
		parts = append(parts, step)
	}
	if s.Waiting != "" && s.Step == "" {
		parts = append(parts, "waiting in "+s.Waiting)
	}
	// After the step, so a cut footer keeps the step in view.
	if s.Approval != "" {
		parts = append(parts, "approve "+s.Approval)
	}
	if j := s.Job; j != nil {
		parts = append(parts, fmt.Sprintf("%s %s · %s", j.Kind, j.ID, j.Status))
	}
	if p := s.Plan; p != nil {
		parts = append(parts, planPart(*p, s.TaskStep))
	}
	if s.Keys != "" {
		parts = append(parts, s.Keys)
	}
	if s.Reconnecting {
		parts = append(parts, "reconnecting")
	}
	return parts
}

// planPart is plan <id> · wave w/n · <task> <step>: the wave is the
// highest one with a task started, the task the first running one, with
// the step it works (its status when that is not known).
func planPart(p plans.Record, step string) string {
	part := "plan " + p.ID
	wave := 0
	for _, t := range p.Tasks {
		if t.Status != plans.TaskPending {
			wave = max(wave, t.Wave)
		}
	}
	task := RunningTask(&p)
	if wave > 0 {
		part += fmt.Sprintf(" · wave %d/%d", wave, p.Waves)
	} else {
		part += " · " + string(p.Status)
	}
	if task != nil {
		part += " · " + task.ID + " " + cmp.Or(step, string(task.Status))
	}
	return part
}

// View draws the footer on one line of Width cells. When the line is cut,
// the keys and "reconnecting" stay in view and the parts before them are
// cut.
func (m Model) View() string {
	parts := m.State.Parts()
	line := strings.Join(parts, " · ")
	style := m.Styles.Dim
	if m.State.Reconnecting {
		style = m.Styles.Error
	}
	var tail []string
	if m.State.Keys != "" {
		tail = append(tail, m.State.Keys)
	}
	if m.State.Reconnecting {
		tail = append(tail, "reconnecting")
	}
	if len(tail) > 0 && ansi.StringWidth(line) > m.Width {
		end := " · " + strings.Join(tail, " · ")
		rest := strings.Join(parts[:len(parts)-len(tail)], " · ")
		line = common.Cut(rest, max(m.Width-ansi.StringWidth(end), 0)) + end
	}
	return style.Render(common.Fit(line, m.Width))
}
