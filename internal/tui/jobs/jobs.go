// Package jobs is the TUI's jobs panel: every repair and improvement,
// newest first, with the keys that act on the selected one. Drawing never
// calls the client: the rows come from Refresh, a command that calls Jobs
// every RefreshInterval (a poll of axlrd's registry, which holds the
// records; the forge is read only on g, once, in the background). Every
// key that acts returns a command that calls the client; its answer comes
// back as a message and triggers a refresh.
package jobs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/common"
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
type RecordsMsg struct {
	Records []jobs.Record
	Err     error
}

// ActedMsg is the answer to an action on a job: what was done and the
// error, if any.
type ActedMsg struct {
	Done string
	Err  error
}

// PullRequestMsg carries the job's pull request as the forge reports it
// now, for g.
type PullRequestMsg struct {
	View client.PullRequestView
	Err  error
}

type tickMsg struct{}

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

type mode int

const (
	browsing mode = iota
	denying
	briefing
)

// Model is the jobs panel.
type Model struct {
	common.Common
	ctx    context.Context
	client Client
	opts   Options

	records []jobs.Record
	sel     int
	top     int
	open    bool
	mode    mode
	kind    jobs.Kind
	input   textinput.Model
	status  string
	loaded  bool
	// ticking: a timed refresh is scheduled.
	ticking bool
}

// New returns the panel; Init starts its refreshes.
func New(ctx context.Context, c Client, com common.Common, opts Options) Model {
	return Model{Common: com, ctx: ctx, client: c, opts: opts, kind: jobs.Repair, input: com.Input("")}
}

// Init asks for the records.
func (m Model) Init() tea.Cmd { return m.Refresh() }

// Refresh is the command that asks axlrd for the records.
func (m Model) Refresh() tea.Cmd {
	return func() tea.Msg {
		recs, err := m.client.Jobs(m.ctx)
		return RecordsMsg{Records: recs, Err: err}
	}
}

// Editing reports whether a reason or a brief is being typed: Esc then
// belongs to the panel.
func (m Model) Editing() bool { return m.mode != browsing }

// Records returns the rows, newest first.
func (m Model) Records() []jobs.Record { return m.records }

// Selected returns the selected job, if any.
func (m Model) Selected() (jobs.Record, bool) {
	if m.sel < 0 || m.sel >= len(m.records) {
		return jobs.Record{}, false
	}
	return m.records[m.sel], true
}

// Update handles the panel's keys and the client's answers.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case RecordsMsg:
		if msg.Err != nil {
			m.status = "jobs: " + msg.Err.Error()
		} else {
			m.setRecords(msg.Records)
		}
		if m.ticking {
			// One timed refresh at a time, however many answers come.
			return m, nil
		}
		m.ticking = true
		return m, tea.Tick(RefreshInterval, func(time.Time) tea.Msg { return tickMsg{} })
	case tickMsg:
		m.ticking = false
		return m, m.Refresh()
	case ActedMsg:
		if msg.Err != nil {
			m.status = msg.Err.Error()
		} else {
			m.status = msg.Done
		}
		return m, m.Refresh()
	case PullRequestMsg:
		if msg.Err != nil {
			m.status = "pull request: " + msg.Err.Error()
			return m, nil
		}
		m.status = pullRequestLine(msg.View)
		return m, nil
	case tea.KeyPressMsg:
		if m.mode != browsing {
			return m.updateInput(msg)
		}
		return m.updateKeys(msg)
	}
	return m, nil
}

func (m *Model) setRecords(recs []jobs.Record) {
	id := ""
	if r, ok := m.Selected(); ok {
		id = r.ID
	}
	m.records = slices.Clone(recs)
	slices.SortStableFunc(m.records, func(a, b jobs.Record) int { return b.Created.Compare(a.Created) })
	m.sel = max(0, slices.IndexFunc(m.records, func(r jobs.Record) bool { return r.ID == id }))
	m.loaded = true
	m.scroll()
}

func (m Model) updateKeys(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	page := m.pageRows()
	switch msg.String() {
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "pgup":
		m.move(-page)
	case "pgdown":
		m.move(page)
	case "enter":
		m.open = !m.open
		m.scroll()
	case "n":
		m.mode, m.status = briefing, ""
		m.input.Reset()
		m.input.Placeholder = "what fails, or #123 for an issue"
		return m, m.input.Focus()
	}
	rec, ok := m.Selected()
	if !ok {
		return m, nil
	}
	switch msg.String() {
	case "a":
		if rec.Pending == nil {
			m.status = fmt.Sprintf("nothing of %s waits for a decision", rec.ID)
			return m, nil
		}
		dec := workflows.JobDecision{Job: rec.ID, Kind: rec.Pending.Kind, Approve: true, HeadSHA: rec.Pending.HeadSHA}
		return m, m.decide(dec, "approved "+string(rec.Pending.Kind)+" of "+rec.ID)
	case "d":
		if rec.Pending == nil {
			m.status = fmt.Sprintf("nothing of %s waits for a decision", rec.ID)
			return m, nil
		}
		m.mode, m.status = denying, ""
		m.input.Reset()
		m.input.Placeholder = "why"
		return m, m.input.Focus()
	case "r":
		return m, m.act("recovered "+rec.ID, func() error { _, err := m.client.RecoverJob(m.ctx, rec.ID, m.opts.Model); return err })
	case "i":
		return m, m.act("installed "+rec.ID, func() error { _, err := m.client.InstallJob(m.ctx, rec.ID, m.opts.TUIPath); return err })
	case "m":
		if rec.Queue != nil && rec.Queue.Position > 0 {
			return m, m.act("unqueued "+rec.ID, func() error {
				_, err := m.client.UnqueueJob(m.ctx, rec.ID, "unqueued from the jobs panel")
				return err
			})
		}
		return m, m.act("queued "+rec.ID, func() error { _, err := m.client.QueueJob(m.ctx, rec.ID); return err })
	case "g":
		if rec.PullRequest == 0 {
			m.status = rec.ID + " has no pull request yet"
			return m, nil
		}
		m.status = fmt.Sprintf("reading pull request #%d…", rec.PullRequest)
		return m, func() tea.Msg {
			v, err := m.client.PullRequest(m.ctx, rec.ID)
			return PullRequestMsg{View: v, Err: err}
		}
	}
	return m, nil
}

func (m Model) updateInput(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	switch msg.String() {
	case "esc":
		m.mode = browsing
		m.input.Blur()
		return m, nil
	case "tab":
		if m.mode == briefing {
			m.kind = map[jobs.Kind]jobs.Kind{jobs.Repair: jobs.Improve, jobs.Improve: jobs.Repair}[m.kind]
			return m, nil
		}
	case "enter":
		text := strings.TrimSpace(m.input.Value())
		if text == "" {
			if m.mode == denying {
				m.status = "a reason is needed: type why, or Esc cancels"
			} else {
				m.status = "a brief is needed: what fails, or #123; Esc cancels"
			}
			return m, nil
		}
		mode := m.mode
		m.mode = browsing
		m.input.Blur()
		if mode == briefing {
			kind := m.kind
			return m, m.act("started a "+kind.Noun(), func() error {
				_, err := m.client.LaunchJob(m.ctx, client.LaunchRequest{Kind: kind, Brief: text})
				return err
			})
		}
		rec, ok := m.Selected()
		if !ok || rec.Pending == nil {
			return m, nil
		}
		verb := "denied"
		if rec.Pending.Kind == jobs.PendingMerge {
			verb = "declined"
		}
		return m, m.decide(workflows.JobDecision{Job: rec.ID, Kind: rec.Pending.Kind, Reason: text}, verb+" "+string(rec.Pending.Kind)+" of "+rec.ID)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

func (m Model) decide(dec workflows.JobDecision, done string) tea.Cmd {
	return m.act(done, func() error { _, err := m.client.DecideJob(m.ctx, dec); return err })
}

func (m Model) act(done string, f func() error) tea.Cmd {
	return func() tea.Msg { return ActedMsg{Done: done, Err: f()} }
}

func (m *Model) move(by int) {
	m.sel = min(max(m.sel+by, 0), max(len(m.records)-1, 0))
	m.scroll()
}

// pageRows is how many rows fit: the height less the title, the header,
// the details when open, the input or status line and the keys line.
func (m Model) pageRows() int {
	h := m.Height - 4
	if m.open {
		h -= len(m.details())
	}
	return max(h, 1)
}

func (m *Model) scroll() {
	page := m.pageRows()
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+page {
		m.top = m.sel - page + 1
	}
	m.top = max(0, min(m.top, len(m.records)-page))
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
	s := m.Styles
	var b strings.Builder
	active := 0
	for _, r := range m.records {
		if r.Active() {
			active++
		}
	}
	b.WriteString(s.Title.Render(common.Fit(fmt.Sprintf("Jobs · %d/%d active", active, m.opts.MaxActive), m.Width)))
	b.WriteByte('\n')
	idW := min(max((m.Width-fixedW)*3/5, 10), 32)
	checkW := max(m.Width-fixedW-idW, 0)
	b.WriteString(s.Dim.Render(common.Fit("  "+common.Fit("KIND", kindW)+common.Fit("ID", idW)+common.Fit("STATUS", statusW)+
		common.Fit("STEP", stepW)+common.Fit("SESS", sessW)+common.Fit("PR", prW)+"CHECK", m.Width)))
	b.WriteByte('\n')
	lines := 2
	page := m.pageRows()
	if !m.loaded {
		b.WriteString(common.Fit("  asking axlrd…", m.Width) + "\n")
		lines++
	} else if len(m.records) == 0 {
		b.WriteString(common.Fit("  no jobs yet: n starts one", m.Width) + "\n")
		lines++
	}
	for i := m.top; i < len(m.records) && i < m.top+page; i++ {
		r := m.records[i]
		pr := "-"
		if r.PullRequest > 0 {
			pr = fmt.Sprintf("#%d", r.PullRequest)
		}
		row := common.Fit(string(r.Kind), kindW) + common.Fit(r.ID, idW-1) + " " + common.Fit(string(r.Status), statusW) +
			common.Fit(r.StepText(), stepW) + common.Fit(fmt.Sprint(len(r.Sessions)), sessW) + common.Fit(pr, prW) + common.Fit(check(r.Check), checkW)
		if i == m.sel {
			b.WriteString(s.Selected.Render("> " + row))
		} else {
			b.WriteString("  " + row)
		}
		b.WriteByte('\n')
		lines++
	}
	if m.open {
		for _, d := range m.details() {
			b.WriteString(common.Fit("    "+d, m.Width) + "\n")
			lines++
		}
	}
	for ; lines < m.Height-2; lines++ {
		b.WriteString(strings.Repeat(" ", m.Width) + "\n")
	}
	b.WriteString(s.Error.Render(common.Fit(m.status, m.Width)))
	b.WriteByte('\n')
	switch m.mode {
	case denying:
		b.WriteString(common.Fit("reason (Enter sends, Esc cancels): "+m.input.View(), m.Width))
	case briefing:
		b.WriteString(common.Fit("new "+m.kind.Noun()+" (Tab: repair/improvement): "+m.input.View(), m.Width))
	default:
		b.WriteString(s.Dim.Render(common.Fit(keysHelp, m.Width)))
	}
	return b.String()
}

// details are the selected job's lines under the table.
func (m Model) details() []string {
	r, ok := m.Selected()
	if !ok {
		return nil
	}
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
			// forge.Checks.Failed holds "<name>: <conclusion> <url>".
			if cut := strings.LastIndex(f, ": "); cut > 0 {
				f = f[:cut]
			}
			names[i] = f
		}
		line += ": " + strings.Join(names, ", ")
	}
	return line
}
