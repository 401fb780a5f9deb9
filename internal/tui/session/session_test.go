package session

import (
	"reflect"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

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
