// Package sessions is the TUI's session picker (/sessions): this host's
// sessions, newest first; Enter resumes the selected one. Drawing never
// calls the client: the rows come from Refresh, a command that calls
// Sessions (one paged visibility list, no query per session). The picker
// does not poll: the parent refreshes it each time it opens it. Esc is the
// parent's.
package sessions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/common"
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

// Model is the session picker.
type Model struct {
	common.Common
	ctx    context.Context
	client Client

	rows   []client.SessionSummary
	loc    *time.Location
	sel    int
	top    int
	loaded bool
	// err is the last refresh's failure; note a refused Enter's reason.
	err, note string
}

// New returns the picker; Refresh fills it.
func New(ctx context.Context, c Client, com common.Common) Model {
	return Model{Common: com, ctx: ctx, client: c, loc: time.Local}
}

// Refresh is the command that asks axlrd for the sessions.
func (m Model) Refresh() tea.Cmd {
	return func() tea.Msg {
		rows, err := m.client.Sessions(m.ctx)
		return ListMsg{Sessions: rows, Err: err, At: time.Now()}
	}
}

// Sessions returns the rows, newest first.
func (m Model) Sessions() []client.SessionSummary { return m.rows }

// Selected returns the selected session, if any.
func (m Model) Selected() (client.SessionSummary, bool) {
	if m.sel < 0 || m.sel >= len(m.rows) {
		return client.SessionSummary{}, false
	}
	return m.rows[m.sel], true
}

// Update handles the picker's keys and the client's answer.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case ListMsg:
		if msg.Err != nil {
			m.err = "sessions: " + msg.Err.Error()
			return m, nil
		}
		m.err = ""
		m.loc = msg.At.Location()
		m.setRows(msg.Sessions)
		return m, nil
	case tea.KeyPressMsg:
		return m.updateKeys(msg)
	}
	return m, nil
}

func (m *Model) setRows(rows []client.SessionSummary) {
	wid := ""
	if s, ok := m.Selected(); ok {
		wid = s.WorkflowID
	}
	m.rows = slices.Clone(rows)
	slices.SortStableFunc(m.rows, func(a, b client.SessionSummary) int { return b.Started.Compare(a.Started) })
	m.sel = max(0, slices.IndexFunc(m.rows, func(s client.SessionSummary) bool { return s.WorkflowID == wid }))
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
	case "home":
		m.move(-len(m.rows))
	case "end":
		m.move(len(m.rows))
	case "enter":
		s, ok := m.Selected()
		if !ok {
			return m, nil
		}
		if !s.Open() {
			m.note = fmt.Sprintf("session %s is %s: it takes no more prompts", short(s.SessionID), s.Status)
			return m, nil
		}
		return m, func() tea.Msg { return PickedMsg{SessionID: s.SessionID} }
	}
	return m, nil
}

func (m *Model) move(by int) {
	m.sel = min(max(m.sel+by, 0), max(len(m.rows)-1, 0))
	m.note = ""
	m.scroll()
}

// pageRows is how many rows fit: the height less the title, the header,
// the status line and the keys line.
func (m Model) pageRows() int { return max(m.Height-4, 1) }

func (m *Model) scroll() {
	page := m.pageRows()
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+page {
		m.top = m.sel - page + 1
	}
	m.top = max(0, min(m.top, len(m.rows)-page))
}

// Column widths; the status takes what they leave.
const (
	idW   = 10
	timeW = 18
)

// timeLayout is the started and updated columns' layout.
const timeLayout = "2006-01-02 15:04"

// keysHelp is the picker's keys, on its last line.
const keysHelp = "↑↓ PgUp PgDn Home End select  ⏎ resume  Esc back"

// View draws the picker in its Width×Height.
func (m Model) View() string {
	s := m.Styles
	var b strings.Builder
	title := "Sessions"
	if m.loaded {
		title += fmt.Sprintf(" · %d on this host", len(m.rows))
	}
	b.WriteString(s.Title.Render(common.Fit(title, m.Width)))
	b.WriteByte('\n')
	statusW := max(m.Width-2-idW-2*timeW, 0)
	b.WriteString(s.Dim.Render(common.Fit("  "+common.Fit("SESSION", idW)+common.Fit("STARTED", timeW)+
		common.Fit("UPDATED", timeW)+common.Fit("STATUS", statusW), m.Width)))
	b.WriteByte('\n')
	lines := 2
	switch {
	case !m.loaded && m.err == "":
		b.WriteString(common.Fit("  asking axlrd…", m.Width) + "\n")
		lines++
	case m.loaded && len(m.rows) == 0:
		b.WriteString(common.Fit("  no sessions on this host yet: a prompt starts one", m.Width) + "\n")
		lines++
	}
	for i := m.top; i < len(m.rows) && i < m.top+m.pageRows(); i++ {
		r := m.rows[i]
		row := common.Fit(short(r.SessionID), idW) + common.Fit(r.Started.In(m.loc).Format(timeLayout), timeW) +
			common.Fit(r.Updated.In(m.loc).Format(timeLayout), timeW) + common.Fit(r.Status, statusW)
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
	if msg := cmp.Or(m.err, m.note); msg != "" {
		b.WriteString(s.Error.Render(common.Fit(msg, m.Width)))
	} else if r, ok := m.Selected(); ok {
		b.WriteString(s.Dim.Render(common.Fit("session "+r.SessionID, m.Width)))
	} else {
		b.WriteString(common.Fit("", m.Width))
	}
	b.WriteByte('\n')
	b.WriteString(s.Dim.Render(common.Fit(keysHelp, m.Width)))
	return b.String()
}

// short is a session id's first eight characters, as the rows show it.
func short(id string) string { return id[:min(len(id), 8)] }
