// Package session is the TUI's session view: the transcript, which grows
// as text and reasoning events arrive, and the composer (Enter sends,
// Shift+Enter a new line). Text and reasoning show as their deltas stream
// in, until the response's completed text replaces them; answers are drawn
// as Markdown. What is sent comes out as a PromptMsg, or as a SlashMsg for
// a slash command; the parent runs it through the client.
package session

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/tui/common"
)

// Commands are the slash commands the composer knows.
var Commands = []string{"/debug", "/delivery", "/incident", "/repair", "/improve", "/plan", "/ceremony", "/normal", "/review", "/writer", "/research", "/approve",
	"/jobs", "/plans", "/sessions", "/history", "/stop-ceremony", "/parar", "/new", "/exit"}

// PromptMsg is a prompt the person sent.
type PromptMsg struct{ Text string }

// SlashMsg is a slash command the person sent, with what follows it.
type SlashMsg struct{ Command, Args string }

// EventMsg is an event of the running execution, for the transcript.
type EventMsg struct{ Event contract.Event }

// NoteMsg is a line the parent adds to the transcript (an error, an
// outcome).
type NoteMsg struct{ Text string }

type entry struct {
	kind string
	text string
	// streaming: text is the deltas so far, drawn plain until the
	// response's text or reasoning event replaces it.
	streaming bool
	// md is a text entry drawn as Markdown, as last drawn.
	md rendered
}

// Model is the session view.
type Model struct {
	common.Common
	entries  []*entry
	composer textarea.Model
	md       *renderer
}

const composerHeight = 3

// New returns the view, its composer focused.
func New(com common.Common) Model {
	ta := textarea.New()
	ta.Placeholder = "a prompt, or a /command"
	ta.ShowLineNumbers = false
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "ctrl+j"))
	ta.SetWidth(com.Width)
	ta.SetHeight(composerHeight)
	if !com.Color {
		// NO_COLOR: the composer's text, prompt and placeholder plain too.
		st := ta.Styles()
		st.Focused, st.Blurred = textarea.StyleState{}, textarea.StyleState{}
		st.Cursor.Color = nil
		ta.SetStyles(st)
	}
	ta.Focus()
	return Model{Common: com, composer: ta, md: &renderer{color: com.Color}}
}

// SetSize sets the view's size.
func (m *Model) SetSize(w, h int) {
	m.Common.SetSize(w, h)
	m.composer.SetWidth(w)
}

// Transcript is the transcript as plain text, one entry a line group.
func (m Model) Transcript() []string {
	var out []string
	for _, e := range m.entries {
		out = append(out, e.text)
	}
	return out
}

// Update handles the composer's keys and the transcript's messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case EventMsg:
		m.add(msg.Event)
		return m, nil
	case NoteMsg:
		m.entries = append(m.entries, &entry{kind: "note", text: msg.Text})
		return m, nil
	case tea.KeyPressMsg:
		if msg.String() == "enter" {
			text := strings.TrimSpace(m.composer.Value())
			if text == "" {
				return m, nil
			}
			m.composer.Reset()
			out, err := Parse(text)
			if err != nil {
				m.entries = append(m.entries, &entry{kind: "note", text: err.Error()})
				return m, nil
			}
			if p, ok := out.(PromptMsg); ok {
				m.entries = append(m.entries, &entry{kind: "you", text: "> " + p.Text})
			}
			return m, func() tea.Msg { return out }
		}
	}
	var cmd tea.Cmd
	m.composer, cmd = m.composer.Update(msg)
	return m, cmd
}

// Parse turns what was sent into a PromptMsg or, for text that starts with
// "/", a SlashMsg; an unknown command is an error that lists the known
// ones.
func Parse(text string) (tea.Msg, error) {
	if !strings.HasPrefix(text, "/") {
		return PromptMsg{Text: text}, nil
	}
	cmd, args, _ := strings.Cut(text, " ")
	if !slices.Contains(Commands, cmd) {
		return nil, fmt.Errorf("unknown command %s: the commands are %s", cmd, strings.Join(Commands, " "))
	}
	return SlashMsg{Command: cmd, Args: strings.TrimSpace(args)}, nil
}

// add puts an event in the transcript. A delta extends the streaming entry
// of its kind or starts one; the text or reasoning event that follows
// replaces that entry's text, and the next ones of the response join it.
func (m *Model) add(ev contract.Event) {
	var e *entry
	switch ev.Type {
	case contract.EventTextDelta, contract.EventReasoningDelta:
		kind := "text"
		if ev.Type == contract.EventReasoningDelta {
			kind = "reasoning"
		}
		if i := m.last(kind); i >= 0 && m.entries[i].kind == kind && m.entries[i].streaming {
			m.entries[i].text += ev.Text
			return
		}
		e = &entry{kind: kind, text: label(kind, ev.Text), streaming: true}
	case contract.EventText, contract.EventReasoning:
		kind := string(ev.Type)
		m.dropStale(kind)
		switch i := m.last(kind); {
		case i >= 0 && m.entries[i].kind == kind && m.entries[i].streaming:
			m.entries[i].text, m.entries[i].streaming = label(kind, ev.Text), false
		case i >= 0 && m.entries[i].kind == kind:
			m.entries[i].text += ev.Text
		default:
			m.entries = slices.Insert(m.entries, i+1, &entry{kind: kind, text: label(kind, ev.Text)})
		}
		return
	case contract.EventToolRequested:
		e = &entry{kind: "tool", text: "→ " + ev.Tool + " " + string(ev.Arguments)}
	case contract.EventToolCompleted:
		e = &entry{kind: "tool", text: "← " + ev.Tool + " " + string(ev.Status)}
	case contract.EventFailed:
		e = &entry{kind: "note", text: "failed: " + ev.Error}
	case contract.EventStepClaimed:
		e = &entry{kind: "note", text: "step " + ev.Step + " claimed"}
	case contract.EventCeremonyStopped:
		e = &entry{kind: "note", text: "ceremony stopped: " + ev.Reason}
	default:
		return
	}
	m.entries = append(m.entries, e)
}

// dropStale removes the streaming entries of kind that a completed event
// does not replace: text that streamed before events which came between
// (the deltas outran them), and which the completed text stands in for.
func (m *Model) dropStale(kind string) {
	keep := m.last(kind)
	kept := m.entries[:0:0]
	for i, e := range m.entries {
		if e.streaming && e.kind == kind && i != keep {
			continue
		}
		kept = append(kept, e)
	}
	m.entries = kept
}

// last returns the index of the entry a text or reasoning event of kind
// goes to, or after: the last entry, passing over streaming entries of the
// other kind (what the same response streamed after it); -1 if none.
func (m *Model) last(kind string) int {
	i := len(m.entries) - 1
	for i >= 0 && m.entries[i].streaming && m.entries[i].kind != kind {
		i--
	}
	return i
}

// label is the text an entry of kind starts with.
func label(kind, text string) string {
	if kind == "reasoning" {
		return "thinking: " + text
	}
	return text
}

// View draws the transcript's last lines above the composer.
func (m Model) View() string {
	var lines []string
	width := max(m.Width, 1)
	for _, e := range m.entries {
		var text string
		if e.kind == "text" && !e.streaming {
			text = m.md.answer(e, width)
		} else {
			text = ansi.Wrap(e.text, width, "")
		}
		if e.kind == "reasoning" || e.kind == "tool" {
			text = m.Styles.Dim.Render(text)
		}
		lines = append(lines, strings.Split(text, "\n")...)
	}
	room := max(m.Height-composerHeight-1, 0)
	if len(lines) > room {
		lines = lines[len(lines)-room:]
	}
	for len(lines) < room {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n") + "\n" + strings.Repeat("─", m.Width) + "\n" + m.composer.View()
}

// Empty reports whether the composer holds nothing.
func (m Model) Empty() bool { return m.composer.Value() == "" }
