// Package session keeps each session's transcript as an append-only JSONL
// log: one file <dir>/<session id>.jsonl per session, one Event per
// newline-terminated line, in the order they were appended.
//
// Durability. An append redacts the event data, writes one complete line,
// fsyncs the file, and on any failure truncates the file back to its
// previous length, so the log on disk and in memory never holds half an
// event. Appends to one session are serialized; different sessions proceed
// in parallel. When a log is opened (or reloaded), a final line without its
// newline (an append torn by a crash: it was never acknowledged) is removed
// and reported by (*Log).Repaired; any complete line that is not a valid
// event of the chain is corruption, reported as a *CorruptError, and the file
// is left untouched.
//
// Memory. A log in use stays loaded: its file open, its events in memory. The
// store unloads one left unused for Options.IdleTimeout, and the least
// recently used past Options.MaxLoaded, closing the file and dropping the
// events; the *Log stays valid and reloads them, with the same checks, on its
// next call.
//
// Identity. Session and event ids are lowercase RFC 9562 UUIDs (NewID,
// ValidID). Each event names its session and its parent, the event before it,
// so a log is a chain that Open checks line by line.
//
// Left to callers: what the event types and data mean, which secrets to
// redact (Options.Redactor), and running one Store per directory — the
// store assumes it is the only writer of its files.
package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Version is the event format version written and accepted.
const Version = 1

// Event is one line of a session log.
type Event struct {
	V           int             `json:"v"`                      // format version, always Version
	ID          string          `json:"id"`                     // lowercase RFC 9562 UUID
	SessionID   string          `json:"session_id"`             // the log's session
	ParentID    string          `json:"parent_id,omitempty"`    // the previous event's id; empty for the first
	OperationID string          `json:"operation_id,omitempty"` // only when an operation owns the event
	Seq         int             `json:"seq"`                    // 0-based position in the log
	Type        string          `json:"type"`                   // required
	Key         string          `json:"key,omitempty"`          // idempotency key, unique in the log when set
	Time        time.Time       `json:"time"`                   // UTC, when the event was appended
	Data        json.RawMessage `json:"data,omitempty"`         // redacted JSON
}

var (
	// ErrNotFound means the session has no log.
	ErrNotFound = errors.New("session not found")
	// ErrExists means a log for the session already exists.
	ErrExists = errors.New("session already exists")
	// ErrInvalidID means a session or operation id is not a lowercase
	// canonical RFC 9562 UUID.
	ErrInvalidID = errors.New("not a lowercase RFC 9562 UUID")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("session store closed")
	// ErrMoved means AppendAt found the log longer or shorter than asked:
	// another writer appended first.
	ErrMoved = errors.New("session log moved on")
)

// CorruptError reports a complete line of a log file that is not a valid
// event of the log's chain. The file is not modified.
type CorruptError struct {
	Path string // the log file
	Line int    // 1-based line number
	Err  error  // what is wrong with the line
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt session log %s line %d: %v", e.Path, e.Line, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// NewID returns a new random (version 4) lowercase UUID from crypto/rand.
func NewID() (string, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return "", fmt.Errorf("new id: %w", err)
	}
	return id.String(), nil
}

// ValidID reports whether id is a UUID in lowercase canonical form
// (8-4-4-4-12 hex digits) with the RFC 9562 variant and a version from 1 to 8.
// The nil and max UUIDs are not valid ids.
func ValidID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	version, variant := id[14], id[19]
	return '1' <= version && version <= '8' && (variant == '8' || variant == '9' || variant == 'a' || variant == 'b')
}
