// Package plans is the TUI's plans panel: every plan, newest first, with
// the keys that act on the selected one. Drawing never calls the client:
// the rows come from Refresh, a command that calls Plans every
// RefreshInterval. Every key that acts returns a command that calls the
// client; its answer comes back as a message and triggers a refresh.
package plans

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/card"
	"github.com/underpass-ai/axlr/internal/tui/common"
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
type RecordsMsg struct {
	Records []plans.Record
	Err     error
}

// ActedMsg is the answer to an action on a plan: what was done and the
// error, if any.
type ActedMsg struct {
	Done string
	Err  error
}

type tickMsg struct{}

// Options are the panel's settings.
type Options struct {
	// Root is the workspace a new plan plans in, an absolute path.
	Root string
	// Model is a new plan's session model (default: axlrd's settings).
	Model string
}

type mode int

const (
	browsing mode = iota
	// refusing: a reason for m.verdict is being typed.
	refusing
	briefing
)

// Model is the plans panel.
type Model struct {
	common.Common
	ctx    context.Context
	client Client
	opts   Options

	records []plans.Record
	sel     int
	top     int
	open    bool
	mode    mode
	verdict card.Verdict
	verb    string
	input   textinput.Model
	status  string
	loaded  bool
	// ticking: a timed refresh is scheduled.
	ticking bool
}

// New returns the panel; Init starts its refreshes.
func New(ctx context.Context, c Client, com common.Common, opts Options) Model {
	return Model{Common: com, ctx: ctx, client: c, opts: opts, input: com.Input("")}
}

// Init asks for the records.
func (m Model) Init() tea.Cmd { return m.Refresh() }

// Refresh is the command that asks axlrd for the records.
func (m Model) Refresh() tea.Cmd {
	return func() tea.Msg {
		recs, err := m.client.Plans(m.ctx)
		return RecordsMsg{Records: recs, Err: err}
	}
}

// Editing reports whether a reason or a brief is being typed: Esc then
// belongs to the panel.
func (m Model) Editing() bool { return m.mode != browsing }

// Records returns the rows, newest first.
func (m Model) Records() []plans.Record { return m.records }

// Selected returns the selected plan, if any.
func (m Model) Selected() (plans.Record, bool) {
	if m.sel < 0 || m.sel >= len(m.records) {
		return plans.Record{}, false
	}
	return m.records[m.sel], true
}

// Update handles the panel's keys and the client's answers.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case RecordsMsg:
		if msg.Err != nil {
			m.status = "plans: " + msg.Err.Error()
		} else {
			m.setRecords(msg.Records)
		}
		if m.ticking {
			// One timed refresh at a time, however many answers come.
			return m, nil
		}
		m.ticking = true
		return m, tea.Tick(RefreshInterval, func(time.Time) tea.Msg { return tickMsg{} })
	case tickMsg:
		m.ticking = false
		return m, m.Refresh()
	case ActedMsg:
		if msg.Err != nil {
			m.status = msg.Err.Error()
		} else {
			m.status = msg.Done
		}
		return m, m.Refresh()
	case tea.KeyPressMsg:
		if m.mode != browsing {
			return m.updateInput(msg)
		}
		return m.updateKeys(msg)
	}
	return m, nil
}

func (m *Model) setRecords(recs []plans.Record) {
	id := ""
	if r, ok := m.Selected(); ok {
		id = r.ID
	}
	m.records = slices.Clone(recs)
	slices.SortStableFunc(m.records, func(a, b plans.Record) int { return b.Created.Compare(a.Created) })
	m.sel = max(0, slices.IndexFunc(m.records, func(r plans.Record) bool { return r.ID == id }))
	m.loaded = true
	m.scroll()
}

func (m Model) updateKeys(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	page := m.pageRows()
	switch msg.String() {
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "pgup":
		m.move(-page)
	case "pgdown":
		m.move(page)
	case "enter":
		m.open = !m.open
		m.scroll()
	case "n":
		m.mode, m.status = briefing, ""
		m.input.Reset()
		m.input.Placeholder = "what the plan is to do"
		return m, m.input.Focus()
	}
	rec, ok := m.Selected()
	if !ok {
		return m, nil
	}
	switch msg.String() {
	case "a":
		req, err := card.ForPlan(rec)
		if err != nil {
			m.status = err.Error()
			return m, nil
		}
		return m, m.decide(card.DecisionMsg{Request: req, Verdict: card.Approve})
	case "d", "x":
		req, err := card.ForPlan(rec)
		if err != nil {
			m.status = err.Error()
			return m, nil
		}
		m.verdict, m.verb = card.Deny, "deny"
		if req.Subject == card.Plan {
			m.verb = "return"
		}
		if msg.String() == "x" {
			if req.Subject != card.Plan {
				m.status = fmt.Sprintf("plan %s waits for its commands: d denies them, x declines only its card", rec.ID)
				return m, nil
			}
			m.verdict, m.verb = card.Decline, "decline"
		}
		m.mode, m.status = refusing, ""
		m.input.Reset()
		m.input.Placeholder = "why"
		return m, m.input.Focus()
	case "r":
		if rec.Status != plans.Interrupted {
			m.status = fmt.Sprintf("plan %s is %s: only an interrupted plan is recovered", rec.ID, rec.Status)
			return m, nil
		}
		return m, m.act("recovered "+rec.ID, func() error { _, err := m.client.RecoverPlan(m.ctx, rec.ID); return err })
	}
	return m, nil
}

func (m Model) updateInput(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	switch msg.String() {
	case "esc":
		m.mode = browsing
		m.input.Blur()
		return m, nil
	case "enter":
		text := strings.TrimSpace(m.input.Value())
		if text == "" {
			if m.mode == refusing {
				m.status = "a reason is needed: type why, or Esc cancels"
			} else {
				m.status = "a brief is needed: what the plan is to do; Esc cancels"
			}
			return m, nil
		}
		mode := m.mode
		m.mode = browsing
		m.input.Blur()
		if mode == briefing {
			in := client.PlanLaunch{Brief: text, Root: m.opts.Root, Model: m.opts.Model}
			return m, m.act("started a plan", func() error { _, err := m.client.LaunchPlan(m.ctx, in); return err })
		}
		rec, ok := m.Selected()
		if !ok {
			return m, nil
		}
		req, err := card.ForPlan(rec)
		if err != nil {
			m.status = err.Error()
			return m, nil
		}
		return m, m.decide(card.DecisionMsg{Request: req, Verdict: m.verdict, Reason: text})
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// decide sends the decision a card would on the plan's wait.
func (m Model) decide(d card.DecisionMsg) tea.Cmd {
	dec := d.PlanDecision()
	done := fmt.Sprintf("%s: %s %s", dec.Plan, past[dec.Decision], map[string]string{
		workflows.PlanDecideCommands: "its commands", workflows.PlanDecidePlan: "the plan"}[dec.Kind])
	return m.act(done, func() error { _, err := m.client.DecidePlan(m.ctx, dec); return err })
}

var past = map[string]string{
	workflows.PlanApprove: "approved", workflows.PlanDeny: "denied",
	workflows.PlanReturn: "returned", workflows.PlanDecline: "declined",
}

func (m Model) act(done string, f func() error) tea.Cmd {
	return func() tea.Msg { return ActedMsg{Done: done, Err: f()} }
}

func (m *Model) move(by int) {
	m.sel = min(max(m.sel+by, 0), max(len(m.records)-1, 0))
	m.scroll()
}

// pageRows is how many rows fit: the height less the title, the header,
// the details when open, the input or status line and the keys line.
func (m Model) pageRows() int {
	h := m.Height - 4
	if m.open {
		h -= len(m.details())
	}
	return max(h, 1)
}

func (m *Model) scroll() {
	page := m.pageRows()
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+page {
		m.top = m.sel - page + 1
	}
	m.top = max(0, min(m.top, len(m.records)-page))
}

// Column widths at any width: the brief takes what the others leave.
const (
	statusW = 18
	tasksW  = 7
	wavesW  = 6
	fixedW  = 2 + statusW + tasksW + wavesW
)

// keysHelp is the panel's keys, on its last line.
const keysHelp = "↑↓ ⏎ details  a approve  d deny/return  x decline  r recover  n new"

// View draws the panel in its Width×Height.
func (m Model) View() string {
	s := m.Styles
	var b strings.Builder
	waiting := 0
	for _, r := range m.records {
		if r.NeedsPerson() {
			waiting++
		}
	}
	b.WriteString(s.Title.Render(common.Fit(fmt.Sprintf("Plans · %d wait for you", waiting), m.Width)))
	b.WriteByte('\n')
	idW := min(max((m.Width-fixedW)/2, 10), 32)
	briefW := max(m.Width-fixedW-idW, 0)
	b.WriteString(s.Dim.Render(common.Fit("  "+common.Fit("ID", idW)+common.Fit("STATUS", statusW)+
		common.Fit("TASKS", tasksW)+common.Fit("WAVES", wavesW)+"BRIEF", m.Width)))
	b.WriteByte('\n')
	lines := 2
	page := m.pageRows()
	if !m.loaded {
		b.WriteString(common.Fit("  asking axlrd…", m.Width) + "\n")
		lines++
	} else if len(m.records) == 0 {
		b.WriteString(common.Fit("  no plans yet: n starts one", m.Width) + "\n")
		lines++
	}
	for i := m.top; i < len(m.records) && i < m.top+page; i++ {
		r := m.records[i]
		done := 0
		for _, t := range r.Tasks {
			if t.Status == plans.TaskDone {
				done++
			}
		}
		row := common.Fit(r.ID, idW-1) + " " + common.Fit(string(r.Status), statusW) +
			common.Fit(fmt.Sprintf("%d/%d", done, len(r.Tasks)), tasksW) + common.Fit(fmt.Sprint(r.Waves), wavesW) +
			common.Fit(common.OneLine(r.Brief), briefW)
		if i == m.sel {
			b.WriteString(s.Selected.Render("> " + row))
		} else {
			b.WriteString("  " + row)
		}
		b.WriteByte('\n')
		lines++
	}
	if m.open {
		for _, d := range m.details() {
			b.WriteString(common.Fit("    "+d, m.Width) + "\n")
			lines++
		}
	}
	for ; lines < m.Height-2; lines++ {
		b.WriteString(strings.Repeat(" ", m.Width) + "\n")
	}
	b.WriteString(s.Error.Render(common.Fit(m.status, m.Width)))
	b.WriteByte('\n')
	switch m.mode {
	case refusing:
		b.WriteString(common.Fit(m.verb+", reason (Enter sends, Esc cancels): "+m.input.View(), m.Width))
	case briefing:
		b.WriteString(common.Fit("new plan in "+common.Or(m.opts.Root, "axlrd's workspace")+": "+m.input.View(), m.Width))
	default:
		b.WriteString(s.Dim.Render(common.Fit(keysHelp, m.Width)))
	}
	return b.String()
}

// details are the selected plan's lines under the table, cut to leave at
// least one row above them.
func (m Model) details() []string {
	r, ok := m.Selected()
	if !ok {
		return nil
	}
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
	}
	for _, s := range r.Syncs {
		exit := "did not exit"
		if s.Exit != nil {
			exit = fmt.Sprintf("exit %d", *s.Exit)
		}
		lines = append(lines, fmt.Sprintf("sync wave %d  %s  %s  round %d", s.Wave, s.Check, exit, s.Round))
	}
	if room := max(m.Height-5, 1); len(lines) > room {
		lines = append(lines[:room-1], fmt.Sprintf("… %d more", len(lines)-room+1))
	}
	return lines
}
