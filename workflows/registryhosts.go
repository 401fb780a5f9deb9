package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
)

// The registry knows the cluster's hosts by their announcements: each
// axlrd signals SignalHostAnnounce every AnnounceEvery (starting the
// registry on the cluster queue if need be). A host heard from within
// HostLiveWindow is live; an admitted job goes to the live host with the
// most free slots (its capacity less the active jobs placed on it), and a
// job whose host was lost goes, by UpdatePlace, to another live host.
// With no live host announced (a single axlrd of an older build), a job
// runs on the host of the client that started it, as before.

// Names of the registry's hosts.
const (
	// SignalHostAnnounce carries a HostAnnounce.
	SignalHostAnnounce = "host-announce"
	// QueryHosts answers the hosts the registry heard from ([]HostSeen),
	// by id.
	QueryHosts = "hosts"
	// UpdatePlace places a job again: PlaceInput, answered with its new
	// host (PlaceResult).
	UpdatePlace = "place"
)

// Timing of the announcements.
const (
	// AnnounceEvery is how often axlrd announces itself.
	AnnounceEvery = 10 * time.Second
	// HostLiveWindow is how long a host stays live after its last
	// announcement: three of them missed.
	HostLiveWindow = 3 * AnnounceEvery
	// forgetHostAfter drops a host the registry has not heard from in a
	// day.
	forgetHostAfter = 24 * time.Hour
)

// HostAnnounce is a host's announcement: its id and capacity
// (jobs.max_active_per_host).
type HostAnnounce struct {
	ID       string `json:"id"`
	Capacity int    `json:"capacity"`
	Build    string `json:"build,omitempty"`
}

// HostSeen is a host as the registry last heard it.
type HostSeen struct {
	HostAnnounce
	Seen time.Time `json:"seen"`
}

// announce takes a host's announcement.
func (r *registry) announce(ctx workflow.Context, a HostAnnounce) {
	if strings.TrimSpace(a.ID) == "" {
		return
	}
	now := workflow.Now(ctx).UTC()
	seen := HostSeen{HostAnnounce: a, Seen: now}
	seen.Capacity = min(max(seen.Capacity, 1), 64)
	if i := slices.IndexFunc(r.st.Hosts, func(h HostSeen) bool { return h.ID == a.ID }); i >= 0 {
		r.st.Hosts[i] = seen
	} else {
		r.st.Hosts = append(r.st.Hosts, seen)
		slices.SortFunc(r.st.Hosts, func(a, b HostSeen) int { return strings.Compare(a.ID, b.ID) })
	}
	r.st.Hosts = slices.DeleteFunc(r.st.Hosts, func(h HostSeen) bool { return now.Sub(h.Seen) > forgetHostAfter })
}

// live returns the hosts heard from within HostLiveWindow, by id.
func (r *registry) live(now time.Time) []HostSeen {
	var out []HostSeen
	for _, h := range r.st.Hosts {
		if now.Sub(h.Seen) <= HostLiveWindow {
			out = append(out, h)
		}
	}
	return out
}

// isLive reports whether host is among the live hosts.
func (r *registry) isLive(now time.Time, host string) bool {
	return host != "" && slices.ContainsFunc(r.live(now), func(h HostSeen) bool { return h.ID == host })
}

// capacity is the live hosts' slots together; 0 with none live.
func (r *registry) capacity(now time.Time) int {
	n := 0
	for _, h := range r.live(now) {
		n += h.Capacity
	}
	return n
}

// freest is the live host with the most free slots, avoiding the host
// named (unless it is the only one); "" when none is live.
func (r *registry) freest(now time.Time, avoid string) string {
	live := r.live(now)
	if len(live) > 1 {
		live = slices.DeleteFunc(live, func(h HostSeen) bool { return h.ID == avoid })
	}
	best, bestFree := "", 0
	for _, h := range live {
		free := h.Capacity - r.placedOn(h.ID)
		if best == "" || free > bestFree {
			best, bestFree = h.ID, free
		}
	}
	return best
}

// placedOn counts the active jobs placed on a host.
func (r *registry) placedOn(host string) int {
	n := 0
	for _, rec := range r.st.Records {
		if rec.Host == host && rec.Active() {
			n++
		}
	}
	return n
}

// clusterLimits are the client's limits with the live hosts' capacity as
// the bound on active jobs, when any host is live.
func (r *registry) clusterLimits(ctx workflow.Context, l jobs.Limits) jobs.Limits {
	if n := r.capacity(workflow.Now(ctx)); n > 0 {
		l.MaxActive = n
	}
	return l
}

func (r *registry) hosts() ([]HostSeen, error) { return slices.Clone(r.st.Hosts), nil }

func (r *registry) validatePlaceJob(ctx workflow.Context, req PlaceInput) error {
	if _, ok := r.applied(req.RequestID); ok {
		return nil
	}
	if strings.TrimSpace(req.RequestID) == "" {
		return errors.New("place: request_id is empty")
	}
	if _, err := jobs.Find(r.st.Records, req.Job); err != nil {
		return err
	}
	if r.freest(workflow.Now(ctx), req.Lost) == "" {
		return fmt.Errorf("place %s: no live host (none announced itself in the last %s)", req.Job, HostLiveWindow)
	}
	return nil
}

// placeJob puts a job on the freest live host other than the lost one.
func (r *registry) placeJob(ctx workflow.Context, req PlaceInput) (PlaceResult, error) {
	if rec, ok := r.applied(req.RequestID); ok {
		return PlaceResult{Host: rec.Host}, nil
	}
	now := workflow.Now(ctx).UTC()
	i := slices.IndexFunc(r.st.Records, func(rec jobs.Record) bool { return rec.ID == req.Job })
	rec := &r.st.Records[i]
	rec.Host = r.freest(now, cmp.Or(req.Lost, rec.Host))
	rec.Updated = now
	r.remember(req.RequestID, rec.ID)
	return PlaceResult{Host: rec.Host}, nil
}

// remember records an applied request, within maxApplied.
func (r *registry) remember(request, job string) {
	r.st.Applied = append(r.st.Applied, Admitted{Request: request, Job: job})
	if over := len(r.st.Applied) - maxApplied; over > 0 {
		r.st.Applied = slices.Clone(r.st.Applied[over:])
	}
}

// onHostQueue reports a long-lived workflow (the registry, a merge queue)
// that an older axlr started on a host's queue: it continues as new on
// the cluster queue, where every host serves it.
func onHostQueue(ctx workflow.Context) bool {
	return strings.HasPrefix(workflow.GetInfo(ctx).TaskQueueName, hostQueuePrefix) &&
		workflow.GetVersion(ctx, versionClusterQueue, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}
