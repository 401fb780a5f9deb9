// Package jobs is the TUI's jobs panel: every repair and improvement,
// newest first, with the keys that act on the selected one. Drawing never
// calls the client: the rows come from Refresh, a command that calls Jobs
// every RefreshInterval (a poll of axlrd's registry, which holds the
// records; the forge is read only on g, once, in the background). Every
// key that acts returns a command that calls the client; its answer comes
// back as a message and triggers a refresh. The rows, their window and
// their refreshes are a list.List's.
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
	LaunchJob(ctx context.Context, req client.LaunchRequest) (jobs.Record, error)
}

// RecordsMsg carries the records Jobs returned, or why it failed.
type RecordsMsg = list.Records[jobs.Record]

// ActedMsg is the answer to an action on a job: what was done and the
// error, if any.
type ActedMsg = list.Acted[jobs.Record]

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
	// Model runs a recovered job (default: axlrd's settings).
	Model string
	// TUIPath is the axlr-tui i installs over, besides axlrd's (default:
	// none).
	TUIPath string
}

// The questions the prompt asks: the reason of a denial, a new job's
// brief.
const (
	denying = iota + 1
	briefing
)

// Model is the jobs panel.
type Model struct {
	list.List[jobs.Record]
	ctx    context.Context
	client Client
	opts   Options
	kind   jobs.Kind
}

// New returns the panel; Init starts its refreshes.
func New(ctx context.Context, c Client, com common.Common, opts Options) Model {
	rows := list.New(com, list.Options[jobs.Record]{
		Name: "jobs", Read: func() ([]jobs.Record, error) { return c.Jobs(ctx) }, Every: RefreshInterval,
		ID: func(r jobs.Record) string { return r.ID }, Created: func(r jobs.Record) time.Time { return r.Created }, Details: details,
	})
	return Model{List: rows, ctx: ctx, client: c, opts: opts, kind: jobs.Repair}
}

// Update handles the panel's keys and the client's answers.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case PullRequestMsg:
		if msg.Err != nil {
			m.Status = "pull request: " + msg.Err.Error()
			return m, nil
		}
		m.Status = pullRequestLine(msg.View)
		return m, nil
	case tea.KeyPressMsg:
		if m.Editing() {
			return m.updateInput(msg)
		}
		return m.updateKeys(msg)
	}
	var cmd tea.Cmd
	m.List, cmd = m.List.Update(msg)
	return m, cmd
}

func (m Model) updateKeys(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	var moved bool
	if m.List, moved = m.Key(msg); moved {
		return m, nil
	}
	if msg.String() == "n" {
		return m, m.Ask(briefing, "what fails, or #123 for an issue", "a brief is needed: what fails, or #123; Esc cancels")
	}
	rec, ok := m.Selected()
	if !ok {
		return m, nil
	}
	switch msg.String() {
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
		return m, m.Ask(denying, "why", "a reason is needed: type why, or Esc cancels")
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

func (m Model) updateInput(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	if msg.String() == "tab" && m.Asking() == briefing {
		m.kind = map[jobs.Kind]jobs.Kind{jobs.Repair: jobs.Improve, jobs.Improve: jobs.Repair}[m.kind]
		return m, nil
	}
	var ans list.Answer
	var cmd tea.Cmd
	m.List, ans, cmd = m.Type(msg)
	switch ans.Question {
	case briefing:
		kind := m.kind
		return m, m.Act("started a "+kind.Noun(), func() error {
			_, err := m.client.LaunchJob(m.ctx, client.LaunchRequest{Kind: kind, Brief: ans.Text})
			return err
		})
	case denying:
		rec, ok := m.Selected()
		if !ok || rec.Pending == nil {
			return m, nil
		}
		verb := "denied"
		if rec.Pending.Kind == jobs.PendingMerge {
			verb = "declined"
		}
		return m, m.decide(workflows.JobDecision{Job: rec.ID, Kind: rec.Pending.Kind, Reason: ans.Text}, verb+" "+string(rec.Pending.Kind)+" of "+rec.ID)
	}
	return m, cmd
}

func (m Model) decide(dec workflows.JobDecision, done string) tea.Cmd {
	return m.Act(done, func() error { _, err := m.client.DecideJob(m.ctx, dec); return err })
}

// Column widths at any width: the check takes what the others leave.
const (
	kindW   = 8
	statusW = 18
	stepW   = 14
	sessW   = 5
	prW     = 5
	fixedW  = 2 + kindW + statusW + stepW + sessW + prW
)

// keysHelp is the panel's keys, on its last line.
const keysHelp = "↑↓ ⏎ details  a approve  d deny  r recover  i install  m queue  g PR  n new"

// View draws the panel in its Width×Height.
func (m Model) View() string {
	active := 0
	for _, r := range m.Rows() {
		if r.Active() {
			active++
		}
	}
	idW := min(max((m.Width-fixedW)*3/5, 10), 32)
	checkW := max(m.Width-fixedW-idW, 0)
	ask := "reason (Enter sends, Esc cancels): "
	if m.Asking() == briefing {
		ask = "new " + m.kind.Noun() + " (Tab: repair/improvement): "
	}
	return m.List.View(list.Frame[jobs.Record]{
		Title: fmt.Sprintf("Jobs · %d/%d active", active, m.opts.MaxActive),
		Header: common.Fit("KIND", kindW) + common.Fit("ID", idW) + common.Fit("STATUS", statusW) +
			common.Fit("STEP", stepW) + common.Fit("SESS", sessW) + common.Fit("PR", prW) + "CHECK",
		Row: func(r jobs.Record) string {
			pr := "-"
			if r.PullRequest > 0 {
				pr = fmt.Sprintf("#%d", r.PullRequest)
			}
			return common.Fit(string(r.Kind), kindW) + common.Fit(r.ID, idW-1) + " " + common.Fit(string(r.Status), statusW) +
				common.Fit(r.StepText(), stepW) + common.Fit(fmt.Sprint(len(r.Sessions)), sessW) + common.Fit(pr, prW) + common.Fit(check(r.Check), checkW)
		},
		Empty: "no jobs yet: n starts one",
		Ask:   ask,
		Keys:  keysHelp,
	})
}

// details are a job's lines under the table.
func details(r jobs.Record) []string {
	lines := []string{"brief: " + common.OneLine(r.Brief)}
	lines = append(lines, "origin: "+common.Or(r.OriginSession, "the person"), "clone: "+common.Or(r.Clone, "-"))
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
