package embedded

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// postgres's search is a tsvector column with a GIN index, ranked by
// ts_rank. The index holds the about-scoped words as the SQLite one does
// (parsed by the simple configuration, which keeps "a17xparse" whole), and
// a search's tsquery names them as lexemes, so no word is parsed twice.
// Writers of several hosts take one advisory lock per write, which keeps
// the store's own ids (MAX + 1) unique.
var postgres = dialect{
	schema: []string{
		`CREATE TABLE IF NOT EXISTS entries_fts (ref TEXT PRIMARY KEY REFERENCES entries (ref), body TSVECTOR NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS entries_fts_body ON entries_fts USING GIN (body)`,
	},
	index: `INSERT INTO entries_fts (ref, body) VALUES ($1, to_tsvector('simple', $2))`,
	search: `SELECT e.ref, e.kind, e.summary, e.evidence, e.actor, e.source_kind, e.observed_at, e.seq, f.score
		FROM (SELECT ref, ts_rank(body, q)::float8 AS score FROM entries_fts, CAST($1 AS tsquery) q WHERE body @@ q
			ORDER BY score DESC, ref LIMIT $2) f
		JOIN entries e ON e.ref = f.ref ORDER BY f.score DESC, e.seq DESC`,
	match: func(aboutID int64, terms []string) string {
		q := make([]string, len(terms))
		for i, t := range terms {
			q[i] = "'" + scoped(aboutID, t) + "'" // letters and digits only: nothing to escape
		}
		return strings.Join(q, " | ")
	},
	lock: `SELECT pg_advisory_xact_lock(hashtext('axlr memory write'))`,
}

// OpenDB opens the store on a PostgreSQL database (a pgx database/sql
// pool whose search_path is the store's schema), creating its tables if
// need be. Hosts of a cluster may share it. The store's Close closes the
// pool.
func OpenDB(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	s, err := open(ctx, db, postgres, opts)
	if err != nil {
		return nil, fmt.Errorf("open the memory store on its database: %w", err)
	}
	return s, nil
}
