package cluster

import (
	"context"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// TestTemporalOnPostgres starts PostgreSQL and the Temporal server built
// from the pinned module on it, kills the server with SIGKILL, starts it
// again on the same databases, and finds the namespace it registered.
func TestTemporalOnPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pg, err := StartPostgres(ctx, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	log, err := os.Create(t.TempDir() + "/temporal.log")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	tp, err := StartTemporal(ctx, TemporalOptions{Postgres: pg, Dir: t.TempDir(), Namespace: "axlr", Log: log})
	if err != nil {
		b, _ := os.ReadFile(log.Name())
		t.Fatalf("%v\n%s", err, tail(b))
	}
	defer tp.Stop()
	if err := tp.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := tp.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: tp.Address, Namespace: "axlr", Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		t.Fatal(err)
	}
}

func tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}
