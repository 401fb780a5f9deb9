package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/jobs"
)

// A job's install (`jobs install`) comes after the job's own workflow has
// ended: a short workflow on the job's host checks the record the registry
// holds, installs the candidate over axlrd's executable (and axlr-tui's),
// reports the record with where it went, and tells the origin session
// again. axlrd never restarts itself; the note says to restart it.

// JobInstallWorkflow is the workflow type of a job's install.
const JobInstallWorkflow = "axlr.JobInstall"

// JobInstallWorkflowID is the workflow id of job id's install.
func JobInstallWorkflowID(id string) string { return JobWorkflowID(id) + "-install" }

// JobInstallInput installs the candidate of the job Record, as the
// registry holds it, also over TUIPath, the axlr-tui the caller runs,
// when it is set.
type JobInstallInput struct {
	Record  jobs.Record `json:"record"`
	TUIPath string      `json:"tui_path,omitempty"`
}

// JobInstall installs a merged job's candidate and returns its record with
// Installed set. A job that cannot be installed (Installable) or an
// install that fails ends the workflow with an ErrTypeInstallRefused
// error that says why.
func JobInstall(ctx workflow.Context, in JobInstallInput) (jobs.Record, error) {
	r := in.Record
	if err := Installable(r); err != nil {
		return r, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInstallRefused, nil)
	}
	res, err := installCandidate(ctx, r, in.TUIPath)
	if err != nil {
		return r, temporal.NewNonRetryableApplicationError(failureMessage(err), ErrTypeInstallRefused, nil)
	}
	r.Installed = &res.Installed[0]
	r.Updated = workflow.Now(ctx).UTC()
	if err := workflow.SignalExternalWorkflow(ctx, RegistryWorkflowID, "", SignalJobRecord, r).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("installed job's record not reported to the registry", "job", r.ID, "error", err)
	}
	if r.OriginSession != "" {
		signalOutcome(ctx, r, InstallNote(r.Candidate.Version, res.Installed))
	}
	return r, nil
}

// Installable says why a job's candidate cannot be installed, or nil:
// only a merged job with a candidate is installed, and once.
func Installable(r jobs.Record) error {
	switch {
	case r.Installed != nil:
		return fmt.Errorf("job %s is installed already over %s (the previous executable is kept as %s)", r.ID, r.Installed.Path, r.Installed.Backup)
	case r.Candidate == nil:
		return fmt.Errorf("job %s has no candidate to install: only a job that repairs axlr builds one, when its merge decision opens", r.ID)
	case r.Status != jobs.Completed || r.MergeSHA == "":
		return fmt.Errorf("job %s is %s, not merged: only a merged job is installed", r.ID, r.Status)
	}
	return nil
}

// installCandidate runs the install of r's candidate.
func installCandidate(ctx workflow.Context, r jobs.Record, tuiPath string) (InstallResult, error) {
	var res InstallResult
	if err := executeActivity(ctx, InstallOptions, ActivityForgeInstall, InstallInput{
		Job: r.ID, Candidate: r.Candidate.Path, MergeSHA: r.MergeSHA, TUIPath: tuiPath,
	}, &res); err != nil {
		return res, err
	}
	if len(res.Installed) == 0 {
		return res, errors.New("the install replaced nothing")
	}
	return res, nil
}

// InstallNote says what an install replaced and that axlrd runs the
// previous build until it is restarted.
func InstallNote(version string, installed []jobs.Installed) string {
	var each []string
	for _, in := range installed {
		each = append(each, fmt.Sprintf("%s (the previous one kept as %s)", in.Path, in.Backup))
	}
	return fmt.Sprintf("installed %s over %s; restart axlrd (and any axlr-tui running) to run it: axlrd never restarts itself. To go back, rename a backup over its executable.",
		version, strings.Join(each, " and "))
}
