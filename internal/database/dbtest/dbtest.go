// Package dbtest gives tests a PostgreSQL schema of their own on one
// server per test binary, started from Debian's packages on first use
// (internal/cluster) and stopped by Main.
package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/underpass-ai/axlr/internal/cluster"
	"github.com/underpass-ai/axlr/internal/database"
)

var shared struct {
	once sync.Once
	pg   *cluster.Postgres
	url  string
	err  error
	n    atomic.Int64
}

// Main runs the package's tests and stops the server if one started; call
// it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the server if one started (Main's end, for a TestMain that
// stops more).
func Stop() {
	if shared.pg != nil {
		if err := shared.pg.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest:", err)
		}
	}
}

// Server is the test server, started on first use.
func Server(t testing.TB) *cluster.Postgres {
	t.Helper()
	URL(t)
	return shared.pg
}

// URL is the address of the test server's database, starting the server
// on first use.
func URL(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		ctx := context.Background()
		shared.pg, shared.err = cluster.StartPostgres(ctx, cluster.PostgresOptions{})
		if shared.err == nil {
			shared.url, shared.err = shared.pg.CreateDatabase(ctx, "axlr_test")
		}
	})
	if shared.err != nil {
		t.Fatalf("dbtest: %v", shared.err)
	}
	return shared.url
}

// Schema is a new schema name with prefix, unused by any other test of
// this binary.
func Schema(prefix string) string { return fmt.Sprintf("%s_%d", prefix, shared.n.Add(1)) }

// Open returns a pool on the test server whose search_path is schema,
// closed when the test ends.
func Open(t testing.TB, schema string) *sql.DB {
	t.Helper()
	db, err := database.Open(t.Context(), URL(t), schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
