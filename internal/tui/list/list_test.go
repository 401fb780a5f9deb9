package list

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/tuitest"
)

var update = flag.Bool("update", false, "rewrite the golden views")

// row is a record of the tests: a name, its time and its details.
type row struct {
	id     string
	at     time.Time
	detail int // lines of details
}

var day = time.Date(2026, 10, 20, 9, 0, 0, 0, time.UTC)

// rows are n rows, oldest first, named r00 (oldest) to r<n-1> (newest).
func rows(n int) []row {
	var out []row
	for i := range n {
		out = append(out, row{id: fmt.Sprintf("r%02d", i), at: day.Add(time.Duration(i) * time.Minute), detail: 2})
	}
	return out
}

// reader is the Read of a list: what it answers, and how often it was
// asked.
type reader struct {
	rows  []row
	err   error
	reads atomic.Int32
}

func (r *reader) read() ([]row, error) {
	r.reads.Add(1)
	return r.rows, r.err
}

func newList(r *reader, width, height int) List[row] {
	return New(common.New(width, height, false), Options[row]{
		Name: "rows", Read: r.read, Every: time.Millisecond,
		ID: func(r row) string { return r.id }, Created: func(r row) time.Time { return r.at },
		Details: func(r row) []string {
			var lines []string
			for i := range r.detail {
				lines = append(lines, fmt.Sprintf("%s detail %d", r.id, i+1))
			}
			return lines
		},
	})
}

func loadedList(t *testing.T, r *reader, width, height int) List[row] {
	t.Helper()
	l := newList(r, width, height)
	l, _ = l.Update(l.Init()())
	return l
}

// frame draws rows at 40 columns.
var frame = Frame[row]{Title: "Rows", Columns: []Column{{Name: "ID"}}, Cells: func(r row) []string { return []string{r.id} },
	Empty: "no rows yet", Ask: "why: ", Keys: "↑↓ move"}

// visible are the ids of the rows drawn, the selected one marked.
func visible(l List[row]) []string {
	var ids []string
	for _, line := range strings.Split(l.View(frame), "\n") {
		line = strings.TrimRight(line, " ")
		if id, ok := strings.CutPrefix(line, "> r"); ok {
			ids = append(ids, ">r"+id)
		} else if id, ok := strings.CutPrefix(line, "  r"); ok {
			ids = append(ids, "r"+id)
		}
	}
	return ids
}

// TestKeys: at 10 lines, 6 of 30 rows fit under the title and the column
// names, above the status and the keys; each key moves the selection and
// the window follows it, Enter's details taking rows from the window.
func TestKeys(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
		sel  string
		rows []string
	}{
		{name: "newest first, at the top", sel: "r29", rows: []string{">r29", "r28", "r27", "r26", "r25", "r24"}},
		{name: "up at the top stays", keys: []string{"up", "k"}, sel: "r29", rows: []string{">r29", "r28", "r27", "r26", "r25", "r24"}},
		{name: "down within the window", keys: []string{"down", "j"}, sel: "r27", rows: []string{"r29", "r28", ">r27", "r26", "r25", "r24"}},
		{name: "down past the window scrolls one", keys: strings.Fields("down down down down down down"), sel: "r23",
			rows: []string{"r28", "r27", "r26", "r25", "r24", ">r23"}},
		{name: "pgdown moves a window", keys: []string{"pgdown"}, sel: "r23", rows: []string{"r28", "r27", "r26", "r25", "r24", ">r23"}},
		{name: "pgup back", keys: []string{"pgdown", "pgdown", "pgup"}, sel: "r23", rows: []string{">r23", "r22", "r21", "r20", "r19", "r18"}},
		{name: "end", keys: []string{"end"}, sel: "r00", rows: []string{"r05", "r04", "r03", "r02", "r01", ">r00"}},
		{name: "pgdown at the end stays", keys: []string{"end", "pgdown"}, sel: "r00", rows: []string{"r05", "r04", "r03", "r02", "r01", ">r00"}},
		{name: "home", keys: []string{"end", "home"}, sel: "r29", rows: []string{">r29", "r28", "r27", "r26", "r25", "r24"}},
		{name: "details take two rows", keys: []string{"enter"}, sel: "r29", rows: []string{">r29", "r28", "r27", "r26"}},
		{name: "details keep the selection in the window", keys: []string{"down", "down", "down", "down", "down", "enter"}, sel: "r24",
			rows: []string{"r27", "r26", "r25", ">r24"}},
		{name: "enter again closes them", keys: []string{"enter", "enter"}, sel: "r29", rows: []string{">r29", "r28", "r27", "r26", "r25", "r24"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := loadedList(t, &reader{rows: rows(30)}, 40, 10)
			for _, k := range tt.keys {
				var ok bool
				if l, ok = l.Key(tuitest.Key(k)); !ok {
					t.Fatalf("%s is not the list's key", k)
				}
			}
			if r, _ := l.Selected(); r.id != tt.sel {
				t.Errorf("selected %s, want %s", r.id, tt.sel)
			}
			if got := visible(l); !reflect.DeepEqual(got, tt.rows) {
				t.Errorf("rows drawn %q, want %q", got, tt.rows)
			}
		})
	}
}

// TestKeysLeftToThePanel: the list takes no other key, nor Enter when it
// has no details.
func TestKeysLeftToThePanel(t *testing.T) {
	l := loadedList(t, &reader{rows: rows(3)}, 40, 10)
	for _, k := range []string{"a", "n", "g", "esc", "tab"} {
		if _, ok := l.Key(tuitest.Key(k)); ok {
			t.Errorf("the list took %s", k)
		}
	}
	bare := New(common.New(40, 10, false), Options[row]{ID: func(r row) string { return r.id }, Created: func(r row) time.Time { return r.at }})
	if _, ok := bare.Key(tuitest.Key("enter")); ok {
		t.Error("a list without details took Enter")
	}
}

// TestRefreshKeepsTheSelection: a refresh sorts the rows newest first and
// keeps the selected row selected; when it is gone, the newest is.
func TestRefreshKeepsTheSelection(t *testing.T) {
	l := loadedList(t, &reader{rows: rows(5)}, 40, 10)
	l, _ = l.Key(tuitest.Key("down"))
	l, _ = l.Update(Records[row]{Records: append(rows(5), row{id: "newer", at: day.Add(time.Hour)})})
	if r, _ := l.Selected(); r.id != "r03" {
		t.Errorf("selected %s after a refresh, want r03", r.id)
	}
	if got := l.Rows()[0].id; got != "newer" {
		t.Errorf("first row %s, want the newest", got)
	}
	l, _ = l.Update(Records[row]{Records: rows(2)})
	if r, _ := l.Selected(); r.id != "r01" {
		t.Errorf("selected %s once the selected row is gone, want r01", r.id)
	}
	l, _ = l.Update(Records[row]{Err: errors.New("axlrd is not reachable")})
	if len(l.Rows()) != 2 || l.Status != "rows: axlrd is not reachable" {
		t.Errorf("a failed read left %d rows and status %q", len(l.Rows()), l.Status)
	}
}

// TestRefreshesOneAtATime: however many answers come, one timed refresh
// is scheduled at a time; its tick reads again, and its answer schedules
// the next. An action's answer shows and reads again.
func TestRefreshesOneAtATime(t *testing.T) {
	r := &reader{rows: rows(3)}
	l := newList(r, 40, 10)
	l, tick := l.Update(l.Init()())
	if tick == nil {
		t.Fatal("the first answer schedules no timed refresh")
	}
	if _, cmd := l.Update(Records[row]{Records: rows(3)}); cmd != nil {
		t.Fatal("a second answer scheduled a second timed refresh: they would stack")
	}
	l, read := l.Update(tick())
	if read == nil {
		t.Fatal("the tick reads nothing")
	}
	if _, next := l.Update(read()); next == nil {
		t.Fatal("the tick's answer schedules no next refresh")
	}
	l, read = l.Update(Acted[row]{Done: "did r02"})
	if read == nil || l.Status != "did r02" {
		t.Fatalf("an action's answer: status %q, refresh %v", l.Status, read != nil)
	}
	if msg, ok := read().(Records[row]); !ok || len(msg.Records) != 3 {
		t.Errorf("the refresh answered %#v", msg)
	}
	if l, _ = l.Update(Acted[row]{Err: errors.New("r02 waits for nothing")}); l.Status != "r02 waits for nothing" {
		t.Errorf("an action's error: status %q", l.Status)
	}
	if n := r.reads.Load(); n != 3 {
		t.Errorf("%d reads, want 3: the first, the tick's, the action's", n)
	}
}

// TestMessagesOfAnotherList: the app hands every message to every panel;
// a list takes only the messages of its rows' type.
func TestMessagesOfAnotherList(t *testing.T) {
	l := loadedList(t, &reader{rows: rows(3)}, 40, 10)
	for _, msg := range []tea.Msg{Records[string]{Records: []string{"x"}}, Acted[string]{Done: "x"}, tickMsg[string]{}} {
		got, cmd := l.Update(msg)
		if cmd != nil || len(got.Rows()) != 3 || got.Status != "" {
			t.Errorf("%T changed the list: %d rows, status %q, command %v", msg, len(got.Rows()), got.Status, cmd != nil)
		}
	}
}

// TestPrompt: Ask clears the status and asks; Enter on nothing says what
// is needed and keeps asking; Enter on text answers; Esc stops asking.
func TestPrompt(t *testing.T) {
	l := loadedList(t, &reader{rows: rows(3)}, 40, 10)
	l.Status = "an old answer"
	if l.Ask(2, "what to do", "a brief is needed") == nil {
		t.Error("Ask does not focus the input")
	}
	if !l.Editing() || l.Asking() != 2 || l.Status != "" {
		t.Fatalf("asking %d, status %q", l.Asking(), l.Status)
	}
	l, ans, _ := l.Type(tuitest.Key("enter"))
	if ans != (Answer{}) || !l.Editing() || l.Status != "a brief is needed" {
		t.Fatalf("Enter on nothing: %+v, editing %v, status %q", ans, l.Editing(), l.Status)
	}
	for _, k := range tuitest.Type(" add a flag ") {
		l, _, _ = l.Type(k.(tea.KeyPressMsg))
	}
	if !strings.Contains(l.View(frame), "why:  add a flag") {
		t.Errorf("the prompt's line does not show the text:\n%s", l.View(frame))
	}
	l, ans, _ = l.Type(tuitest.Key("enter"))
	if ans != (Answer{Question: 2, Text: "add a flag"}) || l.Editing() {
		t.Fatalf("Enter on text: %+v, editing %v", ans, l.Editing())
	}
	l.Ask(1, "why", "a reason is needed")
	l, _, _ = l.Type(tuitest.Key("x"))
	l, ans, _ = l.Type(tuitest.Key("esc"))
	if ans != (Answer{}) || l.Editing() {
		t.Errorf("Esc: %+v, editing %v", ans, l.Editing())
	}
}

// TestView draws the list at 40×10: every line the width, the height
// exactly, the details cut to leave the selected row above them.
func TestView(t *testing.T) {
	long := rows(12)
	long[11].detail = 9
	for _, tt := range []struct {
		name   string
		rows   []row
		unread bool
		keys   []string
		ask    bool
	}{
		{name: "asking axlrd", unread: true},
		{name: "empty", rows: []row{}},
		{name: "scrolled", rows: rows(12), keys: []string{"pgdown", "down"}},
		{name: "details cut", rows: long, keys: []string{"enter"}},
		{name: "prompt", rows: rows(3), ask: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newList(&reader{rows: tt.rows}, 40, 10)
			if !tt.unread {
				l, _ = l.Update(l.Init()())
			}
			l.Status = "status line"
			for _, k := range tt.keys {
				l, _ = l.Key(tuitest.Key(k))
			}
			if tt.ask {
				l.Ask(1, "why", "a reason is needed")
			}
			view := l.View(frame)
			lines := strings.Split(view, "\n")
			if len(lines) != 10 {
				t.Errorf("view has %d lines, want 10", len(lines))
			}
			for i, line := range lines {
				if w := ansi.StringWidth(line); w != 40 {
					t.Errorf("line %d is %d cells wide, want 40: %q", i+1, w, line)
				}
			}
			tuitest.Golden(t, view, *update)
		})
	}
}

// A panel whose columns are wider than the screen has its rows cut at the
// edge, the selected one too.
func TestViewNarrow(t *testing.T) {
	wide := frame
	wide.Columns = []Column{{Name: "ID", Width: 60}}
	l := loadedList(t, &reader{rows: rows(3)}, 40, 10)
	for i, line := range strings.Split(l.View(wide), "\n") {
		if w := ansi.StringWidth(line); w != 40 {
			t.Errorf("line %d is %d cells wide, want 40: %q", i+1, w, line)
		}
	}
}

// TestReadOnce: without Every the list schedules no timed read; without
// Read it has no Refresh, and takes the Records its panel hands it.
func TestReadOnce(t *testing.T) {
	r := &reader{rows: rows(3)}
	l := New(common.New(40, 10, false), Options[row]{Name: "rows", Read: r.read, ID: func(r row) string { return r.id }})
	if _, cmd := l.Update(l.Refresh()()); cmd != nil {
		t.Error("an answer scheduled a timed read, without Every")
	}
	bare := New(common.New(40, 10, false), Options[row]{Name: "rows"})
	if bare.Refresh() != nil || bare.Init() != nil {
		t.Fatal("a list without Read has a Refresh")
	}
	if bare, cmd := bare.Update(Records[row]{Records: rows(2)}); cmd != nil || len(bare.Rows()) != 2 {
		t.Errorf("handed Records: %d rows, command %v", len(bare.Rows()), cmd != nil)
	}
}

// TestFollow: without Created the rows stay in Read's order; without ID
// the selection keeps its place; with Follow it opens on the last row and
// stays on the last row as rows are added after it.
func TestFollow(t *testing.T) {
	l := New(common.New(40, 10, false), Options[row]{Name: "rows", Follow: true})
	selected := func() string {
		r, _ := l.Selected()
		return r.id
	}
	l, _ = l.Update(Records[row]{Records: rows(12)})
	if got := visible(l); !reflect.DeepEqual(got, []string{"r06", "r07", "r08", "r09", "r10", ">r11"}) {
		t.Errorf("opened on %q, want the last six, the last selected", got)
	}
	l, _ = l.Update(Records[row]{Records: rows(14)})
	if got := selected(); got != "r13" {
		t.Errorf("selected %s after two rows more, want the new last r13", got)
	}
	l, _ = l.Key(tuitest.Key("home"))
	l, _ = l.Key(tuitest.Key("down"))
	l, _ = l.Update(Records[row]{Records: rows(20)})
	if got := selected(); got != "r01" {
		t.Errorf("selected %s after a refresh, want r01 kept", got)
	}
	l, _ = l.Key(tuitest.Key("end"))
	l, _ = l.Update(Records[row]{Records: rows(3)})
	if got := visible(l); !reflect.DeepEqual(got, []string{"r00", "r01", ">r02"}) {
		t.Errorf("after fewer rows %q, want the last selected", got)
	}
}

// TestFailedRead: a failed first read says why on the status line instead
// of asking axlrd; the next good read takes it off, but not an action's
// answer.
func TestFailedRead(t *testing.T) {
	l := New(common.New(40, 10, false), Options[row]{Name: "rows", ID: func(r row) string { return r.id }})
	l, _ = l.Update(Records[row]{Err: errors.New("axlrd is not reachable")})
	lines := strings.Split(l.View(frame), "\n")
	if got := strings.TrimSpace(lines[2]); got != "" || l.Loaded() {
		t.Errorf("after a failed read the first row is %q, loaded %v", got, l.Loaded())
	}
	if got := strings.TrimSpace(lines[8]); got != "rows: axlrd is not reachable" {
		t.Errorf("status %q", got)
	}
	l, _ = l.Update(Records[row]{Records: rows(2)})
	if l.Status != "" || !l.Loaded() {
		t.Errorf("a good read left status %q, loaded %v", l.Status, l.Loaded())
	}
	l, _ = l.Update(Records[row]{Err: errors.New("axlrd is not reachable")})
	l, _ = l.Update(Acted[row]{Done: "did r01"})
	l, _ = l.Update(Records[row]{Records: rows(2)})
	if l.Status != "did r01" {
		t.Errorf("a good read took the action's answer off: status %q", l.Status)
	}
}

// TestFrameUnreadAndHint: Unread is said before the first answer; Hint is
// the status line of the selected row while Status is empty.
func TestFrameUnreadAndHint(t *testing.T) {
	f := frame
	f.Unread = "reading the rows…"
	f.Hint = func(r row) string { return "hint of " + r.id }
	l := New(common.New(40, 10, false), Options[row]{Name: "rows", ID: func(r row) string { return r.id }})
	status := func() string {
		lines := strings.Split(l.View(f), "\n")
		return strings.TrimSpace(lines[2]) + "|" + strings.TrimSpace(lines[8])
	}
	if got := status(); got != "reading the rows…|" {
		t.Errorf("before the answer %q", got)
	}
	l, _ = l.Update(Records[row]{Records: rows(3)})
	if got := status(); got != "> r00|hint of r00" {
		t.Errorf("loaded %q", got)
	}
	l.Status = "an answer"
	if got := status(); got != "> r00|an answer" {
		t.Errorf("with a status %q", got)
	}
}

// A detail line longer than the width wraps under itself instead of being
// cut at the edge: a reason is read whole.
func TestDetailsWrap(t *testing.T) {
	reason := "reason: clone underpass-ai/axlr: dial tcp: lookup github.com: no such host"
	l := New(common.New(40, 12, false), Options[row]{
		Name: "rows", Read: (&reader{rows: rows(1)}).read,
		ID:      func(r row) string { return r.id },
		Details: func(row) []string { return []string{reason} },
	})
	l, _ = l.Update(l.Init()())
	l, _ = l.Key(tuitest.Key("enter"))
	view := l.View(frame)
	var got []string
	for _, line := range strings.Split(view, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(line, "    ") && t != "" {
			got = append(got, t)
		}
	}
	if strings.Join(got, " ") != reason || len(got) < 2 || strings.Contains(view, "…") {
		t.Errorf("details %q, want %q wrapped:\n%s", got, reason, view)
	}
}

// TestColumns: the fixed columns keep their width, a growing one takes
// its share of what they leave, the last the rest; a gap keeps a cell
// that fills its column apart from the next.
func TestColumns(t *testing.T) {
	cols := []Column{{Name: "N", Width: 4}, {Name: "ID", Grow: func(left int) int { return left / 2 }, Gap: true}, {Name: "REST"}}
	l := New(common.New(40, 10, false), Options[row]{Name: "rows", ID: func(r row) string { return r.id }})
	if got := l.widths(cols); !reflect.DeepEqual(got, []int{4, 17, 17}) {
		t.Errorf("widths at 40 %v, want [4 17 17]", got)
	}
	l, _ = l.Update(Records[row]{Records: []row{{id: "an-id-longer-than-its-column"}}})
	f := Frame[row]{Title: "Rows", Columns: cols, Cells: func(r row) []string { return []string{"1234567", r.id, "the rest of it, cut at the edge"} }}
	lines := strings.Split(l.View(f), "\n")
	if want := "  N   ID               REST             "; lines[1] != want {
		t.Errorf("column names %q, want %q", lines[1], want)
	}
	if want := "> 123…an-id-longer-th… the rest of it, …"; lines[2] != want {
		t.Errorf("row %q, want %q", lines[2], want)
	}
	l.SetSize(8, 10)
	if got := l.widths(cols); !reflect.DeepEqual(got, []int{4, 1, 1}) {
		t.Errorf("widths at 8 %v, want [4 1 1]", got)
	}
}

// TestPress: the list takes its keys and n's brief; the prompt's answer
// and the other keys on the selected row are the panel's.
func TestPress(t *testing.T) {
	l := loadedList(t, &reader{rows: rows(3)}, 40, 10)
	press := func(k string) Input[row] {
		t.Helper()
		var in Input[row]
		l, in, _ = l.Press(tuitest.Key(k))
		return in
	}
	if in := press("down"); in != (Input[row]{}) {
		t.Errorf("a move gave the panel %+v", in)
	}
	if in := press("a"); in.Key != "a" || in.Row.id != "r01" {
		t.Errorf("a on r01 gave %+v", in)
	}
	if in := press("n"); in.Key != "n" || l.Editing() {
		t.Errorf("n without Brief gave %+v, editing %v", in, l.Editing())
	}
	l = New(common.New(40, 10, false), Options[row]{Name: "rows", Brief: &Prompt{Placeholder: "what to do", Need: "a brief is needed"}})
	if in := press("a"); in != (Input[row]{}) {
		t.Errorf("a without a row gave %+v", in)
	}
	var cmd tea.Cmd
	if l, _, cmd = l.Press(tuitest.Key("n")); cmd == nil || l.Asking() != Briefing {
		t.Fatalf("n asks %d, focus %v", l.Asking(), cmd != nil)
	}
	if press("enter"); l.Status != "a brief is needed" {
		t.Errorf("Enter on nothing: status %q", l.Status)
	}
	for _, k := range []string{"a", "d", "d"} {
		press(k)
	}
	if in := press("enter"); in.Answer != (Answer{Question: Briefing, Text: "add"}) || in.Key != "" || l.Editing() {
		t.Errorf("the brief's answer %+v, editing %v", in, l.Editing())
	}
	l.AskReason(1)
	if press("enter"); l.Asking() != 1 || l.Status != "a reason is needed: type why, or Esc cancels" {
		t.Errorf("a reason's Enter on nothing: asking %d, status %q", l.Asking(), l.Status)
	}
}

func TestCount(t *testing.T) {
	l := loadedList(t, &reader{rows: rows(12)}, 40, 10)
	if n := l.Count(func(r row) bool { return strings.HasPrefix(r.id, "r0") }); n != 10 {
		t.Errorf("count %d, want 10", n)
	}
}

// TestBriefLinesHeld: a Lines and Hold brief takes a line per Shift+Enter,
// under its question's line, the view keeping its height as the rows make
// room (up to MaxPromptLines lines, then the text scrolls); Enter holds
// the answer, which takes no keys; Release with an error gives it back to
// type into, Release with none stops asking. HoldBrief holds a brief
// given elsewhere.
func TestBriefLinesHeld(t *testing.T) {
	l := New(common.New(40, 12, false), Options[row]{Name: "rows", Read: (&reader{rows: rows(8)}).read,
		ID: func(r row) string { return r.id }, Created: func(r row) time.Time { return r.at },
		Brief: &Prompt{Placeholder: "what to do", Need: "a brief is needed", Lines: true, Hold: true}})
	l, _ = l.Update(l.Init()())
	f := frame
	f.Ask = "new brief:"
	check := func(what string, rows int, typed ...string) {
		t.Helper()
		view := l.View(f)
		lines := strings.Split(view, "\n")
		if len(lines) != 12 {
			t.Errorf("%s: view has %d lines, want 12:\n%s", what, len(lines), view)
		}
		if got := len(visible(l)); got != rows {
			t.Errorf("%s: %d rows drawn, want %d", what, got, rows)
		}
		var got []string
		for _, line := range lines[len(lines)-len(typed):] {
			got = append(got, strings.TrimRight(ansi.Strip(line), " "))
		}
		if !reflect.DeepEqual(got, typed) || strings.TrimRight(lines[len(lines)-len(typed)-1], " ") != "new brief:" {
			t.Errorf("%s: last lines %q, want %q under the question:\n%s", what, got, typed, view)
		}
	}
	press := func(keys ...string) (ans Answer) {
		t.Helper()
		for _, k := range keys {
			var in Input[row]
			if named := map[string]bool{"n": true, "x": true, "enter": true, "shift+enter": true, "esc": true, "backspace": true}; !named[k] {
				for _, c := range tuitest.Type(k) {
					l, in, _ = l.Press(c.(tea.KeyPressMsg))
				}
			} else {
				l, in, _ = l.Press(tuitest.Key(k))
			}
			if in.Answer.Question != 0 {
				ans = in.Answer
			}
		}
		return ans
	}
	press("n", "one")
	check("one line", 7, "one")
	press("shift+enter", "two", "shift+enter", "three")
	check("three lines", 5, "one", "two", "three")
	press("shift+enter", "four", "shift+enter", "five", "shift+enter", "six")
	check("past the most lines", 3, "two", "three", "four", "five", "six")
	if ans := press("enter"); ans != (Answer{Question: Briefing, Text: "one\ntwo\nthree\nfour\nfive\nsix"}) || !l.Held() || !l.Editing() {
		t.Fatalf("Enter: %+v, held %v, editing %v", ans, l.Held(), l.Editing())
	}
	if ans := press("x", "enter"); ans != (Answer{}) {
		t.Fatalf("a held brief answered again: %+v", ans)
	}
	if l.Release(errors.New("refused: too long")) == nil || l.Held() || !l.Editing() || l.Status != "refused: too long" {
		t.Fatalf("a refusal: held %v, editing %v, status %q", l.Held(), l.Editing(), l.Status)
	}
	press("backspace", "backspace", "backspace")
	if ans := press("enter"); ans.Text != "one\ntwo\nthree\nfour\nfive" {
		t.Fatalf("the fixed brief %q", ans.Text)
	}
	if l.Release(nil); l.Editing() || l.Held() {
		t.Fatalf("an admission: editing %v, held %v", l.Editing(), l.Held())
	}
	l.HoldBrief("given\nelsewhere")
	check("held from elsewhere", 6, "given", "elsewhere")
	if !l.Held() || l.Asking() != Briefing {
		t.Fatalf("HoldBrief: held %v, asking %d", l.Held(), l.Asking())
	}
	if press("esc"); l.Editing() || l.Release(errors.New("late")) != nil || l.Status != "late" {
		t.Errorf("Esc on a held brief: editing %v, status %q", l.Editing(), l.Status)
	}
}
