package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/underpass-ai/axlr/forge"
	"github.com/underpass-ai/axlr/forge/pull"
)

// ErrNoPullRequest: the job has not opened its pull request yet.
var ErrNoPullRequest = errors.New("no pull request yet")

// PullRequestView is a job's pull request as the forge reports it now.
type PullRequestView struct {
	// Job is the job's id, Repository its repository (owner/name).
	Job        string
	Repository string
	// PullRequest carries the state (open or closed, Merged), GitHub's
	// mergeable_state and the head SHA.
	PullRequest pull.Request
	// Checks are the head SHA's check runs and commit statuses, each
	// passed, pending or failed.
	Checks pull.Checks
}

// State is "merged", "closed" or "open".
func (v PullRequestView) State() string {
	if v.PullRequest.Merged {
		return "merged"
	}
	return v.PullRequest.State
}

// PullRequest reads the job's record from the registry, then its pull
// request and the checks of its head from the forge, once: the GitHub of
// forge.api_url (default api.github.com), with the token the client's
// environment gives for its host (GH_TOKEN, GITHUB_TOKEN,
// GH_ENTERPRISE_TOKEN or gh's own config), as axlrd's jobs reach it. A job
// without a pull request yet is ErrNoPullRequest; a forge error is a
// *forge.GitHubError, wrapped with the job.
func (c *Client) PullRequest(ctx context.Context, jobID string) (PullRequestView, error) {
	rec, err := c.Job(ctx, jobID)
	if err != nil {
		return PullRequestView{}, err
	}
	if rec.PullRequest == 0 {
		return PullRequestView{}, fmt.Errorf("job %s (%s): %w", rec.ID, rec.Status, ErrNoPullRequest)
	}
	// The forge's errors name the repository and what was read.
	about := fmt.Sprintf("job %s, pull request #%d", rec.ID, rec.PullRequest)
	gh, err := c.github()
	if err != nil {
		return PullRequestView{}, fmt.Errorf("%s of %s: %w", about, rec.Repository, err)
	}
	pr, err := gh.PullRequest(ctx, rec.Repository, rec.PullRequest)
	if err != nil {
		return PullRequestView{}, fmt.Errorf("%s: %w", about, err)
	}
	checks, err := gh.Checks(ctx, rec.Repository, pr.HeadSHA)
	if err != nil {
		return PullRequestView{}, fmt.Errorf("%s: %w", about, err)
	}
	return PullRequestView{Job: rec.ID, Repository: rec.Repository, PullRequest: pr, Checks: checks}, nil
}

// github is the GitHub client of the settings' forge, with the
// environment's token for its host.
func (c *Client) github() (*forge.GitHub, error) {
	api := cmp.Or(c.settings().Forge.APIURL, forge.DefaultAPIURL)
	host, err := forge.APIHost(api)
	if err != nil {
		return nil, err
	}
	token, err := forge.Token(host, c.env())
	if err != nil {
		return nil, err
	}
	return forge.NewGitHub(forge.Options{APIURL: api, Token: token})
}
