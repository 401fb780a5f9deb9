// Package sessions is the TUI's session picker (/sessions): this host's
// sessions, newest first; Enter resumes the selected one. Drawing never
// calls the client: the rows come from Refresh, a command that calls
// Sessions (one paged visibility list, no query per session). The picker
// does not poll: the parent refreshes it each time it opens it. Esc is the
// parent's. The rows, their window and the frame are a list.List's.
package sessions

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/list"
)

// Client is what the picker asks axlrd; *client.Client has it.
type Client interface {
	Sessions(ctx context.Context) ([]client.SessionSummary, error)
}

// ListMsg carries the sessions Sessions returned, or why it failed. At is
// when they were asked for: their times print in its location.
type ListMsg struct {
	Sessions []client.SessionSummary
	Err      error
	At       time.Time
}

// PickedMsg is the person's choice: later prompts go to SessionID.
type PickedMsg struct{ SessionID string }

// Model is the session picker. Its rows, their window and its frame are a
// list.List's, without a timed refresh.
type Model struct {
	list.List[client.SessionSummary]
	ctx    context.Context
	client Client
	loc    *time.Location
	// note is a refused Enter's reason, on the status line until a move.
	note string
}

// New returns the picker; Refresh fills it.
func New(ctx context.Context, c Client, com common.Common) Model {
	rows := list.New(com, list.Options[client.SessionSummary]{
		Name:    "sessions",
		ID:      func(s client.SessionSummary) string { return s.WorkflowID },
		Created: func(s client.SessionSummary) time.Time { return s.Started },
	})
	return Model{List: rows, ctx: ctx, client: c, loc: time.Local}
}

// Refresh is the command that asks axlrd for the sessions.
func (m Model) Refresh() tea.Cmd {
	return func() tea.Msg {
		rows, err := m.client.Sessions(m.ctx)
		return ListMsg{Sessions: rows, Err: err, At: time.Now()}
	}
}

// Sessions returns the rows, newest first.
func (m Model) Sessions() []client.SessionSummary { return m.Rows() }

// Update handles the picker's keys and the client's answer.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case ListMsg:
		if msg.Err == nil {
			m.loc = msg.At.Location()
		}
		var cmd tea.Cmd
		m.List, cmd = m.List.Update(list.Records[client.SessionSummary]{Records: msg.Sessions, Err: msg.Err})
		return m, cmd
	case tea.KeyPressMsg:
		return m.updateKeys(msg)
	}
	return m, nil
}

func (m Model) updateKeys(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	var moved bool
	if m.List, moved = m.Key(msg); moved {
		if m.Status == m.note {
			m.Status = ""
		}
		m.note = ""
		return m, nil
	}
	if msg.String() != "enter" {
		return m, nil
	}
	s, ok := m.Selected()
	if !ok {
		return m, nil
	}
	if !s.Open() {
		m.note = fmt.Sprintf("session %s is %s: it takes no more prompts", short(s.SessionID), s.Status)
		m.Status = m.note
		return m, nil
	}
	return m, func() tea.Msg { return PickedMsg{SessionID: s.SessionID} }
}

// columns are the picker's; the status takes what the others leave.
var columns = []list.Column{{Name: "SESSION", Width: 10}, {Name: "STARTED", Width: 18}, {Name: "UPDATED", Width: 18}, {Name: "STATUS"}}

// timeLayout is the started and updated columns' layout.
const timeLayout = "2006-01-02 15:04"

// keysHelp is the picker's keys, on its last line.
const keysHelp = "↑↓ PgUp PgDn Home End select  ⏎ resume  Esc back"

// View draws the picker in its Width×Height.
func (m Model) View() string {
	title := "Sessions"
	if m.Loaded() {
		title += fmt.Sprintf(" · %d on this host", len(m.Rows()))
	}
	return m.List.View(list.Frame[client.SessionSummary]{
		Title:   title,
		Columns: columns,
		Cells: func(r client.SessionSummary) []string {
			return []string{short(r.SessionID), r.Started.In(m.loc).Format(timeLayout), r.Updated.In(m.loc).Format(timeLayout), r.Status}
		},
		Empty: "no sessions on this host yet: a prompt starts one",
		Hint:  func(r client.SessionSummary) string { return "session " + r.SessionID },
		Keys:  keysHelp,
	})
}

// short is a session id's first eight characters, as the rows show it.
func short(id string) string { return id[:min(len(id), 8)] }
