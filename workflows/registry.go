package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
)

// The job registry is one long-lived workflow per namespace that admits
// /repair and /improve jobs by Update, one at a time, so the rules hold
// across every client at once: two clients racing for the last slot get
// one admission and one refusal. Each job's workflow reports its record
// with a signal; `axlr-tui jobs` reads them with a Query. The registry
// continues as new with its records.

// Names of the registry.
const (
	RegistryWorkflow   = "axlr.JobRegistry"
	RegistryWorkflowID = "axlr-jobs"
	// UpdateAdmit asks the registry to admit a job: AdmitRequest,
	// answered with the new jobs.Record.
	UpdateAdmit = "admit"
	// UpdateRecover asks the registry to take an interrupted job back:
	// RecoverRequest, answered with its record, preparing again.
	UpdateRecover = "recover"
	// SignalJobRecord carries a job workflow's record to the registry.
	SignalJobRecord = "job-record"
	// QueryJobs answers every record, newest first.
	QueryJobs = "jobs"
)

// Bounds of the registry's state, which it carries over continue-as-new
// (a payload Temporal refuses past 2 MiB).
const (
	// MaxRegistryRecords bounds the records kept: past it the oldest ended
	// ones are dropped (active and interrupted ones are always kept).
	MaxRegistryRecords = 200
	// RegistryBriefBytes is how much of a brief the registry keeps; the
	// job's own workflow keeps it whole.
	RegistryBriefBytes = 2 << 10
)

// RegistryInput starts (or continues as new) the registry.
type RegistryInput struct {
	State *RegistryState `json:"state,omitempty"`
}

// RegistryState is what the registry knows.
type RegistryState struct {
	Records []jobs.Record `json:"records,omitempty"`
	// Applied holds the last admissions, so a retried one gets the same
	// record.
	Applied []Admitted `json:"applied,omitempty"`
	// Hosts are the hosts that announced themselves, by id.
	Hosts []HostSeen `json:"hosts,omitempty"`
}

// Admitted is an admission the registry applied: the request's id and the
// job it made.
type Admitted struct {
	Request string `json:"request"`
	Job     string `json:"job"`
}

// AdmitRequest asks for a job. RequestID is the update's id, chosen by
// the client, so a retried request admits one job.
type AdmitRequest struct {
	RequestID string         `json:"request_id"`
	Admission jobs.Admission `json:"admission"`
	// Limits are the client's settings (jobs.max_active,
	// repair.max_attempts); Build is the axlr build that asks.
	Limits jobs.Limits `json:"limits"`
	Build  string      `json:"build"`
}

// RecoverRequest asks for an interrupted job to run again. RequestID is
// the update's id, so a retried request recovers once.
type RecoverRequest struct {
	RequestID string      `json:"request_id"`
	Job       string      `json:"job"`
	Limits    jobs.Limits `json:"limits"`
}

// ErrTypeJobRefused is the type of a refused admission's error; the
// refusal's code is its detail.
const ErrTypeJobRefused = "JobRefused"

type registry struct {
	st RegistryState
}

// JobRegistry is the registry workflow.
func JobRegistry(ctx workflow.Context, in RegistryInput) error {
	r := &registry{}
	if in.State != nil {
		r.st = *in.State
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateAdmit, r.admit,
		workflow.UpdateHandlerOptions{Validator: r.validateAdmit}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateAdmit, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateRecover, r.recover,
		workflow.UpdateHandlerOptions{Validator: r.validateRecover}); err != nil {
		return fmt.Errorf("register %s: %w", UpdateRecover, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryJobs, r.jobs); err != nil {
		return fmt.Errorf("register %s: %w", QueryJobs, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePlace, r.placeJob,
		workflow.UpdateHandlerOptions{Validator: r.validatePlaceJob}); err != nil {
		return fmt.Errorf("register %s: %w", UpdatePlace, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryHosts, r.hosts); err != nil {
		return fmt.Errorf("register %s: %w", QueryHosts, err)
	}
	records := workflow.GetSignalChannel(ctx, SignalJobRecord)
	places := workflow.GetSignalChannel(ctx, SignalQueuePlace)
	hosts := workflow.GetSignalChannel(ctx, SignalHostAnnounce)
	for {
		if err := workflow.Await(ctx, func() bool {
			return records.Len() > 0 || places.Len() > 0 || hosts.Len() > 0 || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
		}); err != nil {
			return err
		}
		for {
			var a HostAnnounce
			if !hosts.ReceiveAsync(&a) {
				break
			}
			r.announce(ctx, a)
		}
		if onHostQueue(ctx) {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			st := r.carried()
			return workflow.NewContinueAsNewError(workflow.WithWorkflowTaskQueue(ctx, ClusterTaskQueue), RegistryWorkflow, RegistryInput{State: &st})
		}
		for {
			var rec jobs.Record
			if !records.ReceiveAsync(&rec) {
				break
			}
			r.record(rec)
		}
		for {
			var p QueuePlaceSignal
			if !places.ReceiveAsync(&p) {
				break
			}
			r.place(p)
		}
		if !workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			continue
		}
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return err
		}
		if records.Len() > 0 || places.Len() > 0 || hosts.Len() > 0 {
			continue
		}
		st := r.carried()
		return workflow.NewContinueAsNewError(ctx, RegistryWorkflow, RegistryInput{State: &st})
	}
}

func (r *registry) applied(request string) (jobs.Record, bool) {
	i := slices.IndexFunc(r.st.Applied, func(a Admitted) bool { return a.Request == request })
	if i < 0 {
		return jobs.Record{}, false
	}
	job, err := jobs.Find(r.st.Records, r.st.Applied[i].Job)
	return job, err == nil
}

func (r *registry) validateAdmit(ctx workflow.Context, req AdmitRequest) error {
	if _, ok := r.applied(req.RequestID); ok {
		return nil
	}
	if strings.TrimSpace(req.RequestID) == "" {
		return errors.New("admit: request_id is empty")
	}
	if err := jobs.Admit(r.st.Records, req.Admission, r.clusterLimits(ctx, req.Limits), req.Build); err != nil {
		var ref *jobs.Refusal
		if errors.As(err, &ref) {
			return temporal.NewNonRetryableApplicationError(ref.Error(), ErrTypeJobRefused, nil, *ref)
		}
		return err
	}
	return nil
}

// admit makes the record of an admitted job: preparing, with its id and
// attempt.
func (r *registry) admit(ctx workflow.Context, req AdmitRequest) (jobs.Record, error) {
	if rec, ok := r.applied(req.RequestID); ok {
		return rec, nil
	}
	a := req.Admission
	now := workflow.Now(ctx).UTC()
	id := jobs.ID(jobs.Slug(now, a.Brief), a.Signature, func(id string) bool {
		return slices.ContainsFunc(r.st.Records, func(rec jobs.Record) bool { return rec.ID == id })
	})
	rec := jobs.Record{
		ID: id, Kind: a.Kind, Signature: a.Signature, Repository: a.Repository, OriginSession: a.OriginSession, Person: a.Person,
		Brief: a.Brief, Status: jobs.Preparing, Attempt: jobs.NextAttempt(r.st.Records, a.Signature),
		Build: req.Build, Created: now, Updated: now, Host: r.freest(now, ""),
	}
	r.st.Records = append(r.st.Records, rec)
	r.remember(req.RequestID, id)
	return rec, nil
}

func (r *registry) validateRecover(ctx workflow.Context, req RecoverRequest) error {
	if _, ok := r.applied(req.RequestID); ok {
		return nil
	}
	if strings.TrimSpace(req.RequestID) == "" {
		return errors.New("recover: request_id is empty")
	}
	rec, err := jobs.Find(r.st.Records, req.Job)
	if err == nil {
		err = jobs.Recoverable(rec, r.st.Records, r.clusterLimits(ctx, req.Limits))
	}
	var ref *jobs.Refusal
	if errors.As(err, &ref) {
		return temporal.NewNonRetryableApplicationError(ref.Error(), ErrTypeJobRefused, nil, *ref)
	}
	return err
}

// recover takes an interrupted job back: preparing again, in its slot,
// until its workflow reports.
func (r *registry) recover(ctx workflow.Context, req RecoverRequest) (jobs.Record, error) {
	if rec, ok := r.applied(req.RequestID); ok {
		return rec, nil
	}
	i := slices.IndexFunc(r.st.Records, func(rec jobs.Record) bool { return rec.ID == req.Job })
	rec := &r.st.Records[i]
	rec.Status, rec.Pending, rec.Reason = jobs.Preparing, nil, ""
	// The count names the recovered run's keys (its execution, its
	// instance's epoch): each recovery's are its own.
	rec.Recoveries++
	rec.Updated = workflow.Now(ctx).UTC()
	// It stays on its host while that host is live, and its clone and
	// session with it; else it goes to the freest live host.
	if !r.isLive(rec.Updated, rec.Host) {
		if host := r.freest(rec.Updated, ""); host != "" {
			rec.Host = host
		}
	}
	r.remember(req.RequestID, rec.ID)
	return *rec, nil
}

// record takes a job workflow's record in place of the registry's, unless
// it is older than what the registry holds.
func (r *registry) record(rec jobs.Record) {
	i := slices.IndexFunc(r.st.Records, func(have jobs.Record) bool { return have.ID == rec.ID })
	if i < 0 {
		return
	}
	if rec.Updated.Before(r.st.Records[i].Updated) {
		return
	}
	// The queue's place is the merge queue's to tell, not the job's.
	rec.Queue = r.st.Records[i].Queue
	r.st.Records[i] = lean(rec)
}

// place takes the merge queue's word on a job's place in it.
func (r *registry) place(p QueuePlaceSignal) {
	i := slices.IndexFunc(r.st.Records, func(have jobs.Record) bool { return have.ID == p.Job })
	if i < 0 {
		return
	}
	r.st.Records[i].Queue = p.Place
}

// lean is a record as the registry keeps it: the brief cut to
// RegistryBriefBytes.
func lean(rec jobs.Record) jobs.Record {
	if len(rec.Brief) > RegistryBriefBytes {
		cut := RegistryBriefBytes
		for cut > 0 && rec.Brief[cut]&0xC0 == 0x80 {
			cut--
		}
		rec.Brief = rec.Brief[:cut]
	}
	return rec
}

// jobs answers QueryJobs: every record, newest first.
func (r *registry) jobs() ([]jobs.Record, error) {
	out := slices.Clone(r.st.Records)
	slices.SortStableFunc(out, func(a, b jobs.Record) int {
		return cmp.Or(b.Created.Compare(a.Created), strings.Compare(b.ID, a.ID))
	})
	return out, nil
}

// carried is the state the next run starts from: within
// MaxRegistryRecords, dropping the oldest ended records first.
func (r *registry) carried() RegistryState {
	st := RegistryState{Applied: slices.Clone(r.st.Applied), Hosts: slices.Clone(r.st.Hosts)}
	drop := len(r.st.Records) - MaxRegistryRecords
	for _, rec := range r.st.Records {
		if drop > 0 && rec.Terminal() {
			drop--
			continue
		}
		st.Records = append(st.Records, lean(rec))
	}
	return st
}
