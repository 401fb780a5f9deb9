package tools

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// searchTree builds a workspace for search and list tests.
func searchTree(t testing.TB) (*Workspace, string) {
	t.Helper()
	w, dir := newWorkspace(t)
	files := map[string]string{
		"Z.txt":          "Alpha upper file\n",
		"a.go":           "package a\n\nfunc Alpha() {}\n",
		"b.txt":          "alpha\nbeta\nALPHA alpha\r\nhéllo alpha\n",
		"big.txt":        strings.Repeat("alpha\n", maxFileBytes/6+1),
		"bin.dat":        "alpha\x00\n",
		"latin.txt":      "alpha caf\xe9\n",
		"sub/c.go":       "x alpha\n",
		"sub/d/e.go":     "alpha e\n",
		"sub/.git/z":     "alpha nested git\n",
		"sub/.kernel/k":  "alpha nested kmp\n",
		"sub-x.txt":      "alpha dash\n",
		".git/config":    "alpha git\n",
		".axlr/session":  "alpha export\n",
		".kernel/store":  "alpha kmp\n",
		"empty/.keep":    "",
		"crlf/win.txt":   "one\r\nalpha\r\n",
		"ctx/lines.txt":  "l1\nl2\nalpha 3\nl4\nl5\nl6\nalpha 7\n",
		"deep/1/2/3/4.x": "alpha deep\n",
	}
	for p, c := range files {
		writeFile(t, filepath.Join(dir, p), c)
	}
	symlink(t, "a.go", filepath.Join(dir, "link.go"))
	symlink(t, "sub", filepath.Join(dir, "sublink"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return w, dir
}

func matchKeys(ms []SearchMatch) []string {
	keys := make([]string, len(ms))
	for i, m := range ms {
		keys[i] = fmt.Sprintf("%s:%d:%d", m.Path, m.Line, m.Column)
	}
	return keys
}

func TestSearch(t *testing.T) {
	w, _ := searchTree(t)
	all := []string{"Z.txt:1:1", "a.go:3:6", "b.txt:1:1", "b.txt:3:1", "b.txt:4:8", "crlf/win.txt:2:1", "ctx/lines.txt:3:1", "ctx/lines.txt:7:1",
		"deep/1/2/3/4.x:1:1", "sub/c.go:1:3", "sub/d/e.go:1:1", "sub-x.txt:1:1"}
	tests := []struct {
		name    string
		args    map[string]any
		want    []string
		scanned int
		skipped int
	}{
		{"ignore case, depth first in byte order", map[string]any{"pattern": "alpha", "ignore_case": true}, all, 10, 3},
		{"case sensitive", map[string]any{"pattern": "Alpha"}, []string{"Z.txt:1:1", "a.go:3:6"}, 10, 3},
		{"regular expression", map[string]any{"pattern": `^x\s+al`}, []string{"sub/c.go:1:1"}, 10, 3},
		{"literal", map[string]any{"pattern": "(a", "literal": true}, nil, 10, 3},
		{"literal ignoring case", map[string]any{"pattern": "ALPHA E", "literal": true, "ignore_case": true}, []string{"sub/d/e.go:1:1"}, 10, 3},
		{"first match of a line", map[string]any{"pattern": "alpha", "path": "b.txt"}, []string{"b.txt:1:1", "b.txt:3:7", "b.txt:4:8"}, 1, 0},
		{"path directory", map[string]any{"pattern": "alpha", "path": "sub"}, []string{"sub/c.go:1:3", "sub/d/e.go:1:1"}, 2, 0},
		{"path with separator", map[string]any{"pattern": "alpha", "path": "sub/"}, []string{"sub/c.go:1:3", "sub/d/e.go:1:1"}, 2, 0},
		{"path inside .git is searched", map[string]any{"pattern": "alpha", "path": ".git"}, []string{".git/config:1:1"}, 1, 0},
		{"path inside .axlr is searched", map[string]any{"pattern": "alpha", "path": ".axlr/"}, []string{".axlr/session:1:1"}, 1, 0},
		{"glob on base names", map[string]any{"pattern": "alpha", "ignore_case": true, "glob": "*.go"}, []string{"a.go:3:6", "sub/c.go:1:3", "sub/d/e.go:1:1"}, 3, 0},
		{"glob on the relative path", map[string]any{"pattern": "alpha", "glob": "sub/*.go"}, []string{"sub/c.go:1:3"}, 1, 0},
		{"glob relative to the workspace under a path", map[string]any{"pattern": "alpha", "path": "sub", "glob": "sub/d/*"}, []string{"sub/d/e.go:1:1"}, 1, 0},
		{"glob below any directory", map[string]any{"pattern": "alpha", "glob": "**/d/*.go"}, []string{"sub/d/e.go:1:1"}, 1, 0},
		{"glob below any directory or none", map[string]any{"pattern": "alpha", "ignore_case": true, "glob": "**/*.go"}, []string{"a.go:3:6", "sub/c.go:1:3", "sub/d/e.go:1:1"}, 3, 0},
		{"glob with a leading **/ and a slash", map[string]any{"pattern": "alpha", "glob": "**/2/3/*"}, []string{"deep/1/2/3/4.x:1:1"}, 1, 0},
		{"glob that matches nothing", map[string]any{"pattern": "alpha", "glob": "*.rs"}, nil, 0, 0},
		{"skipped kinds are counted", map[string]any{"pattern": "alpha", "glob": "b*"}, []string{"b.txt:1:1", "b.txt:3:7", "b.txt:4:8"}, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustCall[SearchOutput](t, w, Search, tt.args)
			if !slices.Equal(matchKeys(got.Matches), tt.want) && !(len(got.Matches) == 0 && len(tt.want) == 0) {
				t.Errorf("matches = %v\nwant %v", matchKeys(got.Matches), tt.want)
			}
			if got.FilesScanned != tt.scanned || got.FilesSkipped != tt.skipped {
				t.Errorf("scanned %d skipped %d, want %d and %d", got.FilesScanned, got.FilesSkipped, tt.scanned, tt.skipped)
			}
			if got.NextOffset != nil || got.Truncated || got.LimitReached {
				t.Errorf("one page expected: %+v", got)
			}
		})
	}
}

func TestSearchMatchFields(t *testing.T) {
	w, _ := searchTree(t)
	got := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "alpha", "path": "ctx", "context_lines": 2})
	want := []SearchMatch{
		{Path: "ctx/lines.txt", Line: 3, Column: 1, Text: "alpha 3", Before: []string{"l1", "l2"}, After: []string{"l4", "l5"}},
		{Path: "ctx/lines.txt", Line: 7, Column: 1, Text: "alpha 7", Before: []string{"l5", "l6"}},
	}
	if fmt.Sprint(got.Matches) != fmt.Sprint(want) {
		t.Errorf("matches = %+v\nwant %+v", got.Matches, want)
	}
	got = mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "alpha", "path": "crlf"})
	if len(got.Matches) != 1 || got.Matches[0].Text != "alpha" {
		t.Errorf("CRLF line = %+v", got.Matches)
	}
	raw := mustCall[map[string]any](t, w, Search, map[string]any{"pattern": "beta", "path": "b.txt"})
	m := raw["matches"].([]any)[0].(map[string]any)
	for _, absent := range []string{"before", "after", "truncated"} {
		if _, ok := m[absent]; ok {
			t.Errorf("match has %s without context or cut: %v", absent, m)
		}
	}
	for _, field := range []string{"matches", "files_scanned", "files_skipped", "truncated", "limit_reached"} {
		if _, ok := raw[field]; !ok {
			t.Errorf("output lacks %s: %v", field, raw)
		}
	}
}

func TestSearchLineCutting(t *testing.T) {
	w, dir := newWorkspace(t)
	mid := strings.Repeat("x", 500) + "NEEDLE" + strings.Repeat("y", 500)
	wide := strings.Repeat("é", 250) + "NEEDLE" + strings.Repeat("€", 200)
	start := "NEEDLE" + strings.Repeat("z", 400)
	end := strings.Repeat("w", 400) + "NEEDLE"
	long := "N" + strings.Repeat("E", 400)
	exact := strings.Repeat("q", 294) + "NEEDLE"
	writeFile(t, filepath.Join(dir, "lines.txt"), strings.Join([]string{mid, wide, start, end, long, exact}, "\n")+"\n")

	got := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "NE+(DLE)?"})
	if len(got.Matches) != 6 {
		t.Fatalf("%d matches: %v", len(got.Matches), matchKeys(got.Matches))
	}
	tests := []struct {
		name             string
		m                SearchMatch
		column           int
		lead, trail, cut bool
		contains         string
	}{
		{"middle", got.Matches[0], 501, true, true, true, "NEEDLE"},
		{"multibyte", got.Matches[1], 501, true, true, true, "NEEDLE"},
		{"at the start", got.Matches[2], 1, false, true, true, "NEEDLE"},
		{"at the end", got.Matches[3], 401, true, false, true, "NEEDLE"},
		{"match longer than the cut", got.Matches[4], 1, false, true, true, "NEEE"},
		{"exactly 300 bytes", got.Matches[5], 295, false, false, false, exact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.m
			text := m.Text
			body := strings.TrimSuffix(strings.TrimPrefix(text, "…"), "…")
			if m.Column != tt.column || strings.HasPrefix(text, "…") != tt.lead || strings.HasSuffix(text, "…") != tt.trail ||
				m.Truncated != tt.cut || !strings.Contains(text, tt.contains) {
				t.Errorf("column %d text %q truncated %v", m.Column, text, m.Truncated)
			}
			if len(body) > maxLineBytes || !utf8.ValidString(text) {
				t.Errorf("cut text is %d bytes, valid UTF-8 %v", len(body), utf8.ValidString(text))
			}
		})
	}

	// Context lines are cut from their start, and mark the match truncated.
	writeFile(t, filepath.Join(dir, "ctx.txt"), strings.Repeat("c", 301)+"\nctx NEEDLE\n"+strings.Repeat("é", 200)+"\n")
	got = mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "NEEDLE", "path": "ctx.txt", "context_lines": 1})
	want := SearchMatch{Path: "ctx.txt", Line: 2, Column: 5, Text: "ctx NEEDLE", Truncated: true,
		Before: []string{strings.Repeat("c", 300) + "…"}, After: []string{strings.Repeat("é", 150) + "…"}}
	if len(got.Matches) != 1 || fmt.Sprint(got.Matches[0]) != fmt.Sprint(want) {
		t.Errorf("context match = %+v", got.Matches)
	}
}

func TestSearchErrors(t *testing.T) {
	w, _ := searchTree(t)
	tests := []struct {
		name string
		args map[string]any
		code string
		msg  string
	}{
		{"missing path", map[string]any{"pattern": "x", "path": "nope"}, CodeNotFound, `path "nope" does not exist`},
		{"symlink to a file", map[string]any{"pattern": "x", "path": "link.go"}, CodeNotSearchable, `path "link.go" is a symbolic link, which search does not follow`},
		{"symlink to a directory", map[string]any{"pattern": "x", "path": "sublink/"}, CodeNotSearchable, `path "sublink" is a symbolic link`},
		{"binary file", map[string]any{"pattern": "x", "path": "bin.dat"}, CodeNotSearchable, `path "bin.dat" is not searchable: it has a NUL byte in its first 8 KiB`},
		{"file over 1 MiB", map[string]any{"pattern": "x", "path": "big.txt"}, CodeNotSearchable, `path "big.txt" is not searchable: it is over 1 MiB`},
		{"not UTF-8", map[string]any{"pattern": "x", "path": "latin.txt"}, CodeNotSearchable, `path "latin.txt" is not searchable: it is not UTF-8 text`},
		{"named pipe", map[string]any{"pattern": "x", "path": "fifo"}, CodeNotSearchable, `path "fifo" is not a regular file or a directory`},
		{"max_bytes too small", map[string]any{"pattern": "alpha", "max_bytes": 60}, CodeLimitTooSmall, "max_bytes 60 is too small to hold one match, which needs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call[SearchOutput](t, w, Search, tt.args)
			wantError(t, err, tt.code, tt.msg)
		})
	}
}

// manyMatches writes n files of m matching lines each.
func manyMatches(t testing.TB, dir string, n, m int) []string {
	var want []string
	for i := range n {
		name := fmt.Sprintf("f%02d.txt", i)
		var b strings.Builder
		for j := range m {
			fmt.Fprintf(&b, "match %d of %s %s\n", j, name, strings.Repeat("é", i%5*20))
			want = append(want, fmt.Sprintf("%s:%d:1", name, j+1))
		}
		writeFile(t, filepath.Join(dir, name), b.String())
	}
	return want
}

func TestSearchPaging(t *testing.T) {
	w, dir := newWorkspace(t)
	want := manyMatches(t, dir, 9, 7) // 63 matches
	tests := []struct {
		name      string
		args      map[string]any
		pageSizes []int
	}{
		{"default max_results", map[string]any{}, []int{50, 13}},
		{"max_results", map[string]any{"max_results": 20}, []int{20, 20, 20, 3}},
		{"max_results dividing evenly", map[string]any{"max_results": 21}, []int{21, 21, 21}},
		{"max_bytes", map[string]any{"max_bytes": 1500}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var keys []string
			var sizes []int
			offset := int64(0)
			for page := 0; ; page++ {
				a := map[string]any{"pattern": "^match"}
				for k, v := range tt.args {
					a[k] = v
				}
				if offset > 0 {
					a["offset"] = offset
				}
				raw, err := w.Call(t.Context(), Search, args(t, a))
				if err != nil {
					t.Fatal(err)
				}
				if mb, ok := tt.args["max_bytes"].(int); ok && len(raw) > mb {
					t.Errorf("page %d is %d bytes, over max_bytes %d", page, len(raw), mb)
				}
				out := decode[SearchOutput](t, raw)
				if len(out.Matches) == 0 {
					t.Fatalf("page %d is empty", page)
				}
				keys = append(keys, matchKeys(out.Matches)...)
				sizes = append(sizes, len(out.Matches))
				if out.NextOffset == nil {
					if out.Truncated {
						t.Error("last page says truncated")
					}
					break
				}
				if !out.Truncated || *out.NextOffset != offset+int64(len(out.Matches)) {
					t.Fatalf("page %d: next_offset %d truncated %v", page, *out.NextOffset, out.Truncated)
				}
				offset = *out.NextOffset
			}
			if !slices.Equal(keys, want) {
				t.Errorf("paged matches = %v\nwant %v", keys, want)
			}
			if tt.pageSizes != nil && !slices.Equal(sizes, tt.pageSizes) {
				t.Errorf("page sizes = %v, want %v", sizes, tt.pageSizes)
			}
			if tt.pageSizes == nil && len(sizes) < 3 {
				t.Errorf("max_bytes gave only %d pages", len(sizes))
			}
		})
	}
	past := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "^match", "offset": 63})
	if len(past.Matches) != 0 || past.NextOffset != nil || past.Truncated {
		t.Errorf("offset at the end = %+v", past)
	}
}

func TestSearchReadLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 65 MiB")
	}
	w, dir := newWorkspace(t)
	line := strings.Repeat("r", 1023) + "\n"
	content := strings.Repeat(line, maxFileBytes/len(line)) // exactly 1 MiB
	for i := range maxSearchRead/maxFileBytes + 1 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%02d", i)), content)
	}
	got := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "needle"})
	if !got.LimitReached || got.FilesScanned != maxSearchRead/maxFileBytes || got.FilesSkipped != 0 {
		t.Errorf("scanned %d, skipped %d, limit_reached %v", got.FilesScanned, got.FilesSkipped, got.LimitReached)
	}
}

// TestGitFiles: a .git file (the gitfile of a worktree or a submodule) is
// passed over by search as a .git directory is, and listed, like one, by
// list; an .axlr or .kernel file is passed over by search and left out by
// list. A path naming one is searched.
func TestGitFiles(t *testing.T) {
	w, dir := newWorkspace(t)
	for p, c := range map[string]string{
		".git":           "gitdir: /src/alpha/.git/worktrees/ws\n",
		"wt/.git":        "gitdir: ../alpha/.git/modules/wt\n",
		"wt/.kernel":     "alpha kmp\n",
		"wt/.axlr":       "alpha export\n",
		"wt/a.txt":       "alpha\n",
		"sub/.git/HEAD":  "alpha head\n",
		"sub/.gitignore": "alpha*\n",
	} {
		writeFile(t, filepath.Join(dir, p), c)
	}
	searches := []struct {
		name    string
		args    map[string]any
		want    []string
		scanned int
	}{
		{"workspace", map[string]any{"pattern": "alpha"}, []string{"sub/.gitignore:1:1", "wt/a.txt:1:1"}, 2},
		{"below a path", map[string]any{"pattern": "alpha", "path": "wt"}, []string{"wt/a.txt:1:1"}, 1},
		{"glob naming them", map[string]any{"pattern": "alpha", "glob": ".*"}, []string{"sub/.gitignore:1:1"}, 1},
		{"path naming one", map[string]any{"pattern": "alpha", "path": "wt/.git"}, []string{"wt/.git:1:12"}, 1},
	}
	for _, tt := range searches {
		t.Run("search "+tt.name, func(t *testing.T) {
			got := mustCall[SearchOutput](t, w, Search, tt.args)
			if !slices.Equal(matchKeys(got.Matches), tt.want) || got.FilesScanned != tt.scanned || got.FilesSkipped != 0 {
				t.Errorf("matches %v scanned %d skipped %d, want %v and %d scanned", matchKeys(got.Matches), got.FilesScanned, got.FilesSkipped, tt.want, tt.scanned)
			}
		})
	}
	t.Run("list", func(t *testing.T) {
		got := mustCall[ListOutput](t, w, List, map[string]any{"recursive": true})
		want := []string{".git:file:37", "sub:dir", "sub/.git:dir", "sub/.gitignore:file:7", "wt:dir", "wt/.git:file:33", "wt/a.txt:file:6"}
		if !slices.Equal(entryKeys(got.Entries), want) {
			t.Errorf("entries = %q\nwant %q", entryKeys(got.Entries), want)
		}
	})
}
