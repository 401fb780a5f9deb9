// Package history is the TUI's history view (/history): the trajectory
// of the session the TUI talks to, one line per step, oldest first, as
// axlr-tui history prints it (internal/cmd/history's StepCells), with the
// selected step's detail under them. Drawing never calls the client: the
// trajectory comes from Refresh, a command that reads the workflow's
// history once; the parent refreshes it when it opens the view, and r
// reads it again. Esc is the parent's.
package history

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	clihistory "github.com/underpass-ai/axlr/internal/cmd/history"
	"github.com/underpass-ai/axlr/internal/tui/common"
)

// Client is what the view asks axlrd; *client.Client has it.
type Client interface {
	History(ctx context.Context, id string) (*client.Trajectory, error)
}

// TrajectoryMsg carries the trajectory History returned for SessionID, or
// why it failed. One for another session than the view's is dropped.
type TrajectoryMsg struct {
	SessionID  string
	Trajectory *client.Trajectory
	Err        error
}

// Model is the history view.
type Model struct {
	common.Common
	ctx    context.Context
	client Client

	session string
	steps   []client.Step
	runs    int
	sel     int
	top     int
	loaded  bool
	err     string
}

// New returns the view, of no session until SetSession.
func New(ctx context.Context, c Client, com common.Common) Model {
	return Model{Common: com, ctx: ctx, client: c}
}

// SetSession makes the view the trajectory of session id; another id than
// the one it shows empties it until Refresh answers.
func (m *Model) SetSession(id string) {
	if id == m.session {
		return
	}
	*m = Model{Common: m.Common, ctx: m.ctx, client: m.client, session: id}
}

// Session returns the session the view shows.
func (m Model) Session() string { return m.session }

// Refresh is the command that reads the session's trajectory; nil while
// the view has no session.
func (m Model) Refresh() tea.Cmd {
	if m.session == "" {
		return nil
	}
	id := m.session
	return func() tea.Msg {
		t, err := m.client.History(m.ctx, id)
		return TrajectoryMsg{SessionID: id, Trajectory: t, Err: err}
	}
}

// Steps returns the steps, oldest first.
func (m Model) Steps() []client.Step { return m.steps }

// Selected returns the selected step, if any.
func (m Model) Selected() (client.Step, bool) {
	if m.sel < 0 || m.sel >= len(m.steps) {
		return client.Step{}, false
	}
	return m.steps[m.sel], true
}

// Update handles the view's keys and the client's answer.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case TrajectoryMsg:
		if msg.SessionID != m.session {
			return m, nil
		}
		if msg.Err != nil {
			m.err = "history: " + msg.Err.Error()
			return m, nil
		}
		m.err = ""
		m.setTrajectory(msg.Trajectory)
		return m, nil
	case tea.KeyPressMsg:
		return m.updateKeys(msg)
	}
	return m, nil
}

// setTrajectory keeps the selected step, or follows the newest when it
// was selected (as on the first answer).
func (m *Model) setTrajectory(t *client.Trajectory) {
	last := !m.loaded || m.sel >= len(m.steps)-1
	m.steps, m.runs = nil, 0
	if t != nil {
		m.steps, m.runs = t.Steps, len(t.Runs)
	}
	if last {
		m.sel = len(m.steps) - 1
	}
	m.loaded = true
	m.move(0)
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
	case "home":
		m.move(-len(m.steps))
	case "end":
		m.move(len(m.steps))
	case "r":
		return m, m.Refresh()
	}
	return m, nil
}

func (m *Model) move(by int) {
	m.sel = min(max(m.sel+by, 0), max(len(m.steps)-1, 0))
	page := m.pageRows()
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+page {
		m.top = m.sel - page + 1
	}
	m.top = max(0, min(m.top, len(m.steps)-page))
}

// pageRows is how many steps fit: the height less the title, the header,
// the detail line and the keys line.
func (m Model) pageRows() int { return max(m.Height-4, 1) }

// Column widths; the outcome takes what they leave.
const (
	offsetW = 11
	stepW   = 30
	tookW   = 8
	fixedW  = 2 + offsetW + stepW + tookW
)

// keysHelp is the view's keys, on its last line.
const keysHelp = "↑↓ PgUp PgDn Home End scroll  r reload  Esc back"

// View draws the view in its Width×Height.
func (m Model) View() string {
	s := m.Styles
	var b strings.Builder
	title := "History"
	if m.session != "" {
		title += " · " + m.session
	}
	if m.loaded {
		title += fmt.Sprintf(" · %d steps · %d run(s)", len(m.steps), m.runs)
	}
	b.WriteString(s.Title.Render(common.Fit(title, m.Width)))
	b.WriteByte('\n')
	outcomeW := max(m.Width-fixedW, 0)
	b.WriteString(s.Dim.Render(common.Fit("  "+common.Fit("AFTER", offsetW)+common.Fit("STEP", stepW)+
		common.Fit("TOOK", tookW)+common.Fit("OUTCOME", outcomeW), m.Width)))
	b.WriteByte('\n')
	lines := 2
	empty := ""
	switch {
	case m.session == "":
		empty = "  no session yet: a prompt starts one, /sessions picks one"
	case !m.loaded && m.err == "":
		empty = "  reading the session's history…"
	case m.loaded && len(m.steps) == 0:
		empty = "  no steps yet"
	}
	if empty != "" {
		b.WriteString(common.Fit(empty, m.Width) + "\n")
		lines++
	}
	for i := m.top; i < len(m.steps) && i < m.top+m.pageRows(); i++ {
		st := m.steps[i]
		c := clihistory.StepCells(st)
		row := common.Fit(offset(st.Time.Sub(m.steps[0].Time)), offsetW) + common.Fit(c.Step, stepW-1) + " " +
			common.Fit(c.Took, tookW) + common.Fit(common.OneLine(c.Outcome), outcomeW)
		if i == m.sel {
			b.WriteString(s.Selected.Render("> " + row))
		} else {
			b.WriteString("  " + row)
		}
		b.WriteByte('\n')
		lines++
	}
	for ; lines < m.Height-2; lines++ {
		b.WriteString(strings.Repeat(" ", m.Width) + "\n")
	}
	if m.err != "" {
		b.WriteString(s.Error.Render(common.Fit(m.err, m.Width)))
	} else {
		b.WriteString(s.Dim.Render(common.Fit(m.detail(), m.Width)))
	}
	b.WriteByte('\n')
	b.WriteString(s.Dim.Render(common.Fit(keysHelp, m.Width)))
	return b.String()
}

// detail is the selected step's line under the table: its detail, its
// attempt and its run.
func (m Model) detail() string {
	st, ok := m.Selected()
	if !ok {
		return ""
	}
	c := clihistory.StepCells(st)
	parts := []string{cmp.Or(common.OneLine(c.Detail), "-")}
	if c.Attempt != "-" {
		parts = append(parts, "attempt "+c.Attempt)
	}
	return strings.Join(append(parts, "run "+st.RunID), " · ")
}

// offset is how long after the first step a step came: minutes, seconds
// and milliseconds within the hour, then hours, minutes and seconds.
func offset(d time.Duration) string {
	d = max(d, 0)
	if d < time.Hour {
		return fmt.Sprintf("+%02d:%06.3f", int(d.Minutes()), (d % time.Minute).Seconds())
	}
	return fmt.Sprintf("+%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}
