package client

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/underpass-ai/axlr/internal/buildinfo"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// LaunchRequest is a job to admit and start.
type LaunchRequest struct {
	// RequestID makes a retried launch admit the same job (default: new).
	RequestID string
	Kind      jobs.Kind
	// Brief is the failure or the improvement, or "#123": the issue of
	// repair.repository, which the job reads through axlrd's forge.
	Brief string
	// Model runs the job's steps (default: axlrd's settings).
	Model string
	// OriginSession and Signature are an agent's request's; the person's
	// job has neither, and its signature is jobs.JobSignature.
	OriginSession string
	Signature     string
}

// LaunchJob asks the job registry to admit a job under the client's
// settings and starts its workflow. A refusal is a *JobRefusedError; a
// launch retried with the same RequestID starts the same job once.
func (c *Client) LaunchJob(ctx context.Context, req LaunchRequest) (jobs.Record, error) {
	set := c.settings()
	if !req.Kind.Valid() {
		return jobs.Record{}, fmt.Errorf("launch job: kind %q is neither repair nor improve", req.Kind)
	}
	brief := strings.TrimSpace(req.Brief)
	if brief == "" {
		return jobs.Record{}, fmt.Errorf("--%s needs a brief: what fails, or \"#123\" for an issue of %s", req.Kind, set.RepairRepository())
	}
	repo := set.RepairRepository()
	signature := req.Signature
	if signature == "" {
		signature = jobs.JobSignature(repo, req.Kind, brief)
	}
	// "#123": the job's workflow reads the issue into its brief, through
	// axlrd's forge.
	issue, _ := jobs.IssueNumber(brief)
	if req.RequestID == "" {
		id, err := session.NewID()
		if err != nil {
			return jobs.Record{}, fmt.Errorf("launch job: %w", err)
		}
		req.RequestID = id
	}
	rec, err := c.AdmitJob(ctx, workflows.AdmitRequest{RequestID: req.RequestID, Admission: jobs.Admission{
		Kind: req.Kind, Repository: repo, Signature: signature, Brief: brief, OriginSession: req.OriginSession,
	}, Limits: set.JobLimits(), Build: buildinfo.String()})
	if err != nil {
		return jobs.Record{}, err
	}
	in, err := c.jobInput(rec, req.Model, issue)
	if err != nil {
		return rec, err
	}
	if err := c.StartJob(ctx, in); err != nil {
		return rec, fmt.Errorf("job %s was admitted but its workflow did not start (axlr-tui jobs recover %s starts it): %w", rec.ID, rec.ID, err)
	}
	return rec, nil
}

// jobInput is the start of an admitted job's workflow under the client's
// settings.
func (c *Client) jobInput(rec jobs.Record, model string, issue int) (workflows.JobInput, error) {
	set := c.settings()
	sid, err := session.NewID()
	if err != nil {
		return workflows.JobInput{}, err
	}
	data, err := settings.DefaultDataDir(c.env())
	if err != nil {
		return workflows.JobInput{}, err
	}
	remote, err := jobRemote(set, rec.Repository)
	if err != nil {
		return workflows.JobInput{}, err
	}
	return workflows.JobInput{Record: rec, SessionID: sid, Model: model, Issue: issue, Settings: workflows.JobSettings{
		Remote: remote, Directory: set.RepairDirectory(data), About: set.RepairAbout(),
		AutoMerge: set.Repair.AutoMerge, Watch: set.RepairWatch(), Poll: set.RepairPoll(),
		Candidate: strings.EqualFold(rec.Repository, settings.DefaultRepairRepository), Install: set.Repair.Install,
	}}, nil
}

// jobRemote is repair.remote, by default the repository's address on the
// forge's host: https, or plain http where forge.api_url is a plain http
// server (which only a loopback one may be).
func jobRemote(set *settings.Settings, repo string) (string, error) {
	if set.Repair.Remote != "" {
		return set.Repair.Remote, nil
	}
	scheme, host := "https", "github.com"
	if set.Forge.APIURL != "" {
		u, err := url.Parse(set.Forge.APIURL)
		if err != nil {
			return "", fmt.Errorf("forge.api_url %q: %w", set.Forge.APIURL, err)
		}
		if u.Hostname() != "api.github.com" {
			host = u.Host
		}
		if u.Scheme == "http" {
			scheme = "http"
		}
	}
	return scheme + "://" + host + "/" + repo + ".git", nil
}

// Settings are the settings the client was dialled with.
func (c *Client) Settings() *settings.Settings { return c.settings() }

func (c *Client) settings() *settings.Settings {
	if c.set == nil {
		return &settings.Settings{}
	}
	return c.set
}

func (c *Client) env() func(string) string {
	if c.getenv == nil {
		return os.Getenv
	}
	return c.getenv
}
