package client

import (
	"reflect"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/internal/buildinfo"
	"github.com/underpass-ai/axlr/internal/settings"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// TestJobLaunchSettings: the launch takes settings.json's repair, jobs and
// forge keys with their defaults, the clones under the data directory,
// and this build.
func TestJobLaunchSettings(t *testing.T) {
	getenv := func(k string) string { return map[string]string{"XDG_DATA_HOME": "/x/data"}[k] }
	tests := []struct {
		name string
		doc  string
		want workflows.JobLaunchSettings
	}{
		{name: "defaults", doc: `{}`, want: workflows.JobLaunchSettings{
			Repository: "underpass-ai/axlr", ForgeWeb: "https://github.com", Directory: "/x/data/axlr/repairs", About: "repo:underpass-ai/axlr",
			Watch: 45 * time.Minute, Poll: 30 * time.Second, Limits: jobs.Limits{MaxActive: 2, MaxAttempts: 2}, Build: buildinfo.String(), HostLost: time.Minute,
		}},
		{name: "set", doc: `{"repair": {"repository": "acme/app", "remote": "/srv/git/app.git", "directory": "/clones", "about": "project:x",
			"auto_merge": true, "install": true, "autonomous": true, "watch_minutes": 5, "poll_seconds": 2, "max_attempts": 3},
			"jobs": {"max_active": 4}, "forge": {"api_url": "https://ghe.example.com/api/v3"}, "cluster": {"host_lost_seconds": 20}}`, want: workflows.JobLaunchSettings{
			Repository: "acme/app", Remote: "/srv/git/app.git", ForgeWeb: "https://ghe.example.com", Directory: "/clones", About: "project:x",
			AutoMerge: true, Install: true, Autonomous: true, Watch: 5 * time.Minute, Poll: 2 * time.Second, Limits: jobs.Limits{MaxActive: 4, MaxAttempts: 3}, Build: buildinfo.String(),
			HostLost: 20 * time.Second,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := settings.Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			got, err := JobLaunchSettings(&l.Settings, getenv)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("launch settings %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}
