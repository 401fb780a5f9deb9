package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSlugWords(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"words", "Parser drops the LAST line", "parser-drops-the-last-line"},
		{"punctuation dropped", "local_read: returns 'wrong' bytes!", "localread-returns-wrong-bytes"},
		{"non-ASCII letters vanish", "añadir módulo über", "aadir-mdulo-ber"},
		{"word of none skipped", "fix — the … bug", "fix-the-bug"},
		{"empty", "", "failure"},
		{"only symbols", "¿¡ — !?", "failure"},
		{"digits", "Issue #123 of x", "issue-123-of-x"},
		{"whitespace of any kind", "a\tb\nc  d", "a-b-c-d"},
		// Each word counts its length + 1: 8 words of 4 count 40, which
		// fits; the ninth would pass 40.
		{"stops before 40", strings.Repeat("abcd ", 12), "abcd-abcd-abcd-abcd-abcd-abcd-abcd-abcd"},
		{"exactly 39", strings.Repeat("x", 38) + " y", strings.Repeat("x", 38)},
		{"stops at the first word that does not fit", "aa " + strings.Repeat("b", 40) + " c", "aa"},
		{"a first word too long", strings.Repeat("z", 40), "failure"},
		// strings.ToLower maps the Kelvin sign to an ASCII k.
		{"lower-cased before filtering", "\u212Aelvin", "kelvin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SlugWords(tt.text); got != tt.want {
				t.Fatalf("SlugWords(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

var slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func FuzzSlugWords(f *testing.F) {
	for _, seed := range []string{"", "Parser drops the LAST line", strings.Repeat("abcd ", 20), "\xff\xfe bad", "añadir módulo"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := SlugWords(text)
		if len(got) > 39 || !slugPattern.MatchString(got) {
			t.Fatalf("SlugWords(%q) = %q: want 1 to 39 bytes of [a-z0-9] words joined by -", text, got)
		}
	})
}

func TestSlug(t *testing.T) {
	at := time.Date(2026, 10, 17, 23, 5, 59, 0, time.FixedZone("CEST", 2*3600))
	if got := Slug(at, "Parser drops the last line"); got != "20261017-2105-parser-drops-the-last-line" {
		t.Fatalf("slug %q", got)
	}
}

func TestID(t *testing.T) {
	const sig = "c0ffee0123456789"
	tests := []struct {
		name  string
		taken []string
		want  string
	}{
		{"free", nil, "s"},
		{"collision", []string{"s"}, "s-c0ff"},
		{"collision twice", []string{"s", "s-c0ff"}, "s-c0ff-2"},
		{"collision three times", []string{"s", "s-c0ff", "s-c0ff-2"}, "s-c0ff-3"},
		{"another taken", []string{"t"}, "s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taken := func(id string) bool { return strings.Contains(" "+strings.Join(tt.taken, " ")+" ", " "+id+" ") }
			if got := ID("s", sig, taken); got != tt.want {
				t.Fatalf("ID = %q, want %q", got, tt.want)
			}
		})
	}
	if got := ID("s", "ab", func(id string) bool { return id == "s" }); got != "s-ab" {
		t.Fatalf("short signature: %q", got)
	}
}

// sum8 is the reference's signature of text, computed here on its own.
func sum8(text string) string {
	s := sha256.Sum256([]byte(text))
	return hex.EncodeToString(s[:8])
}

func TestSignatures(t *testing.T) {
	const repo = "underpass-ai/axlr"
	tests := []struct{ name, got, layout string }{
		{"repair sorts and dedupes tool|class",
			RepairSignature(repo, []ToolFailure{{"local_read", ClassRuntimeFailure}, {"axlr_history", ClassHostError}, {"local_read", ClassRuntimeFailure}}),
			"underpass-ai/axlr\naxlr_history|host_error\nlocal_read|runtime_failure"},
		{"repair of one failure",
			RepairSignature(repo, []ToolFailure{{"local_exec", ClassWrongResult}}),
			"underpass-ai/axlr\nlocal_exec|wrong_result"},
		{"improvement sorts and dedupes the tools",
			ImprovementSignature(repo, []string{"local_read", "axlr_logs", "local_read"}, "Let the agent read the application log"),
			"underpass-ai/axlr\nimprove\naxlr_logs\nlocal_read\nlet-the-agent-read-the-application-log"},
		{"job",
			JobSignature(repo, Improve, "Make the application log visible to the agent"),
			"underpass-ai/axlr\njob\nimprove\nmake-the-application-log-visible-to-the"},
		{"job of a repair",
			JobSignature(repo, Repair, "#12: crash"),
			"underpass-ai/axlr\njob\nrepair\n12-crash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if want := sum8(tt.layout); tt.got != want {
				t.Fatalf("signature %s, want %s of %q", tt.got, want, tt.layout)
			}
			if len(tt.got) != 16 {
				t.Fatalf("signature %q is not 8 bytes in hex", tt.got)
			}
		})
	}
	// The kinds hash apart even from the same words.
	if JobSignature(repo, Repair, "x") == JobSignature(repo, Improve, "x") ||
		ImprovementSignature(repo, nil, "x") == JobSignature(repo, Improve, "x") {
		t.Fatal("signatures of different kinds collide")
	}
	// The order of the failures does not matter.
	a := RepairSignature(repo, []ToolFailure{{"a", ClassHostError}, {"b", ClassHostError}})
	b := RepairSignature(repo, []ToolFailure{{"b", ClassHostError}, {"a", ClassHostError}})
	if a != b {
		t.Fatal("repair signature depends on the order of the failures")
	}
}
