package jobs

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the pull request's text.
const (
	// MaxTitle bounds a title in bytes, the ellipsis included.
	MaxTitle = 72
	// MaxSection bounds the cause, the fix, the criteria and the scope.
	MaxSection = 1500
	// MaxSummary bounds the summary, which the reference leaves unbounded:
	// the body must stay far below GitHub's 65,536 characters.
	MaxSummary = 4000
	// MaxRoundNote bounds a red round's line.
	MaxRoundNote = 1000
)

const ellipsis = "…"

// Title is the pull request's title: "Repair: " or "Improve: " and the first
// sentence of summary (up to a ".", "!" or "?" that ends the text or meets
// whitespace, or a line break; without the closing mark); without one, the brief's first line; without one, the
// slug. Whitespace runs and control characters become one space. A title
// over MaxTitle bytes is cut at the last space that leaves room for "…"
// (inside the first word when it alone is too long), its trailing " ,;:-"
// stripped, and "…" added. The result is valid UTF-8.
func Title(kind Kind, summary, brief, slug string) string {
	prefix := "Repair: "
	if kind == Improve {
		prefix = "Improve: "
	}
	text := oneLine(firstSentence(summary))
	if text == "" {
		first, _, _ := strings.Cut(strings.TrimSpace(brief), "\n")
		text = oneLine(first)
	}
	if text == "" {
		text = oneLine(slug)
	}
	if text == "" {
		text = SlugWords("")
	}
	return within(prefix, text)
}

// firstSentence is text up to its first sentence end, without the mark.
func firstSentence(text string) string {
	text = strings.TrimSpace(text)
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			return text[:i]
		case '.', '!', '?':
			if i+1 == len(text) || strings.IndexByte(" \t\r\n", text[i+1]) >= 0 {
				return text[:i]
			}
		}
	}
	return text
}

// oneLine makes text valid UTF-8 on one line: control characters and runs
// of whitespace become one space, and the ends are trimmed.
func oneLine(text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
	return strings.Join(strings.Fields(text), " ")
}

// within is prefix+text in MaxTitle bytes.
func within(prefix, text string) string {
	title := prefix + text
	if len(title) <= MaxTitle {
		return title
	}
	limit := MaxTitle - len(ellipsis)
	cut := strings.LastIndexByte(title[:limit+1], ' ')
	if cut <= len(prefix) {
		cut = limit
		for cut > 0 && !utf8.RuneStart(title[cut]) {
			cut--
		}
	}
	return strings.TrimRight(title[:cut], " ,;:-") + ellipsis
}

// RepairText is what a repair's pull request body says.
type RepairText struct {
	// Instance is the MADE instance of axlr_repair.
	Instance string
	// Cause and Fix come from diagnose and repair (each cut at MaxSection
	// bytes); Summary from the repair step (MaxSummary).
	Cause, Fix, Summary string
	// Check is the approved check command, as run; empty leaves out the
	// evidence.
	Check string
	// RedRounds are the failing checks of each red round, oldest first:
	// each adds a line for the check round after it.
	RedRounds []string
}

// RepairBody is the pull request description of a repair: the intro that
// names it as axlr's work, then Cause, Fix, Summary and Evidence (a section
// without text is left out), then one line per red round.
func RepairBody(t RepairText) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Repair made by AXLR through MADE ceremony `%s` %s, instance `%s`.\n\n", Repair.Definition(), DefinitionVersion, t.Instance)
	section(&b, "Cause", t.Cause, MaxSection)
	section(&b, "Fix", t.Fix, MaxSection)
	section(&b, "Summary", t.Summary, MaxSummary)
	evidence(&b, t.Check, "repair")
	rounds(&b, t.RedRounds)
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// ImprovementText is what an improvement's pull request body says.
type ImprovementText struct {
	// Instance is the MADE instance of axlr_improve.
	Instance string
	// Criteria and Scope come from the brief step (each cut at MaxSection
	// bytes); Summary from the build step (MaxSummary).
	Criteria, Scope, Summary string
	// Check is the approved check command, which failed before the change.
	Check string
	// RedRounds are the failing checks of each red round, oldest first.
	RedRounds []string
}

// ImprovementBody is the pull request description of an improvement: the
// intro, which says the person merges it, then Criteria, Scope, Summary and
// Evidence (before and after), then one line per red round.
func ImprovementBody(t ImprovementText) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Improvement made by AXLR through MADE ceremony `%s` %s, instance `%s`. It merges only with the person's approval.\n\n", Improve.Definition(), DefinitionVersion, t.Instance)
	section(&b, "Criteria", t.Criteria, MaxSection)
	section(&b, "Scope", t.Scope, MaxSection)
	section(&b, "Summary", t.Summary, MaxSummary)
	evidence(&b, t.Check, "change")
	rounds(&b, t.RedRounds)
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func section(b *strings.Builder, heading, text string, limit int) {
	text = strings.TrimSpace(strings.ToValidUTF8(text, "\uFFFD"))
	if text == "" {
		return
	}
	fmt.Fprintf(b, "## %s\n\n%s\n\n", heading, Bound(text, limit))
}

func evidence(b *strings.Builder, check, change string) {
	check = oneLine(check)
	if check == "" {
		return
	}
	fmt.Fprintf(b, "## Evidence\n\nCheck command %s failed before the %s and passed after it, run by AXLR.\n\n", code(check), change)
}

func rounds(b *strings.Builder, red []string) {
	for i, failing := range red {
		fmt.Fprintf(b, "Check round %d after a red round: %s\n", i+2, Bound(oneLine(failing), MaxRoundNote))
	}
}

// code is text as Markdown inline code, its fence one backtick longer than
// the longest run of backticks inside.
func code(text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 {
		return fence + " " + text + " " + fence
	}
	return fence + text + fence
}

// Bound cuts text to at most limit bytes, at a character boundary, ending
// in "…" when it cut.
func Bound(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + ellipsis
}

// CommitTrailer is the trailer of a job's commits: "Repaired-by: AXLR
// axlr_repair 1.0 <instance>" or "Improved-by: AXLR axlr_improve 1.0
// <instance>".
func CommitTrailer(kind Kind, instance string) string {
	key := "Repaired-by"
	if kind == Improve {
		key = "Improved-by"
	}
	return fmt.Sprintf("%s: AXLR %s %s %s", key, kind.Definition(), DefinitionVersion, instance)
}

// IssueNumber reads a brief that names an issue, "#123": only "#" and
// digits, surrounding space ignored.
func IssueNumber(brief string) (int, bool) {
	s, ok := strings.CutPrefix(strings.TrimSpace(brief), "#")
	if !ok || s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, n > 0
}

// IssueBrief is the brief of a job asked for an issue: "Issue #N of R:
// <title>", its body and its address, cut to MaxBrief.
func IssueBrief(repo string, n int, title, body, url string) string {
	b := fmt.Sprintf("Issue #%d of %s: %s\n\n%s\n\n%s", n, repo, strings.TrimSpace(title), strings.TrimSpace(body), url)
	return Bound(b, MaxBrief)
}
