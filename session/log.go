package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/underpass-ai/axlr/redact"
)

// logFile is the part of *os.File a Log writes through; tests wrap it to
// inject failures.
type logFile interface {
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Log is one session's event log. It is safe for concurrent use: appends are
// serialized, and reads see every event whose append has returned.
//
// The Store may unload a Log between calls (see Store); the next call
// reloads it. If that reload fails (the file was damaged meanwhile), reads
// find the log empty, and Append and Store.Log return the error.
type Log struct {
	id       string
	path     string
	redactor *redact.Redactor
	now      func() time.Time
	store    *Store

	wmu    sync.Mutex // the append queue; guards f, size, broken, closed
	f      logFile    // nil when unloaded
	size   int64      // length of the file: the end of the last complete line
	broken error      // set when a failed append could not be rolled back
	closed bool

	// A log is loaded (f open, view filled) or unloaded (neither). loaded
	// changes only with both wmu and mu held, so holding either pins it: an
	// append (wmu) or a read (mu) in progress is never unloaded.
	mu       sync.RWMutex // guards the in-memory view below
	loaded   bool         // written with wmu and mu held, read with either
	view                  // empty when unloaded
	repaired int64        // torn bytes removed by every load so far

	used atomic.Bool // set by each call, cleared by the store's sweeps

	// Guarded by store.mu: the store's list of loaded logs.
	prev, next *Log
	listed     bool
	lastUsed   time.Time
}

// view is the in-memory copy of a log file.
type view struct {
	events []Event
	byKey  map[string]int // Key -> Seq
	lastOf map[string]int // Type -> Seq of the newest event
}

func newView() view {
	return view{byKey: make(map[string]int), lastOf: make(map[string]int)}
}

// newLog returns the unloaded log of session id.
func (s *Store) newLog(id string) *Log {
	return &Log{id: id, path: s.path(id), redactor: s.redactor, now: s.now, store: s}
}

// ID returns the session id.
func (l *Log) ID() string { return l.id }

// Repaired returns the number of bytes of a torn final line (one without
// its newline) that were removed from the file when the log was opened, or
// reloaded after being unloaded; 0 if the file always ended with a complete
// line. Callers should report a non-zero value: the last append before a
// crash was lost, though it was never acknowledged.
func (l *Log) Repaired() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.repaired
}

// Append adds ev to the log. It sets V, ID, SessionID, ParentID, Seq and Time
// (any values the caller set are replaced) and replaces Data, which must be
// empty or valid JSON, with its redacted form (redact.Redactor.JSON). It
// writes exactly one newline-terminated line and syncs the file; on any
// failure it truncates the file back to its previous length, leaves the log
// in memory unchanged and returns the error. If the truncation itself fails,
// every later append fails too: reopen the store to recover.
//
// If ev.Key is set and an event with that key exists, Append returns that
// event and existed=true without writing, whatever the rest of ev holds.
// An OperationID, when set, must be a valid id; Type must not be empty.
func (l *Log) Append(ev Event) (saved Event, existed bool, err error) {
	return l.append(ev, -1)
}

// AppendAt is Append for a writer that must not append behind another: it
// writes only if the log holds exactly seq events, and otherwise returns
// ErrMoved. An event whose key exists is returned as Append returns it.
func (l *Log) AppendAt(seq int, ev Event) (saved Event, existed bool, err error) {
	return l.append(ev, seq)
}

// append writes ev; want >= 0 requires the log to hold exactly want events.
func (l *Log) append(ev Event, want int) (saved Event, existed bool, err error) {
	reloaded := false
	defer l.store.listIfReloaded(l, &reloaded) // after wmu is released
	l.wmu.Lock()
	defer l.wmu.Unlock()
	switch {
	case l.closed:
		return Event{}, false, fmt.Errorf("append to session %s: %w", l.id, ErrClosed)
	case l.broken != nil:
		return Event{}, false, fmt.Errorf("append to session %s: log unusable after a failed rollback: %w", l.id, l.broken)
	}
	if reloaded, err = l.load(); err != nil {
		return Event{}, false, fmt.Errorf("append to session %s: reopen: %w", l.id, err)
	}
	l.touch()
	if ev.Key != "" {
		if prev, ok := l.ByKey(ev.Key); ok {
			return prev, true, nil
		}
	}
	if ev.Type == "" {
		return Event{}, false, fmt.Errorf("append to session %s: event type is empty", l.id)
	}
	if ev.OperationID != "" && !ValidID(ev.OperationID) {
		return Event{}, false, fmt.Errorf("append to session %s: operation id %q: %w", l.id, ev.OperationID, ErrInvalidID)
	}
	if len(ev.Data) > 0 {
		if !json.Valid(ev.Data) {
			return Event{}, false, fmt.Errorf("append %s event to session %s: data is not valid JSON", ev.Type, l.id)
		}
		ev.Data = l.redactor.JSON(ev.Data)
	}
	id, err := NewID()
	if err != nil {
		return Event{}, false, fmt.Errorf("append to session %s: %w", l.id, err)
	}

	l.mu.RLock()
	seq := len(l.events)
	if want >= 0 && seq != want {
		l.mu.RUnlock()
		return Event{}, false, fmt.Errorf("append %s event to session %s at %d: the log holds %d events: %w", ev.Type, l.id, want, seq, ErrMoved)
	}
	if seq > 0 {
		ev.ParentID = l.events[seq-1].ID
	} else {
		ev.ParentID = ""
	}
	l.mu.RUnlock()
	ev.V, ev.ID, ev.SessionID, ev.Seq, ev.Time = Version, id, l.id, seq, l.now().UTC()

	var line bytes.Buffer
	enc := json.NewEncoder(&line) // Encode ends the line with '\n'
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return Event{}, false, fmt.Errorf("append %s event to session %s: encode: %w", ev.Type, l.id, err)
	}
	if err := l.write(line.Bytes()); err != nil {
		return Event{}, false, fmt.Errorf("append %s event to session %s: %w", ev.Type, l.id, err)
	}

	l.mu.Lock()
	l.events = append(l.events, ev)
	if ev.Key != "" {
		l.byKey[ev.Key] = seq
	}
	l.lastOf[ev.Type] = seq
	l.mu.Unlock()
	return cloneEvent(ev), false, nil
}

// write appends line at the end of the file and syncs it, or restores the
// previous length. Called with wmu held.
func (l *Log) write(line []byte) error {
	_, err := l.f.WriteAt(line, l.size)
	if err == nil {
		err = l.f.Sync()
	}
	if err == nil {
		l.size += int64(len(line))
		return nil
	}
	if terr := l.f.Truncate(l.size); terr != nil {
		l.broken = fmt.Errorf("roll back to %d bytes: %w", l.size, terr)
		return errors.Join(err, l.broken)
	}
	// Once truncated, the log is consistent; the truncation reaches the disk
	// with this sync or with the next append's.
	if serr := l.f.Sync(); serr != nil {
		return errors.Join(err, fmt.Errorf("sync after rollback: %w", serr))
	}
	return err
}

// ready, called with mu read-locked, reports whether the log is loaded,
// reloading it first if it was unloaded, and marks it used. If it returns
// false, mu is no longer held: the log is unloaded and cannot be reloaded (it
// is closed or its file fails the checks of Store.Log), so the read finds it
// empty and the next Store.Log or Append reports the error.
func (l *Log) ready() bool {
	if l.loaded && l.used.Load() { // the fast path, kept small to be inlined
		return true
	}
	return l.readySlow()
}

// readySlow is ready for a log that is unloaded or not marked used.
func (l *Log) readySlow() bool {
	for !l.loaded {
		l.mu.RUnlock()
		if err := l.reload(); err != nil {
			return false
		}
		l.mu.RLock() // the store may have unloaded it again meanwhile
	}
	l.used.Store(true)
	return true
}

// reload reloads the log if it is unloaded, then lists it in the store.
// Called with no lock held.
func (l *Log) reload() error {
	l.wmu.Lock()
	reloaded, err := l.load()
	l.wmu.Unlock()
	l.store.listIfReloaded(l, &reloaded)
	return err
}

// touch marks the log used since the store's last sweep. It writes only when
// the flag is clear, to keep its cache line shared between callers.
func (l *Log) touch() {
	if !l.used.Load() {
		l.used.Store(true)
	}
}

// Len returns the number of events.
func (l *Log) Len() int {
	l.mu.RLock()
	if !l.ready() {
		return 0
	}
	defer l.mu.RUnlock()
	return len(l.events)
}

// Events returns copies of the events with Seq >= from, oldest first.
func (l *Log) Events(from int) []Event {
	return l.Range(from, math.MaxInt)
}

// Range returns copies of the events with from <= Seq < to, oldest first.
func (l *Log) Range(from, to int) []Event {
	l.mu.RLock()
	if !l.ready() {
		return nil
	}
	defer l.mu.RUnlock()
	from, to = max(from, 0), min(to, len(l.events))
	if from >= to {
		return nil
	}
	out := make([]Event, 0, to-from)
	for _, ev := range l.events[from:to] {
		out = append(out, cloneEvent(ev))
	}
	return out
}

// ByKey returns the event with idempotency key key.
func (l *Log) ByKey(key string) (Event, bool) {
	l.mu.RLock()
	if !l.ready() {
		return Event{}, false
	}
	defer l.mu.RUnlock()
	seq, ok := l.byKey[key]
	if !ok {
		return Event{}, false
	}
	return cloneEvent(l.events[seq]), true
}

// Last returns the newest event of type typ.
func (l *Log) Last(typ string) (Event, bool) {
	l.mu.RLock()
	if !l.ready() {
		return Event{}, false
	}
	defer l.mu.RUnlock()
	seq, ok := l.lastOf[typ]
	if !ok {
		return Event{}, false
	}
	return cloneEvent(l.events[seq]), true
}

func cloneEvent(ev Event) Event {
	ev.Data = bytes.Clone(ev.Data)
	return ev
}

func (l *Log) close() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.closed = true
	if l.f == nil {
		return nil
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close session %s: %w", l.id, err)
	}
	return nil
}

// load opens and reads the file of an unloaded log, with the checks of
// read; it reports whether it did. Called with wmu held, or before the log is
// shared.
func (l *Log) load() (bool, error) {
	switch {
	case l.loaded:
		return false, nil
	case l.closed:
		return false, ErrClosed
	}
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, ErrNotFound
	}
	if err != nil {
		return false, err
	}
	v, size, torn, err := l.read(f)
	if err != nil {
		f.Close()
		return false, err
	}
	l.set(f, v, size, torn)
	return true, nil
}

// set makes the log loaded from f. Called with wmu held, or before the log
// is shared.
func (l *Log) set(f logFile, v view, size, torn int64) {
	l.f, l.size = f, size
	l.mu.Lock()
	l.view, l.loaded = v, true
	l.repaired += torn
	l.mu.Unlock()
}

// unload closes the file and drops the events of a loaded log, unless it is
// in use (an append or a read in progress), broken, or closed; it reports
// whether it did. It never blocks.
func (l *Log) unload() bool {
	if !l.wmu.TryLock() {
		return false
	}
	defer l.wmu.Unlock()
	if !l.loaded || l.broken != nil || l.closed || !l.mu.TryLock() {
		return false
	}
	defer l.mu.Unlock()
	l.unloadLocked()
	return true
}

// unloadLocked unloads a loaded log. Called with wmu and mu held.
func (l *Log) unloadLocked() {
	// Every append was synced before it returned, so a failed close loses
	// nothing, and the descriptor is released either way.
	_ = l.f.Close()
	l.f, l.size = nil, 0
	l.view, l.loaded = view{}, false
}

// read reads f into a new view: it keeps every complete line, checks each
// one, and removes a torn final line, returning its length. It returns a
// *CorruptError, without modifying the file, if a complete line is not the
// next event of the chain.
func (l *Log) read(f *os.File) (v view, size, torn int64, err error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return view{}, 0, 0, fmt.Errorf("read %s: %w", l.path, err)
	}
	v = newView()
	complete := data[:bytes.LastIndexByte(data, '\n')+1]
	rest := complete
	for n := 1; len(rest) > 0; n++ {
		i := bytes.IndexByte(rest, '\n')
		if err := v.add(l.id, rest[:i]); err != nil {
			return view{}, 0, 0, &CorruptError{Path: l.path, Line: n, Err: err}
		}
		rest = rest[i+1:]
	}
	size = int64(len(complete))
	if torn = int64(len(data)) - size; torn > 0 {
		if err := f.Truncate(size); err != nil {
			return view{}, 0, 0, fmt.Errorf("remove torn final line of %s: %w", l.path, err)
		}
		if err := f.Sync(); err != nil {
			return view{}, 0, 0, fmt.Errorf("remove torn final line of %s: %w", l.path, err)
		}
	}
	return v, size, torn, nil
}

// add checks that line is the next event of session id's chain and keeps it.
func (v *view) add(id string, line []byte) error {
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return err
	}
	seq := len(v.events)
	parent := ""
	if seq > 0 {
		parent = v.events[seq-1].ID
	}
	switch {
	case ev.V != Version:
		return fmt.Errorf("format version %d, want %d", ev.V, Version)
	case !ValidID(ev.ID):
		return fmt.Errorf("event id %q: %w", ev.ID, ErrInvalidID)
	case ev.SessionID != id:
		return fmt.Errorf("session id %q, want %q", ev.SessionID, id)
	case ev.Seq != seq:
		return fmt.Errorf("seq %d, want %d", ev.Seq, seq)
	case ev.ParentID != parent:
		return fmt.Errorf("parent id %q, want %q", ev.ParentID, parent)
	case ev.OperationID != "" && !ValidID(ev.OperationID):
		return fmt.Errorf("operation id %q: %w", ev.OperationID, ErrInvalidID)
	case ev.Type == "":
		return errors.New("event type is empty")
	case ev.Time.IsZero():
		return errors.New("event time is missing")
	}
	if ev.Key != "" {
		if prev, dup := v.byKey[ev.Key]; dup {
			return fmt.Errorf("key %q already used by seq %d", ev.Key, prev)
		}
		v.byKey[ev.Key] = seq
	}
	v.events = append(v.events, ev)
	v.lastOf[ev.Type] = seq
	return nil
}
