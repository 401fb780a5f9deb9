package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/database/dbtest"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// BenchmarkClusterAdmission measures admissions through the job registry
// on the cluster queue while three hosts poll it and announce themselves
// (one with the embedded server, two with --temporal-address, all on one
// PostgreSQL): each iteration admits one job from the first host's
// client and waits for the registry's answer. It prints p50 and p99 in
// ms; -benchtime at most 24x (the three hosts' 8 slots each).
func BenchmarkClusterAdmission(b *testing.B) {
	e := newEnv(b, "http://127.0.0.1:1")
	e.vars["AXLR_DATABASE"] = dbtest.URL(b)
	e.writeSettings(`{"model": "m", "jobs": {"max_active_per_host": 8}}`)
	e.vars["AXLR_HOST_ID"] = "host-z"
	e.spawn()
	e.host("host-b").spawn("--temporal-address", e.address())
	e.host("host-c").spawn("--temporal-address", e.address())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	waitHosts(ctx, b, e, "host-z", "host-b", "host-c")
	c := dialAxlrd(b, e)
	took := make([]time.Duration, 0, b.N)
	hosts := map[string]int{}
	b.ResetTimer()
	for i := range b.N {
		brief := fmt.Sprintf("bench job %d fails", i)
		start := time.Now()
		rec, err := c.AdmitJob(ctx, workflows.AdmitRequest{Admission: jobs.Admission{Kind: jobs.Repair, Repository: "underpass-ai/calc",
			Signature: jobs.JobSignature("underpass-ai/calc", jobs.Repair, brief), Brief: brief},
			Limits: jobs.Limits{MaxActive: 2}, Build: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		hosts[rec.Host]++
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.Logf("placed: %v", hosts)
}
