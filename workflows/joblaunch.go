package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/underpass-ai/axlr/jobs"
)

// A job's launch is decided here, once, by pure functions over plain
// settings values: NewJobLaunch decides what the registry is asked to
// admit, NewJobInput how the admitted job's workflow starts. axlr-tui's
// client and the activity that answers a model's request both call them;
// the client then admits and starts what they decided.

// AxlrRepository is axlr's own repository: a job on it builds a candidate
// axlrd and axlr-tui from its pull request.
const AxlrRepository = "underpass-ai/axlr"

// LaunchRequest is a job to admit and start.
type LaunchRequest struct {
	// RequestID makes a retried launch admit the same job (default: new).
	RequestID string
	Kind      jobs.Kind
	// Brief is the failure or the improvement, or "#123": the issue of
	// the repository, which the job reads through axlrd's forge.
	Brief string
	// Model runs the job's steps (default: axlrd's settings).
	Model string
	// OriginSession is the session the job is asked from, which receives
	// its outcome note: the agent's that asks, or the TUI's session the
	// person starts it in (empty from the command line).
	OriginSession string
	// Person: the person starts the job. Its signature is
	// jobs.JobSignature, and the agents' limits on improvements do not
	// apply to it, from a session or not. False with an OriginSession is
	// that session's agent's request, so a launch that forgets to say
	// who asks gets the agents' stricter rules.
	Person bool
	// Signature is an agent's request's (jobs.RepairSignature,
	// jobs.ImprovementSignature); empty: jobs.JobSignature. The person's
	// job takes none.
	Signature string
}

// JobRefusedError is an admission the registry refused, with the rule's
// code and sentence.
type JobRefusedError struct {
	Refusal jobs.Refusal
}

func (e *JobRefusedError) Error() string { return e.Refusal.Error() }

// JobLaunchSettings are the settings a job launches under, as plain values
// (client.JobLaunchSettings reads them from settings.json).
type JobLaunchSettings struct {
	// Repository is the repository jobs work on, owner/name
	// (repair.repository); required.
	Repository string
	// Remote is the URL jobs clone and push (repair.remote); empty: the
	// repository's address on the forge's host.
	Remote string
	// ForgeWeb is the forge's web address, scheme and host, that a
	// repository's default remote is on (settings' Forge.Web); empty:
	// https://github.com.
	ForgeWeb string
	// Directory holds the clones, an absolute path (repair.directory).
	Directory string
	// About is the jobs' memory about (repair.about).
	About string
	// AutoMerge, Install, Autonomous, Watch and Poll are
	// repair.auto_merge, repair.install, repair.autonomous,
	// repair.watch_minutes and repair.poll_seconds.
	AutoMerge, Install, Autonomous bool
	Watch, Poll                    time.Duration
	// Limits are the registry's limits the launch asks under.
	Limits jobs.Limits
	// Build is the axlr build that asks.
	Build string
	// HostLost is cluster.host_lost_seconds, as a duration (0: the
	// default).
	HostLost time.Duration
}

// JobLaunch is a launch decided: what the registry is asked to admit, and
// what the admitted job's workflow starts with (NewJobInput).
type JobLaunch struct {
	Admit    AdmitRequest
	Model    string
	Settings JobLaunchSettings
}

// NewJobLaunch decides req's launch under s: its repository, its brief
// (trimmed), its signature (req's, else jobs.JobSignature) and who asks
// (req.Person, from req.OriginSession).
func NewJobLaunch(s JobLaunchSettings, req LaunchRequest) (JobLaunch, error) {
	if !req.Kind.Valid() {
		return JobLaunch{}, fmt.Errorf("launch job: kind %q is neither repair nor improve", req.Kind)
	}
	if s.Repository == "" {
		return JobLaunch{}, errors.New("launch job: no repository: set repair.repository in settings.json")
	}
	brief := strings.TrimSpace(req.Brief)
	if brief == "" {
		return JobLaunch{}, fmt.Errorf("--%s needs a brief: what fails, or \"#123\" for an issue of %s", req.Kind, s.Repository)
	}
	if req.Person && req.Signature != "" {
		return JobLaunch{}, fmt.Errorf("launch job: the person's %s takes no signature (%s): its signature is its brief's", req.Kind.Noun(), req.Signature)
	}
	signature := cmp.Or(req.Signature, jobs.JobSignature(s.Repository, req.Kind, brief))
	return JobLaunch{
		Admit: AdmitRequest{RequestID: req.RequestID, Admission: jobs.Admission{
			Kind: req.Kind, Repository: s.Repository, Signature: signature, Brief: brief,
			OriginSession: req.OriginSession, Person: req.Person,
		}, Limits: s.Limits, Build: s.Build},
		Model:    req.Model,
		Settings: s,
	}, nil
}

// NewJobInput is the start of rec's workflow under s, in session
// sessionID, its steps run by model (empty: axlrd's settings). rec's
// repository decides the remote (s.Remote, else its address on the
// forge's web, s.ForgeWeb) and whether the job builds a candidate
// (AxlrRepository); a "#123" brief names the issue it reads.
func NewJobInput(s JobLaunchSettings, rec jobs.Record, sessionID, model string) JobInput {
	issue, _ := jobs.IssueNumber(rec.Brief)
	return JobInput{Record: rec, SessionID: sessionID, Host: rec.Host, Model: model, Issue: issue, Settings: JobSettings{
		Remote: s.remote(rec.Repository), Directory: s.Directory, About: s.About, AutoMerge: s.AutoMerge, Watch: s.Watch, Poll: s.Poll,
		Candidate: strings.EqualFold(rec.Repository, AxlrRepository), Install: s.Install, Autonomous: s.Autonomous, HostLost: s.HostLost,
	}}
}

// remote is s.Remote, else repo's address on the forge's web.
func (s JobLaunchSettings) remote(repo string) string {
	if s.Remote != "" {
		return s.Remote
	}
	return strings.TrimSuffix(cmp.Or(s.ForgeWeb, "https://github.com"), "/") + "/" + repo + ".git"
}
