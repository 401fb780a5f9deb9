package client

import (
	"context"
	"fmt"
	"os"

	"github.com/underpass-ai/axlr/internal/buildinfo"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/session"
	"github.com/underpass-ai/axlr/workflows"
)

// LaunchJob asks the job registry to admit a job under the client's
// settings and starts its workflow: workflows.NewJobLaunch decides it,
// Launch carries it out.
func (c *Client) LaunchJob(ctx context.Context, req workflows.LaunchRequest) (jobs.Record, error) {
	s, err := JobLaunchSettings(c.settings(), c.env())
	if err != nil {
		return jobs.Record{}, err
	}
	l, err := workflows.NewJobLaunch(s, req)
	if err != nil {
		return jobs.Record{}, err
	}
	return c.Launch(ctx, l)
}

// Launch admits a decided launch and starts the admitted job's workflow
// (workflows.NewJobInput) in a new session. A refusal is a
// *workflows.JobRefusedError; a launch retried with the same request id starts the
// same job once.
func (c *Client) Launch(ctx context.Context, l workflows.JobLaunch) (jobs.Record, error) {
	rec, err := c.AdmitJob(ctx, l.Admit)
	if err != nil {
		return jobs.Record{}, err
	}
	in, err := newJobInput(l.Settings, rec, l.Model)
	if err != nil {
		return rec, err
	}
	if err := c.StartJob(ctx, in); err != nil {
		return rec, fmt.Errorf("job %s was admitted but its workflow did not start (axlr-tui jobs recover %s starts it): %w", rec.ID, rec.ID, err)
	}
	return rec, nil
}

// jobInput is the start of an admitted job's workflow under the client's
// settings, in a new session.
func (c *Client) jobInput(rec jobs.Record, model string) (workflows.JobInput, error) {
	s, err := JobLaunchSettings(c.settings(), c.env())
	if err != nil {
		return workflows.JobInput{}, err
	}
	return newJobInput(s, rec, model)
}

func newJobInput(s workflows.JobLaunchSettings, rec jobs.Record, model string) (workflows.JobInput, error) {
	sid, err := session.NewID()
	if err != nil {
		return workflows.JobInput{}, fmt.Errorf("start job %s: %w", rec.ID, err)
	}
	return workflows.NewJobInput(s, rec, sid, model), nil
}

// JobLaunchSettings are the plain values jobs launch under from set: its
// repair, jobs and forge settings, the clones under the data directory
// getenv names by default, and this build.
func JobLaunchSettings(set *settings.Settings, getenv func(string) string) (workflows.JobLaunchSettings, error) {
	data, err := settings.DefaultDataDir(getenv)
	if err != nil {
		return workflows.JobLaunchSettings{}, err
	}
	web, err := set.Forge.Web()
	if err != nil {
		return workflows.JobLaunchSettings{}, err
	}
	return workflows.JobLaunchSettings{
		Repository: set.RepairRepository(), Remote: set.Repair.Remote, ForgeWeb: web,
		Directory: set.RepairDirectory(data), About: set.RepairAbout(),
		AutoMerge: set.Repair.AutoMerge, Install: set.Repair.Install, Autonomous: set.Repair.Autonomous, Watch: set.RepairWatch(), Poll: set.RepairPoll(),
		Limits: set.JobLimits(), Build: buildinfo.String(), HostLost: set.Cluster.HostLost(),
	}, nil
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
