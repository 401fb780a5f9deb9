package jobs

import (
	"errors"
	"strings"
	"testing"
)

const (
	repo  = "underpass-ai/axlr"
	build = "v1.2.3"
)

func job(id string, kind Kind, status Status, mutate ...func(*Record)) Record {
	r := Record{ID: id, Kind: kind, Status: status, Repository: repo, Signature: "sig-" + id, Brief: "brief of " + id, Session: "s-" + id, Build: build}
	for _, m := range mutate {
		m(&r)
	}
	return r
}

func withSig(sig string) func(*Record)  { return func(r *Record) { r.Signature = sig } }
func withBrief(b string) func(*Record)  { return func(r *Record) { r.Brief = b } }
func withOrigin(s string) func(*Record) { return func(r *Record) { r.OriginSession = s } }
func withBuild(b string) func(*Record)  { return func(r *Record) { r.Build = b } }
func byPerson(r *Record)                { r.Person = true }
func noSession(r *Record)               { r.Session = "" }

func TestAdmit(t *testing.T) {
	repair := Admission{Kind: Repair, Repository: repo, Signature: "sig-new", Brief: "Parser drops the last line of a file"}
	improve := Admission{Kind: Improve, Repository: repo, Signature: "sig-new", Brief: "Let the agent read the log", OriginSession: "origin"}
	with := func(a Admission, m func(*Admission)) Admission { m(&a); return a }
	merged := func(r *Record) {
		r.PullRequest, r.URL, r.MergeSHA = 7, "https://github.com/underpass-ai/axlr/pull/7", "def456"
	}
	tests := []struct {
		name    string
		records []Record
		req     Admission
		lim     Limits
		code    RefusalCode
		job     string
		message string
	}{
		{name: "admitted with no records", req: repair},
		{name: "admitted beside ended jobs", req: repair, records: []Record{job("a", Repair, Failed), job("b", Improve, Blocked), job("c", Repair, Completed)}},
		{name: "invalid kind", req: with(repair, func(a *Admission) { a.Kind = "improvement" }), code: RefuseInvalid,
			message: `a job is a repair or an improve, not "improvement"`},
		{name: "no repository", req: with(repair, func(a *Admission) { a.Repository = "" }), code: RefuseInvalid,
			message: "the job names no repository: set repair.repository (owner/name)"},
		{name: "no signature", req: with(repair, func(a *Admission) { a.Signature = "" }), code: RefuseInvalid,
			message: "the job has no signature"},
		{name: "empty brief", req: with(improve, func(a *Admission) { a.Brief = " \n" }), code: RefuseInvalid,
			message: "the brief is empty: say what the improvement must achieve"},
		{name: "brief over 8 KiB", req: with(repair, func(a *Admission) { a.Brief = strings.Repeat("x", MaxBrief+1) }), code: RefuseInvalid,
			message: "the brief takes at most 8192 bytes (8 KiB); this one has 8193"},
		{name: "brief of exactly 8 KiB", req: with(repair, func(a *Admission) { a.Brief = strings.Repeat("x", MaxBrief) })},
		{name: "a job's own session", req: with(repair, func(a *Admission) { a.OriginSession = "s-a" }),
			records: []Record{job("a", Improve, Completed)}, code: RefuseJobSession, job: "a",
			message: "this session is the improvement session of job a; a job's own session cannot start another job"},
		{name: "a job's earlier session", req: with(repair, func(a *Admission) { a.OriginSession = "s-old" }),
			records: []Record{job("a", Repair, Running, func(r *Record) { r.Sessions = []string{"s-old", "s-a"} })}, code: RefuseJobSession, job: "a",
			message: "this session is the repair session of job a; a job's own session cannot start another job"},
		{name: "duplicate by signature", req: repair,
			records: []Record{job("a", Repair, AwaitingMerge, withSig("sig-new"))}, code: RefuseDuplicate, job: "a",
			message: "duplicate: repair a is already awaiting_merge for the same failure; follow it with axlr-tui jobs watch a or axlr_repair_status instead of starting another"},
		{name: "duplicate by first words", req: repair,
			records: []Record{job("a", Repair, Preparing, withBrief("PARSER drops the last line of a file, again and again and again"))}, code: RefuseDuplicate, job: "a",
			message: "duplicate: repair a is already preparing for the same failure; follow it with axlr-tui jobs watch a or axlr_repair_status instead of starting another"},
		{name: "duplicate improvement", req: improve,
			records: []Record{job("a", Improve, Running, withBrief("let the agent read the log"))}, code: RefuseDuplicate, job: "a",
			message: "duplicate: improvement a is already running for the same improvement; follow it with axlr-tui jobs watch a or axlr_repair_status instead of starting another"},
		{name: "same words, other kind", req: repair,
			records: []Record{job("a", Improve, Running, withBrief("Parser drops the last line of a file"))}},
		{name: "same words, other repository", req: repair,
			records: []Record{job("a", Repair, Running, withBrief("Parser drops the last line of a file"), func(r *Record) { r.Repository = "acme/app" })}},
		{name: "same words, ended", req: repair,
			records: []Record{job("a", Repair, Blocked, withBrief("Parser drops the last line of a file"))}},
		{name: "interrupted", req: repair,
			records: []Record{job("a", Repair, Interrupted, withSig("sig-new"))}, code: RefuseInterrupted, job: "a",
			message: "repair a for the same failure was interrupted; recover it with axlr-tui jobs recover a instead of starting another"},
		{name: "merged by this build", req: repair,
			records: []Record{job("a", Repair, Completed, withSig("sig-new"), merged)}, code: RefuseMerged, job: "a",
			message: "already repaired: pull request #7 (https://github.com/underpass-ai/axlr/pull/7) merged repair a as def456, but this axlr still runs build v1.2.3; install the candidate (axlr-tui jobs install a) or update axlr, and restart axlrd instead of asking again"},
		{name: "improvement merged by this build", req: improve,
			records: []Record{job("a", Improve, Completed, withSig("sig-new"), merged)}, code: RefuseMerged, job: "a",
			message: "already improved: pull request #7 (https://github.com/underpass-ai/axlr/pull/7) merged improvement a as def456, but this axlr still runs build v1.2.3; install the candidate (axlr-tui jobs install a) or update axlr, and restart axlrd instead of asking again"},
		{name: "merged by another build", req: repair,
			records: []Record{job("a", Repair, Completed, withSig("sig-new"), merged, withBuild("repair-a-abc"))}},
		{name: "one improvement per origin session", req: improve,
			records: []Record{job("a", Improve, Failed, withOrigin("origin"))}, code: RefuseSessionLimit, job: "a",
			message: "this session already started improvement a (failed); a session asks for at most one improvement"},
		{name: "an improvement that reached no session does not count", req: improve,
			records: []Record{job("a", Improve, Failed, withOrigin("origin"), noSession)}},
		{name: "the person's improvements are not limited per session", req: with(improve, func(a *Admission) { a.OriginSession = "" }),
			records: []Record{job("a", Improve, Completed, withOrigin("origin"))}},
		{name: "three improvements per build", req: improve,
			records: []Record{job("a", Improve, Completed, withOrigin("o1")), job("b", Improve, Failed, withOrigin("o2")), job("c", Improve, Blocked, withOrigin("o3"))},
			code:    RefuseBuildLimit,
			message: `this axlr build (v1.2.3) already started 3 improvements that agents asked for, the most it starts; tell the person, who can start more with axlr-tui --improve "<brief>"`},
		{name: "improvements of other builds and the person's do not count", req: improve,
			records: []Record{job("a", Improve, Completed, withOrigin("o1")), job("b", Improve, Failed, withOrigin("o2"), withBuild("v1.0.0")), job("c", Improve, Blocked)}},
		{name: "the person's improvement from a session that asked for one", req: with(improve, func(a *Admission) { a.Person = true }),
			records: []Record{job("a", Improve, Failed, withOrigin("origin"))}},
		{name: "the person's improvement from a session past the build's limit", req: with(improve, func(a *Admission) { a.Person = true }),
			records: []Record{job("a", Improve, Completed, withOrigin("o1")), job("b", Improve, Failed, withOrigin("o2")), job("c", Improve, Blocked, withOrigin("o3"))}},
		{name: "the person's improvement from a session does not use the session's one", req: improve,
			records: []Record{job("a", Improve, Failed, withOrigin("origin"), byPerson)}},
		{name: "the person's improvements from sessions do not count for the build", req: improve,
			records: []Record{job("a", Improve, Completed, withOrigin("o1"), byPerson), job("b", Improve, Failed, withOrigin("o2"), byPerson), job("c", Improve, Blocked, withOrigin("o3"))}},
		{name: "the person's job from a job's own session", req: with(repair, func(a *Admission) { a.OriginSession, a.Person = "s-a", true }),
			records: []Record{job("a", Improve, Completed)}, code: RefuseJobSession, job: "a",
			message: "this session is the improvement session of job a; a job's own session cannot start another job"},
		{name: "the person's job from a session takes a slot", req: with(repair, func(a *Admission) { a.OriginSession, a.Person = "origin", true }),
			records: []Record{job("a", Repair, Running), job("b", Improve, AwaitingApproval)}, code: RefuseMaxActive,
			message: "another job is active (2 of 2 allowed by jobs.max_active); wait for one to end (axlr-tui jobs lists them) or raise jobs.max_active"},
		{name: "the person's repair from a session is bounded by attempts", req: with(repair, func(a *Admission) { a.OriginSession, a.Person = "origin", true }),
			records: []Record{job("a", Repair, Failed, withSig("sig-new")), job("b", Repair, Blocked, withSig("sig-new"))}, code: RefuseAttempts,
			message: "attempts exhausted: 2 repair sessions already ran for this failure (repair.max_attempts is 2); repair it by hand or raise repair.max_attempts"},
		{name: "max active, default 2", req: repair,
			records: []Record{job("a", Repair, Running), job("b", Improve, AwaitingApproval), job("c", Repair, Interrupted)}, code: RefuseMaxActive,
			message: "another job is active (2 of 2 allowed by jobs.max_active); wait for one to end (axlr-tui jobs lists them) or raise jobs.max_active"},
		{name: "max active raised", req: repair, lim: Limits{MaxActive: 3},
			records: []Record{job("a", Repair, Running), job("b", Improve, AwaitingApproval)}},
		{name: "max active 1", req: repair, lim: Limits{MaxActive: 1},
			records: []Record{job("a", Improve, AwaitingMerge)}, code: RefuseMaxActive,
			message: "another job is active (1 of 1 allowed by jobs.max_active); wait for one to end (axlr-tui jobs lists them) or raise jobs.max_active"},
		{name: "attempts exhausted, default 2", req: repair,
			records: []Record{job("a", Repair, Failed, withSig("sig-new")), job("b", Repair, Blocked, withSig("sig-new"))}, code: RefuseAttempts,
			message: "attempts exhausted: 2 repair sessions already ran for this failure (repair.max_attempts is 2); repair it by hand or raise repair.max_attempts"},
		{name: "attempts count only records that reached a session", req: repair,
			records: []Record{job("a", Repair, Failed, withSig("sig-new")), job("b", Repair, Failed, withSig("sig-new"), noSession)}},
		{name: "attempts raised", req: repair, lim: Limits{MaxAttempts: 3},
			records: []Record{job("a", Repair, Failed, withSig("sig-new")), job("b", Repair, Blocked, withSig("sig-new"))}},
		{name: "improvements have no attempt limit", req: with(improve, func(a *Admission) { a.OriginSession = "" }),
			records: []Record{job("a", Improve, Failed, withSig("sig-new")), job("b", Improve, Blocked, withSig("sig-new"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Admit(tt.records, tt.req, tt.lim, build)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("error %v (%T), want a *Refusal", err, err)
			}
			if r.Code != tt.code || r.Job != tt.job || err.Error() != tt.message {
				t.Fatalf("refusal %s job %q:\n%s\nwant %s job %q:\n%s", r.Code, r.Job, err, tt.code, tt.job, tt.message)
			}
		})
	}
}

func TestAdmitFirstRecordWins(t *testing.T) {
	records := []Record{job("b", Repair, Running, withSig("s")), job("a", Repair, Interrupted, withSig("s"))}
	err := Admit(records, Admission{Kind: Repair, Repository: repo, Signature: "s", Brief: "x"}, Limits{}, build)
	var r *Refusal
	if !errors.As(err, &r) || r.Code != RefuseDuplicate || r.Job != "b" {
		t.Fatalf("refusal %v", err)
	}
}

func TestNextAttempt(t *testing.T) {
	records := []Record{job("a", Repair, Failed, withSig("s")), job("b", Repair, Failed, withSig("s"), noSession), job("c", Repair, Failed)}
	if got := NextAttempt(records, "s"); got != 2 {
		t.Fatalf("next attempt %d, want 2", got)
	}
	if got := NextAttempt(nil, "s"); got != 1 {
		t.Fatalf("first attempt %d", got)
	}
}

func TestRecoverable(t *testing.T) {
	tests := []struct {
		name    string
		r       Record
		others  []Record
		lim     Limits
		code    RefusalCode
		message string
	}{
		{name: "interrupted with session and clone", r: job("a", Repair, Interrupted, func(r *Record) { r.Clone = "/c" })},
		{name: "not interrupted", r: job("a", Improve, Blocked, func(r *Record) { r.Clone = "/c" }), code: RefuseNotInterrupted,
			message: "improvement a is blocked; only an interrupted job is recovered"},
		{name: "no session", r: job("a", Repair, Interrupted, noSession, func(r *Record) { r.Clone = "/c" }), code: RefuseNothingToRecover,
			message: "repair a has no session or clone to continue: it stopped before they were ready; start it again"},
		{name: "no clone", r: job("a", Repair, Interrupted), code: RefuseNothingToRecover,
			message: "repair a has no session or clone to continue: it stopped before they were ready; start it again"},
		{name: "no free slot", r: job("a", Repair, Interrupted, func(r *Record) { r.Clone = "/c" }),
			others: []Record{job("b", Repair, Running), job("c", Improve, AwaitingMerge)}, code: RefuseMaxActive,
			message: "another job is active (2 of 2 allowed by jobs.max_active); wait for one to end (axlr-tui jobs lists them) or raise jobs.max_active"},
		{name: "a free slot under a raised limit", r: job("a", Repair, Interrupted, func(r *Record) { r.Clone = "/c" }), lim: Limits{MaxActive: 3},
			others: []Record{job("b", Repair, Running), job("c", Improve, AwaitingMerge)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Recoverable(tt.r, append([]Record{tt.r}, tt.others...), tt.lim)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) || r.Code != tt.code || err.Error() != tt.message {
				t.Fatalf("refusal %v, want %s: %s", err, tt.code, tt.message)
			}
		})
	}
}

func TestRefusalInSession(t *testing.T) {
	r := refuse(RefuseMaxActive, "", "no slot").InSession([]CallOutcome{
		{CallID: "c1", Tool: "local_read", Status: CallFailed, Code: "filesystem_error"},
		{CallID: "c2", Tool: "gh__issues", Status: CallCompleted, Plugin: true},
		{CallID: "c3", Tool: "local_exec", Status: CallCompleted, ExitCode: exit(1)},
		{CallID: "c4", Tool: ToolRequestRepair, Status: CallFailed},
		{CallID: "c5", Tool: "local_write", Status: CallPending},
	})
	if got, want := r.Error(), "no slot Recent citable calls of this session, newest first: c3 local_exec (completed, exited 1); c1 local_read (failed: filesystem_error)."; got != want {
		t.Fatalf("error\n%s\nwant\n%s", got, want)
	}
	if got, want := refuse(RefuseMaxActive, "", "no slot").InSession(nil).Error(), "no slot This session has no citable calls yet: cite calls of local_*, axlr_* or web_* tools that have ended."; got != want {
		t.Fatalf("error %q", got)
	}
}
