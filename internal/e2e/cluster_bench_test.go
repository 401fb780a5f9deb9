package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// clusterHosts starts n hosts of a cluster on the shared Temporal server
// on PostgreSQL, host-1 being e itself, and waits until the registry has
// heard from them all; it returns the hosts and their axlrd by host id.
func clusterHosts(ctx context.Context, b testing.TB, e *env, n int) ([]*env, map[string]*process) {
	b.Helper()
	e.vars["AXLR_HOST_ID"] = "host-1"
	hosts := []*env{e}
	ids := []string{"host-1"}
	for i := 2; i <= n; i++ {
		id := fmt.Sprintf("host-%d", i)
		hosts = append(hosts, e.host(id))
		ids = append(ids, id)
	}
	procs := map[string]*process{}
	for _, h := range hosts {
		procs[h.vars["AXLR_HOST_ID"]] = h.spawnReady(b)
	}
	waitHosts(ctx, b, e, ids...)
	return hosts, procs
}

// BenchmarkClusterAdmission measures admissions through the job registry
// on the cluster queue while three hosts poll it and announce themselves,
// all with --temporal-address on the Temporal server on PostgreSQL and
// one database: each iteration admits one job from the first host's
// client and waits for the registry's answer. It prints p50 and p99 in
// ms; -benchtime at most 24x (the three hosts' 8 slots each).
func BenchmarkClusterAdmission(b *testing.B) {
	e := newEnv(b, "http://127.0.0.1:1")
	e.onCluster(b)
	e.writeSettings(`{"model": "m", "jobs": {"max_active_per_host": 8}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clusterHosts(ctx, b, e, 3)
	c := dialAxlrd(b, e)
	var took []time.Duration
	hosts := map[string]int{}
	for i := 0; b.Loop(); i++ {
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
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.Logf("placed: %v", hosts)
}

// BenchmarkClusterJobs measures jobs per minute on one host and on three,
// each host with capacity for two jobs at a time, so that three hosts
// have room for six: repairs of the fleet module (fleetGrepReply, the
// model answering in 300 ms) from their launch to their merge, their check and
// merge approved as soon as they ask, started from the hosts in turn and
// launched again while the cluster is full. Each iteration is one job;
// the three-host run prints its ratio to the one-host run.
func BenchmarkClusterJobs(b *testing.B) {
	perMinute := map[int]float64{}
	for _, n := range []int{1, 3} {
		name := map[int]string{1: "one-host", 3: "three-hosts"}[n]
		b.Run(name, func(b *testing.B) {
			perMinute[n] = clusterJobs(b, n)
			b.ReportMetric(perMinute[n], "jobs/min")
			if n == 3 && perMinute[1] > 0 {
				b.ReportMetric(perMinute[3]/perMinute[1], "x-one-host")
			}
		})
	}
}

// clusterJobs runs b's jobs on n hosts and returns the jobs per minute.
func clusterJobs(b *testing.B, n int) float64 {
	gh, repo, e := repairWorld(b, fleetFiles(100), 1, fleetGrepReply)
	e.onCluster(b)
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "jobs": {"max_active_per_host": 2},
		"repair": {"repository": "underpass-ai/calc", "remote": "` + repo.Path() + `", "poll_seconds": 1, "watch_minutes": 3}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var clients []*client.Client
	hosts, _ := clusterHosts(ctx, b, e, n)
	for _, h := range hosts {
		clients = append(clients, dialAxlrd(b, h))
	}
	d := &jobDriver{c: clients[0]}
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		if i >= 100 {
			b.Fatal("at most 100x: the fleet module has 100 functions to repair")
		}
		for {
			rec, err := clients[i%n].LaunchJob(ctx, workflows.LaunchRequest{Kind: jobs.Repair, Brief: fmt.Sprintf("TestN%d fails", i+1), Person: true})
			var refused *workflows.JobRefusedError
			if err == nil {
				d.ids = append(d.ids, rec.ID)
				break
			}
			if !errors.As(err, &refused) || refused.Refusal.Code != jobs.RefuseMaxActive {
				b.Fatal(err)
			}
			// The cluster is full: move the running jobs on, and try again.
			d.step(ctx, b)
			time.Sleep(250 * time.Millisecond)
		}
	}
	for !d.step(ctx, b) {
		time.Sleep(250 * time.Millisecond)
	}
	took := time.Since(start)
	if calls := gh.Calls(); calls.PullRequestsOpened != len(d.ids) || calls.Merges != len(d.ids) {
		b.Fatalf("forge calls %+v for %d jobs", calls, len(d.ids))
	}
	slices.Sort(d.took)
	b.Logf("%d jobs on %d hosts in %.1f s: %v; a job %.1f s at p50, %.1f s at most", len(d.ids), n, took.Seconds(), d.hosts,
		d.took[len(d.took)/2].Seconds(), d.took[len(d.took)-1].Seconds())
	return float64(len(d.ids)) / took.Minutes()
}

// jobDriver approves what its jobs wait for, as a person who answers at
// once: their checks and their merges.
type jobDriver struct {
	c     *client.Client
	ids   []string
	hosts map[string]int
	took  []time.Duration // each completed job's, from its admission to its end
}

// step approves what each job waits for and says whether every one
// completed, counting where they ran. It reads the jobs from the
// registry, in one query: a query per job at this pace would cost the
// hosts more CPU than the jobs do.
func (d *jobDriver) step(ctx context.Context, b testing.TB) bool {
	b.Helper()
	if ctx.Err() != nil {
		b.Fatal(ctx.Err())
	}
	all, err := d.c.Jobs(ctx)
	if err != nil {
		return false
	}
	d.hosts, d.took = map[string]int{}, nil
	done := 0
	for _, rec := range all {
		if !slices.Contains(d.ids, rec.ID) {
			continue
		}
		switch {
		case rec.Status == jobs.Completed:
			done++
			d.hosts[rec.Host]++
			d.took = append(d.took, rec.Updated.Sub(rec.Created))
		case rec.Terminal():
			b.Fatalf("job %s ended %s: %s", rec.ID, rec.Status, rec.Reason)
		case rec.Pending != nil:
			_, _ = d.c.DecideJob(ctx, workflows.JobDecision{Job: rec.ID, Kind: rec.Pending.Kind, Approve: true})
		}
	}
	return done == len(d.ids)
}

// BenchmarkClusterHostLoss measures the time from a host's loss to its
// job's next activity on another host: three hosts with
// cluster.host_lost_seconds 10; each iteration launches a repair, kills
// the host it was placed on with SIGKILL while the model answers its
// diagnose step, and waits for the diagnose step's next model request,
// which the job sends from its new host once it moved there, cloned and
// opened its new session. The job is then taken to its merge and the
// killed host restarted. It prints p50 and the worst, in seconds and past
// host_lost_seconds.
func BenchmarkClusterHostLoss(b *testing.B) {
	const hostLost = 10 * time.Second
	var mu sync.Mutex
	arrived := map[string][]time.Time{} // the diagnose requests' arrivals, by brief
	gh, repo, e := repairWorld(b, fleetFiles(100), 1, func(req agenttest.Request) agenttest.Reply {
		at, brief := time.Now(), "TestN"+fleetRepair(req)+" fails"
		r := fleetGrepReply(req)
		if len(r.ToolCalls) > 0 && r.ToolCalls[0].ID == "d1" {
			mu.Lock()
			first := len(arrived[brief]) == 0
			arrived[brief] = append(arrived[brief], at)
			mu.Unlock()
			if first {
				time.Sleep(3 * time.Second) // the host dies while this request is in flight
			}
		}
		return r
	})
	count := func(brief string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(arrived[brief])
	}
	e.onCluster(b)
	e.writeSettings(`{"model": "m", "forge": {"api_url": "` + gh.URL + `"}, "jobs": {"max_active_per_host": 2},
		"repair": {"repository": "underpass-ai/calc", "remote": "` + repo.Path() + `", "poll_seconds": 1, "watch_minutes": 3},
		"cluster": {"host_lost_seconds": ` + fmt.Sprint(int(hostLost.Seconds())) + `}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	hosts, procs := clusterHosts(ctx, b, e, 3)
	byID := map[string]*env{}
	for _, h := range hosts {
		byID[h.vars["AXLR_HOST_ID"]] = h
	}
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		// A host's client: the job may run on any host, this one included.
		c := dialAxlrd(b, hosts[(i+1)%3])
		brief := fmt.Sprintf("TestN%d fails", i+1)
		rec, err := c.LaunchJob(ctx, workflows.LaunchRequest{Kind: jobs.Repair, Brief: brief, Person: true})
		if err != nil {
			b.Fatal(err)
		}
		d := &jobDriver{c: c, ids: []string{rec.ID}}
		for count(brief) == 0 {
			d.step(ctx, b) // approves the reproduce step's check
			time.Sleep(50 * time.Millisecond)
		}
		procs[rec.Host].kill()
		killed := time.Now()
		for count(brief) < 2 {
			if time.Since(killed) > 2*time.Minute {
				r, err := c.JobNow(ctx, rec.ID)
				b.Fatalf("no model request for job %s two minutes after its host was lost: %+v %v", rec.ID, r, err)
			}
			d.step(ctx, b)
			time.Sleep(20 * time.Millisecond)
		}
		mu.Lock()
		took = append(took, arrived[brief][1].Sub(killed))
		mu.Unlock()
		for !d.step(ctx, b) {
			time.Sleep(100 * time.Millisecond)
		}
		if r, _ := c.JobNow(ctx, rec.ID); r.Host == rec.Host || len(r.Moves) != 1 {
			b.Fatalf("the job ran on %s after %s was lost: %q", r.Host, rec.Host, r.Moves)
		}
		procs[rec.Host] = byID[rec.Host].spawnReady(b) // the machine is back
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "p50-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
	b.ReportMetric((took[len(took)-1] - hostLost).Seconds(), "max-past-host-lost-s")
	b.Logf("host_lost_seconds %s; loss to the next activity elsewhere: %v", hostLost, took)
}
