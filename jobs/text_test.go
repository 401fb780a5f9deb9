package jobs

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTitle(t *testing.T) {
	long := "Keep the last line of a file without a trailing newline when the parser reads it"
	tests := []struct {
		name                 string
		kind                 Kind
		summary, brief, slug string
		want                 string
	}{
		{"first sentence", Repair, "Keep the last line. Then more.", "brief", "slug", "Repair: Keep the last line"},
		{"exclamation", Improve, "Show the log! It helps.", "", "", "Improve: Show the log"},
		{"question", Repair, "Why not? Because.", "", "", "Repair: Why not"},
		{"line break", Repair, "First line\nsecond line", "", "", "Repair: First line"},
		{"mark at the end", Repair, "Only one sentence.", "", "", "Repair: Only one sentence"},
		{"a dot inside a word is not an end", Repair, "Use v1.2 of the parser. Done", "", "", "Repair: Use v1.2 of the parser"},
		{"brief's first line without a summary", Repair, "  ", "  Issue #12 of acme/app: crash\n\nbody", "slug", "Repair: Issue #12 of acme/app: crash"},
		{"slug without either", Improve, "", "", "20261017-0930-show-the-log", "Improve: 20261017-0930-show-the-log"},
		{"nothing at all", Repair, "", "", "", "Repair: failure"},
		{"whitespace and controls collapse", Repair, "Keep\tthe \x00 last   line", "", "", "Repair: Keep the last line"},
		{"exactly 72 bytes", Repair, strings.Repeat("a", 64), "", "", "Repair: " + strings.Repeat("a", 64)},
		// "Repair: " + long is 89 bytes: cut at the last space within 69
		// bytes, "…" makes 72 at most.
		{"cut at a space", Repair, long, "", "", "Repair: Keep the last line of a file without a trailing newline when…"},
		{"trailing punctuation stripped", Repair, "Keep the last line of a file, without a trailing newline; when the parser reads it", "", "", "Repair: Keep the last line of a file, without a trailing newline…"},
		{"one long word cut inside", Improve, strings.Repeat("x", 100), "", "", "Improve: " + strings.Repeat("x", 60) + "…"},
		{"inside a word at a character boundary", Repair, strings.Repeat("é", 50), "", "", "Repair: " + strings.Repeat("é", 30) + "…"},
		{"invalid UTF-8 replaced", Repair, "bad \xff byte", "", "", "Repair: bad \uFFFD byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Title(tt.kind, tt.summary, tt.brief, tt.slug)
			if got != tt.want {
				t.Fatalf("Title = %q (%d bytes), want %q", got, len(got), tt.want)
			}
			if len(got) > MaxTitle {
				t.Fatalf("Title is %d bytes", len(got))
			}
		})
	}
}

func FuzzTitle(f *testing.F) {
	f.Add("Keep the last line. Then more.", "brief", "slug", false)
	f.Add(strings.Repeat("é ", 60), "", "", true)
	f.Add("", "\xff\xfe\n", "", false)
	f.Add(strings.Repeat("-", 100), "", "", true)
	f.Fuzz(func(t *testing.T, summary, brief, slug string, improve bool) {
		kind, prefix := Repair, "Repair"
		if improve {
			kind, prefix = Improve, "Improve"
		}
		got := Title(kind, summary, brief, slug)
		switch {
		case !utf8.ValidString(got):
			t.Fatalf("Title %q is not valid UTF-8", got)
		case len(got) > MaxTitle:
			t.Fatalf("Title %q is %d bytes", got, len(got))
		case !strings.HasPrefix(got, prefix):
			t.Fatalf("Title %q lacks %s", got, prefix)
		case strings.ContainsAny(got, "\n\r\t"):
			t.Fatalf("Title %q is not one line", got)
		}
	})
}

func TestRepairBody(t *testing.T) {
	got := RepairBody(RepairText{
		Instance: "inst-1", Cause: "The scanner stops at EOF.", Fix: "Flush the last token.", Summary: "Keep the last line.",
		Check: "go test ./parser", RedRounds: []string{"test (ubuntu): failed", "lint: failed"},
	})
	want := "Repair made by AXLR through MADE ceremony `axlr_repair` 1.0, instance `inst-1`.\n\n" +
		"## Cause\n\nThe scanner stops at EOF.\n\n" +
		"## Fix\n\nFlush the last token.\n\n" +
		"## Summary\n\nKeep the last line.\n\n" +
		"## Evidence\n\nCheck command `go test ./parser` failed before the repair and passed after it, run by AXLR.\n\n" +
		"Check round 2 after a red round: test (ubuntu): failed\n" +
		"Check round 3 after a red round: lint: failed\n"
	if got != want {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
	// Sections without text are left out.
	if got := RepairBody(RepairText{Instance: "i", Fix: "f"}); got != "Repair made by AXLR through MADE ceremony `axlr_repair` 1.0, instance `i`.\n\n## Fix\n\nf\n" {
		t.Fatalf("sparse body %q", got)
	}
}

func TestImprovementBody(t *testing.T) {
	got := ImprovementBody(ImprovementText{
		Instance: "inst-2", Criteria: "axlr_logs returns the log.", Scope: "activities only", Summary: "Add axlr_logs.",
		Check: "go test -run TestLogs ./activities",
	})
	want := "Improvement made by AXLR through MADE ceremony `axlr_improve` 1.0, instance `inst-2`. It merges only with the person's approval.\n\n" +
		"## Criteria\n\naxlr_logs returns the log.\n\n" +
		"## Scope\n\nactivities only\n\n" +
		"## Summary\n\nAdd axlr_logs.\n\n" +
		"## Evidence\n\nCheck command `go test -run TestLogs ./activities` failed before the change and passed after it, run by AXLR.\n"
	if got != want {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
}

func TestBodyLimits(t *testing.T) {
	big := strings.Repeat("é", 5000) // 10,000 bytes
	body := RepairBody(RepairText{Instance: "i", Cause: big, Fix: big, Summary: big, RedRounds: []string{big}})
	if !utf8.ValidString(body) {
		t.Fatal("body is not valid UTF-8")
	}
	sections := strings.Split(body, "## ")
	for _, s := range sections[1:] {
		name, text, _ := strings.Cut(s, "\n\n")
		text, _, _ = strings.Cut(text, "\n\n")
		limit := map[string]int{"Cause": MaxSection, "Fix": MaxSection, "Summary": MaxSummary}[name]
		if len(text) > limit || !strings.HasSuffix(text, "…") {
			t.Errorf("%s is %d bytes (limit %d), ends %q", name, len(text), limit, text[len(text)-6:])
		}
	}
	_, round, _ := strings.Cut(body, "Check round 2 after a red round: ")
	if round = strings.TrimSuffix(round, "\n"); len(round) > MaxRoundNote {
		t.Errorf("round line is %d bytes", len(round))
	}
	ib := ImprovementBody(ImprovementText{Instance: "i", Criteria: big, Scope: big})
	for _, s := range strings.Split(ib, "## ")[1:] {
		_, text, _ := strings.Cut(s, "\n\n")
		if text = strings.TrimSpace(text); len(text) > MaxSection {
			t.Errorf("improvement section is %d bytes", len(text))
		}
	}
}

func TestEvidenceCommandWithBackticks(t *testing.T) {
	body := RepairBody(RepairText{Instance: "i", Check: "sh -c `echo`"})
	if !strings.Contains(body, "Check command `` sh -c `echo` `` failed") {
		t.Fatalf("body %q", body)
	}
}

func TestCommitTrailer(t *testing.T) {
	if got := CommitTrailer(Repair, "inst-1"); got != "Repaired-by: AXLR axlr_repair 1.0 inst-1" {
		t.Fatalf("repair trailer %q", got)
	}
	if got := CommitTrailer(Improve, "inst-2"); got != "Improved-by: AXLR axlr_improve 1.0 inst-2" {
		t.Fatalf("improve trailer %q", got)
	}
}

func TestIssueNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want bool
	}{
		{"#123", 123, true},
		{"  #7\n", 7, true},
		{"#", 0, false},
		{"#0", 0, false},
		{"#12a", 0, false},
		{"123", 0, false},
		{"# 12", 0, false},
		{"#1234567890", 0, false},
		{"fix #12", 0, false},
	} {
		n, ok := IssueNumber(tc.in)
		if n != tc.n || ok != tc.want {
			t.Errorf("IssueNumber(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.want)
		}
	}
}

func TestIssueBrief(t *testing.T) {
	got := IssueBrief("acme/app", 12, " crash ", "body\n", "https://x/12")
	if want := "Issue #12 of acme/app: crash\n\nbody\n\nhttps://x/12"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	long := IssueBrief("acme/app", 1, "t", strings.Repeat("é", MaxBrief), "u")
	if len(long) > MaxBrief || !strings.HasSuffix(long, "…") {
		t.Fatalf("a long issue's brief is %d bytes, ends %q", len(long), long[len(long)-8:])
	}
}
