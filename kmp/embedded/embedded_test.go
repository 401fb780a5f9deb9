package embedded_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/underpass-ai/axlr/internal/database/dbtest"
	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/embedded"
	"github.com/underpass-ai/axlr/kmp/kmptest"
)

func open(t testing.TB, dir string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMain(m *testing.M) { dbtest.Main(m) }

func openPostgres(t testing.TB, schema string) *embedded.Store {
	t.Helper()
	s, err := embedded.OpenDB(context.Background(), dbtest.Open(t, schema), embedded.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	kmptest.Run(t, func(t *testing.T) kmp.Store { return open(t, t.TempDir()) })
}

// TestPostgresConformance runs the suite over the store on PostgreSQL, the
// one the hosts of a cluster share.
func TestPostgresConformance(t *testing.T) {
	kmptest.Run(t, func(t *testing.T) kmp.Store { return openPostgres(t, dbtest.Schema("memory")) })
}

// A store opened again holds what was written, and the same key replays.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	req := kmp.WriteRequest{About: "repo:a/b", Actor: "axlr", IdempotencyKey: "k",
		Memories: []kmp.Memory{{ID: "m", Kind: kmp.KindErrorPath, Summary: "cause", Evidence: "exit 1"}}}
	first, err := s.Write(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	again, err := s.Write(context.Background(), req)
	if err != nil || again.Status != kmp.StatusReplayed || again.LocalRefs["m"] != first.LocalRefs["m"] {
		t.Fatalf("after reopening: %+v, %v; want the first write replayed", again, err)
	}
}

// Two stores on one directory (axlrd and an operator's read, or two
// processes) write concurrently without losing a write; so do two on one
// PostgreSQL schema (two hosts), opened together on a new database.
func TestTwoOpenersWrite(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		twoWrite(t, open(t, dir), open(t, dir))
	})
	t.Run("postgres", func(t *testing.T) {
		schema := dbtest.Schema("memory_two")
		pools := []*sql.DB{dbtest.Open(t, schema), dbtest.Open(t, schema)}
		stores := make([]*embedded.Store, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, db := range pools {
			wg.Go(func() { stores[i], errs[i] = embedded.OpenDB(context.Background(), db, embedded.Options{}) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		twoWrite(t, stores[0], stores[1])
	})
}

func twoWrite(t *testing.T, a, b *embedded.Store) {
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Write(context.Background(), kmp.WriteRequest{About: "ws:x", Actor: "axlr", IdempotencyKey: fmt.Sprint("k", i),
				Memories: []kmp.Memory{{ID: "m", Kind: kmp.KindObservation, Summary: fmt.Sprint("note ", i), Evidence: "e"}}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := a.List(context.Background(), kmp.ListRequest{About: "ws:x", Limit: 100})
	if err != nil || l.Page.Total != 40 {
		t.Fatalf("after 40 writes: %+v, %v", l.Page, err)
	}
}
