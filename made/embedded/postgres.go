package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// sqlBackend keeps definitions and instances in PostgreSQL, in the schema
// the pool's search_path names, for the hosts of a cluster to share. It
// caches nothing an other host could change: every verb reads the
// instance, and writes it only if its revision is still the one read.
type sqlBackend struct {
	db  *sql.DB
	now func() time.Time
}

// postgresSchema is the store's tables. Creating them takes an advisory
// lock, so hosts starting together do not race on the catalog.
var postgresSchema = []string{
	`SELECT pg_advisory_xact_lock(hashtext('axlr made schema'))`,
	`CREATE TABLE IF NOT EXISTS definitions (
		name TEXT NOT NULL,
		version TEXT NOT NULL,
		digest TEXT NOT NULL,
		yaml TEXT NOT NULL,
		published_at TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (name, version))`,
	`CREATE TABLE IF NOT EXISTS instances (
		id TEXT PRIMARY KEY,
		revision BIGINT NOT NULL,
		body TEXT NOT NULL,
		updated_at TIMESTAMPTZ NOT NULL)`,
}

func openSQLBackend(ctx context.Context, db *sql.DB, now func() time.Time) (*sqlBackend, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	for _, stmt := range postgresSchema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("create the ceremony tables: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("create the ceremony tables: %w", err)
	}
	return &sqlBackend{db: db, now: now}, nil
}

func (s *sqlBackend) definitions(ctx context.Context) ([]storedDefinition, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, version, digest, yaml FROM definitions ORDER BY name, version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedDefinition
	for rows.Next() {
		var d storedDefinition
		if err := rows.Scan(&d.Name, &d.Version, &d.Digest, &d.YAML); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

func (s *sqlBackend) definition(ctx context.Context, name, version string) (storedDefinition, bool, error) {
	d := storedDefinition{Name: name, Version: version}
	err := s.db.QueryRowContext(ctx, `SELECT digest, yaml FROM definitions WHERE name = $1 AND version = $2`, name, version).Scan(&d.Digest, &d.YAML)
	if errors.Is(err, sql.ErrNoRows) {
		return storedDefinition{}, false, nil
	}
	return d, err == nil, err
}

func (s *sqlBackend) addDefinition(ctx context.Context, d storedDefinition) (storedDefinition, error) {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO definitions (name, version, digest, yaml, published_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (name, version) DO NOTHING`, d.Name, d.Version, d.Digest, d.YAML, s.now()); err != nil {
		return storedDefinition{}, err
	}
	had, ok, err := s.definition(ctx, d.Name, d.Version)
	if err == nil && !ok {
		err = fmt.Errorf("definition %s %s vanished after it was stored", d.Name, d.Version)
	}
	return had, err
}

func (s *sqlBackend) instance(ctx context.Context, id string) ([]byte, int64, bool, error) {
	var body string
	var rev int64
	err := s.db.QueryRowContext(ctx, `SELECT body, revision FROM instances WHERE id = $1`, id).Scan(&body, &rev)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	return []byte(body), rev, true, nil
}

func (s *sqlBackend) instances(ctx context.Context) (map[string][]byte, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, body FROM instances`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			return nil, err
		}
		out[id] = []byte(body)
	}
	return out, rows.Err()
}

func (s *sqlBackend) create(ctx context.Context, id string, b []byte) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO instances (id, revision, body, updated_at) VALUES ($1, 1, $2, $3)
		ON CONFLICT (id) DO NOTHING`, id, string(b), s.now())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *sqlBackend) swap(ctx context.Context, id string, b []byte, rev int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE instances SET body = $1, revision = revision + 1, updated_at = $2
		WHERE id = $3 AND revision = $4`, string(b), s.now(), id, rev)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
