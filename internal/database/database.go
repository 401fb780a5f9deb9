// Package database opens the PostgreSQL database that axlrd's hosts share
// (--database, cluster.database, AXLR_DATABASE): one database/sql pool per
// store, each confined to its own schema through search_path, over pgx.
package database

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The stores' schemas.
const (
	SchemaMade   = "axlr_made"
	SchemaMemory = "axlr_memory"
)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database at addr (a postgres:// URL or a keyword
// DSN) with every connection's search_path set to schema, which it
// creates if need be, and checks that the server answers.
func Open(ctx context.Context, addr, schema string) (*sql.DB, error) {
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("database: %q is not a schema name (lowercase letters, digits and _, at most 63)", schema)
	}
	cfg, err := pgx.ParseConfig(addr)
	if err != nil {
		return nil, fmt.Errorf("database: %s: %w", Redact(addr), err)
	}
	cfg.RuntimeParams["search_path"] = schema
	db := stdlib.OpenDB(*cfg)
	// A schema created by two hosts at once can fail one of them with a
	// unique violation; the advisory lock makes the second wait and find it.
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		_, err = tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('axlr schema ' || $1::text))`, schema)
		if err == nil {
			_, err = tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema)
		}
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: schema %s: %w", Redact(addr), schema, err)
	}
	return db, nil
}

// Redact is addr without its password, fit for a log or an error, even
// when addr does not parse.
func Redact(addr string) string {
	addr = urlPassword.ReplaceAllString(addr, "${1}xxxxx@")
	return dsnPassword.ReplaceAllString(addr, "${1}xxxxx")
}

// Password is the password addr carries, "" when none: a secret axlrd
// redacts.
func Password(addr string) string {
	cfg, err := pgx.ParseConfig(addr)
	if err != nil || addr == "" {
		return ""
	}
	return cfg.Password
}

var (
	urlPassword = regexp.MustCompile(`(://[^:/@]*:)[^@]*@`)
	dsnPassword = regexp.MustCompile(`(\bpassword=)('[^']*'|\S*)`)
)
