package ceremonies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// What AXLR checks of an incident's hand-backs (axlr_incident 1.0) before
// the step completes, without a model. A refusal names the entry and the
// rule, so the model can mend its hand-back; MADE is not touched.

// Limits of an incident.
const (
	// MaxSlug bounds a triage's slug, in characters.
	MaxSlug = 64
	// MaxDraftBytes bounds the postmortem draft.
	MaxDraftBytes = 64 << 10
	// MaxFindings bounds a review's findings.
	MaxFindings = 12
	// MaxTimeline and MaxActions bound the timeline's entries and the
	// analysis's actions.
	MaxTimeline = 200
	MaxActions  = 30
	// IncidentDir is where drafts and postmortems live in the workspace.
	IncidentDir = "docs/incidents"
)

// Severities are a triage's severities, worst first.
var Severities = []string{"sev1", "sev2", "sev3", "sev4"}

// ActionKinds are the kinds of an incident's actions.
var ActionKinds = []string{"corrective", "preventive"}

var (
	slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	// extPattern is a file extension, as opposed to a version's ".2".
	extPattern = regexp.MustCompile(`^\.[A-Za-z][A-Za-z0-9]*$`)
)

// CheckTriage checks a triage's severity and slug.
func CheckTriage(severity, slug string) error {
	if !slices.Contains(Severities, severity) {
		return fmt.Errorf("severity %q: use one of %s", severity, strings.Join(Severities, ", "))
	}
	return CheckSlug(slug)
}

// CheckSlug checks an incident's slug: kebab-case, at most MaxSlug
// characters, since it names the draft and the published file.
func CheckSlug(slug string) error {
	switch {
	case len(slug) > MaxSlug:
		return fmt.Errorf("slug %q is %d characters: at most %d", slug, len(slug), MaxSlug)
	case !slugPattern.MatchString(slug):
		return fmt.Errorf("slug %q: use kebab-case, lowercase letters and digits joined by single hyphens, such as checkout-latency-2026-11", slug)
	}
	return nil
}

// TimelineEntry is one entry of an incident's timeline.
type TimelineEntry struct {
	// At is an RFC 3339 time with its zone.
	At       string `json:"at"`
	Event    string `json:"event"`
	Evidence string `json:"evidence"`
}

// DecodeTimeline reads a timeline hand-back: a list of entries with
// exactly the fields at, event and evidence.
func DecodeTimeline(raw json.RawMessage) ([]TimelineEntry, error) {
	var entries []TimelineEntry
	if err := decodeStrict(raw, &entries); err != nil {
		return nil, fmt.Errorf("timeline: want a list of {at, event, evidence}: %w", err)
	}
	return entries, nil
}

// CheckTimeline checks a timeline: one to MaxTimeline entries, each at an
// RFC 3339 time with its zone, in time order (equal times may follow each
// other), with an event and evidence. Evidence that begins with a
// workspace path (EvidencePath) must name one that exists: exists says
// whether a workspace-relative path does.
func CheckTimeline(entries []TimelineEntry, exists func(path string) bool) error {
	if len(entries) == 0 || len(entries) > MaxTimeline {
		return fmt.Errorf("timeline has %d entries: give 1 to %d", len(entries), MaxTimeline)
	}
	var last time.Time
	for i, e := range entries {
		at, err := time.Parse(time.RFC3339, e.At)
		if err != nil {
			return fmt.Errorf("timeline[%d].at %q: want an RFC 3339 time with its zone, such as 2026-11-30T14:05:00Z or 2026-11-30T15:05:00+01:00", i, e.At)
		}
		switch {
		case i > 0 && at.Before(last):
			return fmt.Errorf("timeline[%d] at %s is before timeline[%d] at %s: put the entries in time order", i, e.At, i-1, entries[i-1].At)
		case strings.TrimSpace(e.Event) == "":
			return fmt.Errorf("timeline[%d].event is empty: say what happened", i)
		case strings.TrimSpace(e.Evidence) == "":
			return fmt.Errorf("timeline[%d].evidence is empty: each entry needs the evidence that shows it", i)
		}
		last = at
		p, ok, err := EvidencePath(e.Evidence)
		if err != nil {
			return fmt.Errorf("timeline[%d].evidence: %w", i, err)
		}
		if ok && !exists(p) {
			return fmt.Errorf("timeline[%d].evidence names %s, which is not in the workspace: name a file that is, or describe the evidence without a path", i, p)
		}
	}
	return nil
}

// EvidencePath returns the workspace path that evidence begins with, if it
// does: its first word, when that has a slash or a file extension (a
// letter after the dot) and is not a URL, without a trailing :line or :line-line or #Lline. An
// absolute path or one that climbs out of the workspace is an error:
// evidence paths are the workspace's.
func EvidencePath(evidence string) (string, bool, error) {
	word, _, _ := strings.Cut(strings.TrimSpace(evidence), " ")
	word = strings.TrimRight(word, ",;")
	if strings.Contains(word, "://") || !strings.ContainsAny(word, "/.") {
		return "", false, nil
	}
	if i := strings.Index(word, "#L"); i > 0 {
		word = word[:i]
	}
	if i := strings.LastIndexByte(word, ':'); i > 0 && strings.Trim(word[i+1:], "0123456789-") == "" {
		word = word[:i]
	}
	if !strings.Contains(word, "/") && !extPattern.MatchString(path.Ext(word)) {
		return "", false, nil
	}
	if strings.HasPrefix(word, "/") {
		return "", false, fmt.Errorf("%s is an absolute path: name evidence by its path in the workspace", word)
	}
	clean := path.Clean(word)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false, fmt.Errorf("%s is outside the workspace", word)
	}
	return clean, true, nil
}

// Action is one action of an incident's analysis.
type Action struct {
	Title string `json:"title"`
	// Kind is corrective or preventive.
	Kind  string `json:"kind"`
	Owner string `json:"owner"`
	// Due is a date, YYYY-MM-DD, after the analysis's day.
	Due          string `json:"due"`
	Verification string `json:"verification"`
}

// DecodeActions reads an analysis's actions: a list of actions with
// exactly the fields title, kind, owner, due and verification.
func DecodeActions(raw json.RawMessage) ([]Action, error) {
	var actions []Action
	if err := decodeStrict(raw, &actions); err != nil {
		return nil, fmt.Errorf("actions: want a list of {title, kind, owner, due, verification}: %w", err)
	}
	return actions, nil
}

// CheckActions checks an analysis's actions: one to MaxActions, each with
// a title, a kind, an owner, a due date after today's (the workflow's
// time, in UTC) and a verification.
func CheckActions(actions []Action, now time.Time) error {
	if len(actions) == 0 || len(actions) > MaxActions {
		return fmt.Errorf("actions has %d entries: give 1 to %d", len(actions), MaxActions)
	}
	today := now.UTC().Format(time.DateOnly)
	for i, a := range actions {
		switch {
		case strings.TrimSpace(a.Title) == "":
			return fmt.Errorf("actions[%d].title is empty", i)
		case !slices.Contains(ActionKinds, a.Kind):
			return fmt.Errorf("actions[%d].kind %q: use corrective or preventive", i, a.Kind)
		case strings.TrimSpace(a.Owner) == "":
			return fmt.Errorf("actions[%d].owner is empty: name the team or role that owns it", i)
		case strings.TrimSpace(a.Verification) == "":
			return fmt.Errorf("actions[%d].verification is empty: say how anyone will know it worked", i)
		}
		if _, err := time.Parse(time.DateOnly, a.Due); err != nil {
			return fmt.Errorf("actions[%d].due %q: want a date YYYY-MM-DD", i, a.Due)
		}
		// Dates in this layout order as strings do.
		if a.Due <= today {
			return fmt.Errorf("actions[%d].due %s is not after today (%s): give a date to come", i, a.Due, today)
		}
	}
	return nil
}

// DraftPath is the workspace path of an incident's draft.
func DraftPath(slug string) string { return IncidentDir + "/" + slug + ".draft.md" }

// PublishedPath is the workspace path an approved draft is published to,
// named by the day of its approval (UTC).
func PublishedPath(day time.Time, slug string) string {
	return IncidentDir + "/" + day.UTC().Format(time.DateOnly) + "-" + slug + ".md"
}

// CheckDraft checks the draft a revision hands back: at draftPath, which
// must be DraftPath(slug), and at most MaxDraftBytes of text.
func CheckDraft(slug, draftPath string, size int64) error {
	if want := DraftPath(slug); path.Clean(draftPath) != want {
		return fmt.Errorf("draft_path %q: the draft is %s", draftPath, want)
	}
	if size > MaxDraftBytes {
		return fmt.Errorf("the draft %s is %d bytes: at most %d (64 KiB)", draftPath, size, MaxDraftBytes)
	}
	if size == 0 {
		return fmt.Errorf("the draft %s is empty", draftPath)
	}
	return nil
}

// decodeStrict decodes raw into v, refusing fields v does not have.
func decodeStrict(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("it is missing")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("text follows the list")
	}
	return nil
}

// Review is what the incident's reviewer hands back: whether the draft is
// accepted, and at most MaxFindings findings for its author.
type Review struct {
	Accepted bool     `json:"accepted"`
	Findings []string `json:"findings"`
}

// ReviewInstruction is the reviewer's system message. The reviewer is a
// model request in a fresh context with no tools: it reads only what
// ReviewPrompt gives it, never the author's transcript.
const ReviewInstruction = `You review a blameless incident postmortem in a fresh context: you did not write it and you have no tools. Check the draft against the triage, timeline and analysis you are given: every timeline entry and action is in the draft and agrees with them; the root cause follows from the evidence; each action has an owner, a due date and a verification; the text blames no person. Answer with one JSON object and nothing else: {"accepted": true or false, "findings": ["...", ...]}. Findings are what the author must change, at most 12, each one sentence; accept only a draft that needs none of them.`

// ReviewPrompt is the reviewer's user message: the draft's bytes and the
// fields the earlier steps handed back, each as its JSON.
func ReviewPrompt(draftPath string, draft []byte, triage, timeline, analysis json.RawMessage) string {
	var b strings.Builder
	for _, part := range []struct {
		name string
		raw  json.RawMessage
	}{{"Triage", triage}, {"Timeline", timeline}, {"Analysis", analysis}} {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", part.name, part.raw)
	}
	fmt.Fprintf(&b, "## The draft, %s\n\n%s", draftPath, draft)
	return b.String()
}

// ParseReview reads the reviewer's answer: one JSON object, alone or in a
// ```json fence, with exactly accepted and findings. A refusal must carry
// at least one finding, and there are at most MaxFindings. An answer that
// does not parse is an error: the review stays pending and is asked
// again, and never counts as an acceptance.
func ParseReview(answer string) (Review, error) {
	text := strings.TrimSpace(answer)
	if body, ok := strings.CutPrefix(text, "```json"); ok {
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
	} else if body, ok := strings.CutPrefix(text, "```"); ok {
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
	}
	var r struct {
		Accepted *bool    `json:"accepted"`
		Findings []string `json:"findings"`
	}
	if err := decodeStrict(json.RawMessage(text), &r); err != nil {
		return Review{}, fmt.Errorf("the review is not one JSON object {accepted, findings}: %w", err)
	}
	if r.Accepted == nil {
		return Review{}, errors.New("the review gives no accepted")
	}
	findings := slices.DeleteFunc(r.Findings, func(f string) bool { return strings.TrimSpace(f) == "" })
	switch {
	case len(findings) > MaxFindings:
		return Review{}, fmt.Errorf("the review has %d findings: at most %d", len(findings), MaxFindings)
	case !*r.Accepted && len(findings) == 0:
		return Review{}, errors.New("the review refuses the draft with no finding")
	}
	return Review{Accepted: *r.Accepted, Findings: findings}, nil
}

// The incident's console steps and the guard its approval grants.
const (
	// IncidentReviewStep and IncidentPresentStep are AXLR's own: the
	// fresh-context review and the person's approval of the exact bytes.
	IncidentReviewStep  = "review"
	IncidentPresentStep = "present"
	// ReviewMode is what the review records of its context.
	ReviewMode = "independent_context"
)

var (
	fIncSummary   = Field{Name: "summary", Type: Text, Description: "What happened, in two or three sentences."}
	fImpact       = Field{Name: "impact", Type: Text, Description: "Who or what was affected, and how much."}
	fSeverity     = Field{Name: "severity", Type: Text, Description: "sev1, sev2, sev3 or sev4."}
	fDetection    = Field{Name: "detection", Type: Text, Description: "How the incident was noticed."}
	fService      = Field{Name: "service", Type: Text, Description: "The service or component affected."}
	fSlug         = Field{Name: "slug", Type: Text, MaxChars: MaxSlug, Description: "kebab-case, at most 64 characters, naming the incident: it names the draft and the postmortem."}
	fTimeline     = Field{Name: "timeline", Type: Timeline, Description: `Entries in time order: [{"at": "2026-11-30T14:05:00Z", "event": "...", "evidence": "logs/app.log:120 ..."}]; at is RFC 3339 with its zone, evidence names what shows it (a workspace path that exists, a log line, a commit).`}
	fIncRoot      = Field{Name: "root_cause", Type: Text, Description: "The root cause, as the evidence shows it."}
	fContributing = Field{Name: "contributing_factors", Type: TextList, Description: "What made it worse or more likely."}
	fWentWell     = Field{Name: "went_well", Type: TextList, Description: "What went well."}
	fWentBadly    = Field{Name: "went_badly", Type: TextList, Description: "What went badly."}
	fActions      = Field{Name: "actions", Type: Actions, Description: `[{"title": "...", "kind": "corrective" or "preventive", "owner": "a team or role", "due": "YYYY-MM-DD after today", "verification": "how anyone will know it worked"}].`}
	fDraftPath    = Field{Name: "draft_path", Type: Text, Description: "docs/incidents/<slug>.draft.md, the draft you wrote."}
	fIncReport    = Field{Name: "report", Type: Text, Description: "What happened, what was found, what will change."}

	rTriaged    = Field{Name: "triaged", Type: Bool, Description: "true: the severity and the slug hold."}
	rTimelineOK = Field{Name: "timeline_ok", Type: Bool, Description: "true: the entries are ordered, zoned and evidenced, and their workspace paths exist."}
	rAnalyzed   = Field{Name: "analyzed", Type: Bool, Description: "true: every action has an owner, a kind, a due date after today and a verification."}
	rDigest     = Field{Name: "draft_digest", Type: Text, Description: "The draft's sha256, in hex: what was reviewed, approved or published."}
	rAccepted   = Field{Name: "accepted", Type: Bool, Description: "true: the reviewer accepted the draft; false: its findings go back to revise."}
	rFindings   = Field{Name: "findings", Type: Findings, Description: "What the author must change, at most 12."}
	rReviewMode = Field{Name: "review_mode", Type: Text, Values: []string{ReviewMode}, Description: "independent_context: a model request in a fresh context, with no tools and none of the author's transcript; not an independent person."}
	rReviewer   = Field{Name: "reviewer_model", Type: Text, Description: "The reviewer's model: reviewer_model in settings, else the session's."}
	rIncDecide  = Field{Name: "decision", Type: Text, Values: []string{DecisionApprove, DecisionReturn, DecisionDecline},
		Description: "approve: the person approved these bytes, and AXLR grants the human guard through the approver identity; return: back to revise with the reason (the person's, at most twice, or a draft changed on disk since its review); decline: the person's third denial."}
	rIncReason = Field{Name: "reason", Type: Text, Description: "Why the draft went back, or was declined."}
)

// The incident's steps: the model's triage, timeline, analysis and
// revisions; AXLR's review and presentation; the model's publish, whose
// check writes the approved bytes. Beside each model step's outcome, AXLR
// records the triage's slug and severity, the revision's draft_digest and
// draft_bytes, and the publication's path and draft_digest. The incident
// runs under the standard profile only: its steps have no compact
// instruction. Each model step is checked by its
// session host (CheckIncident), which reads the workspace.
func init() {
	steps["axlr_incident 1.0"] = []Step{
		{ID: "triage", Fields: []Field{fIncSummary, fImpact, fSeverity, fDetection, fService, fSlug},
			Requires: [][]string{{"summary", "impact", "severity", "detection", "service", "slug"}}, Check: CheckIncident, Outcome: "triaged", ReadOnly: true},
		{ID: "timeline", Fields: []Field{fTimeline},
			Requires: [][]string{{"timeline"}}, Check: CheckIncident, Outcome: "timeline_ok", ReadOnly: true},
		{ID: "analysis", Fields: []Field{fIncRoot, fContributing, fWentWell, fWentBadly, fActions},
			Requires: [][]string{{"root_cause", "contributing_factors", "went_well", "went_badly", "actions"}}, Check: CheckIncident, Outcome: "analyzed", ReadOnly: true},
		{ID: "revise", Fields: []Field{fDraftPath},
			Requires: [][]string{{"draft_path"}}, Check: CheckIncident, Outcome: "revised"},
		{ID: IncidentReviewStep, Console: true, Records: []Field{rAccepted, rFindings, rReviewMode, rReviewer, rDigest}},
		{ID: IncidentPresentStep, Console: true, Lease: DecideLease, Records: []Field{rIncDecide, rIncReason, rDigest}},
		{ID: "publish", Fields: []Field{fIncReport, fSummaryEn},
			Requires: [][]string{{"report", "summary_en"}}, Check: CheckIncident, Outcome: "published"},
	}
}

// IncidentDay is what an incident's checks read of the world beside the
// hand-back: today (the workflow's time) and whether a workspace path
// exists.
type IncidentDay struct {
	Now    time.Time
	Exists func(path string) bool
}

// CheckIncidentFields checks a validated hand-back of triage, timeline or
// analysis (Validate decoded its fields) and returns what AXLR records
// beside them: the slug and severity of a triage. revise and publish read
// files, which their host does.
func CheckIncidentFields(step string, fields map[string]any, day IncidentDay) (map[string]any, error) {
	switch step {
	case "triage":
		severity, _ := fields["severity"].(string)
		slug, _ := fields["slug"].(string)
		if err := CheckTriage(severity, slug); err != nil {
			return nil, err
		}
		return map[string]any{"slug": slug, "severity": severity}, nil
	case "timeline":
		entries, _ := fields["timeline"].([]TimelineEntry)
		return map[string]any{}, CheckTimeline(entries, day.Exists)
	case "analysis":
		actions, _ := fields["actions"].([]Action)
		return map[string]any{}, CheckActions(actions, day.Now)
	}
	return map[string]any{}, nil
}
