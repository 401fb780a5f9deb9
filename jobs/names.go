package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// maxSlugWords bounds SlugWords: each kept word counts its length plus one.
const maxSlugWords = 40

// SlugWords is the first words of text as a slug: text lower-cased, each
// whitespace-separated word reduced to its [a-z0-9] characters (other
// letters vanish, so a word of none is skipped), joined by "-", stopping
// before the word that would take the count past 40 characters, where each
// word counts its length plus one. No word kept gives "failure". The result
// is at most 39 bytes of [a-z0-9-].
//
// It names branches and clones (Slug) and is the "first words of the
// brief" of the duplicate rule and the signatures. forge has a SlugWords
// too; this one is the domain's, and the two must agree.
func SlugWords(text string) string {
	var words []string
	length := 0
	for _, field := range strings.Fields(strings.ToLower(text)) {
		word := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, field)
		if word == "" {
			continue
		}
		if length+len(word)+1 > maxSlugWords {
			break
		}
		words = append(words, word)
		length += len(word) + 1
	}
	if len(words) == 0 {
		return "failure"
	}
	return strings.Join(words, "-")
}

// Slug is a job's name before a collision: at in UTC as YYYYMMDD-HHMM, a
// dash, and SlugWords(text). The job workflow passes workflow.Now.
func Slug(at time.Time, text string) string {
	return at.UTC().Format("20060102-1504") + "-" + SlugWords(text)
}

// ID is the job's ID for slug: the slug itself, or when taken reports it is
// in use, slug-<the signature's first 4 hex digits>. Should that be taken
// too (the same failure twice in one minute), -2, -3, … follow it.
func ID(slug, signature string, taken func(string) bool) string {
	if !taken(slug) {
		return slug
	}
	suffixed := slug + "-" + signature[:min(4, len(signature))]
	id := suffixed
	for n := 2; taken(id); n++ {
		id = fmt.Sprintf("%s-%d", suffixed, n)
	}
	return id
}

// FailureClass is how a cited call showed a defect of axlr.
type FailureClass string

// The failure classes accepted as evidence of a defect.
const (
	// ClassRuntimeFailure: axlr's own machinery failed (a local tool's
	// internal_error, filesystem_error or process_error; an outcome that
	// could not be read; an execution whose effect is unknown).
	ClassRuntimeFailure FailureClass = "runtime_failure"
	// ClassHostError: a host tool refused for a reason that is not about
	// its arguments.
	ClassHostError FailureClass = "host_error"
	// ClassWrongResult: the call succeeded with a result the model shows to
	// be wrong; it takes two cited calls.
	ClassWrongResult FailureClass = "wrong_result"
)

// ToolFailure is one tool and the way it failed.
type ToolFailure struct {
	Tool  string       `json:"tool"`
	Class FailureClass `json:"class"`
}

// RepairSignature identifies a failure by the repository and the tools and
// classes that showed it, not by the model's words: the first 8 bytes, in
// hex, of sha256("<repo>\n" + the sorted distinct "tool|class" joined by
// "\n").
func RepairSignature(repo string, failures []ToolFailure) string {
	keys := make([]string, 0, len(failures))
	for _, f := range failures {
		keys = append(keys, f.Tool+"|"+string(f.Class))
	}
	return signature(repo + "\n" + strings.Join(sortedDistinct(keys), "\n"))
}

// ImprovementSignature identifies an improvement an agent asks for: the
// first 8 bytes, in hex, of sha256("<repo>\nimprove\n" + the sorted distinct
// tools joined by "\n" + "\n" + SlugWords(description)).
func ImprovementSignature(repo string, tools []string, description string) string {
	return signature(repo + "\nimprove\n" + strings.Join(sortedDistinct(tools), "\n") + "\n" + SlugWords(description))
}

// JobSignature identifies a job the person starts: the first 8 bytes, in
// hex, of sha256("<repo>\njob\n<kind>\n" + SlugWords(brief)).
func JobSignature(repo string, kind Kind, brief string) string {
	return signature(repo + "\njob\n" + string(kind) + "\n" + SlugWords(brief))
}

func signature(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:8])
}

func sortedDistinct(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}
