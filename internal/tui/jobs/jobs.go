// Package jobs is the TUI's jobs panel: every repair and improvement,
// newest first, with the keys that act on the selected one, and n, which
// starts a job from a brief of one or more lines in the TUI's session with
// its model. Drawing never calls the client: the rows come from Refresh, a
// command that calls Jobs every RefreshInterval (a poll of axlrd's
// registry, which holds the records; the forge is read only on g, once, in
// the background, by axlrd). Every key that acts returns a command that
// calls the client; its answer comes back as a message and triggers a
// refresh. The rows, their window, their refreshes and the brief's prompt
// are a list.List's.
package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/list"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/workflows"
)

// RefreshInterval is how often the panel asks axlrd for the records.
const RefreshInterval = 3 * time.Second

// Client is what the panel asks axlrd; *client.Client has it.
type Client interface {
	Jobs(ctx context.Context) ([]jobs.Record, error)
	PullRequest(ctx context.Context, id string) (client.PullRequestView, error)
	DecideJob(ctx context.Context, dec workflows.JobDecision) (jobs.Record, error)
	RecoverJob(ctx context.Context, id, model string) (jobs.Record, error)
	InstallJob(ctx context.Context, id, tuiPath string) (jobs.Record, error)
	QueueJob(ctx context.Context, id string) (workflows.QueueView, error)
	UnqueueJob(ctx context.Context, id, reason string) (workflows.QueueView, error)
	LaunchJob(ctx context.Context, req workflows.LaunchRequest) (jobs.Record, error)
}

// RecordsMsg carries the records Jobs returned, or why it failed.
type RecordsMsg = list.Records[jobs.Record]

// ActedMsg is the answer to an action on a job: what was done and the
// error, if any.
type ActedMsg = list.Acted[jobs.Record]

// launchedMsg is the answer to a job's start: the record admitted, or why
// it was refused.
type launchedMsg struct {
	kind jobs.Kind
	rec  jobs.Record
	err  error
}

// PullRequestMsg carries the job's pull request as the forge reports it
// now, for g.
type PullRequestMsg struct {
	View client.PullRequestView
	Err  error
}

// Options are the panel's settings.
type Options struct {
	// MaxActive is jobs.max_active, which the title counts against.
	MaxActive int
	// Model runs a recovered job and a job the panel starts: the TUI
	// session's (default: axlrd's settings).
	Model string
	// TUIPath is the axlr-tui i installs over, besides axlrd's (default:
	// none).
	TUIPath string
}

// denying is the question of a denial's reason; a new job's brief is
// list.Briefing.
const denying = 1

// Model is the jobs panel.
type Model struct {
	list.List[jobs.Record]
	ctx    context.Context
	client Client
	opts   Options
	kind   jobs.Kind
	// session is the TUI's session, which a job the panel starts is
	// asked from (SetSession); empty before its first prompt.
	session string
}

// New returns the panel; Init starts its refreshes.
func New(ctx context.Context, c Client, com common.Common, opts Options) Model {
	rows := list.New(com, list.Options[jobs.Record]{
		Name: "jobs", Read: func() ([]jobs.Record, error) { return c.Jobs(ctx) }, Every: RefreshInterval,
		ID: func(r jobs.Record) string { return r.ID }, Created: func(r jobs.Record) time.Time { return r.Created }, Details: details,
		Brief: &list.Prompt{Placeholder: "what fails, or #123 for an issue", Need: "a brief is needed: what fails, or #123; Esc cancels",
			Lines: true, Hold: true},
	})
	return Model{List: rows, ctx: ctx, client: c, opts: opts, kind: jobs.Repair}
}

// SetSession makes id the session a job the panel starts is asked from:
// the TUI's current one, which then receives the job's outcome note.
func (m *Model) SetSession(id string) { m.session = id }

// Launch starts a job of kind from brief, as n and Enter would: the brief
// is held on the panel's prompt until axlrd answers, and a refusal gives
// it back there to fix (the composer's /repair and /improve).
func (m Model) Launch(kind jobs.Kind, brief string) (Model, tea.Cmd) {
	m.kind = kind
	m.HoldBrief(brief)
	return m, m.launch(kind, brief)
}

// launch is the command that starts a job of kind from brief in the
// panel's session, with its model, as the person's.
func (m *Model) launch(kind jobs.Kind, brief string) tea.Cmd {
	m.Status = "starting the " + kind.Noun() + "…"
	req := workflows.LaunchRequest{Kind: kind, Brief: brief, Model: m.opts.Model, OriginSession: m.session, Person: true}
	return func() tea.Msg {
		rec, err := m.client.LaunchJob(m.ctx, req)
		return launchedMsg{kind: kind, rec: rec, err: err}
	}
}

// Update handles the panel's keys and the client's answers.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case launchedMsg:
		cmd := m.Release(msg.err)
		if msg.err == nil {
			m.Status = fmt.Sprintf("%s %s admitted; it runs in axlrd", msg.kind, msg.rec.ID)
		}
		return m, tea.Batch(cmd, m.Refresh())
	case PullRequestMsg:
		if msg.Err != nil {
			m.Status = "pull request: " + msg.Err.Error()
			return m, nil
		}
		m.Status = pullRequestLine(msg.View)
		return m, nil
	case tea.KeyPressMsg:
		return m.press(msg)
	}
	var cmd tea.Cmd
	m.List, cmd = m.List.Update(msg)
	return m, cmd
}

// press handles a key press: Tab turns a new job's kind while its brief is
// typed; the list takes its own keys and the prompt's; the others act on
// the selected job.
func (m Model) press(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	if msg.String() == "tab" && m.Asking() == list.Briefing && !m.Held() {
		m.kind = map[jobs.Kind]jobs.Kind{jobs.Repair: jobs.Improve, jobs.Improve: jobs.Repair}[m.kind]
		return m, nil
	}
	var in list.Input[jobs.Record]
	var cmd tea.Cmd
	m.List, in, cmd = m.Press(msg)
	switch {
	case in.Answer.Question == list.Briefing:
		return m, m.launch(m.kind, in.Answer.Text)
	case in.Answer.Question == denying:
		return m, m.deny(in.Answer.Text)
	case in.Key != "":
		return m.act(in.Key, in.Row)
	}
	return m, cmd
}

// act is a key's action on job rec.
func (m Model) act(key string, rec jobs.Record) (Model, tea.Cmd) {
	switch key {
	case "a":
		if rec.Pending == nil {
			m.Status = fmt.Sprintf("nothing of %s waits for a decision", rec.ID)
			return m, nil
		}
		dec := workflows.JobDecision{Job: rec.ID, Kind: rec.Pending.Kind, Approve: true, HeadSHA: rec.Pending.HeadSHA}
		return m, m.decide(dec, "approved "+string(rec.Pending.Kind)+" of "+rec.ID)
	case "d":
		if rec.Pending == nil {
			m.Status = fmt.Sprintf("nothing of %s waits for a decision", rec.ID)
			return m, nil
		}
		return m, m.AskReason(denying)
	case "r":
		return m, m.Act("recovered "+rec.ID, func() error { _, err := m.client.RecoverJob(m.ctx, rec.ID, m.opts.Model); return err })
	case "i":
		return m, m.Act("installed "+rec.ID, func() error { _, err := m.client.InstallJob(m.ctx, rec.ID, m.opts.TUIPath); return err })
	case "m":
		if rec.Queue != nil && rec.Queue.Position > 0 {
			return m, m.Act("unqueued "+rec.ID, func() error {
				_, err := m.client.UnqueueJob(m.ctx, rec.ID, "unqueued from the jobs panel")
				return err
			})
		}
		return m, m.Act("queued "+rec.ID, func() error { _, err := m.client.QueueJob(m.ctx, rec.ID); return err })
	case "g":
		if rec.PullRequest == 0 {
			m.Status = rec.ID + " has no pull request yet"
			return m, nil
		}
		m.Status = fmt.Sprintf("reading pull request #%d…", rec.PullRequest)
		return m, func() tea.Msg {
			v, err := m.client.PullRequest(m.ctx, rec.ID)
			return PullRequestMsg{View: v, Err: err}
		}
	}
	return m, nil
}

// deny sends the denial of the selected job's wait, for reason.
func (m Model) deny(reason string) tea.Cmd {
	rec, ok := m.Selected()
	if !ok || rec.Pending == nil {
		return nil
	}
	verb := "denied"
	if rec.Pending.Kind == jobs.PendingMerge {
		verb = "declined"
	}
	return m.decide(workflows.JobDecision{Job: rec.ID, Kind: rec.Pending.Kind, Reason: reason}, verb+" "+string(rec.Pending.Kind)+" of "+rec.ID)
}

func (m Model) decide(dec workflows.JobDecision, done string) tea.Cmd {
	return m.Act(done, func() error { _, err := m.client.DecideJob(m.ctx, dec); return err })
}

// columns are the panel's: the id takes three fifths of what the fixed
// ones leave (10 to 32 cells), the check the rest.
var columns = []list.Column{
	{Name: "KIND", Width: 8},
	{Name: "ID", Grow: func(left int) int { return min(max(left*3/5, 10), 32) }, Gap: true},
	{Name: "STATUS", Width: 18},
	{Name: "STEP", Width: 14},
	{Name: "SESS", Width: 5},
	{Name: "PR", Width: 5},
	{Name: "CHECK"},
}

// keysHelp is the panel's keys, on its last line.
const keysHelp = "↑↓ ⏎ details  a approve  d deny  r recover  i install  m queue  g PR  n new"

// View draws the panel in its Width×Height.
func (m Model) View() string {
	ask := "reason (Enter sends, Esc cancels): "
	if m.Asking() == list.Briefing {
		ask = "new " + m.kind.Noun() + " · Tab repair/improvement · Shift+Enter new line · Enter starts"
	}
	return m.List.View(list.Frame[jobs.Record]{
		Title:   fmt.Sprintf("Jobs · %d/%d active", m.Count(jobs.Record.Active), m.opts.MaxActive),
		Columns: columns,
		Cells: func(r jobs.Record) []string {
			pr := "-"
			if r.PullRequest > 0 {
				pr = fmt.Sprintf("#%d", r.PullRequest)
			}
			return []string{string(r.Kind), r.ID, string(r.Status), r.StepText(), fmt.Sprint(len(r.Sessions)), pr, check(r.Check)}
		},
		Empty: "no jobs yet: n starts one",
		Ask:   ask,
		Keys:  keysHelp,
	})
}

// details are a job's lines under the table.
func details(r jobs.Record) []string {
	lines := []string{"brief: " + common.OneLine(r.Brief)}
	lines = append(lines, "origin: "+origin(r), "clone: "+common.Or(r.Clone, "-"))
	if r.Host != "" {
		lines = append(lines, "host: "+r.Host)
	}
	for _, m := range r.Moves {
		lines = append(lines, "moved: "+common.OneLine(m))
	}
	if r.Reason != "" {
		lines = append(lines, "reason: "+common.OneLine(r.Reason))
	}
	if r.Pending != nil {
		lines = append(lines, "waits: "+Waits(*r.Pending))
	}
	if q := r.Queue; q != nil {
		place := fmt.Sprintf("queue: %s", q.State)
		if q.Position > 0 {
			place += fmt.Sprintf(", place %d", q.Position)
		}
		if q.Note != "" {
			place += " (" + q.Note + ")"
		}
		lines = append(lines, place)
	}
	return lines
}

// origin says who asked for the job, and from which session.
func origin(r jobs.Record) string {
	switch {
	case r.OriginSession == "":
		return "the person"
	case r.Person:
		return "the person, in session " + r.OriginSession
	}
	return "the agent of session " + r.OriginSession
}

// Waits says what a job waits for: the check command to approve, or the
// merge of the pull request at its head.
func Waits(p jobs.Pending) string {
	if p.Kind == jobs.PendingMerge {
		if p.Behind {
			return fmt.Sprintf("merge of #%d at %s (behind its base: m queues it)", p.PullRequest, short(p.HeadSHA))
		}
		return fmt.Sprintf("merge of #%d at %s", p.PullRequest, short(p.HeadSHA))
	}
	return "check " + p.Command
}

func check(c *jobs.Check) string {
	if c == nil {
		return "-"
	}
	if c.ExitCode == nil {
		return "did not exit: " + common.OneLine(c.LastLine)
	}
	return strings.TrimSuffix(fmt.Sprintf("exit %d: %s", *c.ExitCode, common.OneLine(c.LastLine)), ": ")
}

func short(sha string) string { return sha[:min(len(sha), 7)] }

// pullRequestLine is g's answer on the status line: the state, the merge
// state while open, and the head's checks with the failed ones' names.
func pullRequestLine(v client.PullRequestView) string {
	pr, c := v.PullRequest, v.Checks
	line := fmt.Sprintf("#%d %s at %s", pr.Number, v.State(), short(pr.HeadSHA))
	if pr.Merged {
		line = fmt.Sprintf("#%d merged as %s", pr.Number, short(pr.MergeSHA))
	}
	if pr.State == "open" && pr.MergeableState != "" {
		line += " · merge state " + strings.ToUpper(pr.MergeableState)
	}
	line += fmt.Sprintf(" · %d passed, %d pending, %d failed", len(c.Passed), len(c.Pending), len(c.Failed))
	if len(c.Failed) > 0 {
		names := make([]string, len(c.Failed))
		for i, f := range c.Failed {
			// pull.Checks.Failed holds "<name>: <conclusion> <url>".
			if cut := strings.LastIndex(f, ": "); cut > 0 {
				f = f[:cut]
			}
			names[i] = f
		}
		line += ": " + strings.Join(names, ", ")
	}
	return line
}
