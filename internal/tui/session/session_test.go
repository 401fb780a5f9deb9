package session

import (
	"reflect"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    tea.Msg
		wantErr string
	}{
		{"fix the build", PromptMsg{Text: "fix the build"}, ""},
		{"/jobs", SlashMsg{Command: "/jobs"}, ""},
		{"/repair hello_probe fails", SlashMsg{Command: "/repair", Args: "hello_probe fails"}, ""},
		{"/stop-ceremony", SlashMsg{Command: "/stop-ceremony"}, ""},
		{"/new", SlashMsg{Command: "/new"}, ""},
		{"/exit", SlashMsg{Command: "/exit"}, ""},
		{"/nope", nil, "unknown command /nope: the commands are /debug"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
}

func TestComposer(t *testing.T) {
	m := New(common.New(80, 24, false))
	for _, k := range tuitest.Type("one") {
		m, _ = m.Update(k)
	}
	m, _ = m.Update(tuitest.Key("shift+enter"))
	for _, k := range tuitest.Type("two") {
		m, _ = m.Update(k)
	}
	m, cmd := m.Update(tuitest.Key("enter"))
	if cmd == nil {
		t.Fatal("enter sent nothing")
	}
	if got := cmd(); !reflect.DeepEqual(got, PromptMsg{Text: "one\ntwo"}) {
		t.Errorf("sent %#v, want the two lines", got)
	}
	if _, cmd := m.Update(tuitest.Key("enter")); cmd != nil {
		t.Error("an empty composer sent something")
	}
}

func TestTranscriptStreams(t *testing.T) {
	m := New(common.New(80, 24, false))
	for _, ev := range []contract.Event{
		{Type: contract.EventReasoning, Text: "look at "}, {Type: contract.EventReasoning, Text: "the file"},
		{Type: contract.EventToolRequested, Tool: "local_read", Arguments: []byte(`{"path":"a.go"}`)},
		{Type: contract.EventText, Text: "It "}, {Type: contract.EventText, Text: "compiles."},
		{Type: contract.EventCompleted},
	} {
		m, _ = m.Update(EventMsg{Event: ev})
	}
	want := []string{"thinking: look at the file", `→ local_read {"path":"a.go"}`, "It compiles."}
	if got := m.Transcript(); !reflect.DeepEqual(got, want) {
		t.Errorf("transcript %q, want %q", got, want)
	}
	if !strings.Contains(m.View(), "It compiles.") {
		t.Errorf("view misses the answer:\n%s", m.View())
	}
}

// Under NO_COLOR the composer, its prompt and its placeholder are plain:
// no escape sequence but the cursor's reverse video.
func TestNoColorComposer(t *testing.T) {
	view := New(common.New(80, 24, false)).View()
	plain := strings.ReplaceAll(strings.ReplaceAll(view, "\x1b[7m", ""), "\x1b[m", "")
	if strings.Contains(plain, "\x1b[") {
		t.Errorf("escape sequences under NO_COLOR: %q", view)
	}
}

// Deltas show as they arrive; the completed text stands in for them.
func TestTranscriptDeltas(t *testing.T) {
	delta := func(text string) contract.Event { return contract.Event{Type: contract.EventTextDelta, Text: text} }
	thinking := func(text string) contract.Event {
		return contract.Event{Type: contract.EventReasoningDelta, Text: text}
	}
	text := func(text string) contract.Event { return contract.Event{Type: contract.EventText, Text: text} }
	reasoning := func(text string) contract.Event { return contract.Event{Type: contract.EventReasoning, Text: text} }
	tests := []struct {
		name   string
		events []contract.Event
		want   []string
		// wantView shows exactly once in the view.
		wantView string
	}{
		{"streaming", []contract.Event{delta("He"), delta("llo")}, []string{"Hello"}, "Hello"},
		{"streaming plain", []contract.Event{delta("**a."), delta("txt")}, []string{"**a.txt"}, "**a.txt"},
		{"replaced", []contract.Event{delta("He"), delta("llo"), text("Hello")}, []string{"Hello"}, "Hello"},
		{"no deltas", []contract.Event{text("Hello")}, []string{"Hello"}, "Hello"},
		{"deltas that outran the tool events", []contract.Event{delta("I ad"),
			{Type: contract.EventToolRequested, Tool: "local_write", Arguments: []byte(`{}`)},
			{Type: contract.EventToolCompleted, Tool: "local_write", Status: contract.CallCompleted},
			delta("ded it."), text("I added it.")},
			[]string{"→ local_write {}", "← local_write completed", "I added it."}, "I added it."},
		{"joined after the replacement", []contract.Event{delta("one\n"), delta("two"), text("one\n"), text("two")},
			[]string{"one\ntwo"}, "two"},
		{"reasoning replaced", []contract.Event{thinking("look "), thinking("here"), reasoning("look here")},
			[]string{"thinking: look here"}, "look here"},
		{"reasoning then text", []contract.Event{
			thinking("look "), thinking("here"), delta("It "), delta("compiles."),
			reasoning("look "), reasoning("here"), text("It compiles."),
		}, []string{"thinking: look here", "It compiles."}, "It compiles."},
		{"reasoning not streamed", []contract.Event{delta("Hi"), reasoning("why"), text("Hi")},
			[]string{"thinking: why", "Hi"}, "why"},
		{"tool after streaming", []contract.Event{delta("Hi"), {Type: contract.EventToolRequested, Tool: "local_read"}},
			[]string{"Hi", "→ local_read "}, "Hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(common.New(80, 24, false))
			for _, ev := range tt.events {
				m, _ = m.Update(EventMsg{Event: ev})
			}
			if got := m.Transcript(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("transcript %q, want %q", got, tt.want)
			}
			if view := m.View(); strings.Count(view, tt.wantView) != 1 {
				t.Errorf("view shows %q %d times, want once:\n%s", tt.wantView, strings.Count(view, tt.wantView), view)
			}
		})
	}
}

func TestMarkdown(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		color     bool
		width     int
		want, not []string
	}{
		{"bold", "**a.txt** changed", false, 30, []string{"a.txt changed"}, []string{"**", "\x1b"}},
		{"bold in colour", "**a.txt** changed", true, 30, []string{"a.txt", "\x1b["}, []string{"**"}},
		{"list", "- one\n- two", false, 30, []string{"• one", "• two"}, []string{"- one"}},
		{"heading", "# Title\n\ntext", false, 30, []string{"Title", "text"}, []string{"\x1b"}},
		{"code block", "```go\nx := 1\n```", false, 30, []string{"x := 1"}, []string{"```"}},
		{"link", "see https://example.com", false, 30, []string{"https://example.com"}, []string{"\x1b"}},
		{"long line", "```\n" + strings.Repeat("a", 60) + "\n```", false, 30, []string{"aaaa"}, nil},
		{"narrow", "hello world", true, 3, []string{"hel"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := (&renderer{color: tt.color}).render(tt.in, tt.width)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("%q misses %q", out, s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(out, s) {
					t.Errorf("%q has %q", out, s)
				}
			}
			if strings.HasPrefix(out, "\n") || strings.HasSuffix(out, "\n") {
				t.Errorf("blank lines around %q", out)
			}
			for line := range strings.Lines(out) {
				if w := ansi.StringWidth(strings.TrimSuffix(line, "\n")); w > tt.width {
					t.Errorf("line %q is %d wide, over %d", line, w, tt.width)
				}
			}
		})
	}
}

// An answer is rendered once, and again only when its text or the width
// changes.
func TestMarkdownCached(t *testing.T) {
	m := New(common.New(40, 24, false))
	m, _ = m.Update(EventMsg{Event: contract.Event{Type: contract.EventText, Text: "**a.txt**"}})
	if view := m.View(); !strings.Contains(view, "a.txt") || strings.Contains(view, "**") {
		t.Fatalf("view misses the rendered answer:\n%s", view)
	}
	m.entries[0].md.out = "cached"
	if !strings.Contains(m.View(), "cached") {
		t.Error("the answer was rendered again")
	}
	m.SetSize(50, 24)
	if strings.Contains(m.View(), "cached") {
		t.Error("the answer was not rendered again at the new width")
	}
	m.entries[0].md.out = "cached"
	m, _ = m.Update(EventMsg{Event: contract.Event{Type: contract.EventText, Text: " more"}})
	if view := m.View(); strings.Contains(view, "cached") || !strings.Contains(view, "a.txt more") {
		t.Errorf("the answer was not rendered again with its new text:\n%s", view)
	}
}
