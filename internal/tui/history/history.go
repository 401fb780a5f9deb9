// Package history is the TUI's history view (/history): the trajectory
// of the session the TUI talks to, one line per step, oldest first, as
// axlr-tui history prints it (client.StepCells), with the selected step's
// detail under them. Drawing never calls the client: the
// trajectory comes from Refresh, a command that reads the workflow's
// history once; the parent refreshes it when it opens the view, and r
// reads it again. Esc is the parent's. The steps, their window and the
// frame are a list.List's.
package history

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/list"
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

// Model is the history view. Its rows, their window and its frame are a
// list.List's, without a timed refresh, following the newest step.
type Model struct {
	list.List[client.Step]
	ctx     context.Context
	client  Client
	session string
	runs    int
}

// New returns the view, of no session until SetSession.
func New(ctx context.Context, c Client, com common.Common) Model {
	// Steps have no id; the trajectory only grows, so the selection keeps
	// its place, or follows the newest step.
	steps := list.New(com, list.Options[client.Step]{Name: "history", Follow: true})
	return Model{List: steps, ctx: ctx, client: c}
}

// SetSession makes the view the trajectory of session id; another id than
// the one it shows empties it until Refresh answers.
func (m *Model) SetSession(id string) {
	if id == m.session {
		return
	}
	*m = New(m.ctx, m.client, m.Common)
	m.session = id
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
func (m Model) Steps() []client.Step { return m.Rows() }

// Update handles the view's keys and the client's answer.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case TrajectoryMsg:
		if msg.SessionID != m.session {
			return m, nil
		}
		rows := list.Records[client.Step]{Err: msg.Err}
		if msg.Err == nil {
			m.runs = 0
			if t := msg.Trajectory; t != nil {
				rows.Records, m.runs = t.Steps, len(t.Runs)
			}
		}
		var cmd tea.Cmd
		m.List, cmd = m.List.Update(rows)
		return m, cmd
	case tea.KeyPressMsg:
		var moved bool
		if m.List, moved = m.Key(msg); !moved && msg.String() == "r" {
			return m, m.Refresh()
		}
	}
	return m, nil
}

// columns are the view's; the outcome takes what the others leave.
var columns = []list.Column{{Name: "AFTER", Width: 11}, {Name: "STEP", Width: 30, Gap: true}, {Name: "TOOK", Width: 8}, {Name: "OUTCOME"}}

// keysHelp is the view's keys, on its last line.
const keysHelp = "↑↓ PgUp PgDn Home End scroll  r reload  Esc back"

// View draws the view in its Width×Height.
func (m Model) View() string {
	title := "History"
	if m.session != "" {
		title += " · " + m.session
	}
	if m.Loaded() {
		title += fmt.Sprintf(" · %d steps · %d run(s)", len(m.Rows()), m.runs)
	}
	unread := "reading the session's history…"
	if m.session == "" {
		unread = "no session yet: a prompt starts one, /sessions picks one"
	}
	return m.List.View(list.Frame[client.Step]{
		Title:   title,
		Columns: columns,
		Cells: func(st client.Step) []string {
			c := client.StepCells(st)
			return []string{offset(st.Time.Sub(m.Rows()[0].Time)), c.Step, c.Took, common.OneLine(c.Outcome)}
		},
		Empty:  "no steps yet",
		Unread: unread,
		Hint:   detail,
		Keys:   keysHelp,
	})
}

// detail is the selected step's line under the table: its detail, its
// attempt and its run.
func detail(st client.Step) string {
	c := client.StepCells(st)
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
