package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/underpass-ai/axlr/redact"
)

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Redactor masks event data before it is written.
	// Default: redact.New(nil), which masks credential fields only.
	Redactor *redact.Redactor
	// Now stamps events, its result converted to UTC, and measures how long
	// logs stay unused. Default: time.Now.
	Now func() time.Time
	// IdleTimeout is how long a log may stay unused before the store
	// unloads it, at the first Create or Log call after that (and up to a
	// quarter of it later). Default (0): 2 minutes; negative: never.
	IdleTimeout time.Duration
	// MaxLoaded is the most logs the store keeps loaded; past it, it
	// unloads the least recently used. Default (0): 64; negative: no limit.
	MaxLoaded int
}

const (
	defaultIdleTimeout = 2 * time.Minute
	defaultMaxLoaded   = 64
)

// Store holds the session logs of one directory. It is safe for concurrent
// use. A log is opened on first use and then stays loaded — its file open,
// its events in memory — until it has gone unused for Options.IdleTimeout,
// or until it is the least recently used of more than Options.MaxLoaded
// loaded logs. Then the store unloads it: it closes the file and drops the
// events, keeping the *Log, which reloads them, with the checks of the first
// open, on its next call. A log in the middle of a call is never unloaded,
// nor is a broken one. Idle logs are swept by Create and Log calls, at most
// once per quarter of the timeout. Opening a log (reading and checking its
// file) holds up other Create and Log calls, not appends; reloading one holds
// up only its own calls.
type Store struct {
	dir       string
	redactor  *redact.Redactor
	now       func() time.Time
	idle      time.Duration // <= 0: no idle timeout
	maxLoaded int           // <= 0: no limit

	mu         sync.Mutex // guards the fields below; held while a log is opened
	logs       map[string]*Log
	closed     bool
	head, tail *Log // the loaded logs, most recently used first
	nloaded    int
	nextSweep  time.Time
}

// Open returns the store of the session logs in dir (for instance
// <state>/sessions), creating the directory with mode 0700 if needed.
func Open(dir string, opts Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open session store %s: %w", dir, err)
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = defaultIdleTimeout
	}
	if opts.MaxLoaded == 0 {
		opts.MaxLoaded = defaultMaxLoaded
	}
	return &Store{
		dir: dir, redactor: opts.Redactor, now: opts.Now,
		idle: opts.IdleTimeout, maxLoaded: opts.MaxLoaded,
		logs: make(map[string]*Log),
	}, nil
}

func (s *Store) path(id string) string { return filepath.Join(s.dir, id+".jsonl") }

// Create creates an empty log for session id, with mode 0600, and syncs the
// directory. It fails with ErrExists if the log exists and ErrInvalidID if
// id is not a valid id.
func (s *Store) Create(id string) (*Log, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("create session %q: %w", id, ErrInvalidID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("create session %s: %w", id, ErrClosed)
	}
	path := s.path(id)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create session %s: %w", id, ErrExists)
	}
	if err != nil {
		return nil, fmt.Errorf("create session %s: %w", id, err)
	}
	if err := syncDir(s.dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("create session %s: %w", id, err)
	}
	l := s.newLog(id)
	l.set(f, newView(), 0, 0)
	s.logs[id] = l
	s.list(l, s.now())
	return l, nil
}

// Log returns the log of session id, opening and checking it on first use
// (see the package documentation) and reloading it, with the same checks, if
// it was unloaded. It fails with ErrNotFound if there is no log, ErrInvalidID
// for an invalid id, and *CorruptError for a corrupt file.
func (s *Store) Log(id string) (*Log, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("open session %q: %w", id, ErrInvalidID)
	}
	l, err := s.lookup(id)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	l.mu.RLock()
	loaded := l.loaded
	l.mu.RUnlock()
	if !loaded {
		if err := l.reload(); err != nil {
			return nil, fmt.Errorf("open session %s: %w", id, err)
		}
	}
	return l, nil
}

// lookup returns the log of session id, opening it if the store has none.
func (s *Store) lookup(id string) (*Log, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	now := s.now()
	l, ok := s.logs[id]
	if ok && l.listed {
		l.touch()
		s.front(l, now) // first, so that the sweep keeps it
	}
	s.sweep(now)
	if ok {
		return l, nil
	}
	l = s.newLog(id)
	if _, err := l.load(); err != nil {
		return nil, err
	}
	s.logs[id] = l
	s.list(l, now)
	return l, nil
}

// Exists reports whether session id has a log. It is false for invalid ids.
func (s *Store) Exists(id string) bool {
	if !ValidID(id) {
		return false
	}
	s.mu.Lock()
	_, ok := s.logs[id]
	s.mu.Unlock()
	if ok {
		return true
	}
	_, err := os.Lstat(s.path(id))
	return err == nil
}

// Loaded returns the number of logs loaded now: with their file open and
// their events in memory.
func (s *Store) Loaded() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nloaded
}

// Close waits for appends in progress and closes every open log. Later
// calls on the store and its logs fail with ErrClosed, except reads of a log
// that was loaded, which still see its events; an unloaded log reads as
// empty.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, l := range s.logs {
		errs = append(errs, l.close())
	}
	s.logs = nil
	s.head, s.tail, s.nloaded = nil, nil, 0
	return errors.Join(errs...)
}

// The loaded list. The methods below are called with s.mu held.

// list adds l, just loaded, at the front of the loaded list, then unloads
// idle logs and logs past the bound.
func (s *Store) list(l *Log, now time.Time) {
	l.listed = true
	s.pushFront(l, now)
	s.nloaded++
	s.sweep(now)
	s.evict(l, now)
}

// listIfReloaded lists l if *reloaded, unless the store is closed. Called
// with no lock of l held; it takes a pointer so that append can defer it.
func (s *Store) listIfReloaded(l *Log, reloaded *bool) {
	if !*reloaded {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.list(l, s.now())
	}
}

// sweep unloads the logs unused for the idle timeout, at most once per
// quarter of it. A log used since the last sweep counts as used now.
func (s *Store) sweep(now time.Time) {
	if s.idle <= 0 || now.Before(s.nextSweep) {
		return
	}
	s.nextSweep = now.Add(s.idle / 4)
	l := s.tail
	for range s.nloaded { // each log once, though used ones move to the front
		prev := l.prev
		switch {
		case l.used.Swap(false):
			s.front(l, now)
		case now.Sub(l.lastUsed) >= s.idle && l.unload():
			s.unlist(l)
		}
		l = prev
	}
}

// evict unloads the least recently used logs, other than keep, while more
// than maxLoaded are loaded. A log used since the last sweep gets a second
// chance; one in the middle of a call, or broken, is skipped, so the bound
// is exceeded while every other log is busy.
func (s *Store) evict(keep *Log, now time.Time) {
	if s.maxLoaded <= 0 {
		return
	}
	for tries := 2 * s.nloaded; s.nloaded > s.maxLoaded && tries > 0; tries-- {
		l := s.tail
		if l != keep && !l.used.Swap(false) && l.unload() {
			s.unlist(l)
		} else {
			s.front(l, now)
		}
	}
}

// front moves listed log l to the front: used at now.
func (s *Store) front(l *Log, now time.Time) {
	s.remove(l)
	s.pushFront(l, now)
}

func (s *Store) unlist(l *Log) {
	s.remove(l)
	l.listed = false
	s.nloaded--
}

func (s *Store) pushFront(l *Log, now time.Time) {
	l.lastUsed = now
	l.prev, l.next = nil, s.head
	if s.head != nil {
		s.head.prev = l
	} else {
		s.tail = l
	}
	s.head = l
}

func (s *Store) remove(l *Log) {
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		s.head = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	} else {
		s.tail = l.prev
	}
	l.prev, l.next = nil, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
