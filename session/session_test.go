package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/redact"
)

// clock returns a Now that advances one second per call, in a non-UTC zone.
func clock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Now == nil {
		opts.Now = clock()
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newID(t testing.TB) string {
	t.Helper()
	id, err := NewID()
	if err != nil {
		t.Fatalf("NewID: %v", err)
	}
	return id
}

func mustAppend(t testing.TB, l *Log, ev Event) Event {
	t.Helper()
	saved, existed, err := l.Append(ev)
	if err != nil {
		t.Fatalf("Append(%+v): %v", ev, err)
	}
	if existed {
		t.Fatalf("Append(%+v): existed", ev)
	}
	return saved
}

// checkChain fails unless events form the log of session id.
func checkChain(t *testing.T, id string, events []Event) {
	t.Helper()
	seen := make(map[string]bool)
	for i, ev := range events {
		parent := ""
		if i > 0 {
			parent = events[i-1].ID
		}
		if ev.V != Version || ev.Seq != i || ev.SessionID != id || ev.ParentID != parent || !ValidID(ev.ID) || seen[ev.ID] {
			t.Fatalf("event %d breaks the chain: %+v (parent want %q)", i, ev, parent)
		}
		seen[ev.ID] = true
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestAppendReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s := openStore(t, dir, Options{})
	id, op := newID(t), newID(t)
	l, err := s.Create(id)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	inputs := []Event{
		{Type: "session.started", Data: json.RawMessage(`{"cwd":"/w","n":1.50}`)},
		{Type: "model.request", OperationID: op, Key: "rev-1", Data: json.RawMessage(`{"a":"<b>&"}`)},
		{Type: "model.request", Key: "rev-2", ID: "caller-id", Seq: 42, ParentID: "x", SessionID: "y", V: 7},
		{Type: "note"},
	}
	var saved []Event
	for _, in := range inputs {
		saved = append(saved, mustAppend(t, l, in))
	}
	checkChain(t, id, saved)
	for i, ev := range saved {
		if ev.Time.Location() != time.UTC || ev.Time.IsZero() {
			t.Errorf("event %d time %v, want UTC", i, ev.Time)
		}
		if ev.Type != inputs[i].Type || ev.Key != inputs[i].Key || ev.OperationID != inputs[i].OperationID {
			t.Errorf("event %d = %+v, lost caller fields of %+v", i, ev, inputs[i])
		}
	}
	if got := string(saved[0].Data); got != `{"cwd":"/w","n":1.50}` {
		t.Errorf("data = %s", got)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, id+".jsonl"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("mode of %s = %v, %v; want %v", path, fi.Mode(), err, want)
		}
	}

	l2, err := openStore(t, dir, Options{}).Log(id)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if got := l2.Events(0); !reflect.DeepEqual(got, saved) {
		t.Errorf("reopened events differ:\n got %+v\nwant %+v", got, saved)
	}
	if l2.Repaired() != 0 {
		t.Errorf("Repaired = %d, want 0", l2.Repaired())
	}
	if l2.ID() != id || l2.Len() != len(saved) {
		t.Errorf("ID, Len = %s, %d", l2.ID(), l2.Len())
	}
	for _, tt := range []struct {
		from int
		want []Event
	}{{-1, saved}, {0, saved}, {2, saved[2:]}, {4, nil}, {10, nil}} {
		if got := l2.Events(tt.from); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Events(%d) = %+v, want %+v", tt.from, got, tt.want)
		}
	}
	for _, tt := range []struct {
		from, to int
		want     []Event
	}{{1, 3, saved[1:3]}, {-5, 1, saved[:1]}, {3, 99, saved[3:]}, {2, 2, nil}, {3, 1, nil}} {
		if got := l2.Range(tt.from, tt.to); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Range(%d, %d) = %+v, want %+v", tt.from, tt.to, got, tt.want)
		}
	}
	if ev, ok := l2.Last("model.request"); !ok || ev.ID != saved[2].ID {
		t.Errorf("Last(model.request) = %+v, %v; want seq 2", ev, ok)
	}
	if _, ok := l2.Last("missing"); ok {
		t.Errorf("Last(missing) found an event")
	}
	if ev, ok := l2.ByKey("rev-1"); !ok || ev.ID != saved[1].ID {
		t.Errorf("ByKey(rev-1) = %+v, %v; want seq 1", ev, ok)
	}
	if _, ok := l2.ByKey("rev-9"); ok {
		t.Errorf("ByKey(rev-9) found an event")
	}
	next := mustAppend(t, l2, Event{Type: "note"})
	if next.Seq != 4 || next.ParentID != saved[3].ID {
		t.Errorf("append after reopen = %+v, want seq 4 after %s", next, saved[3].ID)
	}

	// Returned events are copies.
	evs := l2.Events(0)
	evs[0].Data[0] = 'X'
	if got := l2.Events(0)[0].Data; got[0] != '{' {
		t.Errorf("caller changed the log's data: %s", got)
	}
}

func TestAppendKey(t *testing.T) {
	dir := t.TempDir()
	id := newID(t)
	l, err := openStore(t, dir, Options{}).Create(id)
	if err != nil {
		t.Fatal(err)
	}
	first := mustAppend(t, l, Event{Type: "model.response", Key: "s/1", Data: json.RawMessage(`{"text":"a"}`)})
	size := fileSize(t, filepath.Join(dir, id+".jsonl"))
	for _, retry := range []Event{
		{Type: "model.response", Key: "s/1", Data: json.RawMessage(`{"text":"b"}`)},
		{Type: "other", Key: "s/1"},
	} {
		got, existed, err := l.Append(retry)
		if err != nil || !existed || !reflect.DeepEqual(got, first) {
			t.Errorf("Append(%+v) = %+v, %v, %v; want the first event, true, nil", retry, got, existed, err)
		}
	}
	if l.Len() != 1 || fileSize(t, filepath.Join(dir, id+".jsonl")) != size {
		t.Errorf("a repeated key wrote: Len %d", l.Len())
	}

	l2, err := openStore(t, dir, Options{}).Log(id)
	if err != nil {
		t.Fatal(err)
	}
	if got, existed, err := l2.Append(Event{Type: "model.response", Key: "s/1"}); err != nil || !existed || !reflect.DeepEqual(got, first) {
		t.Errorf("after reopen: Append = %+v, %v, %v; want the first event", got, existed, err)
	}
}

// writeLog appends n events to a new log in dir and returns the file's lines,
// each with its newline.
func writeLog(t *testing.T, dir, id string, n int) []string {
	t.Helper()
	s := openStore(t, dir, Options{})
	l, err := s.Create(id)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		mustAppend(t, l, Event{Type: "note", Key: fmt.Sprintf("k%d", i), Data: json.RawMessage(`{"i":1}`)})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(data), "\n")[:n]
}

func TestOpenTornLastLine(t *testing.T) {
	tests := []struct {
		name     string
		complete int                         // complete lines kept
		torn     func(lines []string) string // the unfinished final line
	}{
		{"partial JSON", 2, func(lines []string) string { return lines[2][:25] }},
		{"whole event without its newline", 2, func(lines []string) string { return strings.TrimSuffix(lines[2], "\n") }},
		{"garbage", 3, func([]string) string { return "\x00\x00\x00" }},
		{"only a torn line", 0, func(lines []string) string { return lines[0][:10] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, id := t.TempDir(), newID(t)
			lines := writeLog(t, dir, id, 3)
			path := filepath.Join(dir, id+".jsonl")
			kept := strings.Join(lines[:tt.complete], "")
			torn := tt.torn(lines)
			if err := os.WriteFile(path, []byte(kept+torn), 0o600); err != nil {
				t.Fatal(err)
			}

			l, err := openStore(t, dir, Options{}).Log(id)
			if err != nil {
				t.Fatalf("Log: %v", err)
			}
			if l.Len() != tt.complete || l.Repaired() != int64(len(torn)) {
				t.Errorf("Len, Repaired = %d, %d; want %d, %d", l.Len(), l.Repaired(), tt.complete, len(torn))
			}
			if data, _ := os.ReadFile(path); string(data) != kept {
				t.Errorf("file not truncated to its complete lines:\n%q", data)
			}
			mustAppend(t, l, Event{Type: "after"})

			l2, err := openStore(t, dir, Options{}).Log(id)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			checkChain(t, id, l2.Events(0))
			if l2.Len() != tt.complete+1 || l2.Repaired() != 0 {
				t.Errorf("after repair and append: Len %d, Repaired %d", l2.Len(), l2.Repaired())
			}
		})
	}
}

func TestOpenCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(lines []string) string
		line   int
		reason string
	}{
		{"not JSON in the middle", func(l []string) string { l[1] = "not json\n"; return join(l) }, 2, "invalid character"},
		{"empty line", func(l []string) string { l[1] = "\n"; return join(l) }, 2, "unexpected end"},
		{"bad seq at the end", func(l []string) string { l[2] = strings.Replace(l[2], `"seq":2`, `"seq":7`, 1); return join(l) }, 3, "seq 7, want 2"},
		{"other session", func(l []string) string {
			l[0] = strings.Replace(l[0], `"session_id":"`, `"session_id":"x`, 1)
			return join(l)
		}, 1, "session id"},
		{"lines swapped", func(l []string) string { l[1], l[2] = l[2], l[1]; return join(l) }, 2, "seq 2, want 1"},
		{"wrong parent", func(l []string) string {
			l[2] = strings.Replace(l[2], `"parent_id":"`, `"parent_id":"0`, 1)
			return join(l)
		}, 3, "parent id"},
		{"unsupported version", func(l []string) string { l[0] = strings.Replace(l[0], `"v":1`, `"v":2`, 1); return join(l) }, 1, "format version 2"},
		{"duplicate key", func(l []string) string { l[2] = strings.Replace(l[2], `"key":"k2"`, `"key":"k0"`, 1); return join(l) }, 3, `key "k0"`},
		{"missing type", func(l []string) string { l[1] = strings.Replace(l[1], `"type":"note"`, `"type":""`, 1); return join(l) }, 2, "type is empty"},
		{"trailing data", func(l []string) string { l[0] = strings.Replace(l[0], "}\n", "} x\n", 1); return join(l) }, 1, "invalid character"},
		{"corrupt line and a torn tail", func(l []string) string { l[1] = "{}\n"; return join(l) + `{"v":1` }, 2, "format version 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, id := t.TempDir(), newID(t)
			path := filepath.Join(dir, id+".jsonl")
			content := tt.edit(writeLog(t, dir, id, 3))
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}

			_, err := openStore(t, dir, Options{}).Log(id)
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Log err = %v, want *CorruptError", err)
			}
			if ce.Path != path || ce.Line != tt.line || !strings.Contains(ce.Err.Error(), tt.reason) {
				t.Errorf("CorruptError = %s:%d %v; want line %d with %q", ce.Path, ce.Line, ce.Err, tt.line, tt.reason)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%s line %d", path, tt.line)) {
				t.Errorf("error %q does not name the file and line", err)
			}
			if data, _ := os.ReadFile(path); string(data) != content {
				t.Errorf("corrupt file modified")
			}
		})
	}
}

func join(lines []string) string { return strings.Join(lines, "") }

// faultyFile fails the chosen operations of a log file.
type faultyFile struct {
	logFile
	writeErr, syncErr, truncErr error
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if f.writeErr != nil {
		n, _ := f.logFile.WriteAt(p[:len(p)/2], off) // a short write reaches the disk
		return n, f.writeErr
	}
	return f.logFile.WriteAt(p, off)
}

func (f *faultyFile) Sync() error {
	if f.syncErr != nil {
		return f.syncErr
	}
	return f.logFile.Sync()
}

func (f *faultyFile) Truncate(size int64) error {
	if f.truncErr != nil {
		return f.truncErr
	}
	return f.logFile.Truncate(size)
}

func TestAppendRollback(t *testing.T) {
	errDisk := errors.New("disk full")
	tests := []struct {
		name  string
		fault faultyFile
	}{
		{"short write", faultyFile{writeErr: errDisk}},
		{"sync fails", faultyFile{syncErr: errDisk}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, id := t.TempDir(), newID(t)
			path := filepath.Join(dir, id+".jsonl")
			l, err := openStore(t, dir, Options{}).Create(id)
			if err != nil {
				t.Fatal(err)
			}
			first := mustAppend(t, l, Event{Type: "note"})
			size := fileSize(t, path)

			fault := tt.fault
			fault.logFile = l.f
			l.f = &fault
			_, _, err = l.Append(Event{Type: "lost", Key: "k", Data: json.RawMessage(`{"x":"` + strings.Repeat("y", 1000) + `"}`)})
			if !errors.Is(err, errDisk) {
				t.Fatalf("Append err = %v, want %v", err, errDisk)
			}
			if got := fileSize(t, path); got != size {
				t.Errorf("file size after failed append = %d, want %d", got, size)
			}
			if _, ok := l.ByKey("k"); ok || l.Len() != 1 {
				t.Errorf("failed append visible: Len %d", l.Len())
			}

			l.f = fault.logFile
			second := mustAppend(t, l, Event{Type: "note", Key: "k"})
			if second.Seq != 1 || second.ParentID != first.ID {
				t.Errorf("append after failure = %+v", second)
			}
			l2, err := openStore(t, dir, Options{}).Log(id)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			checkChain(t, id, l2.Events(0))
			if l2.Len() != 2 || l2.Repaired() != 0 {
				t.Errorf("reopened Len, Repaired = %d, %d; want 2, 0", l2.Len(), l2.Repaired())
			}
		})
	}
}

func TestAppendRollbackFails(t *testing.T) {
	dir, id := t.TempDir(), newID(t)
	l, err := openStore(t, dir, Options{}).Create(id)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, Event{Type: "note"})
	errDisk, errTrunc := errors.New("disk full"), errors.New("truncate refused")
	fault := &faultyFile{logFile: l.f, writeErr: errDisk, truncErr: errTrunc}
	l.f = fault
	if _, _, err := l.Append(Event{Type: "lost"}); !errors.Is(err, errDisk) || !errors.Is(err, errTrunc) {
		t.Fatalf("Append err = %v, want both failures", err)
	}
	l.f = fault.logFile
	if _, _, err := l.Append(Event{Type: "next"}); !errors.Is(err, errTrunc) {
		t.Fatalf("append on a log that could not roll back: err = %v, want %v", err, errTrunc)
	}

	// A fresh store removes the half-written line.
	l2, err := openStore(t, dir, Options{}).Log(id)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if l2.Len() != 1 || l2.Repaired() == 0 {
		t.Errorf("reopened Len, Repaired = %d, %d; want 1 and the torn line removed", l2.Len(), l2.Repaired())
	}
	mustAppend(t, l2, Event{Type: "next"})
}

func TestRedaction(t *testing.T) {
	const secret = "sk-test-5f3a9c1e7b2d"
	tests := []struct {
		name     string
		redactor *redact.Redactor
		data     string
		leaks    []string
		want     string
	}{
		{
			name:     "configured secret and credential field",
			redactor: redact.New([]string{secret}),
			data:     `{"api_key":"plain-value-1","msg":"curl -H 'Authorization: Bearer ` + secret + `'","escaped":"\u0073k-test-5f3a9c1e7b2d"}`,
			leaks:    []string{secret, "plain-value-1"},
			want:     `{"api_key":"[REDACTED]","msg":"curl -H 'Authorization: Bearer [REDACTED]'","escaped":"[REDACTED]"}`,
		},
		{
			name:  "default redactor masks fields",
			data:  `{"tool":{"password":"plain-value-2"},"properties":{"token":{"type":"string"}}}`,
			leaks: []string{"plain-value-2"},
			want:  `{"tool":{"password":"[REDACTED]"},"properties":{"token":{"type":"string"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, id := t.TempDir(), newID(t)
			l, err := openStore(t, dir, Options{Redactor: tt.redactor}).Create(id)
			if err != nil {
				t.Fatal(err)
			}
			ev := mustAppend(t, l, Event{Type: "tool.call", Data: json.RawMessage(tt.data)})
			if string(ev.Data) != tt.want {
				t.Errorf("saved data = %s, want %s", ev.Data, tt.want)
			}
			file, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for _, leak := range tt.leaks {
				if bytes.Contains(file, []byte(leak)) {
					t.Errorf("file contains %q:\n%s", leak, file)
				}
			}
		})
	}
}

func TestIDs(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		id := newID(t)
		if !ValidID(id) || seen[id] || id[14] != '4' {
			t.Fatalf("NewID = %q: invalid, repeated or not version 4", id)
		}
		seen[id] = true
	}

	tests := []struct {
		id   string
		want bool
	}{
		{"f47ac10b-58cc-4372-a567-0e02b2c3d479", true},
		{"017f22e2-79b0-7cc3-98c4-dc0c0c07398f", true}, // version 7
		{"F47AC10B-58CC-4372-A567-0E02B2C3D479", false},
		{"{f47ac10b-58cc-4372-a567-0e02b2c3d479}", false},
		{"urn:uuid:f47ac10b-58cc-4372-a567-0e02b2c3d479", false},
		{"f47ac10b58cc4372a5670e02b2c3d479", false},
		{"f47ac10b-58cc-4372-a567-0e02b2c3d47", false},
		{"f47ac10b-58cc-4372-c567-0e02b2c3d479", false}, // Microsoft variant
		{"00000000-0000-0000-0000-000000000000", false},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", false},
		{"f47ac10b-58cc-4372-a567-0e02b2c3d4zz", false},
		{"../../../../etc/passwd-0000-00000000", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestConcurrentAppends(t *testing.T) {
	const writers, each, keys = 16, 25, 10
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	ids := []string{newID(t), newID(t)}
	for _, id := range ids {
		if _, err := s.Create(id); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*each)
	for _, id := range ids {
		for w := range writers {
			wg.Go(func() {
				l, err := s.Log(id) // every writer looks the log up
				if err != nil {
					errs <- err
					return
				}
				for i := range each {
					ev := Event{Type: "note", Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}
					if i == 0 {
						ev.Key = fmt.Sprintf("shared-%d", w%keys) // writers race on these keys
					}
					if _, _, err := l.Append(ev); err != nil {
						errs <- err
					}
					l.Events(l.Len() / 2)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := writers*(each-1) + keys
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, dir, Options{})
	for _, id := range ids {
		l, err := s2.Log(id)
		if err != nil {
			t.Fatalf("reopen %s: %v", id, err)
		}
		checkChain(t, id, l.Events(0))
		if l.Len() != want {
			t.Errorf("session %s has %d events, want %d", id, l.Len(), want)
		}
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	id, missing := newID(t), newID(t)
	l, err := s.Create(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"create existing", func() error { _, err := s.Create(id); return err }, ErrExists},
		{"create invalid id", func() error { _, err := s.Create("x"); return err }, ErrInvalidID},
		{"log missing", func() error { _, err := s.Log(missing); return err }, ErrNotFound},
		{"log path trick", func() error { _, err := s.Log("../" + id); return err }, ErrInvalidID},
		{"log upper case", func() error { _, err := s.Log(strings.ToUpper(id)); return err }, ErrInvalidID},
		{"empty type", func() error { _, _, err := l.Append(Event{}); return err }, nil},
		{"invalid operation id", func() error { _, _, err := l.Append(Event{Type: "t", OperationID: "op-1"}); return err }, ErrInvalidID},
		{"invalid data", func() error { _, _, err := l.Append(Event{Type: "t", Data: json.RawMessage(`{"a":`)}); return err }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if l.Len() != 0 || fileSize(t, filepath.Join(dir, id+".jsonl")) != 0 {
		t.Errorf("rejected appends wrote")
	}

	for _, tt := range []struct {
		id   string
		want bool
	}{{id, true}, {missing, false}, {"x", false}, {"../" + id, false}} {
		if got := s.Exists(tt.id); got != tt.want {
			t.Errorf("Exists(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"append": func() error { _, _, err := l.Append(Event{Type: "t"}); return err },
		"log":    func() error { _, err := s.Log(id); return err },
		"create": func() error { _, err := s.Create(missing); return err },
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: err = %v, want %v", name, err, ErrClosed)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	s := openStore(b, b.TempDir(), Options{Now: time.Now})
	l, err := s.Create(newID(b))
	if err != nil {
		b.Fatal(err)
	}
	data := json.RawMessage(`{"text":"` + strings.Repeat("x", 1024-len(`{"text":""}`)) + `"}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := l.Append(Event{Type: "model.response", Data: data}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAppendAt(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	l, err := s.Create(newID(t))
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, Event{Type: "a"})
	if _, _, err := l.AppendAt(0, Event{Type: "late"}); !errors.Is(err, ErrMoved) || !strings.Contains(err.Error(), "holds 1 events") {
		t.Fatalf("AppendAt behind the log: %v", err)
	}
	if l.Len() != 1 {
		t.Fatalf("a refused AppendAt wrote: %d events", l.Len())
	}
	ev, existed, err := l.AppendAt(1, Event{Type: "b", Key: "k"})
	if err != nil || existed || ev.Seq != 1 {
		t.Fatalf("AppendAt at the end: %+v %v %v", ev, existed, err)
	}
	// A keyed event already saved is returned wherever the log stands.
	again, existed, err := l.AppendAt(0, Event{Type: "b", Key: "k"})
	if err != nil || !existed || again.ID != ev.ID {
		t.Fatalf("AppendAt of a saved key: %+v %v %v", again, existed, err)
	}
}
