package tui

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/session"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
)

// busy is axlrd's refusal of a close while the session runs an execution.
var busy = &client.RefusedError{Message: "session s1 is running execution e2: wait for it to end or interrupt it"}

// started is the TUI once its first prompt ran in session s1 and
// answered.
func started(t *testing.T, f *fakeClient, opts Options) Model {
	t.Helper()
	m := New(context.Background(), f, opts)
	m, cmd := send(t, m, "hi")
	m, _ = step(t, m, cmd())
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.Completed}})
	if m.sessionID != "s1" {
		t.Fatalf("session %q after the first prompt, want s1", m.sessionID)
	}
	return m
}

// quits reports whether cmd ends the program.
func quits(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

// /exit closes the session prompts go to, for /exit, then quits, saying
// how the close went in the transcript and on stderr after (farewell).
// Without a session it quits at once.
func TestExitClosesTheSession(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true})
	if _, cmd := send(t, m, "/exit"); !quits(cmd) || slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "close") }) {
		t.Fatalf("/exit with no session: calls %q, want a quit and no close", f.calls)
	}

	f = &fakeClient{}
	m = started(t, f, Options{NoColor: true, Root: "/w"})
	m, cmd := send(t, m, "/exit")
	if quits(cmd) {
		t.Fatal("/exit quit before the close")
	}
	m, cmd = step(t, m, cmd())
	if last := f.calls[len(f.calls)-1]; last != "close s1: the person left with /exit" {
		t.Fatalf("calls %q, want the close of s1 last", f.calls)
	}
	if !quits(cmd) {
		t.Fatal("/exit did not quit once the session closed")
	}
	const said = "session s1 closed: axlrd records its closing turn"
	if m.farewell != said || !strings.Contains(m.View().Content, said) {
		t.Errorf("farewell %q, view:\n%s\nwant %q in both", m.farewell, m.View().Content, said)
	}
}

// /new closes the session and leaves the TUI on none: the next prompt
// starts a new session in the workspace, with --mode as the first did.
// Without a session it only says the next prompt starts one.
func TestNewClosesAndStartsASession(t *testing.T) {
	f := &fakeClient{}
	m := New(context.Background(), f, Options{NoColor: true})
	m, cmd := send(t, m, "/new")
	if cmd != nil || len(f.calls) != 0 || !strings.Contains(m.View().Content, "no session yet: the next prompt starts one") {
		t.Fatalf("/new with no session: calls %q:\n%s", f.calls, m.View().Content)
	}

	f = &fakeClient{}
	m = started(t, f, Options{NoColor: true, Root: "/w", Mode: "review"})
	m, cmd = send(t, m, "/review")
	m, cmd = send(t, m, "/new")
	m, cmd = step(t, m, cmd())
	if cmd != nil || m.sessionID != "" || f.calls[len(f.calls)-1] != "close s1: the person started a new session with /new" {
		t.Fatalf("after /new: session %q, calls %q", m.sessionID, f.calls)
	}
	if view := m.View().Content; !strings.Contains(view, "session s1 closed") || !strings.Contains(view, "a new session: the next prompt starts it") {
		t.Fatalf("/new says nothing of the close and the new session:\n%s", view)
	}
	if footer := m.footer.View(); !strings.HasPrefix(footer, "review · ") {
		t.Errorf("footer %q, want the new session's --mode", footer)
	}
	m, cmd = send(t, m, "again")
	cmd()
	if last := f.calls[len(f.calls)-1]; last != "start again in /w" || len(f.reqs) != 2 || f.reqs[1].Mode != "review" {
		t.Fatalf("the prompt after /new: calls %q, requests %+v; want a new session started with --mode", f.calls, f.reqs)
	}
}

// Picking another session closes the one left, then resumes the one
// picked; picking the session prompts already go to closes nothing.
func TestPickerSwitchClosesTheSessionLeft(t *testing.T) {
	f := &fakeClient{}
	m := started(t, f, Options{NoColor: true, Root: "/w"})
	m, cmd := send(t, m, "/sessions")
	m, _ = step(t, m, cmd())
	m, cmd = step(t, m, tuitest.Key("enter"))
	m, cmd = step(t, m, cmd()) // the pick
	m, cmd = step(t, m, cmd()) // the close
	m, _ = step(t, m, cmd())   // the resume
	i := slices.Index(f.calls, "close s1: the person switched to session s-old")
	if i < 0 || i+1 >= len(f.calls) || f.calls[i+1] != "result s-old" || m.sessionID != "s-old" {
		t.Fatalf("session %q, calls %q: want s1 closed, then s-old resumed", m.sessionID, f.calls)
	}
	if view := m.View().Content; !strings.Contains(view, "session s1 closed") || !strings.Contains(view, "resumed session s-old") {
		t.Fatalf("the switch says nothing of the close:\n%s", view)
	}
	m, _ = step(t, m, tuitest.Key("esc")) // the card of the call s-old waits on
	m, cmd = send(t, m, "/sessions")
	m, _ = step(t, m, cmd())
	calls := len(f.calls)
	m, cmd = step(t, m, tuitest.Key("enter"))
	m, cmd = step(t, m, cmd())
	cmd()
	if got := f.calls[calls:]; !slices.Equal(got, []string{"result s-old"}) {
		t.Errorf("picking the session prompts go to: calls %q, want only its resume", got)
	}
}

// A close that fails is a note, and the TUI leaves the session anyway:
// /exit quits (saying it on stderr after), /new and the picker switch.
func TestFailedCloseStillLeaves(t *testing.T) {
	const said = "session s1 not closed: " + "session s1 is running execution e2: wait for it to end or interrupt it"
	for _, tt := range []struct {
		name  string
		leave func(t *testing.T, m Model) (Model, tea.Cmd)
		check func(t *testing.T, m Model, cmd tea.Cmd)
	}{
		{"exit", func(t *testing.T, m Model) (Model, tea.Cmd) { return send(t, m, "/exit") },
			func(t *testing.T, m Model, cmd tea.Cmd) {
				if !quits(cmd) || m.farewell != said {
					t.Errorf("a failed close: farewell %q, want a quit saying %q", m.farewell, said)
				}
			}},
		{"new", func(t *testing.T, m Model) (Model, tea.Cmd) { return send(t, m, "/new") },
			func(t *testing.T, m Model, cmd tea.Cmd) {
				if m.sessionID != "" || m.farewell != "" {
					t.Errorf("a failed close: session %q, farewell %q; want none", m.sessionID, m.farewell)
				}
			}},
		{"picker", func(t *testing.T, m Model) (Model, tea.Cmd) {
			m, cmd := send(t, m, "/sessions")
			m, _ = step(t, m, cmd())
			m, cmd = step(t, m, tuitest.Key("enter"))
			return step(t, m, cmd())
		}, func(t *testing.T, m Model, cmd tea.Cmd) {
			if msg, ok := cmd().(resumedMsg); !ok || msg.session != "s-old" {
				t.Errorf("a failed close: the switch does not resume s-old: %#v", msg)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClient{closeErr: busy}
			m := started(t, f, Options{NoColor: true, Root: "/w"})
			m, cmd := tt.leave(t, m)
			m, cmd = step(t, m, cmd())
			if !slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "close s1: ") }) {
				t.Fatalf("calls %q: no close asked", f.calls)
			}
			if !slices.Contains(m.session.Transcript(), said) {
				t.Fatalf("the failed close is not noted: transcript %q", m.session.Transcript())
			}
			tt.check(t, m, cmd)
		})
	}
}

// Ctrl+C leaves without closing the session, as a crash would.
func TestCtrlCDoesNotClose(t *testing.T) {
	f := &fakeClient{}
	m := started(t, f, Options{NoColor: true, Root: "/w"})
	_, cmd := step(t, m, tuitest.Key("ctrl+c"))
	if !quits(cmd) || slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "close") }) {
		t.Fatalf("ctrl+c: calls %q, want a quit and no close", f.calls)
	}
}

// Leaving a session whose execution still runs (its close refused as
// busy) stops following it: what its watch still sends is drained, not
// shown, and its result opens no card for the session the TUI is on now.
func TestLeftWatchIsNotShown(t *testing.T) {
	f := &fakeClient{closeErr: busy}
	m := New(context.Background(), f, Options{NoColor: true, Root: "/w"})
	m, cmd := send(t, m, "hi")
	m, _ = step(t, m, cmd())
	old := m.events
	if m.running == nil || old == nil {
		t.Fatal("no execution runs after the prompt")
	}
	m, cmd = send(t, m, "/new")
	m, _ = step(t, m, cmd())
	m, cmd = step(t, m, eventMsg{msg: session.EventMsg{Event: contract.Event{Type: contract.EventText, Text: "late text"}}, from: old})
	if strings.Contains(m.View().Content, "late text") || cmd == nil {
		t.Fatalf("the left watch's text is shown, or its channel no longer drained (cmd %v):\n%s", cmd != nil, m.View().Content)
	}
	pending := &contract.PendingCall{CallID: "c1", Tool: "local_exec", Arguments: json.RawMessage(`{}`)}
	m, _ = step(t, m, resultMsg{res: &contract.Result{Status: contract.NeedsDecision, SessionID: "s1", Pending: pending}, from: old})
	if m.view != sessionView {
		t.Errorf("the left watch's result opened a card (view %d)", m.view)
	}
}
