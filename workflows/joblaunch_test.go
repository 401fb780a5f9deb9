package workflows

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/jobs"
)

// TestNewJobInput: repair.remote wins; otherwise the repository on the
// forge's web address (settings.Forge.Web reads it from forge.api_url:
// TestForgeWeb); a job on axlr's own
// repository builds a candidate; a "#123" brief names its issue; the
// repair settings (repair.autonomous among them) reach the job.
func TestNewJobInput(t *testing.T) {
	s := JobLaunchSettings{Directory: "/d/repairs", About: "project:app", AutoMerge: true, Install: true, Autonomous: true, Watch: time.Hour, Poll: time.Minute}
	tests := []struct {
		name, remote, web, repo, brief string
		wantRemote                     string
		wantCandidate                  bool
		wantIssue                      int
	}{
		{name: "github.com", repo: "acme/app", brief: "x fails", wantRemote: "https://github.com/acme/app.git"},
		{name: "loopback IPv6", web: "http://[::1]:9", repo: "acme/app", brief: "x fails", wantRemote: "http://[::1]:9/acme/app.git"},
		{name: "GHES", web: "https://ghe.example.com", repo: "acme/app", brief: "x fails", wantRemote: "https://ghe.example.com/acme/app.git"},
		{name: "loopback http", web: "http://127.0.0.1:9999/", repo: "acme/app", brief: "x fails", wantRemote: "http://127.0.0.1:9999/acme/app.git"},
		{name: "repair.remote", remote: "/srv/git/app.git", web: "http://127.0.0.1:9999", repo: "acme/app", brief: "x fails", wantRemote: "/srv/git/app.git"},
		{name: "axlr itself", repo: "underpass-ai/axlr", brief: "x fails", wantRemote: "https://github.com/underpass-ai/axlr.git", wantCandidate: true},
		{name: "axlr in other case", repo: "Underpass-AI/AXLR", brief: "x fails", wantRemote: "https://github.com/Underpass-AI/AXLR.git", wantCandidate: true},
		{name: "a fork of axlr", repo: "someone/axlr", brief: "x fails", wantRemote: "https://github.com/someone/axlr.git"},
		{name: "an issue", repo: "acme/app", brief: "#12", wantRemote: "https://github.com/acme/app.git", wantIssue: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := s
			s.Repository, s.Remote, s.ForgeWeb = "settings/repo", tt.remote, tt.web
			rec := jobs.Record{ID: "j", Repository: tt.repo, Brief: tt.brief}
			got := NewJobInput(s, rec, "sess", "m")
			want := JobInput{Record: rec, SessionID: "sess", Model: "m", Issue: tt.wantIssue, Settings: JobSettings{
				Remote: tt.wantRemote, Directory: "/d/repairs", About: "project:app", AutoMerge: true, Watch: time.Hour, Poll: time.Minute,
				Candidate: tt.wantCandidate, Install: true, Autonomous: true,
			}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("input %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestNewJobLaunch: the admission takes the settings' repository, limits
// and build, the trimmed brief, the request's signature or the person's
// job signature, and who asks: the person's job keeps its signature and
// says it is the person's, from a session too.
func TestNewJobLaunch(t *testing.T) {
	s := JobLaunchSettings{Repository: "acme/app", Limits: jobs.Limits{MaxActive: 3, MaxAttempts: 1}, Build: "b1"}
	tests := []struct {
		name    string
		s       JobLaunchSettings
		req     LaunchRequest
		want    JobLaunch
		wantErr string
	}{
		{name: "the person's job", s: s, req: LaunchRequest{Kind: jobs.Repair, Brief: "  TestParse fails \n", Model: "m", Person: true},
			want: JobLaunch{Admit: AdmitRequest{Admission: jobs.Admission{Kind: jobs.Repair, Repository: "acme/app",
				Signature: jobs.JobSignature("acme/app", jobs.Repair, "TestParse fails"), Brief: "TestParse fails", Person: true}, Limits: s.Limits, Build: "b1"},
				Model: "m", Settings: s}},
		{name: "an agent's request", s: s, req: LaunchRequest{RequestID: "request:s:3.0", Kind: jobs.Improve, Brief: "b", OriginSession: "s", Signature: "sig"},
			want: JobLaunch{Admit: AdmitRequest{RequestID: "request:s:3.0", Admission: jobs.Admission{Kind: jobs.Improve, Repository: "acme/app",
				Signature: "sig", Brief: "b", OriginSession: "s"}, Limits: s.Limits, Build: "b1"}, Settings: s}},
		{name: "the person's job from a TUI session", s: s, req: LaunchRequest{Kind: jobs.Improve, Brief: "Let the agent read the log", Model: "m", OriginSession: "s", Person: true},
			want: JobLaunch{Admit: AdmitRequest{Admission: jobs.Admission{Kind: jobs.Improve, Repository: "acme/app",
				Signature: jobs.JobSignature("acme/app", jobs.Improve, "Let the agent read the log"), Brief: "Let the agent read the log",
				OriginSession: "s", Person: true}, Limits: s.Limits, Build: "b1"}, Model: "m", Settings: s}},
		{name: "the person's job with a signature", s: s, req: LaunchRequest{Kind: jobs.Repair, Brief: "b", OriginSession: "s", Person: true, Signature: "sig"},
			wantErr: "launch job: the person's repair takes no signature (sig): its signature is its brief's"},
		{name: "bad kind", s: s, req: LaunchRequest{Kind: "fix", Brief: "b"}, wantErr: `launch job: kind "fix" is neither repair nor improve`},
		{name: "no brief", s: s, req: LaunchRequest{Kind: jobs.Improve, Brief: " "}, wantErr: `--improve needs a brief: what fails, or "#123" for an issue of acme/app`},
		{name: "no repository", req: LaunchRequest{Kind: jobs.Repair, Brief: "b"}, wantErr: "no repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewJobLaunch(tt.s, tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("launch %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}
