package workflows

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/jobs"
	"github.com/underpass-ai/axlr/kmp"
)

// Memory: a wake before work, writes of what it found and how it ended,
// and the operators' reads (axlr.MemoryRead). The activities never fail
// the work: a memory that is down or refuses is noted, and a write it did
// not take waits in the session's sidecar until it is back.

// Memory's activities.
const (
	ActivityMemoryWake  = "memory.Wake"
	ActivityMemoryWrite = "memory.Write"
	ActivityMemoryFlush = "memory.Flush"
	ActivityMemoryRead  = "memory.Read"
)

// The model's memory tools: axlr_recall reads, axlr_remember writes.
const (
	RecallTool   = "axlr_recall"
	RememberTool = "axlr_remember"
)

// MemoryTool reports whether a tool is one of the model's memory tools.
func MemoryTool(name string) bool { return name == RecallTool || name == RememberTool }

// modelWritesMemory reports whether the model may write memory in a
// mode: not in an incident (as the reference says), nor in a job's, a
// plan's or a task's, whose memory axlr writes itself.
func modelWritesMemory(mode string) bool {
	switch mode {
	case "incident", "repair", "improve", ceremonies.PartPlan, ceremonies.PartTask, ceremonies.PartSync:
		return false
	}
	return true
}

// MemoryReadWorkflow reads memory for an operator's command.
const MemoryReadWorkflow = "axlr.MemoryRead"

// Wake budgets: what a first step's message carries of a wake.
const (
	WakeBytes        = 2 << 10
	WakeBytesCompact = 1 << 10
)

// MemoryOptions: a memory call answers in seconds. A write that does not
// land is kept in the sidecar by the activity itself, so retries here only
// cover a worker lost mid-call (the write's key makes a repeat a replay).
var MemoryOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumAttempts:    5,
	},
}

// MemoryLocalOptions: a turn's record runs beside the workflow, at the
// cost of a local activity, so a turn pays about a millisecond for it.
var MemoryLocalOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
}

// MemoryWakeInput asks for what memory holds about an about for an
// intent (the brief), within MaxBytes of lines.
type MemoryWakeInput struct {
	About    string `json:"about"`
	Intent   string `json:"intent"`
	MaxBytes int    `json:"max_bytes"`
}

// MemoryWakeResult is a wake as the first step's message carries it.
type MemoryWakeResult struct {
	// Text is the recall for the message, empty when nothing was
	// recalled.
	Text string `json:"text,omitempty"`
	// Refs are the refs its lines carry: what a link may name.
	Refs []string `json:"refs,omitempty"`
	// Note says why nothing was recalled when the memory failed.
	Note string `json:"note,omitempty"`
}

// MemoryWriteInput writes memories; a write the memory does not take waits
// in the sidecar of SessionID.
type MemoryWriteInput struct {
	SessionID string           `json:"session_id"`
	Request   kmp.WriteRequest `json:"request"`
}

// MemoryWriteResult says what was kept.
type MemoryWriteResult struct {
	// Refs maps each memory's local id to its ref, once written.
	Refs   map[string]string `json:"refs,omitempty"`
	Status string            `json:"status,omitempty"`
	// Refused is why the memory refused the write (nothing kept).
	Refused string `json:"refused,omitempty"`
	// LinksRefused is why its links were refused: the memories were
	// written without them.
	LinksRefused string `json:"links_refused,omitempty"`
	// Pending: the memory was down; the write waits in the sidecar.
	Pending bool `json:"pending,omitempty"`
}

// Report is the result in a line of a job's record.
func (r MemoryWriteResult) Report(what string) string {
	switch {
	case r.Refused != "":
		return what + " not recorded: " + r.Refused
	case r.Pending:
		return what + " waits in the sidecar: the memory was not reachable"
	}
	var refs []string
	//workflowcheck:ignore the keys are sorted before use
	for _, id := range slices.Sorted(maps.Keys(r.Refs)) {
		refs = append(refs, r.Refs[id])
	}
	out := what + " recorded as " + strings.Join(refs, ", ")
	if r.Status == kmp.StatusReplayed {
		out += " (replayed)"
	}
	if r.LinksRefused != "" {
		out += "; its links were refused: " + r.LinksRefused
	}
	return out
}

// MemoryFlushInput writes what waits in a session's sidecar.
type MemoryFlushInput struct {
	SessionID string `json:"session_id"`
}

// MemoryFlushResult says what the flush wrote and what still waits.
type MemoryFlushResult struct {
	Written int `json:"written"`
	Waiting int `json:"waiting"`
}

// RecordTurnInput records a session's turn in memory: one turn entry
// under About (ws:<session id>) of what it wrote, ran, called and decided,
// read from the execution's sessions' logs; nothing for a turn that only
// read. An entry the memory does not take waits in the sidecar.
type RecordTurnInput struct {
	SessionID   string              `json:"session_id"`
	Sessions    []string            `json:"sessions"`
	ExecutionID string              `json:"execution_id"`
	Key         string              `json:"key"`
	About       string              `json:"about"`
	Labels      map[string][]string `json:"labels,omitempty"`
	Turn        int                 `json:"turn"`
	Mode        string              `json:"mode,omitempty"`
	// Step names the session record's MADE step, the entry's evidence.
	Step string `json:"step,omitempty"`
}

// RecordTurnResult says what was kept.
type RecordTurnResult struct {
	MemoryWriteResult
	// Actions and Reads count the turn's calls; nothing is written when
	// Actions is 0.
	Actions int `json:"actions"`
	Reads   int `json:"reads"`
}

// ActivityMemoryRecordTurn records a turn's entry.
const ActivityMemoryRecordTurn = "memory.RecordTurn"

// Memory reads.
const (
	MemoryWake = "wake"
	MemoryList = "list"
	MemoryShow = "show"
)

// MemoryReadInput is an operator's read: a wake of an about for an
// intent, a listing of an about (of one kind), or one entry by ref.
type MemoryReadInput struct {
	Op       string `json:"op"`
	About    string `json:"about,omitempty"`
	Intent   string `json:"intent,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Ref      string `json:"ref,omitempty"`
	MaxBytes int    `json:"max_bytes,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

// MemoryReadResult holds the read's result.
type MemoryReadResult struct {
	Wake *kmp.WakeResult    `json:"wake,omitempty"`
	List *kmp.ListResult    `json:"list,omitempty"`
	Show *kmp.InspectResult `json:"show,omitempty"`
}

// MemoryReadTimeout bounds a read's workflow: the operator waits for it.
const MemoryReadTimeout = time.Minute

// MemoryRead runs one read. A memory that refuses (no such about or ref,
// bad arguments) fails it with the memory's words.
func MemoryRead(ctx workflow.Context, in MemoryReadInput) (MemoryReadResult, error) {
	var res MemoryReadResult
	opts := MemoryOptions
	opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3,
		NonRetryableErrorTypes: []string{ErrTypeBadRequest}}
	if err := executeActivity(ctx, opts, ActivityMemoryRead, in, &res); err != nil {
		return res, temporal.NewNonRetryableApplicationError(failureMessage(err), ErrTypeBadRequest, nil)
	}
	return res, nil
}

// RepositoryAbout is the memory about of a repository: repo:<owner>/<name>.
func RepositoryAbout(repository string) string { return "repo:" + repository }

// SessionAbout is the memory about of a session: ws:<session id>.
func SessionAbout(session string) string { return "ws:" + session }

// memoryKey is a write's idempotency key: <workflow id>:<step>:<iteration>,
// the same on every retry and replay.
func memoryKey(ctx workflow.Context, step string, iteration int) string {
	return fmt.Sprintf("%s:%s:%d", workflow.GetInfo(ctx).WorkflowExecution.ID, step, iteration)
}

// CeremonyMemory is a ceremony's memory: the about it recalls and records
// under, the refs its wake showed (the only ones a link may name), and
// what it recorded.
type CeremonyMemory struct {
	About string `json:"about"`
	// Intent is what the wake was for: the brief.
	Intent string   `json:"intent,omitempty"`
	Refs   []string `json:"refs,omitempty"`
	// Labels go on every memory the ceremony writes.
	Labels map[string][]string `json:"labels,omitempty"`
	// Cause is the ref of the cause (or the improvement's decision)
	// recorded at diagnose (brief).
	Cause string `json:"cause,omitempty"`
	// Reports say what was recorded or why not, one line each.
	Reports []string `json:"reports,omitempty"`
	// Outcome: the ceremony's outcome was written (Driver.RecordOutcome).
	Outcome bool `json:"outcome,omitempty"`
}

// Memory actor: who writes what axlr records.
const memoryActor = "axlr"

// remembered is what a step's accepted hand-back records in memory: a
// repair's cause at diagnose, an improvement's brief and criteria.
var remembered = map[string]string{
	"axlr_repair 1.0/diagnose": kmp.KindErrorPath,
	"axlr_improve 1.0/brief":   kmp.KindDecision,
}

// wake recalls what memory holds about an about for the brief, for the
// first step's message. A memory that is down or refuses is noted in the
// reports and never stops the work.
func wake(ctx workflow.Context, about, brief string, compact bool, labels map[string][]string) (*CeremonyMemory, string, error) {
	budget := WakeBytes
	if compact {
		budget = WakeBytesCompact
	}
	var res MemoryWakeResult
	if err := executeActivity(ctx, MemoryOptions, ActivityMemoryWake, MemoryWakeInput{About: about, Intent: brief, MaxBytes: budget}, &res); err != nil {
		return nil, "", fmt.Errorf("wake memory about %s: %w", about, err)
	}
	m := &CeremonyMemory{About: about, Intent: brief, Refs: res.Refs, Labels: labels}
	switch {
	case res.Note != "":
		m.Reports = append(m.Reports, res.Note)
	case len(res.Refs) > 0:
		m.Reports = append(m.Reports, fmt.Sprintf("recalled %d memories about %s", len(res.Refs), about))
	default:
		m.Reports = append(m.Reports, "memory holds nothing about "+about+" yet")
	}
	return m, res.Text, nil
}

// checkLinks keeps the links to refs the wake showed with relation names
// KMP knows; the reply names each one refused.
func (m *CeremonyMemory) checkLinks(links []ceremonies.Link) ([]kmp.Link, string) {
	var kept []kmp.Link
	var refused []string
	for _, l := range links {
		_, known := kmp.Relations[l.Rel]
		switch {
		case !slices.Contains(m.Refs, l.Ref):
			refused = append(refused, fmt.Sprintf("%s (not a ref the wake showed)", l.Ref))
		case !known:
			refused = append(refused, fmt.Sprintf("%s (rel %q is not a KMP relation name)", l.Ref, l.Rel))
		default:
			kept = append(kept, kmp.Link{Ref: l.Ref, Rel: l.Rel, Why: l.Why, Evidence: cmp.Or(l.Evidence, l.Why), Confidence: "medium"})
		}
	}
	if len(refused) == 0 {
		return kept, ""
	}
	shown := "the wake showed none"
	if len(m.Refs) > 0 {
		shown = "the wake showed " + strings.Join(m.Refs, ", ")
	}
	return kept, fmt.Sprintf("connect_to refused %s; %s, and the cause is recorded without those links. ", strings.Join(refused, ", "), shown)
}

// remember records what an accepted hand-back of a step remembers (see
// remembered): the cause with its reproduction, or the improvement's
// decision. It tells the model which links were refused and what was
// kept.
func (d *Driver) remember(ctx workflow.Context, hb *StepHandBack) error {
	cer := d.c()
	m := cer.Memory
	kind, ok := remembered[cer.Definition+" "+cer.Version+"/"+hb.Step.ID]
	if m == nil || !ok || hb.result.NotReproducible || hb.result.NotFeasible {
		return nil
	}
	links, refusedLinks := m.checkLinks(hb.result.Links)
	hb.Tell(refusedLinks)
	t := hb.result.Texts
	var mem kmp.Memory
	switch kind {
	case kmp.KindErrorPath:
		ev := []string{}
		if rec := lastRun(cer); rec != nil {
			ev = append(ev, "reproduction: "+checkLine(*rec), "tail: "+tail(rec.OutputTail, 1<<10))
		}
		ev = appendField(ev, "evidence", t["evidence"])
		ev = appendField(ev, "proposed fix", t["proposed_fix"])
		mem = kmp.Memory{ID: "cause", Kind: kind, Summary: jobs.Bound(t["root_cause"], 1000), Evidence: strings.Join(ev, "\n"), ConnectTo: links}
	case kmp.KindDecision:
		ev := appendField(nil, "scope", t["scope"])
		if rec := lastRun(cer); rec != nil {
			ev = append(ev, "check (fails now, as it must): "+checkLine(*rec))
		}
		summary := "Improve: " + firstLine(m.Intent) + " — done when: " + t["criteria"]
		mem = kmp.Memory{ID: "decision", Kind: kind, Summary: jobs.Bound(summary, 1000), Evidence: cmp.Or(strings.Join(ev, "\n"), "the brief step of "+cer.InstanceID), ConnectTo: links}
	}
	res, err := d.writeMemory(ctx, kmp.WriteRequest{About: m.About, Actor: memoryActor, Labels: m.Labels,
		IdempotencyKey: memoryKey(ctx, hb.Step.ID, hb.Iteration), Memories: []kmp.Memory{mem}})
	if err != nil {
		return err
	}
	what := map[string]string{kmp.KindErrorPath: "cause", kmp.KindDecision: "decision"}[kind]
	m.Reports = append(m.Reports, res.Report(what))
	if ref := res.Refs[mem.ID]; ref != "" {
		m.Cause = ref
		hb.Tell(fmt.Sprintf("The %s is recorded in memory as %s. ", what, ref))
	}
	return nil
}

// writeMemory writes under the ceremony's session sidecar.
func (d *Driver) writeMemory(ctx workflow.Context, req kmp.WriteRequest) (MemoryWriteResult, error) {
	var res MemoryWriteResult
	if err := executeActivity(ctx, MemoryOptions, ActivityMemoryWrite, MemoryWriteInput{SessionID: d.t.Current(), Request: req}, &res); err != nil {
		return res, fmt.Errorf("write memory %s: %w", req.IdempotencyKey, err)
	}
	return res, nil
}

// lastRun is the last check a ceremony ran with a command: a repair's
// reproduction, when diagnose follows it.
func lastRun(c *CeremonyState) *contract.CheckRecord {
	for i := len(c.Records) - 1; i >= 0; i-- {
		if ch := c.Records[i].Check; ch != nil && ch.Program != "" {
			return ch
		}
	}
	return nil
}

// checkLine is a check as one line: its command and how it ended.
func checkLine(r contract.CheckRecord) string {
	return ceremonies.CheckCommand{Program: r.Program, Args: r.Args}.String() + " " + r.Ending()
}

func appendField(ev []string, name, text string) []string {
	if strings.TrimSpace(text) == "" {
		return ev
	}
	return append(ev, name+": "+jobs.Bound(text, 1000))
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return jobs.Bound(s, 200)
}
