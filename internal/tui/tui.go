// Package tui is axlr-tui's terminal UI: the root model that switches
// between the session view, the jobs and plans panels and the approval
// card, with the footer under them. It is thin: every key acts through the
// daemon client and every view is drawn from what the client returned; the
// components (card, footer, jobs, plans, session) do no I/O, their commands
// call the client.
package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/underpass-ai/axlr/agent/policy"
	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/internal/client"
	"github.com/underpass-ai/axlr/internal/tui/card"
	"github.com/underpass-ai/axlr/internal/tui/common"
	"github.com/underpass-ai/axlr/internal/tui/footer"
	"github.com/underpass-ai/axlr/internal/tui/history"
	"github.com/underpass-ai/axlr/internal/tui/jobs"
	"github.com/underpass-ai/axlr/internal/tui/plans"
	"github.com/underpass-ai/axlr/internal/tui/session"
	"github.com/underpass-ai/axlr/internal/tui/sessions"
	jobrec "github.com/underpass-ai/axlr/jobs"
	planrec "github.com/underpass-ai/axlr/plans"
	"github.com/underpass-ai/axlr/workflows"
)

// Client is what the TUI asks axlrd; *client.Client has it.
type Client interface {
	jobs.Client
	plans.Client
	sessions.Client
	history.Client
	Result(ctx context.Context, sessionID string) (*contract.Result, error)
	PlanTaskStep(ctx context.Context, plan, task string) (workflows.TaskStep, error)
	Start(ctx context.Context, req workflows.ExecuteRequest) (client.Execution, error)
	Execute(ctx context.Context, sessionID string, req workflows.ExecuteRequest) (client.Execution, error)
	Decide(ctx context.Context, sessionID string, req workflows.DecideRequest) (client.Execution, error)
	Watch(ctx context.Context, ex client.Execution, w client.Watcher) (*contract.Result, error)
	Interrupt(ctx context.Context, ex client.Execution, reason string) error
	StopCeremony(ctx context.Context, sessionID string, req workflows.StopCeremonyRequest) (client.Execution, error)
	Definitions(ctx context.Context) ([]workflows.DefinitionSummary, error)
	PublishDefinition(ctx context.Context, yaml []byte) (workflows.PublishDefinitionResult, error)
	CloseSession(ctx context.Context, sessionID, reason string) (client.Execution, error)
}

var _ Client = (*client.Client)(nil)

// Options are the TUI's settings.
type Options struct {
	// Root is the workspace, an absolute path.
	Root string
	// Model is the prompts' model (default: axlrd's settings).
	Model string
	// Mode is the work mode of a new session's first prompt (--mode);
	// empty sends none, and the session starts in normal mode. Later
	// prompts send a mode only when the person chose one (/review,
	// /debug…); otherwise the session keeps its own, which the results
	// report.
	Mode string
	// Approve is the approval level of the prompts (default: local);
	// /approve changes it.
	Approve policy.Approval
	// MaxActive is jobs.max_active, for the jobs panel's title.
	MaxActive int
	// NoColor draws without colours (Run sets it when NO_COLOR is set).
	NoColor bool
	// Deltas, when set, follows a session's live deltas (the provider's
	// tokens, from this host's service API), which the transcript shows
	// until the completed text replaces them.
	Deltas func(ctx context.Context, sessionID string, fn func(contract.Event)) error
}

type view int

const (
	sessionView view = iota
	jobsView
	plansView
	cardView
	sessionsView
	historyView
)

// Model is the root model.
type Model struct {
	ctx    context.Context
	client Client
	opts   Options
	com    common.Common

	view     view
	back     view
	session  session.Model
	jobs     jobs.Model
	plans    plans.Model
	sessions sessions.Model
	history  history.Model
	card     card.Model
	footer   footer.Model

	sessionID string
	running   *client.Execution
	events    chan tea.Msg
	interrupt bool
	// instance is the ceremony the session runs, for /stop-ceremony.
	instance string
	// mode is the mode the person chose since the last prompt, which the
	// next one sends; sent is the mode the running execution's prompt
	// sent; sessionMode is the session's mode as the last result said.
	// The footer shows the first of them that is set.
	mode, sent, sessionMode string
	// chosen is the published definition /ceremony NAME chose for the
	// next prompt, which sends it in ceremony mode.
	chosen string
	// told is the error the running execution's failed event showed, so
	// its result does not show it again.
	told string
	// palette: Esc in the session view made the next key a shortcut (J
	// the jobs panel, P the plans panel) rather than text.
	palette bool
	// offered are the waits whose card opened on its own, each once.
	offered map[string]bool
	// farewell is how the close of the session /exit left went, which Run
	// says on stderr once the alternate screen, and the transcript with
	// it, is gone.
	farewell string
}

// New returns the root model at 80×24 until the terminal says its size.
func New(ctx context.Context, c Client, opts Options) Model {
	if opts.Approve == "" {
		opts.Approve = policy.ApproveLocal
	}
	com := common.New(80, 24, !opts.NoColor)
	m := Model{ctx: ctx, client: c, opts: opts, com: com, footer: footer.New(com), offered: map[string]bool{}, sessionMode: "normal"}
	m.footer.State.Model, m.footer.State.Approval = opts.Model, string(opts.Approve)
	m.showMode()
	m.session = session.New(m.body())
	m.session, _ = m.session.Update(session.NoteMsg{Text: welcome(opts.Root)})
	m.jobs = jobs.New(ctx, c, m.body(), jobs.Options{MaxActive: opts.MaxActive, Model: opts.Model})
	m.plans = plans.New(ctx, c, m.body(), plans.Options{Root: opts.Root, Model: opts.Model})
	m.sessions = sessions.New(ctx, c, m.body())
	m.history = history.New(ctx, c, m.body())
	return m
}

// welcome is the transcript's first line: where prompts run and the keys
// a person needs first.
func welcome(root string) string {
	where := ""
	if root != "" {
		where = " in " + root
	}
	return "prompts run" + where + ". Enter sends, Shift+Enter a new line, /… a command (/debug, /review, /approve, /repair, /plan, /jobs…); " +
		"Esc, then J jobs, P plans, S sessions, H history; /new starts a new session and /exit leaves, each closing this one; Ctrl+C leaves."
}

// body is the size left above the footer.
func (m Model) body() common.Common {
	b := m.com
	b.Height = max(m.com.Height-1, 1)
	return b
}

// Init starts the jobs and plans panels' refreshes, which also feed the
// footer: its job, its plan, reconnecting.
func (m Model) Init() tea.Cmd { return tea.Batch(m.jobs.Init(), m.plans.Init()) }

// eventMsg is a message of a watch; from is its channel (nil: a test's).
type eventMsg struct {
	msg  tea.Msg
	from chan tea.Msg
}

// watcher hands Watch's events to the program; a send gives up once ctx
// ends, so a watch outliving the program does not block.
type watcher struct {
	ctx context.Context
	ch  chan tea.Msg
}

func (w watcher) send(msg tea.Msg) {
	select {
	case w.ch <- msg:
	case <-w.ctx.Done():
	}
}

func (w watcher) Event(ev contract.Event) { w.send(session.EventMsg{Event: ev}) }
func (w watcher) Unreachable(error)       { w.send(linkMsg{down: true}) }
func (w watcher) Back()                   { w.send(linkMsg{}) }

type linkMsg struct{ down bool }

type resultMsg struct {
	res *contract.Result
	err error
	// from is the watch's channel, as eventMsg's.
	from chan tea.Msg
}

type startedMsg struct {
	ex  client.Execution
	err error
	// mode is the mode the prompt sent, which a refused prompt gives
	// back to the next one.
	mode string
}

// Update routes keys to the view on screen and the client's answers to
// their components.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.com.SetSize(msg.Width, msg.Height)
		m.footer.SetSize(msg.Width, 1)
		b := m.body()
		m.session.SetSize(b.Width, b.Height)
		m.jobs.SetSize(b.Width, b.Height)
		m.plans.SetSize(b.Width, b.Height)
		m.sessions.SetSize(b.Width, b.Height)
		m.history.SetSize(b.Width, b.Height)
		m.card.SetSize(b.Width, b.Height)
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	case session.PromptMsg:
		return m.start(msg.Text)
	case session.SlashMsg:
		return m.slash(msg)
	case startedMsg:
		if msg.err != nil {
			m.mode, m.sent = cmp.Or(m.mode, msg.mode), ""
			m.showMode()
			return m.note(msg.err.Error())
		}
		ex := msg.ex
		m.running, m.sessionID, m.interrupt, m.told = &ex, ex.SessionID, false, ""
		m.events = make(chan tea.Msg, 64)
		return m, tea.Batch(m.watch(ex, m.events), next(m.events))
	case eventMsg:
		if m.stale(msg.from) {
			// The watch of a session the person left: drained, not shown.
			return m, next(msg.from)
		}
		if ev, ok := msg.msg.(session.EventMsg); ok {
			m = m.follow(ev.Event)
			if ev.Event.Type == contract.EventFailed {
				m.told = ev.Event.Error
			}
		}
		var cmd tea.Cmd
		m, cmd = m.route(msg.msg)
		return m, tea.Batch(cmd, next(m.events))
	case definitionsMsg:
		if msg.err != nil {
			return m.note(msg.err.Error())
		}
		return m.note(msg.text)
	case resultMsg:
		if m.stale(msg.from) {
			return m, nil
		}
		m.running = nil
		if msg.err != nil {
			return m.note("watch: " + msg.err.Error())
		}
		// The session's mode is what axlrd says it is now (normal once a
		// ceremony ended); a result saved before axlrd said it keeps the
		// mode the prompt sent.
		m.sessionMode, m.sent = cmp.Or(msg.res.Mode, m.sent, m.sessionMode), ""
		m.showMode()
		if c := msg.res.Ceremony; c != nil && c.Ended {
			m.instance, m.footer.State.Step, m.footer.State.Waiting = "", "", ""
			// A stop runs no model turn: without this line nothing but the
			// footer would say the ceremony is over.
			m, _ = m.note(fmt.Sprintf("ceremony %s ended in %s: the session is back in %s mode", c.InstanceID, c.State, m.sessionMode))
		}
		if msg.res.Status == contract.NeedsDecision && msg.res.Pending != nil {
			m.card = card.New(m.body(), card.ForCall(m.sessionID, *msg.res.Pending))
			if m.view != cardView {
				m.back = m.view
			}
			m.view = cardView
			return m, nil
		}
		if msg.res.Error != "" && msg.res.Error != m.told {
			return m.note(string(msg.res.Status) + ": " + msg.res.Error)
		}
		return m, nil
	case card.DecisionMsg:
		m.view = m.back
		return m, m.decide(msg)
	case sessions.PickedMsg:
		m.view = sessionView
		if m.sessionID != "" && msg.SessionID != m.sessionID {
			return m, m.leave(closedMsg{then: switching, picked: msg.SessionID}, "the person switched to session "+msg.SessionID)
		}
		return m, m.resume(msg.SessionID)
	case closedMsg:
		return m.closed(msg)
	case resumedMsg:
		return m.resumed(msg)
	case jobs.RecordsMsg:
		var ue *client.UnreachableError
		m.footer.State.Reconnecting = errors.As(msg.Err, &ue)
		if msg.Err == nil {
			m.footer.State.Job = footer.ActiveJob(msg.Records)
			m = m.offerJob(msg.Records)
		}
	case plans.RecordsMsg:
		if msg.Err == nil {
			m.footer.State.Plan = footer.RunningPlan(msg.Records)
			m = m.offerPlan(msg.Records)
			if footer.RunningTask(m.footer.State.Plan) == nil {
				m.footer.State.TaskStep = ""
			}
			var cmd tea.Cmd
			m, cmd = m.route(msg)
			return m, tea.Batch(m.taskStep(), cmd)
		}
	case workflows.TaskStep:
		if p := m.footer.State.Plan; p != nil && p.ID == msg.Plan {
			if t := footer.RunningTask(p); t != nil && t.ID == msg.Task {
				m.footer.State.TaskStep = ""
				if msg.Step != "" {
					m.footer.State.TaskStep = fmt.Sprintf("%s %d/%d", msg.Step, msg.Iteration, msg.Limit)
				}
			}
		}
		return m, nil
	}
	return m.route(msg)
}

// taskStep asks the running plan's running task which step it works, for
// the footer; nil when no task runs. Each plans refresh asks once; a
// failed ask leaves the task's status in the footer (the panel says what
// fails).
func (m Model) taskStep() tea.Cmd {
	p := m.footer.State.Plan
	t := footer.RunningTask(p)
	if t == nil {
		return nil
	}
	plan, task := p.ID, t.ID
	return func() tea.Msg {
		ts, err := m.client.PlanTaskStep(m.ctx, plan, task)
		if err != nil {
			return nil
		}
		return ts
	}
}

// follow keeps the footer's ceremony step and the instance /stop-ceremony
// names from the session's events.
func (m Model) follow(ev contract.Event) Model {
	switch ev.Type {
	case contract.EventStepClaimed:
		m.instance = ev.Instance
		m.footer.State.Step, m.footer.State.StepAttempt, m.footer.State.StepLimit = ev.Step, ev.Iteration, ev.Limit
		m.footer.State.Waiting = ""
	case contract.EventCeremonyStopped:
		m.instance, m.footer.State.Step, m.footer.State.Waiting = "", "", ""
	case contract.EventCeremonyWaiting:
		// No step is open: the footer says what the ceremony waits for.
		m.instance = ev.Instance
		m.footer.State.Step, m.footer.State.StepAttempt, m.footer.State.StepLimit, m.footer.State.Waiting = "", 0, 0, ev.State
		m, _ = m.note("ceremony " + ev.Instance + ": " + ev.Reason)
	}
	return m
}

// idle reports whether nothing else is on screen: the session view, no
// execution running, nothing typed. A card may then open on its own.
func (m Model) idle() bool {
	return m.view == sessionView && m.running == nil && m.session.Empty() && !m.palette
}

// offer opens the card of req on its own, once per wait (key), when the
// TUI is idle.
func (m Model) offer(key string, req card.Request) Model {
	if !m.idle() || m.offered[key] {
		return m
	}
	m.offered[key] = true
	m.card = card.New(m.body(), req)
	m.back, m.view = sessionView, cardView
	return m
}

// offerJob offers the card of the newest job that waits for the person.
func (m Model) offerJob(recs []jobrec.Record) Model {
	for _, rec := range recs {
		if p := rec.Pending; p != nil {
			if req, err := card.ForJob(rec); err == nil {
				return m.offer(fmt.Sprintf("job %s %s %s %s", rec.ID, p.Kind, p.HeadSHA, p.Command), req)
			}
		}
	}
	return m
}

// offerPlan offers the card of the newest plan that waits for the person.
func (m Model) offerPlan(recs []planrec.Record) Model {
	for _, rec := range recs {
		if !rec.NeedsPerson() {
			continue
		}
		if req, err := card.ForPlan(rec); err == nil {
			return m.offer(fmt.Sprintf("plan %s %s %s", rec.ID, req.Title, strings.Join(req.Lines, "\n")), req)
		}
	}
	return m
}

// route hands a key to the view on screen, and any other message to every
// component: each takes its own (a panel's timed refresh, an input's
// blink) and ignores the rest, whichever view is on screen.
func (m Model) route(msg tea.Msg) (Model, tea.Cmd) {
	if lm, ok := msg.(linkMsg); ok {
		m.footer.State.Reconnecting = lm.down
		return m, nil
	}
	var cmd tea.Cmd
	if _, ok := msg.(tea.KeyPressMsg); ok {
		switch m.view {
		case jobsView:
			// n starts a job from the session prompts go to now.
			m.jobs.SetSession(m.sessionID)
			m.jobs, cmd = m.jobs.Update(msg)
		case plansView:
			m.plans, cmd = m.plans.Update(msg)
		case sessionsView:
			m.sessions, cmd = m.sessions.Update(msg)
		case historyView:
			m.history, cmd = m.history.Update(msg)
		case cardView:
			m.card, cmd = m.card.Update(msg)
		default:
			m.session, cmd = m.session.Update(msg)
		}
		return m, cmd
	}
	cmds := make([]tea.Cmd, 6)
	m.session, cmds[0] = m.session.Update(msg)
	m.jobs, cmds[1] = m.jobs.Update(msg)
	m.plans, cmds[2] = m.plans.Update(msg)
	m.sessions, cmds[3] = m.sessions.Update(msg)
	m.history, cmds[4] = m.history.Update(msg)
	m.card, cmds[5] = m.card.Update(msg)
	return m, tea.Batch(cmds...)
}

// paletteKeys are the shortcuts the footer lists after Esc.
const paletteKeys = "J jobs · P plans · S sessions · H history · Esc back"

func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "ctrl+c":
		// As in --exec: the first interrupts the running execution, the
		// second (or one with nothing running) leaves. It does not close
		// the session, as a crash would not: its next prompt records the
		// turn left open as interrupted.
		if m.running != nil && !m.interrupt {
			m.interrupt = true
			ex := *m.running
			return m, func() tea.Msg {
				if err := m.client.Interrupt(m.ctx, ex, "interrupted by the person (Ctrl+C)"); err != nil {
					return session.NoteMsg{Text: "interrupt: " + err.Error()}
				}
				return session.NoteMsg{Text: "interrupted; Ctrl+C again leaves"}
			}
		}
		return m, tea.Quit
	case "esc":
		if m.view == jobsView && !m.jobs.Editing() || m.view == plansView && !m.plans.Editing() || m.view == sessionsView || m.view == historyView {
			m.view = sessionView
			return m, nil
		}
		if m.view == sessionView {
			m.palette = !m.palette
			m.footer.State.Keys = ""
			if m.palette {
				m.footer.State.Keys = paletteKeys
			}
			return m, nil
		}
	}
	if m.palette {
		m.palette, m.footer.State.Keys = false, ""
		switch k.String() {
		case "J":
			return m.slash(session.SlashMsg{Command: "/jobs"})
		case "P":
			return m.slash(session.SlashMsg{Command: "/plans"})
		case "S":
			return m.slash(session.SlashMsg{Command: "/sessions"})
		case "H":
			return m.slash(session.SlashMsg{Command: "/history"})
		}
	}
	return m.route(k)
}

func (m Model) slash(s session.SlashMsg) (tea.Model, tea.Cmd) {
	switch s.Command {
	case "/jobs":
		m.view = jobsView
		return m, m.jobs.Refresh()
	case "/plans":
		m.view = plansView
		return m, m.plans.Refresh()
	case "/normal", "/review", "/writer", "/research", "/debug", "/delivery", "/incident":
		// The work modes and the ceremonies --mode offers: the next prompt
		// sends it; the ones after keep the session's.
		m.mode = s.Command[1:]
		m.showMode()
		if s.Args != "" {
			// The brief goes as the prompt that starts the ceremony.
			return m.start(s.Args)
		}
		return m, nil
	case "/approve":
		if s.Args == "" {
			return m.note(fmt.Sprintf("prompts run with approval %s: /approve none|local|all sets it for the next ones", m.opts.Approve))
		}
		a, err := policy.ParseApproval(s.Args)
		if err != nil {
			return m.note("/approve: " + err.Error())
		}
		m.opts.Approve = a
		m.footer.State.Approval = string(a)
		return m.note(fmt.Sprintf("the next prompts run with approval %s", a))
	case "/repair", "/improve":
		m.view = jobsView
		if s.Args == "" {
			return m, m.jobs.Refresh()
		}
		// The panel starts it as its n would, from this session: a
		// refusal leaves the brief on its prompt to fix.
		m.jobs.SetSession(m.sessionID)
		var cmd tea.Cmd
		m.jobs, cmd = m.jobs.Launch(jobrec.Kind(s.Command[1:]), s.Args)
		return m, cmd
	case "/plan":
		m.view = plansView
		if s.Args == "" {
			return m, m.plans.Refresh()
		}
		in := client.PlanLaunch{Brief: s.Args, Root: m.opts.Root, Model: m.opts.Model}
		return m, func() tea.Msg {
			rec, err := m.client.LaunchPlan(m.ctx, in)
			if err != nil {
				return plans.ActedMsg{Err: err}
			}
			return plans.ActedMsg{Done: "plan " + rec.ID + " started: its planner decomposes the brief"}
		}
	case "/ceremony":
		return m.ceremony(s.Args)
	case "/sessions":
		m.view = sessionsView
		return m, m.sessions.Refresh()
	case "/history":
		m.history.SetSession(m.sessionID)
		m.view = historyView
		return m, m.history.Refresh()
	case "/exit":
		if m.sessionID == "" {
			return m, tea.Quit
		}
		return m, m.leave(closedMsg{then: quitting}, "the person left with /exit")
	case "/new":
		if m.sessionID == "" {
			return m.note("no session yet: the next prompt starts one")
		}
		return m, m.leave(closedMsg{then: renewing}, "the person started a new session with /new")
	case "/stop-ceremony", "/parar":
		if m.sessionID == "" || m.instance == "" {
			return m.note("no ceremony runs in this session: /debug or /delivery starts one")
		}
		if m.running != nil {
			return m.note("the session is busy: wait for its answer (or Ctrl+C), then /stop-ceremony")
		}
		req := workflows.StopCeremonyRequest{InstanceID: m.instance, Reason: cmp.Or(s.Args, "stopped by the person from the TUI")}
		id := m.sessionID
		return m, func() tea.Msg {
			ex, err := m.client.StopCeremony(m.ctx, id, req)
			return startedMsg{ex: ex, err: err}
		}
	}
	return m.note("no such command: " + s.Command)
}

// closeTimeout bounds the close of the session the person leaves: axlrd
// admits one at once, and one it does not answer must not hold the TUI.
const closeTimeout = 10 * time.Second

// leaving is what the TUI does once the session it leaves is closed.
type leaving int

const (
	// quitting: /exit, the TUI ends.
	quitting leaving = iota
	// renewing: /new, the next prompt starts a new session.
	renewing
	// switching: the picker, prompts go to the session picked.
	switching
)

// closedMsg is how the close of the session the person left went, and
// what the TUI does next.
type closedMsg struct {
	session string
	err     error
	then    leaving
	// picked is the session switching goes to.
	picked string
}

// leave closes the session prompts go to (its record's closing turn, for
// reason), then hands the TUI c with how it went. A close axlrd does not
// answer in closeTimeout is a failed one.
func (m Model) leave(c closedMsg, reason string) tea.Cmd {
	c.session = m.sessionID
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, closeTimeout)
		defer cancel()
		_, c.err = m.client.CloseSession(ctx, c.session, reason)
		if c.err != nil && ctx.Err() != nil && m.ctx.Err() == nil {
			c.err = fmt.Errorf("axlrd did not answer in %s", closeTimeout)
		}
		return c
	}
}

// closed notes how the close went, then leaves whatever it did: /exit
// quits, /new leaves the TUI on no session, so the next prompt starts
// one, and the picker resumes the session picked.
func (m Model) closed(c closedMsg) (tea.Model, tea.Cmd) {
	text := "session " + c.session + " closed: axlrd records its closing turn"
	if c.err != nil {
		text = "session " + c.session + " not closed: " + c.err.Error()
	}
	m, _ = m.note(text)
	if c.then == quitting {
		m.farewell = text
		return m, tea.Quit
	}
	m = m.fresh()
	if c.then == switching {
		return m, m.resume(c.picked)
	}
	return m.note("a new session: the next prompt starts it")
}

// fresh is the TUI on no session, as New leaves it: the next prompt
// starts one, with --mode. The watch of an execution that still runs in
// the session left is drained and not shown (stale).
func (m Model) fresh() Model {
	m.sessionID, m.running, m.events, m.interrupt, m.told = "", nil, nil, false, ""
	m.instance, m.footer.State.Step, m.footer.State.StepAttempt, m.footer.State.StepLimit, m.footer.State.Waiting = "", "", 0, 0, ""
	m.mode, m.sent, m.sessionMode, m.chosen = "", "", "normal", ""
	m.showMode()
	return m
}

// stale reports whether from is the channel of a watch the TUI no longer
// follows: one of a session the person left.
func (m Model) stale(from chan tea.Msg) bool { return from != nil && from != m.events }

type resumedMsg struct {
	session string
	res     *contract.Result
	err     error
}

// resume makes id the session later prompts go to, and reads its last
// result: what it answered, or the call that waits.
func (m Model) resume(id string) tea.Cmd {
	return func() tea.Msg {
		res, err := m.client.Result(m.ctx, id)
		return resumedMsg{session: id, res: res, err: err}
	}
}

// resumed shows where the picked session stands: its last answer, its
// ceremony in the footer, the card of a call that waits.
func (m Model) resumed(r resumedMsg) (tea.Model, tea.Cmd) {
	if r.err != nil {
		return m.note("resume " + r.session + ": " + r.err.Error())
	}
	m.sessionID, m.running, m.instance, m.footer.State.Step, m.footer.State.Waiting = r.session, nil, "", "", ""
	// The footer shows the picked session's mode, from its result; a
	// session that has none ran nothing and is in normal mode.
	m.sent, m.sessionMode = "", ""
	m, _ = m.note("resumed session " + r.session + ": prompts go to it")
	res := r.res
	if res == nil {
		m.sessionMode = "normal"
		m.showMode()
		return m, nil
	}
	if c := res.Ceremony; c != nil && !c.Ended {
		m.instance, m.footer.State.Step = c.InstanceID, c.Step
		if c.Step == "" && c.Waiting != "" {
			m.footer.State.Waiting = c.State
		}
	}
	if res.Answer != "" {
		m, _ = m.note("its last answer: " + res.Answer)
	}
	return m, func() tea.Msg { return resultMsg{res: res} }
}

func (m Model) note(text string) (Model, tea.Cmd) {
	m.session, _ = m.session.Update(session.NoteMsg{Text: text})
	return m, nil
}

// nextMode is the mode the next prompt sends: the one the person chose
// since the last prompt, else --mode for a new session's first, else
// none (the session keeps its own).
func (m Model) nextMode() string {
	if m.mode == "" && m.sessionID == "" {
		return m.opts.Mode
	}
	return m.mode
}

// showMode puts in the footer the mode the next prompt runs in: the one
// chosen for it, else the running prompt's, else the session's.
func (m *Model) showMode() {
	m.footer.State.Mode = cmp.Or(m.nextMode(), m.sent, m.sessionMode)
}

// start sends a prompt with the mode chosen for it, if any; the prompts
// after it send none until the person chooses again.
func (m Model) start(prompt string) (Model, tea.Cmd) {
	mode := m.nextMode()
	m.mode, m.sent = "", mode
	m.showMode()
	req := workflows.ExecuteRequest{Prompt: prompt, Model: m.opts.Model, Mode: mode, Approval: m.opts.Approve}
	if mode == ceremonies.ModeCeremony {
		req.Ceremony, m.chosen = m.chosen, ""
	}
	id := m.sessionID
	return m, func() tea.Msg {
		var ex client.Execution
		var err error
		if id == "" {
			req.Root = m.opts.Root
			ex, err = m.client.Start(m.ctx, req)
		} else {
			ex, err = m.client.Execute(m.ctx, id, req)
		}
		return startedMsg{ex: ex, err: err, mode: mode}
	}
}

func (m Model) decide(d card.DecisionMsg) tea.Cmd {
	return func() tea.Msg {
		switch d.Request.Subject {
		case card.Call:
			ex, err := m.client.Decide(m.ctx, d.Request.Session, d.DecideRequest())
			return startedMsg{ex: ex, err: err}
		case card.Job:
			_, err := m.client.DecideJob(m.ctx, d.JobDecision())
			return jobs.ActedMsg{Done: "decided " + d.Request.Job, Err: err}
		case card.Plan, card.PlanCommands:
			_, err := m.client.DecidePlan(m.ctx, d.PlanDecision())
			return plans.ActedMsg{Done: "decided plan " + d.Request.Plan, Err: err}
		}
		return session.NoteMsg{Text: fmt.Sprintf("no client call for a card of subject %d", d.Request.Subject)}
	}
}

// watch runs Watch in the command's goroutine, its events sent on ch,
// with the execution's live deltas beside it until it ends.
func (m Model) watch(ex client.Execution, ch chan tea.Msg) tea.Cmd {
	deltas := m.opts.Deltas
	return func() tea.Msg {
		w := watcher{ctx: m.ctx, ch: ch}
		var live sync.WaitGroup
		lctx, stop := context.WithCancel(m.ctx)
		if deltas != nil {
			live.Go(func() {
				_ = deltas(lctx, ex.SessionID, func(ev contract.Event) { watcher{ctx: lctx, ch: ch}.Event(ev) })
			})
		}
		res, err := m.client.Watch(m.ctx, ex, w)
		stop()
		live.Wait()
		w.send(resultMsg{res: res, err: err})
		return nil
	}
}

// next waits for the watch's next message.
func next(ch chan tea.Msg) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		msg := <-ch
		if r, ok := msg.(resultMsg); ok {
			r.from = ch
			return r
		}
		return eventMsg{msg: msg, from: ch}
	}
}

// View draws the view on screen over the footer, on the alternate
// screen.
func (m Model) View() tea.View {
	var body string
	switch m.view {
	case jobsView:
		body = m.jobs.View()
	case plansView:
		body = m.plans.View()
	case sessionsView:
		body = m.sessions.View()
	case historyView:
		body = m.history.View()
	case cardView:
		body = m.card.View()
	default:
		body = m.session.View()
	}
	v := tea.NewView(body + "\n" + m.footer.View())
	v.AltScreen = true
	return v
}

// Run runs the TUI on the terminal until the person leaves or ctx ends.
// NO_COLOR set (to anything) draws without colours.
func Run(ctx context.Context, c Client, opts Options) error {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		opts.NoColor = true
	}
	final, err := tea.NewProgram(New(ctx, c, opts), tea.WithContext(ctx)).Run()
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("terminal UI: %w", err)
	}
	if m, ok := final.(Model); ok && m.farewell != "" {
		fmt.Fprintln(os.Stderr, "axlr-tui:", m.farewell)
	}
	return nil
}
