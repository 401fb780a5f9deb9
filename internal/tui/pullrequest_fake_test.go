package tui

import (
	"context"

	"github.com/underpass-ai/axlr/internal/client"
)

// PullRequest records the jobs panel's g. The app's tests check how it
// routes the panel's messages, not what the forge says (the panel's own
// tests do), so the answer is an empty view.
func (f *fakeClient) PullRequest(_ context.Context, id string) (client.PullRequestView, error) {
	f.calls = append(f.calls, "pull request "+id)
	return client.PullRequestView{}, nil
}
