package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a Now that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// checkOpen fails unless the process holds want descriptors of the file at
// path. It checks nothing where /proc/self/fd cannot be read.
func checkOpen(t *testing.T, path string, want int) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	path, err = filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			n++
		}
	}
	if n != want {
		t.Errorf("%d open descriptors of %s, want %d", n, filepath.Base(path), want)
	}
}

// isLoaded reports whether l holds its file and events.
func isLoaded(l *Log) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.loaded
}

// forceUnload unloads l as the store's sweeps do; it reports whether it did.
func forceUnload(s *Store, l *Log) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.listed && l.unload() {
		s.unlist(l)
		return true
	}
	return false
}

// unloadNow unloads l even while it is in use: it waits for the call in
// progress to end. It reports whether l was loaded.
func unloadNow(s *Store, l *Log) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !l.listed {
		return false
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unloadLocked()
	s.unlist(l)
	return true
}

// idleStore is a store with a fake clock and a one-minute idle timeout, and
// a session, tick, whose lookups run the store's sweeps.
type idleStore struct {
	*Store
	clock *fakeClock
	tick  string
}

const testIdle = time.Minute

func openIdleStore(t *testing.T, dir string, opts Options) *idleStore {
	t.Helper()
	s := &idleStore{clock: newFakeClock(), tick: newID(t)}
	opts.Now, opts.IdleTimeout = s.clock.Now, testIdle
	s.Store = openStore(t, dir, opts)
	if _, err := s.Create(s.tick); err != nil {
		t.Fatal(err)
	}
	return s
}

// idleFor lets time pass without using any log but tick, sweeping every
// quarter of the idle timeout.
func (s *idleStore) idleFor(t *testing.T, d time.Duration) {
	t.Helper()
	for ; d > 0; d -= testIdle / 4 {
		s.clock.Advance(min(d, testIdle/4))
		if _, err := s.Log(s.tick); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUnloadIdle(t *testing.T) {
	tests := []struct {
		name string
		call func(t *testing.T, s *Store, l *Log, saved []Event) // the first call after the unload
	}{
		{"Append", func(t *testing.T, _ *Store, l *Log, saved []Event) {
			if got, existed, err := l.Append(Event{Type: "retry", Key: "k1"}); err != nil || !existed || !reflect.DeepEqual(got, saved[1]) {
				t.Errorf("Append of a saved key = %+v, %v, %v; want seq 1", got, existed, err)
			}
		}},
		{"AppendAt", func(t *testing.T, _ *Store, l *Log, _ []Event) {
			if _, _, err := l.AppendAt(2, Event{Type: "late"}); !errors.Is(err, ErrMoved) {
				t.Errorf("AppendAt behind the log: %v, want %v", err, ErrMoved)
			}
		}},
		{"ByKey", func(t *testing.T, _ *Store, l *Log, saved []Event) {
			if got, ok := l.ByKey("k2"); !ok || !reflect.DeepEqual(got, saved[2]) {
				t.Errorf("ByKey(k2) = %+v, %v; want seq 2", got, ok)
			}
		}},
		{"Events", func(t *testing.T, _ *Store, l *Log, saved []Event) {
			if got := l.Events(1); !reflect.DeepEqual(got, saved[1:]) {
				t.Errorf("Events(1) = %+v, want %+v", got, saved[1:])
			}
		}},
		{"Range", func(t *testing.T, _ *Store, l *Log, saved []Event) {
			if got := l.Range(0, 2); !reflect.DeepEqual(got, saved[:2]) {
				t.Errorf("Range(0, 2) = %+v, want %+v", got, saved[:2])
			}
		}},
		{"Last", func(t *testing.T, _ *Store, l *Log, saved []Event) {
			if got, ok := l.Last("note"); !ok || !reflect.DeepEqual(got, saved[2]) {
				t.Errorf("Last(note) = %+v, %v; want seq 2", got, ok)
			}
		}},
		{"Len", func(t *testing.T, _ *Store, l *Log, saved []Event) {
			if got := l.Len(); got != len(saved) {
				t.Errorf("Len = %d, want %d", got, len(saved))
			}
		}},
		{"Store.Log", func(t *testing.T, s *Store, l *Log, _ []Event) {
			if got, err := s.Log(l.ID()); err != nil || got != l {
				t.Errorf("Log = %p, %v; want the same *Log %p", got, err, l)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, id := t.TempDir(), newID(t)
			path := filepath.Join(dir, id+".jsonl")
			s := openIdleStore(t, dir, Options{})
			l, err := s.Create(id)
			if err != nil {
				t.Fatal(err)
			}
			var saved []Event
			for i := range 3 {
				saved = append(saved, mustAppend(t, l, Event{Type: "note", Key: fmt.Sprintf("k%d", i), Data: json.RawMessage(`{"i":1}`)}))
			}

			s.idleFor(t, testIdle/2)
			if !isLoaded(l) || s.Loaded() != 2 {
				t.Fatalf("unloaded before the idle timeout: Loaded %d", s.Loaded())
			}
			checkOpen(t, path, 1)
			s.idleFor(t, testIdle)
			if isLoaded(l) || s.Loaded() != 1 {
				t.Fatalf("not unloaded after the idle timeout: Loaded %d", s.Loaded())
			}
			checkOpen(t, path, 0)
			if l.events != nil || l.byKey != nil || l.lastOf != nil {
				t.Errorf("unloaded log keeps its events in memory")
			}

			tt.call(t, s.Store, l, saved)
			if !isLoaded(l) || s.Loaded() != 2 {
				t.Errorf("%s did not reload the log: Loaded %d", tt.name, s.Loaded())
			}
			checkOpen(t, path, 1)
			if got := l.Events(0); !reflect.DeepEqual(got, saved) {
				t.Errorf("reloaded events differ:\n got %+v\nwant %+v", got, saved)
			}

			s.idleFor(t, 2*testIdle)
			next := mustAppend(t, l, Event{Type: "after", Key: "k3"})
			if next.Seq != 3 || next.ParentID != saved[2].ID {
				t.Errorf("append to an unloaded log = %+v, want seq 3 after %s", next, saved[2].ID)
			}
			saved = append(saved, next)
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			l2, err := openStore(t, dir, Options{}).Log(id)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			if got := l2.Events(0); !reflect.DeepEqual(got, saved) {
				t.Errorf("reopened events differ:\n got %+v\nwant %+v", got, saved)
			}
		})
	}
}

func TestUnloadMaxLoaded(t *testing.T) {
	const max, sessions = 3, 20
	dir := t.TempDir()
	s := openStore(t, dir, Options{MaxLoaded: max, IdleTimeout: -1})
	var logs []*Log
	for i := range sessions {
		l, err := s.Create(newID(t))
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, Event{Type: "note"})
		logs = append(logs, l)
		if got := s.Loaded(); got != min(i+1, max) {
			t.Fatalf("after %d sessions: Loaded %d, want %d", i+1, got, min(i+1, max))
		}
	}
	// The least recently used goes first: looking logs[17] up makes
	// logs[18] the oldest of the three.
	if _, err := s.Log(logs[17].ID()); err != nil {
		t.Fatal(err)
	}
	extra, err := s.Create(newID(t))
	if err != nil {
		t.Fatal(err)
	}
	for l, want := range map[*Log]bool{logs[16]: false, logs[17]: true, logs[18]: false, logs[19]: true, extra: true} {
		open := 0
		if want {
			open = 1
		}
		if isLoaded(l) != want {
			t.Errorf("log %s loaded %v, want %v", l.ID(), !want, want)
		}
		checkOpen(t, filepath.Join(dir, l.ID()+".jsonl"), open)
	}

	// Every held *Log still works, and the bound holds.
	for i, l := range logs {
		if ev := mustAppend(t, l, Event{Type: "note"}); ev.Seq != 1 {
			t.Errorf("session %d: append at seq %d, want 1", i, ev.Seq)
		}
		if got := s.Loaded(); got > max {
			t.Fatalf("Loaded %d, want at most %d", got, max)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, dir, Options{})
	for _, l := range logs {
		l2, err := s2.Log(l.ID())
		if err != nil {
			t.Fatal(err)
		}
		checkChain(t, l.ID(), l2.Events(0))
		if l2.Len() != 2 {
			t.Errorf("session %s has %d events, want 2", l.ID(), l2.Len())
		}
	}
}

func TestUnloadOptions(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		idle       time.Duration
		maxLoaded  int
		wantLoaded int // of 70 sessions, left idle for an hour
	}{
		{"defaults", Options{}, 2 * time.Minute, 64, 0},
		{"no idle timeout", Options{IdleTimeout: -1}, -1, 64, 64},
		{"no limit", Options{MaxLoaded: -1}, 2 * time.Minute, -1, 0},
		{"neither", Options{IdleTimeout: -1, MaxLoaded: -1}, -1, -1, 70},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			tt.opts.Now = clock.Now
			s := openStore(t, t.TempDir(), tt.opts)
			if s.idle != tt.idle || s.maxLoaded != tt.maxLoaded {
				t.Fatalf("idle, maxLoaded = %v, %d; want %v, %d", s.idle, s.maxLoaded, tt.idle, tt.maxLoaded)
			}
			for range 70 {
				if _, err := s.Create(newID(t)); err != nil {
					t.Fatal(err)
				}
			}
			for range 4 * 60 {
				clock.Advance(15 * time.Second)
				if _, err := s.Log(newID(t)); !errors.Is(err, ErrNotFound) { // a lookup sweeps
					t.Fatalf("Log of a missing session: %v", err)
				}
			}
			if got := s.Loaded(); got != tt.wantLoaded {
				t.Errorf("Loaded = %d, want %d", got, tt.wantLoaded)
			}
		})
	}
}

func TestReloadChecks(t *testing.T) {
	tests := []struct {
		name string
		edit func(content string) string // the file, changed while unloaded
		torn int                         // bytes the reload removes
		bad  int                         // the corrupt line, if any
	}{
		{"partial line", func(c string) string { return c + `{"v":1,"id":"` }, 13, 0},
		{"whole event without its newline", func(c string) string {
			lines := strings.SplitAfter(c, "\n")
			return c + strings.Replace(strings.TrimSuffix(lines[2], "\n"), `"seq":2`, `"seq":3`, 1)
		}, 0, 0},
		{"corrupt line", func(c string) string { return strings.Replace(c, `"seq":1`, `"seq":5`, 1) }, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, id := t.TempDir(), newID(t)
			path := filepath.Join(dir, id+".jsonl")
			s := openIdleStore(t, dir, Options{})
			l, err := s.Create(id)
			if err != nil {
				t.Fatal(err)
			}
			var saved []Event
			for range 3 {
				saved = append(saved, mustAppend(t, l, Event{Type: "note"}))
			}
			if !forceUnload(s.Store, l) {
				t.Fatal("forceUnload failed")
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			content := tt.edit(string(data))
			if tt.torn == 0 && tt.bad == 0 {
				tt.torn = len(content) - len(data)
			}
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}

			if tt.bad > 0 {
				var ce *CorruptError
				if _, err := s.Log(id); !errors.As(err, &ce) || ce.Line != tt.bad || ce.Path != path {
					t.Errorf("Log err = %v, want *CorruptError at line %d", err, tt.bad)
				}
				if _, _, err := l.Append(Event{Type: "note"}); !errors.As(err, &ce) {
					t.Errorf("Append err = %v, want *CorruptError", err)
				}
				if n, evs := l.Len(), l.Events(0); n != 0 || evs != nil {
					t.Errorf("reads of a log that cannot reload = %d, %v; want it empty", n, evs)
				}
				if isLoaded(l) || s.Loaded() != 1 {
					t.Errorf("corrupt log loaded: Loaded %d", s.Loaded())
				}
				checkOpen(t, path, 0)
				if got, _ := os.ReadFile(path); string(got) != content {
					t.Errorf("corrupt file modified")
				}
				return
			}
			if got := l.Events(0); !reflect.DeepEqual(got, saved) {
				t.Errorf("reloaded events differ:\n got %+v\nwant %+v", got, saved)
			}
			if l.Repaired() != int64(tt.torn) {
				t.Errorf("Repaired = %d, want %d", l.Repaired(), tt.torn)
			}
			if got, _ := os.ReadFile(path); string(got) != string(data) {
				t.Errorf("torn line not removed:\n%q", got)
			}
			if ev := mustAppend(t, l, Event{Type: "after"}); ev.Seq != 3 || ev.ParentID != saved[2].ID {
				t.Errorf("append after the repair = %+v", ev)
			}
		})
	}
}

func TestUnloadBrokenStays(t *testing.T) {
	dir, id := t.TempDir(), newID(t)
	s := openIdleStore(t, dir, Options{})
	l, err := s.Create(id)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, Event{Type: "note"})
	l.f = &faultyFile{logFile: l.f, writeErr: errors.New("disk full"), truncErr: errors.New("truncate refused")}
	if _, _, err := l.Append(Event{Type: "lost"}); err == nil {
		t.Fatal("Append on a failing disk succeeded")
	}
	s.idleFor(t, 2*testIdle)
	if !isLoaded(l) || forceUnload(s.Store, l) {
		t.Errorf("a broken log was unloaded")
	}
	if l.Len() != 1 {
		t.Errorf("broken log Len = %d, want 1", l.Len())
	}
}

func TestUnloadConcurrent(t *testing.T) {
	const writers, each = 8, 30
	dir := t.TempDir()
	s := openIdleStore(t, dir, Options{MaxLoaded: 2})
	ids := []string{newID(t), newID(t)}
	logs := make([]*Log, len(ids))
	for i, id := range ids {
		var err error
		if logs[i], err = s.Create(id); err != nil {
			t.Fatal(err)
		}
	}

	done := make(chan struct{})
	var unloads atomic.Int64
	var unloader sync.WaitGroup
	unloader.Go(func() { // unloads the logs between calls, as fast as it can
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, l := range logs {
				if unloadNow(s.Store, l) {
					unloads.Add(1)
				}
			}
			s.clock.Advance(testIdle) // and lets the sweeps try too
			if _, err := s.Log(s.tick); err != nil {
				t.Error(err)
				return
			}
		}
	})

	var wg sync.WaitGroup
	for i, l := range logs {
		for w := range writers {
			wg.Go(func() {
				seen := 0
				for n := range each {
					key := fmt.Sprintf("w%d/%d", w, n)
					ev, _, err := l.Append(Event{Type: "note", Key: key})
					if err != nil {
						t.Error(err)
						return
					}
					got, ok := l.ByKey(key)
					if !ok || got.ID != ev.ID {
						t.Errorf("ByKey(%s) = %+v, %v; want %+v", key, got, ok, ev)
					}
					if n%3 == 0 {
						if _, err := s.Log(ids[i]); err != nil {
							t.Error(err)
						}
					}
					evs := l.Events(0)
					if len(evs) < seen || len(evs) <= ev.Seq || evs[ev.Seq].ID != ev.ID {
						t.Errorf("Events lost events: %d after %d, append at %d", len(evs), seen, ev.Seq)
					}
					seen = len(evs)
				}
			})
		}
	}
	wg.Wait()
	close(done)
	unloader.Wait()
	if unloads.Load() == 0 {
		t.Errorf("no log was unloaded")
	}
	t.Logf("%d forced unloads of %d events", unloads.Load(), len(logs)*writers*each)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, dir, Options{})
	for _, id := range ids {
		l, err := s2.Log(id)
		if err != nil {
			t.Fatal(err)
		}
		checkChain(t, id, l.Events(0))
		if l.Len() != writers*each {
			t.Errorf("session %s has %d events, want %d", id, l.Len(), writers*each)
		}
	}
}

func TestCloseUnloaded(t *testing.T) {
	dir := t.TempDir()
	s := openIdleStore(t, dir, Options{})
	idle, busy := newID(t), newID(t)
	li, err := s.Create(idle)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, li, Event{Type: "note"})
	s.idleFor(t, 2*testIdle)
	lb, err := s.Create(busy)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, lb, Event{Type: "note"})
	if isLoaded(li) || !isLoaded(lb) {
		t.Fatalf("loaded: idle %v, busy %v; want false, true", isLoaded(li), isLoaded(lb))
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s.Loaded() != 0 {
		t.Errorf("Loaded after Close = %d", s.Loaded())
	}
	for _, id := range []string{idle, busy} {
		checkOpen(t, filepath.Join(dir, id+".jsonl"), 0)
	}
	for name, call := range map[string]func() error{
		"append to the idle log": func() error { _, _, err := li.Append(Event{Type: "t"}); return err },
		"append to the busy log": func() error { _, _, err := lb.Append(Event{Type: "t"}); return err },
		"log":                    func() error { _, err := s.Log(idle); return err },
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: err = %v, want %v", name, err, ErrClosed)
		}
	}
	if li.Len() != 0 || lb.Len() != 1 {
		t.Errorf("Len after Close: idle %d, busy %d; want 0, 1", li.Len(), lb.Len())
	}
}

// BenchmarkRead measures the read path of a loaded log: the calls an
// activity makes on every step.
func BenchmarkRead(b *testing.B) {
	s := openStore(b, b.TempDir(), Options{Now: time.Now})
	l, err := s.Create(newID(b))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		mustAppend(b, l, Event{Type: "note", Key: fmt.Sprintf("k%d", i), Data: json.RawMessage(`{"i":1}`)})
	}
	for _, bb := range []struct {
		name string
		read func() bool
	}{
		{"Len", func() bool { return l.Len() == 1000 }},
		{"ByKey", func() bool { _, ok := l.ByKey("k500"); return ok }},
		{"Range10", func() bool { return len(l.Range(990, 1000)) == 10 }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !bb.read() {
					b.Fatal("read found the wrong events")
				}
			}
		})
	}
}

// BenchmarkReload measures what a call on an unloaded log pays first:
// reopening and checking its file.
func BenchmarkReload(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			s := openStore(b, b.TempDir(), Options{Now: time.Now})
			l, err := s.Create(newID(b))
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				mustAppend(b, l, Event{Type: "note", Key: fmt.Sprintf("k%d", i), Data: json.RawMessage(`{"i":1}`)})
			}
			b.ReportAllocs()
			for b.Loop() {
				if !unloadNow(s, l) {
					b.Fatal("log not loaded")
				}
				if l.Len() != n {
					b.Fatal("reload lost events")
				}
			}
		})
	}
}
