package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// TestJobRegistry on the real server: the first admission starts the
// registry; eight clients racing for the one slot left get one admission;
// the refusals carry the rule; axlr-tui jobs lists what was admitted, and
// the registry's records survive an axlrd restart.
func TestJobRegistry(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:1")
	e.writeSettings(`{"model": "m"}`)
	d := e.start()
	c := dialAxlrd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lim := jobs.Limits{MaxActive: 2}
	admit := func(c *client.Client, brief, sig string) (jobs.Record, error) {
		return c.AdmitJob(ctx, workflows.AdmitRequest{Admission: jobs.Admission{Kind: jobs.Repair, Repository: "underpass-ai/axlr", Signature: sig, Brief: brief}, Limits: lim, Build: "e2e"})
	}
	first, err := admit(c, "TestParse fails on empty input", "aaaa0000aaaa0000")
	if err != nil || first.Status != jobs.Preparing {
		t.Fatalf("first: %+v, %v", first, err)
	}
	_, err = admit(c, "TestParse fails on empty input", "aaaa0000aaaa0000")
	var refused *workflows.JobRefusedError
	if !errors.As(err, &refused) || refused.Refusal.Code != jobs.RefuseDuplicate || !strings.HasPrefix(err.Error(), "duplicate: ") {
		t.Fatalf("a duplicate: %v", err)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refusals := 0, 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ci := dialAxlrd(t, e)
			_, err := admit(ci, fmt.Sprintf("failure number %d of the race", i), fmt.Sprintf("bbbb%012d", i))
			mu.Lock()
			defer mu.Unlock()
			var r *workflows.JobRefusedError
			switch {
			case err == nil:
				admitted++
			case errors.As(err, &r) && r.Refusal.Code == jobs.RefuseMaxActive:
				refusals++
			default:
				t.Errorf("racer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if admitted != 1 || refusals != 7 {
		t.Fatalf("%d admitted, %d refused for the last slot; want 1 and 7", admitted, refusals)
	}

	d.stop()
	e.start()
	r := e.tui(ctx, "jobs", "--json")
	if r.code != 0 || strings.Count(r.stdout, `"status":"preparing"`) != 2 || !strings.Contains(r.stdout, first.ID) {
		t.Fatalf("jobs after a restart: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	show := e.tui(ctx, "jobs", "show", first.ID)
	if show.code != 0 || !strings.Contains(show.stdout, "status:       preparing") {
		t.Fatalf("jobs show: exit %d\n%s\n%s", show.code, show.stdout, show.stderr)
	}
}
