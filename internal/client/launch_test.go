package client

import (
	"testing"

	"github.com/underpass-ai/axlr/internal/settings"
)

// TestJobRemote: repair.remote wins; otherwise the repository on the
// forge's host, over the scheme its API is served on.
func TestJobRemote(t *testing.T) {
	tests := []struct {
		remote, apiURL, want string
	}{
		{"", "", "https://github.com/acme/app.git"},
		{"", "https://api.github.com/", "https://github.com/acme/app.git"},
		{"", "https://ghe.example.com/api/v3/", "https://ghe.example.com/acme/app.git"},
		{"", "http://127.0.0.1:9999/api/v3/", "http://127.0.0.1:9999/acme/app.git"},
		{"/srv/git/app.git", "http://127.0.0.1:9999/", "/srv/git/app.git"},
	}
	for _, tt := range tests {
		set := &settings.Settings{}
		set.Repair.Remote, set.Forge.APIURL = tt.remote, tt.apiURL
		got, err := jobRemote(set, "acme/app")
		if err != nil || got != tt.want {
			t.Errorf("remote %q, api_url %q: %q, %v; want %q", tt.remote, tt.apiURL, got, err, tt.want)
		}
	}
}
