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
	// Now stamps events; its result is converted to UTC. Default: time.Now.
	Now func() time.Time
}

// Store holds the session logs of one directory. It is safe for concurrent
// use. Logs are opened once and cached until Close; opening one (reading
// and checking its file) holds up other Create and Log calls, not appends.
type Store struct {
	dir      string
	redactor *redact.Redactor
	now      func() time.Time

	mu     sync.Mutex // guards logs and closed; held while a log is opened
	logs   map[string]*Log
	closed bool
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
	return &Store{dir: dir, redactor: opts.Redactor, now: opts.Now, logs: make(map[string]*Log)}, nil
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
	l := s.newLog(id, path, f)
	s.logs[id] = l
	return l, nil
}

// Log returns the log of session id, opening and checking it on first use
// (see the package documentation). It fails with ErrNotFound if there is no
// log, ErrInvalidID for an invalid id, and *CorruptError for a corrupt file.
func (s *Store) Log(id string) (*Log, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("open session %q: %w", id, ErrInvalidID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("open session %s: %w", id, ErrClosed)
	}
	if l, ok := s.logs[id]; ok {
		return l, nil
	}
	path := s.path(id)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	l := s.newLog(id, path, f)
	if err := l.load(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	s.logs[id] = l
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

// Close waits for appends in progress and closes every open log. Later
// calls on the store and its logs fail with ErrClosed.
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
	return errors.Join(errs...)
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
