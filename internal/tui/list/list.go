// Package list is what the TUI's lists of rows share (the jobs and plans
// panels, the session picker, the history view): the rows, newest first or
// as read; the selection, which follows its row across a refresh, or the
// last row as a log grows; the window of rows that fits the height; the
// selected row's details on Enter; the frame a list is drawn in (title,
// columns, rows, details, a status line, and the keys or the prompt on the
// last line); the refreshes, one timed refresh at a time, or none; the
// prompt a reason or a brief is typed on, one line or several, and a brief
// held on it while the panel starts what it asks; and the keys a panel acts
// on the selected row with, once the list took its own (Press).
//
// It does no I/O: Refresh is a command that calls the panel's Read, and
// Act one that runs the panel's action. R, the rows' type, also tells two
// lists' messages apart: the app hands every message to every panel, and
// Records[jobs.Record] is not Records[plans.Record].
package list

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/underpass-ai/axlr/internal/tui/common"
)

// Records carries the rows Read returned, or why it failed.
type Records[R any] struct {
	Records []R
	Err     error
}

// Acted is the answer to an action on a row: what was done and the
// error, if any. It shows on the status line and triggers a refresh.
type Acted[R any] struct {
	Done string
	Err  error
}

type tickMsg[R any] struct{}

// Options are what the list knows of its rows.
type Options[R any] struct {
	// Name starts the status line of a failed read: "jobs: <error>".
	Name string
	// Read reads the rows, in Refresh's command (nil: Refresh is nil; the
	// panel reads them itself, when its answer carries more than rows, and
	// hands the list their Records).
	Read func() ([]R, error)
	// Every is the time from an answer of Read to the next timed read (0:
	// no timed read; the panel refreshes when it is opened, or on a key).
	Every time.Duration
	// ID names a row: the selection follows it across a refresh (nil: the
	// selection keeps its place, as in a log that only grows).
	ID func(R) string
	// Created orders the rows, newest first (nil: in Read's order).
	Created func(R) time.Time
	// Follow opens the selection on the last row and keeps it on the last
	// row as a refresh adds rows after it, as a log's newest line is
	// followed; a selection elsewhere stays.
	Follow bool
	// Details are a row's lines under the rows while Enter holds them
	// open (nil: Enter is not the list's key).
	Details func(R) []string
	// Brief, when set, is what n asks in Press: a new row's brief, the
	// question Briefing (nil: n is the panel's key).
	Brief *Prompt
}

// Prompt is a question's words: the placeholder shown until something is
// typed, and what an Enter on nothing says; and, for Options.Brief, how
// the brief is typed and answered.
type Prompt struct {
	Placeholder, Need string
	// Lines: the answer may take several lines. Shift+Enter (or Ctrl+J)
	// adds one, Enter answers; the prompt grows to MaxPromptLines lines
	// under its question's own line (default: one line, after the
	// question).
	Lines bool
	// Hold: Enter keeps the answer on the prompt, no longer typed into,
	// until the panel says how what it asked for went (Release): a
	// refusal gives the text back to fix. Esc drops it (default: Enter
	// stops asking).
	Hold bool
}

// MaxPromptLines is how many lines a Lines prompt shows; a longer answer
// scrolls in it.
const MaxPromptLines = 5

// Briefing is the question Options.Brief asks; a panel numbers its own
// questions from 1.
const Briefing = -1

// List is a panel's rows; the panel embeds it.
type List[R any] struct {
	common.Common
	// Status is the line above the last: an answer, an error or a hint.
	Status string

	opts   Options[R]
	rows   []R
	sel    int
	top    int
	open   bool
	loaded bool
	// failed is the status line of the last read, when it failed: the next
	// read that succeeds takes it off.
	failed string
	// ticking: a timed refresh is scheduled.
	ticking bool
	// prompt is typed into while asking names a question (0: none), or
	// lines while the question takes several (multi); need is what an
	// Enter on nothing says. hold: Enter holds the answer, held: it is
	// held.
	prompt textinput.Model
	lines  textarea.Model
	multi  bool
	asking int
	need   string
	hold   bool
	held   bool
}

// New returns the list, empty until the first Records.
func New[R any](com common.Common, opts Options[R]) List[R] {
	return List[R]{Common: com, opts: opts, prompt: com.Input(""), lines: linesInput(com)}
}

// linesInput is a Lines prompt's input: no line prompt or numbers,
// Shift+Enter or Ctrl+J a new line (Enter answers), growing from one line
// to MaxPromptLines; plain when colour is off.
func linesInput(com common.Common) textarea.Model {
	ta := textarea.New()
	ta.Prompt = ""
	ta.ShowLineNumbers = false
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "ctrl+j"))
	ta.DynamicHeight, ta.MinHeight, ta.MaxHeight = true, 1, MaxPromptLines
	// Past MaxPromptLines the text scrolls rather than stops: the limit
	// on an answer is its reader's to state.
	ta.MaxContentHeight = 1 << 16
	ta.CharLimit = 0
	if !com.Color {
		st := ta.Styles()
		st.Focused, st.Blurred = textarea.StyleState{}, textarea.StyleState{}
		st.Cursor.Color = nil
		ta.SetStyles(st)
	}
	ta.SetWidth(max(com.Width, 1))
	return ta
}

// Init asks for the rows.
func (l List[R]) Init() tea.Cmd { return l.Refresh() }

// Refresh is the command that reads the rows; nil without Read.
func (l List[R]) Refresh() tea.Cmd {
	if l.opts.Read == nil {
		return nil
	}
	return func() tea.Msg {
		rows, err := l.opts.Read()
		return Records[R]{Records: rows, Err: err}
	}
}

// Act is the command that runs an action on a row: its answer says done,
// or f's error.
func (l List[R]) Act(done string, f func() error) tea.Cmd {
	return func() tea.Msg { return Acted[R]{Done: done, Err: f()} }
}

// Rows returns the rows, newest first (or in Read's order).
func (l List[R]) Rows() []R { return l.rows }

// Loaded reports whether a read has answered with rows.
func (l List[R]) Loaded() bool { return l.loaded }

// Selected returns the selected row, if any.
func (l List[R]) Selected() (R, bool) {
	if l.sel < 0 || l.sel >= len(l.rows) {
		var none R
		return none, false
	}
	return l.rows[l.sel], true
}

// Update takes the answers: the rows (or the read's error, on the status
// line until a read succeeds) and the next timed refresh, an action's
// answer and the refresh it triggers, and the tick that refreshes.
func (l List[R]) Update(msg tea.Msg) (List[R], tea.Cmd) {
	switch msg := msg.(type) {
	case Records[R]:
		if msg.Err != nil {
			l.Status = l.opts.Name + ": " + msg.Err.Error()
			l.failed = l.Status
		} else {
			if l.Status == l.failed {
				l.Status = ""
			}
			l.failed = ""
			l.setRows(msg.Records)
		}
		if l.ticking || l.opts.Every == 0 {
			// One timed refresh at a time, however many answers come;
			// none without Every.
			return l, nil
		}
		l.ticking = true
		return l, tea.Tick(l.opts.Every, func(time.Time) tea.Msg { return tickMsg[R]{} })
	case tickMsg[R]:
		l.ticking = false
		return l, l.Refresh()
	case Acted[R]:
		if msg.Err != nil {
			l.Status = msg.Err.Error()
		} else {
			l.Status = msg.Done
		}
		return l, l.Refresh()
	}
	return l, nil
}

func (l *List[R]) setRows(rows []R) {
	last := l.opts.Follow && (!l.loaded || l.sel >= len(l.rows)-1)
	cur, selected := l.Selected()
	l.rows = slices.Clone(rows)
	if l.opts.Created != nil {
		slices.SortStableFunc(l.rows, func(a, b R) int { return l.opts.Created(b).Compare(l.opts.Created(a)) })
	}
	switch {
	case last:
		l.sel = len(l.rows) - 1
	case l.opts.ID != nil:
		id := ""
		if selected {
			id = l.opts.ID(cur)
		}
		l.sel = slices.IndexFunc(l.rows, func(r R) bool { return l.opts.ID(r) == id })
	}
	l.loaded = true
	l.move(0)
}

// Key moves the selection (↑ or k, ↓ or j, PgUp, PgDn, Home, End) and
// opens or closes the selected row's details (Enter, with Details); false:
// the key is none of those.
func (l List[R]) Key(msg tea.KeyPressMsg) (List[R], bool) {
	page := l.pageRows()
	switch msg.String() {
	case "up", "k":
		l.move(-1)
	case "down", "j":
		l.move(1)
	case "pgup":
		l.move(-page)
	case "pgdown":
		l.move(page)
	case "home":
		l.move(-len(l.rows))
	case "end":
		l.move(len(l.rows))
	case "enter":
		if l.opts.Details == nil {
			return l, false
		}
		l.open = !l.open
		l.scroll()
	default:
		return l, false
	}
	return l, true
}

func (l *List[R]) move(by int) {
	l.sel = min(max(l.sel+by, 0), max(len(l.rows)-1, 0))
	l.scroll()
}

// frameLines are the lines around the rows: the title, the column names,
// the status line and the last line.
const frameLines = 4

// extraLines are the lines a Lines prompt takes past the last line: its
// input's, under the question's line.
func (l List[R]) extraLines() int {
	if l.asking == 0 || !l.multi {
		return 0
	}
	return l.lines.Height()
}

// pageRows is how many rows fit: the height less the frame, a Lines
// prompt's lines and the details when open.
func (l List[R]) pageRows() int {
	return max(l.Height-frameLines-l.extraLines()-len(l.details()), 1)
}

// scroll moves the window of rows to hold the selection.
func (l *List[R]) scroll() {
	page := l.pageRows()
	if l.sel < l.top {
		l.top = l.sel
	}
	if l.sel >= l.top+page {
		l.top = l.sel - page + 1
	}
	l.top = max(0, min(l.top, len(l.rows)-page))
}

// details are the selected row's lines while open, wrapped to the width
// (a reason or a brief is read whole, not cut at the edge) and cut to
// leave at least one row above them.
func (l List[R]) details() []string {
	r, ok := l.Selected()
	if !l.open || !ok || l.opts.Details == nil {
		return nil
	}
	var lines []string
	for _, d := range l.opts.Details(r) {
		// Drawn after 4 spaces; a continuation after 6.
		wrapped := strings.Split(ansi.Wrap(d, max(l.Width-6, 8), ""), "\n")
		lines = append(lines, wrapped[0])
		for _, w := range wrapped[1:] {
			lines = append(lines, "  "+w)
		}
	}
	if room := max(l.Height-frameLines-l.extraLines()-1, 1); len(lines) > room {
		lines = append(lines[:room-1:room-1], fmt.Sprintf("… %d more", len(lines)-room+1))
	}
	return lines
}

// Ask asks question q (not 0: a panel numbers its own from 1, Briefing is
// n's) on the last line, with placeholder shown until something is typed,
// and clears the status line; need is what an Enter on nothing says there.
func (l *List[R]) Ask(q int, placeholder, need string) tea.Cmd {
	return l.ask(q, Prompt{Placeholder: placeholder, Need: need})
}

func (l *List[R]) ask(q int, p Prompt) tea.Cmd {
	l.asking, l.need, l.Status = q, p.Need, ""
	l.multi, l.hold, l.held = p.Lines, p.Hold, false
	if l.multi {
		l.lines.Reset()
		l.lines.SetWidth(max(l.Width, 1))
		l.lines.Placeholder = p.Placeholder
		return l.lines.Focus()
	}
	l.prompt.Reset()
	l.prompt.Placeholder = p.Placeholder
	return l.prompt.Focus()
}

// HoldBrief puts text on Options.Brief's prompt, held as an Enter on it
// would leave it: a brief given elsewhere (the composer's /repair) is
// then answered like one typed on the prompt, and Release gives it back
// to fix after a refusal. Without Options.Brief it does nothing.
func (l *List[R]) HoldBrief(text string) {
	b := l.opts.Brief
	if b == nil {
		return
	}
	l.ask(Briefing, *b)
	l.setValue(text)
	l.held = true
	l.blur()
}

// Held reports whether an answer is held on the prompt (Prompt.Hold).
func (l List[R]) Held() bool { return l.held }

// Release says how what the held answer asked for went: nil stops asking;
// an error goes on the status line and the prompt is typed into again,
// its text as it was. With no answer held (Esc dropped it) only the error
// is shown.
func (l *List[R]) Release(err error) tea.Cmd {
	if err != nil {
		l.Status = err.Error()
	}
	if !l.held {
		return nil
	}
	l.held = false
	if err == nil {
		l.stop()
		return nil
	}
	return l.focus()
}

func (l *List[R]) value() string {
	if l.multi {
		return l.lines.Value()
	}
	return l.prompt.Value()
}

func (l *List[R]) setValue(text string) {
	if l.multi {
		l.lines.SetValue(text)
		return
	}
	l.prompt.SetValue(text)
}

func (l *List[R]) focus() tea.Cmd {
	if l.multi {
		return l.lines.Focus()
	}
	return l.prompt.Focus()
}

func (l *List[R]) blur() {
	l.prompt.Blur()
	l.lines.Blur()
}

// stop stops asking.
func (l *List[R]) stop() {
	l.asking, l.held = 0, false
	l.blur()
}

// AskReason asks question q for the reason of a refusal, on the prompt.
func (l *List[R]) AskReason(q int) tea.Cmd {
	return l.Ask(q, "why", "a reason is needed: type why, or Esc cancels")
}

// Asking is the question the prompt asks, 0 when none is.
func (l List[R]) Asking() int { return l.asking }

// Editing reports whether a question is being answered: Esc then belongs
// to the panel.
func (l List[R]) Editing() bool { return l.asking != 0 }

// Answer is what Enter gave the prompt: the question answered and the
// text typed, trimmed. Question is 0 when none was answered.
type Answer struct {
	Question int
	Text     string
}

// Type types msg into the prompt: Esc stops asking; Enter on nothing keeps
// asking and says what is needed on the status line; Enter on text answers
// with it and stops asking, or holds it (Prompt.Hold). A held answer takes
// no keys but Esc, which drops it.
func (l List[R]) Type(msg tea.KeyPressMsg) (List[R], Answer, tea.Cmd) {
	switch msg.String() {
	case "esc":
		l.stop()
		return l, Answer{}, nil
	case "enter":
		if l.held {
			return l, Answer{}, nil
		}
		text := strings.TrimSpace(l.value())
		if text == "" {
			l.Status = l.need
			return l, Answer{}, nil
		}
		a := Answer{Question: l.asking, Text: text}
		if l.hold {
			l.held = true
			l.blur()
		} else {
			l.stop()
		}
		return l, a, nil
	}
	if l.held {
		return l, Answer{}, nil
	}
	var cmd tea.Cmd
	if l.multi {
		l.lines.SetWidth(max(l.Width, 1))
		l.lines, cmd = l.lines.Update(msg)
	} else {
		l.prompt, cmd = l.prompt.Update(msg)
	}
	return l, Answer{}, cmd
}

// Input is what a key press gives the panel once the list took its own
// part of it (Press): a key of the panel's, pressed on Row, or the
// prompt's answer. Both are empty when the list took the key whole.
type Input[R any] struct {
	Key    string
	Row    R
	Answer Answer
}

// Press takes a key press for a panel that acts on its rows: while the
// prompt asks, it types into it (Type) and gives its answer; otherwise it
// takes the keys that move the selection or open its details (Key) and n,
// which asks Options.Brief. Another key is the panel's, pressed on the
// selected row; without one the key does nothing.
func (l List[R]) Press(msg tea.KeyPressMsg) (List[R], Input[R], tea.Cmd) {
	if l.Editing() {
		l, ans, cmd := l.Type(msg)
		return l, Input[R]{Answer: ans}, cmd
	}
	if l, moved := l.Key(msg); moved {
		return l, Input[R]{}, nil
	}
	if b := l.opts.Brief; b != nil && msg.String() == "n" {
		cmd := l.ask(Briefing, *b)
		return l, Input[R]{}, cmd
	}
	r, ok := l.Selected()
	if !ok {
		return l, Input[R]{}, nil
	}
	return l, Input[R]{Key: msg.String(), Row: r}, nil
}

// Count is how many rows f holds for: a title's "3 active".
func (l List[R]) Count(f func(R) bool) int {
	n := 0
	for _, r := range l.rows {
		if f(r) {
			n++
		}
	}
	return n
}

// Column is one of a list's columns: its name on the second line and its
// width. One column at the most has neither Width nor Grow: it takes what
// the others leave.
type Column struct {
	Name string
	// Width is the column's width in cells.
	Width int
	// Grow, when set, gives the width (Width is not read) from what the
	// columns with a Width and the two cells of the selection mark leave:
	// an id's share.
	Grow func(left int) int
	// Gap cuts the column's cells a cell short, so that a value as wide
	// as the column keeps a space before the next.
	Gap bool
}

// widths are the columns' widths at the list's width.
func (l List[R]) widths(cols []Column) []int {
	left := l.Width - 2
	for _, c := range cols {
		if c.Grow == nil {
			left -= c.Width
		}
	}
	w := make([]int, len(cols))
	rest := left
	for i, c := range cols {
		w[i] = c.Width
		if c.Grow != nil {
			w[i] = c.Grow(left)
			rest -= w[i]
		}
	}
	for i, c := range cols {
		if c.Width == 0 && c.Grow == nil {
			w[i] = max(rest, 0)
		}
	}
	return w
}

// join fits each cell to its column and joins them.
func join(cells []string, cols []Column, widths []int) string {
	var b strings.Builder
	for i, c := range cols {
		cell := ""
		if i < len(cells) {
			cell = cells[i]
		}
		if c.Gap {
			b.WriteString(common.Fit(cell, widths[i]-1) + " ")
		} else {
			b.WriteString(common.Fit(cell, widths[i]))
		}
	}
	return b.String()
}

// Frame is what a panel draws around its rows, at each View.
type Frame[R any] struct {
	// Title is the first line; the columns' names are the second.
	Title   string
	Columns []Column
	// Cells are a row's cells, one a column, drawn after the two cells of
	// the selection mark.
	Cells func(R) []string
	// Empty is said when a read found no rows: "no jobs yet: n starts one".
	Empty string
	// Unread is said until the first answer (default: "asking axlrd…"),
	// and not once a read failed: the status line says why.
	Unread string
	// Hint is the status line while Status is empty: a line of the
	// selected row, dimmed (nil: the line stays empty).
	Hint func(R) string
	// Ask starts the last line while the prompt asks, before what is
	// typed: "reason (Enter sends, Esc cancels): "; a Lines prompt has it
	// on a line of its own, above what is typed. Keys is the last line
	// otherwise, dimmed.
	Ask, Keys string
}

// View draws the list in its Width×Height: the title, the column names,
// the window of rows (the selected one marked "> "), the details, the
// status line and the prompt (a Lines prompt's lines under it) or the
// keys.
func (l List[R]) View(f Frame[R]) string {
	s := l.Styles
	widths := l.widths(f.Columns)
	names := make([]string, len(f.Columns))
	for i, c := range f.Columns {
		names[i] = c.Name
	}
	row := func(r R) string { return join(f.Cells(r), f.Columns, widths) }
	var b strings.Builder
	line := func(text string) {
		b.WriteString(text)
		b.WriteByte('\n')
	}
	line(s.Title.Render(common.Fit(f.Title, l.Width)))
	line(s.Dim.Render(common.Fit("  "+join(names, f.Columns, widths), l.Width)))
	lines := 2
	if !l.loaded && l.failed == "" {
		line(common.Fit("  "+cmp.Or(f.Unread, "asking axlrd…"), l.Width))
		lines++
	} else if l.loaded && len(l.rows) == 0 {
		line(common.Fit("  "+f.Empty, l.Width))
		lines++
	}
	page := l.pageRows()
	for i := l.top; i < len(l.rows) && i < l.top+page; i++ {
		// A panel's columns have their own widths: on a screen narrower
		// than them the row is cut, not drawn past the edge.
		if i == l.sel {
			line(s.Selected.Render(common.Fit("> "+row(l.rows[i]), l.Width)))
		} else {
			line(common.Fit("  "+row(l.rows[i]), l.Width))
		}
		lines++
	}
	for _, d := range l.details() {
		line(common.Fit("    "+d, l.Width))
		lines++
	}
	for ; lines < l.Height-2-l.extraLines(); lines++ {
		line(strings.Repeat(" ", l.Width))
	}
	if r, ok := l.Selected(); ok && l.Status == "" && f.Hint != nil {
		line(s.Dim.Render(common.Fit(f.Hint(r), l.Width)))
	} else {
		line(s.Error.Render(common.Fit(l.Status, l.Width)))
	}
	switch {
	case l.asking != 0 && l.multi:
		b.WriteString(common.Fit(f.Ask, l.Width))
		for _, typed := range strings.Split(l.lines.View(), "\n") {
			b.WriteString("\n" + common.Fit(typed, l.Width))
		}
	case l.asking != 0:
		b.WriteString(common.Fit(f.Ask+l.prompt.View(), l.Width))
	default:
		b.WriteString(s.Dim.Render(common.Fit(f.Keys, l.Width)))
	}
	return b.String()
}
