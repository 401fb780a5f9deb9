// Package embedded is the memory axlrd keeps itself when no kmp-mcp is
// configured: a kmp.Store in SQLite (<state-dir>/memory/memory.sqlite3,
// WAL) with full-text search (FTS5) over summaries and evidence, or in
// PostgreSQL (OpenDB, tsvector) for the hosts of a cluster to share.
//
// Abouts, entries, relations, labels and the outcomes of writes (for
// idempotency) are tables of their own. Its SQL is portable (numbered
// parameters, ON CONFLICT, ids the store takes itself rather than
// autoincrement, no SQLite functions) except the full-text search, which
// a dialect holds with the lock writers take, so the store runs on
// either database/sql driver. It speaks kmp-mcp's semantics: the same conformance
// suite (kmptest) runs over it and over kmp-mcp.
package embedded

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/underpass-ai/axlr/kmp"
)

// FileName is the store's file in its directory.
const FileName = "memory.sqlite3"

// formatVersion is the schema's version, kept in the meta table.
const formatVersion = "1"

// Options configure a store.
type Options struct {
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Store is the embedded memory. It is safe for concurrent use, and several
// processes may open the same directory (SQLite WAL).
type Store struct {
	db  *sql.DB
	d   dialect
	now func() time.Time
}

var _ kmp.Store = (*Store)(nil)

// Open opens (creating it if need be) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create memory directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open memory store %s: %w", path, err)
	}
	s, err := open(context.Background(), db, sqlite, opts)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open memory store %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, db *sql.DB, d dialect, opts Options) (*Store, error) {
	s := &Store{db: db, d: d, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	// The schema is made in one transaction under the writers' lock, so
	// hosts opening a new database together do not race on it.
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	defer tx.Rollback()
	for _, stmt := range append(append([]string{}, schema...), d.schema...) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("create schema (%s): %w", firstLine(stmt), err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('format', $1) ON CONFLICT (key) DO NOTHING`, formatVersion); err != nil {
		return nil, fmt.Errorf("record the format: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	var v string
	if err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'format'`).Scan(&v); err != nil {
		return nil, fmt.Errorf("read the format: %w", err)
	}
	if v != formatVersion {
		return nil, fmt.Errorf("the store's format is %s; this axlr reads format %s", v, formatVersion)
	}
	// Every write adds a segment to SQLite's search index; merging them
	// at open keeps a wake reading few.
	if d.optimize != "" {
		if _, err := db.ExecContext(ctx, d.optimize); err != nil {
			return nil, fmt.Errorf("merge the search index: %w", err)
		}
	}
	return s, nil
}

// begin starts a write transaction and takes the dialect's writers' lock.
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if s.d.lock != "" {
		if _, err := tx.ExecContext(ctx, s.d.lock); err != nil {
			_ = tx.Rollback()
			return nil, err
		}
	}
	return tx, nil
}

// Close closes the store.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close memory store: %w", err)
	}
	return nil
}

// schema is the portable part of the schema.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS abouts (id INTEGER PRIMARY KEY, about TEXT NOT NULL UNIQUE)`,
	`CREATE TABLE IF NOT EXISTS entries (
		ref TEXT PRIMARY KEY,
		about_id INTEGER NOT NULL REFERENCES abouts (id),
		seq INTEGER NOT NULL UNIQUE,
		kind TEXT NOT NULL,
		summary TEXT NOT NULL,
		evidence TEXT NOT NULL,
		actor TEXT NOT NULL,
		source_kind TEXT NOT NULL,
		observed_at TEXT NOT NULL,
		write_key TEXT NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS entries_about_seq ON entries (about_id, seq)`,
	`CREATE TABLE IF NOT EXISTS relations (
		from_ref TEXT NOT NULL REFERENCES entries (ref),
		rel TEXT NOT NULL,
		to_ref TEXT NOT NULL REFERENCES entries (ref),
		why TEXT NOT NULL,
		evidence TEXT NOT NULL,
		confidence TEXT NOT NULL,
		PRIMARY KEY (from_ref, rel, to_ref))`,
	`CREATE INDEX IF NOT EXISTS relations_to ON relations (to_ref)`,
	`CREATE TABLE IF NOT EXISTS labels (
		ref TEXT NOT NULL REFERENCES entries (ref),
		key TEXT NOT NULL,
		value TEXT NOT NULL,
		PRIMARY KEY (ref, key, value))`,
	`CREATE INDEX IF NOT EXISTS labels_key_value ON labels (key, value)`,
	`CREATE TABLE IF NOT EXISTS writes (
		idempotency_key TEXT PRIMARY KEY,
		digest TEXT NOT NULL,
		result TEXT NOT NULL)`,
}

// dialect is what is not portable: the full-text search.
type dialect struct {
	// schema creates the search index.
	schema []string
	// index adds an entry to the index ($1 ref, $2 its indexBody).
	index string
	// search finds an about's entries matching terms ($1 the match
	// expression, $2 the limit), best first: the entry's columns
	// (entryColumns) and a score where higher is better.
	search string
	// match builds the match expression of terms within an about.
	match func(aboutID int64, terms []string) string
	// optimize merges the search index a bounded amount, run at open
	// ("": nothing to merge).
	optimize string
	// lock is run first in every write transaction, to serialise the
	// writers of several processes ("": the driver's transactions do).
	lock string
}

// sqlite's search is FTS5, ranked by bm25 (lower is better, so negated).
// Each word is indexed with its about's id before it ("a17xparse"), so a
// search reads only its about's postings however large the store grows.
var sqlite = dialect{
	schema:   []string{`CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5 (ref UNINDEXED, body)`},
	index:    `INSERT INTO entries_fts (ref, body) VALUES ($1, $2)`,
	optimize: `INSERT INTO entries_fts (entries_fts, rank) VALUES ('merge', 500)`,
	search: `SELECT e.ref, e.kind, e.summary, e.evidence, e.actor, e.source_kind, e.observed_at, e.seq, f.score
		FROM (SELECT ref, -bm25(entries_fts) AS score FROM entries_fts WHERE entries_fts MATCH $1
			ORDER BY bm25(entries_fts) LIMIT $2) f
		JOIN entries e ON e.ref = f.ref ORDER BY f.score DESC`,
	match: func(aboutID int64, terms []string) string {
		q := make([]string, len(terms))
		for i, t := range terms {
			q[i] = `"` + scoped(aboutID, t) + `"`
		}
		return strings.Join(q, " OR ")
	},
}

// scoped is a word as the index holds it: prefixed with its about's id.
func scoped(aboutID int64, word string) string { return fmt.Sprintf("a%dx%s", aboutID, word) }

// indexBody is what the search index holds of an entry: every word of its
// summary and evidence, scoped to its about.
func indexBody(aboutID int64, summary, evidence string) string {
	words := words(summary + " " + evidence)
	for i, w := range words {
		words[i] = scoped(aboutID, w)
	}
	return strings.Join(words, " ")
}

// failed turns a database error into a kmp error: a busy or cancelled
// store can be retried (unavailable), anything else is backend_error.
func failed(op string, err error) error {
	var ke *kmp.Error
	if errors.As(err, &ke) {
		return ke
	}
	msg := err.Error()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY") || transient(err) {
		return kmp.Errorf(kmp.CodeUnavailable, "%s: %v", op, err)
	}
	return kmp.Errorf(kmp.CodeBackend, "%s: %v", op, err)
}

// transient reports a PostgreSQL failure worth retrying: a lost or
// refused connection, a serialization failure or deadlock, too many
// connections, or a server shutting down.
func transient(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code[:min(2, len(pg.Code))] {
		case "08", "40", "53", "57":
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || pgconn.SafeToRetry(err)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// aboutID returns an about's id, or ok false when the store has none.
func (s *Store) aboutID(ctx context.Context, q querier, about string) (int64, bool, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM abouts WHERE about = $1`, about).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, failed("read about "+about, err)
	}
	return id, true, nil
}

// populated returns the id of an about that holds at least one entry, or
// a not_found error naming it.
func (s *Store) populated(ctx context.Context, about string) (int64, error) {
	if strings.TrimSpace(about) == "" {
		return 0, kmp.Errorf(kmp.CodeInvalid, "about is required")
	}
	id, ok, err := s.aboutID(ctx, s.db, about)
	if err != nil {
		return 0, err
	}
	if ok {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM entries WHERE about_id = $1`, id).Scan(&n); err != nil {
			return 0, failed("count the entries of "+about, err)
		}
		if n > 0 {
			return id, nil
		}
	}
	return 0, kmp.Errorf(kmp.CodeNotFound, "no memory about %s", about)
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}
