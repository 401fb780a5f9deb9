// Package plans is the TUI's plans panel: every plan, newest first, with
// the keys that act on the selected one. Drawing never calls the client:
// the rows come from Refresh, a command that calls Plans every
// RefreshInterval. Every key that acts returns a command that calls the
// client; its answer comes back as a message and triggers a refresh. The
// rows, their window and their refreshes are a list.List's.
package plans

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/card"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/list"
	"github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// RefreshInterval is how often the panel asks axlrd for the plans.
const RefreshInterval = 3 * time.Second

// Client is what the panel asks axlrd; *client.Client has it.
type Client interface {
	Plans(ctx context.Context) ([]plans.Record, error)
	DecidePlan(ctx context.Context, dec workflows.PlanDecision) (plans.Record, error)
	RecoverPlan(ctx context.Context, id string) (plans.Record, error)
	LaunchPlan(ctx context.Context, in client.PlanLaunch) (plans.Record, error)
}

// RecordsMsg carries the records Plans returned, or why it failed.
type RecordsMsg = list.Records[plans.Record]

// ActedMsg is the answer to an action on a plan: what was done and the
// error, if any.
type ActedMsg = list.Acted[plans.Record]

// Options are the panel's settings.
type Options struct {
	// Root is the workspace a new plan plans in, an absolute path.
	Root string
	// Model is a new plan's session model (default: axlrd's settings).
	Model string
}

// refusing is the question of m.verdict's reason; a new plan's brief is
// list.Briefing.
const refusing = 1

// Model is the plans panel.
type Model struct {
	list.List[plans.Record]
	ctx     context.Context
	client  Client
	opts    Options
	verdict card.Verdict
	verb    string
}

// New returns the panel; Init starts its refreshes.
func New(ctx context.Context, c Client, com common.Common, opts Options) Model {
	rows := list.New(com, list.Options[plans.Record]{
		Name: "plans", Read: func() ([]plans.Record, error) { return c.Plans(ctx) }, Every: RefreshInterval,
		ID: func(r plans.Record) string { return r.ID }, Created: func(r plans.Record) time.Time { return r.Created }, Details: details,
		Brief: &list.Prompt{Placeholder: "what the plan is to do", Need: "a brief is needed: what the plan is to do; Esc cancels"},
	})
	return Model{List: rows, ctx: ctx, client: c, opts: opts}
}

// Update handles the panel's keys and the client's answers.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		var cmd tea.Cmd
		m.List, cmd = m.List.Update(msg)
		return m, cmd
	}
	var in list.Input[plans.Record]
	var cmd tea.Cmd
	m.List, in, cmd = m.Press(k)
	switch {
	case in.Answer.Question == list.Briefing:
		launch := client.PlanLaunch{Brief: in.Answer.Text, Root: m.opts.Root, Model: m.opts.Model}
		return m, m.Act("started a plan", func() error { _, err := m.client.LaunchPlan(m.ctx, launch); return err })
	case in.Answer.Question == refusing:
		return m.refuse(in.Answer.Text)
	case in.Key != "":
		return m.act(in.Key, in.Row)
	}
	return m, cmd
}

// act is a key's action on plan rec.
func (m Model) act(key string, rec plans.Record) (Model, tea.Cmd) {
	switch key {
	case "a", "d", "x":
		return m.judge(key, rec)
	case "r":
		if rec.Status != plans.Interrupted {
			m.Status = fmt.Sprintf("plan %s is %s: only an interrupted plan is recovered", rec.ID, rec.Status)
			return m, nil
		}
		return m, m.Act("recovered "+rec.ID, func() error { _, err := m.client.RecoverPlan(m.ctx, rec.ID); return err })
	}
	return m, nil
}

// judge acts on the card rec waits on: a approves it; d denies it (a
// plan's: returns it) and x declines a plan's, each asking why first.
func (m Model) judge(key string, rec plans.Record) (Model, tea.Cmd) {
	req, err := card.ForPlan(rec)
	if err != nil {
		m.Status = err.Error()
		return m, nil
	}
	switch key {
	case "a":
		return m, m.decide(card.DecisionMsg{Request: req, Verdict: card.Approve})
	case "x":
		if req.Subject != card.Plan {
			m.Status = fmt.Sprintf("plan %s waits for its commands: d denies them, x declines only its card", rec.ID)
			return m, nil
		}
		m.verdict, m.verb = card.Decline, "decline"
	default:
		m.verdict, m.verb = card.Deny, "deny"
		if req.Subject == card.Plan {
			m.verb = "return"
		}
	}
	return m, m.AskReason(refusing)
}

// refuse sends m.verdict on the selected plan's wait, for reason.
func (m Model) refuse(reason string) (Model, tea.Cmd) {
	rec, ok := m.Selected()
	if !ok {
		return m, nil
	}
	req, err := card.ForPlan(rec)
	if err != nil {
		m.Status = err.Error()
		return m, nil
	}
	return m, m.decide(card.DecisionMsg{Request: req, Verdict: m.verdict, Reason: reason})
}

// decide sends the decision a card would on the plan's wait.
func (m Model) decide(d card.DecisionMsg) tea.Cmd {
	dec := d.PlanDecision()
	done := fmt.Sprintf("%s: %s %s", dec.Plan, past[dec.Decision], map[string]string{
		workflows.PlanDecideCommands: "its commands", workflows.PlanDecidePlan: "the plan"}[dec.Kind])
	return m.Act(done, func() error { _, err := m.client.DecidePlan(m.ctx, dec); return err })
}

var past = map[string]string{
	workflows.PlanApprove: "approved", workflows.PlanDeny: "denied",
	workflows.PlanReturn: "returned", workflows.PlanDecline: "declined",
}

// columns are the panel's: the id takes half of what the fixed ones
// leave (10 to 32 cells), the brief the rest.
var columns = []list.Column{
	{Name: "ID", Grow: func(left int) int { return min(max(left/2, 10), 32) }, Gap: true},
	{Name: "STATUS", Width: 18},
	{Name: "TASKS", Width: 7},
	{Name: "WAVES", Width: 6},
	{Name: "BRIEF"},
}

// keysHelp is the panel's keys, on its last line.
const keysHelp = "↑↓ ⏎ details  a approve  d deny/return  x decline  r recover  n new"

// View draws the panel in its Width×Height.
func (m Model) View() string {
	ask := m.verb + ", reason (Enter sends, Esc cancels): "
	if m.Asking() == list.Briefing {
		ask = "new plan in " + common.Or(m.opts.Root, "axlrd's workspace") + ": "
	}
	return m.List.View(list.Frame[plans.Record]{
		Title:   fmt.Sprintf("Plans · %d wait for you", m.Count(plans.Record.NeedsPerson)),
		Columns: columns,
		Cells: func(r plans.Record) []string {
			done := 0
			for _, t := range r.Tasks {
				if t.Status == plans.TaskDone {
					done++
				}
			}
			return []string{r.ID, string(r.Status), fmt.Sprintf("%d/%d", done, len(r.Tasks)), fmt.Sprint(r.Waves), common.OneLine(r.Brief)}
		},
		Empty: "no plans yet: n starts one",
		Ask:   ask,
		Keys:  keysHelp,
	})
}

// details are a plan's lines under the table; the list cuts them to fit.
func details(r plans.Record) []string {
	lines := []string{"brief: " + common.OneLine(r.Brief), "root: " + common.Or(r.Root, "-")}
	if r.Reason != "" {
		lines = append(lines, "reason: "+common.OneLine(r.Reason))
	}
	if r.Pending != nil && r.Pending.Kind == plans.PendingCommand {
		lines = append(lines, "waits: commands "+strings.Join(r.Pending.Commands, "; "))
	} else if r.NeedsPerson() {
		lines = append(lines, "waits: approval of the plan")
	}
	for _, t := range r.Tasks {
		line := fmt.Sprintf("task %s  wave %d  %s  session %s", t.ID, t.Wave, t.Status, common.Or(t.Session, "-"))
		switch {
		case t.Reason != "":
			line += "  " + common.OneLine(t.Reason)
		case len(t.Changed) > 0:
			line += "  changed " + strings.Join(t.Changed, ", ")
		}
		lines = append(lines, line)
		for _, q := range t.Questions {
			lines = append(lines, "  asks: "+common.OneLine(q))
		}
		if len(t.Restored) > 0 {
			lines = append(lines, "  restored as at its start: "+strings.Join(t.Restored, ", "))
		}
		if len(t.Created) > 0 {
			lines = append(lines, "  created, left in place: "+strings.Join(t.Created, ", "))
		}
	}
	for _, s := range r.Syncs {
		exit := "did not exit"
		if s.Exit != nil {
			exit = fmt.Sprintf("exit %d", *s.Exit)
		}
		lines = append(lines, fmt.Sprintf("sync wave %d  %s  %s  round %d", s.Wave, s.Check, exit, s.Round))
	}
	return lines
}
