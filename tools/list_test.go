package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func entryKeys(es []ListEntry) []string {
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = e.Path + ":" + e.Type
		if e.Size != nil {
			keys[i] += fmt.Sprintf(":%d", *e.Size)
		}
	}
	return keys
}

func TestList(t *testing.T) {
	w, _ := searchTree(t)
	top := []string{".git:dir", "Z.txt:file:17", "a.go:file:27", "b.txt:file:37", "big.txt:file:1048578", "bin.dat:file:7",
		"crlf:dir", "ctx:dir", "deep:dir", "empty:dir", "fifo:other", "latin.txt:file:11", "link.go:symlink",
		"sub:dir", "sub-x.txt:file:11", "sublink:symlink"}
	tests := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"workspace, byte order, .axlr and .kernel left out", map[string]any{}, top},
		{"max_depth needs recursive", map[string]any{"max_depth": 5}, top},
		{"recursive to the default depth 3", map[string]any{"recursive": true}, []string{
			".git:dir", "Z.txt:file:17", "a.go:file:27", "b.txt:file:37", "big.txt:file:1048578", "bin.dat:file:7",
			"crlf:dir", "crlf/win.txt:file:12", "ctx:dir", "ctx/lines.txt:file:31",
			"deep:dir", "deep/1:dir", "deep/1/2:dir", "empty:dir", "empty/.keep:file:0",
			"fifo:other", "latin.txt:file:11", "link.go:symlink",
			"sub:dir", "sub/.git:dir", "sub/c.go:file:8", "sub/d:dir", "sub/d/e.go:file:8",
			"sub-x.txt:file:11", "sublink:symlink"}},
		{"recursive max_depth", map[string]any{"path": "deep", "recursive": true, "max_depth": 10}, []string{
			"deep/1:dir", "deep/1/2:dir", "deep/1/2/3:dir", "deep/1/2/3/4.x:file:11"}},
		{"recursive max_depth 1", map[string]any{"path": "deep", "recursive": true, "max_depth": 1}, []string{"deep/1:dir"}},
		{"path with separator", map[string]any{"path": "sub/"}, []string{"sub/.git:dir", "sub/c.go:file:8", "sub/d:dir"}},
		{"inside .git", map[string]any{"path": ".git"}, []string{".git/config:file:10"}},
		{"inside .axlr", map[string]any{"path": ".axlr", "recursive": true}, []string{".axlr/session:file:13"}},
		{"inside .kernel", map[string]any{"path": "sub/.kernel/"}, []string{"sub/.kernel/k:file:17"}},
		{"a file is described", map[string]any{"path": "a.go", "glob": "*.rs"}, []string{"a.go:file:27"}},
		{"a symlink is described", map[string]any{"path": "sublink/"}, []string{"sublink:symlink"}},
		{"a named pipe is described", map[string]any{"path": "fifo"}, []string{"fifo:other"}},
		{"glob on base names", map[string]any{"recursive": true, "glob": "*.go"}, []string{"a.go:file:27", "link.go:symlink", "sub/c.go:file:8", "sub/d/e.go:file:8"}},
		{"glob on the relative path", map[string]any{"recursive": true, "glob": "sub/*"}, []string{"sub/.git:dir", "sub/c.go:file:8", "sub/d:dir"}},
		{"glob below any directory", map[string]any{"recursive": true, "max_depth": 9, "glob": "**/2/*"}, []string{"deep/1/2/3:dir"}},
		{"glob that matches directories", map[string]any{"recursive": true, "glob": "d*"}, []string{"deep:dir", "sub/d:dir"}},
		{"empty directory", map[string]any{"path": "empty/.keep/"}, []string{"empty/.keep:file:0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustCall[ListOutput](t, w, List, tt.args)
			if !slices.Equal(entryKeys(got.Entries), tt.want) {
				t.Errorf("entries = %q\nwant %q", entryKeys(got.Entries), tt.want)
			}
			if got.NextOffset != nil || got.Truncated || got.LimitReached {
				t.Errorf("one page expected: %+v", got)
			}
		})
	}
}

func TestListErrors(t *testing.T) {
	w, _ := searchTree(t)
	_, err := call[ListOutput](t, w, List, map[string]any{"path": "nope"})
	wantError(t, err, CodeNotFound, `path "nope" does not exist`)
	_, err = call[ListOutput](t, w, List, map[string]any{"path": "a.go/x"})
	wantError(t, err, CodeNotFound, `path "a.go/x" does not exist`)
	_, err = call[ListOutput](t, w, List, map[string]any{"max_bytes": 40})
	wantError(t, err, CodeLimitTooSmall, "max_bytes 40 is too small to hold one entry, which needs")
}

func TestListPaging(t *testing.T) {
	w, dir := newWorkspace(t)
	var want []string
	for i := range 6 {
		d := fmt.Sprintf("d%d", i)
		mkdir(t, filepath.Join(dir, d))
		want = append(want, d+":dir")
		for j := range 5 {
			name := fmt.Sprintf("%s/file-%d-%s.txt", d, j, strings.Repeat("n", i*10))
			writeFile(t, filepath.Join(dir, name), "x")
			want = append(want, name+":file:1")
		}
	}
	tests := []struct {
		name  string
		args  map[string]any
		sizes []int
	}{
		{"default max_entries", map[string]any{}, []int{36}},
		{"max_entries", map[string]any{"max_entries": 10}, []int{10, 10, 10, 6}},
		{"max_entries 1", map[string]any{"max_entries": 1}, slices.Repeat([]int{1}, 36)},
		{"max_bytes", map[string]any{"max_bytes": 400}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var keys []string
			var sizes []int
			offset := int64(0)
			for page := 0; ; page++ {
				a := map[string]any{"recursive": true, "offset": offset}
				for k, v := range tt.args {
					a[k] = v
				}
				raw, err := w.Call(t.Context(), List, args(t, a))
				if err != nil {
					t.Fatal(err)
				}
				if mb, ok := tt.args["max_bytes"].(int); ok && len(raw) > mb {
					t.Errorf("page %d is %d bytes, over max_bytes %d", page, len(raw), mb)
				}
				out := decode[ListOutput](t, raw)
				if len(out.Entries) == 0 {
					t.Fatalf("page %d is empty", page)
				}
				keys = append(keys, entryKeys(out.Entries)...)
				sizes = append(sizes, len(out.Entries))
				if out.NextOffset == nil {
					break
				}
				if !out.Truncated || *out.NextOffset != offset+int64(len(out.Entries)) {
					t.Fatalf("page %d: next_offset %d truncated %v", page, *out.NextOffset, out.Truncated)
				}
				offset = *out.NextOffset
			}
			if !slices.Equal(keys, want) {
				t.Errorf("paged entries = %v\nwant %v", keys, want)
			}
			if tt.sizes != nil && !slices.Equal(sizes, tt.sizes) {
				t.Errorf("page sizes = %v, want %v", sizes, tt.sizes)
			}
			if tt.sizes == nil && len(sizes) < 4 {
				t.Errorf("max_bytes gave only %d pages", len(sizes))
			}
		})
	}
	past := mustCall[ListOutput](t, w, List, map[string]any{"recursive": true, "offset": 36})
	if len(past.Entries) != 0 || past.NextOffset != nil {
		t.Errorf("offset at the end = %+v", past)
	}
	single := mustCall[ListOutput](t, w, List, map[string]any{"path": "d0/file-0-.txt", "offset": 1})
	if len(single.Entries) != 0 {
		t.Errorf("described path past offset 0 = %+v", single)
	}
}

// TestWalkLimits builds 20,001 files once for the limits of list and search.
func TestWalkLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20,001 files")
	}
	w, dir := newWorkspace(t)
	for d := range 21 {
		mkdir(t, filepath.Join(dir, fmt.Sprintf("d%02d", d)))
	}
	for i := range maxSearchFiles + 1 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d/f%05d", i/1000, i))
		if err := os.WriteFile(p, []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("search stops after 20,000 files", func(t *testing.T) {
		got := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "needle", "max_results": 1, "offset": maxSearchFiles - 1})
		if !got.LimitReached || got.FilesScanned != maxSearchFiles || len(got.Matches) != 1 || got.NextOffset != nil {
			t.Fatalf("at the last file: %d matches, scanned %d, next %v, limit_reached %v", len(got.Matches), got.FilesScanned, deref(got.NextOffset), got.LimitReached)
		}
		if got.Matches[0].Path != "d19/f19999" {
			t.Errorf("last match in %s", got.Matches[0].Path)
		}
		past := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "needle", "offset": maxSearchFiles})
		if !past.LimitReached || len(past.Matches) != 0 || past.NextOffset != nil {
			t.Errorf("past the limit: %+v", past)
		}
		first := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "needle"})
		if first.LimitReached || first.NextOffset == nil || *first.NextOffset != 50 {
			t.Errorf("first page: next %v limit_reached %v", deref(first.NextOffset), first.LimitReached)
		}
		narrow := mustCall[SearchOutput](t, w, Search, map[string]any{"pattern": "needle", "glob": "d20/*"})
		if narrow.LimitReached || len(narrow.Matches) != 1 || narrow.Matches[0].Path != "d20/f20000" {
			t.Errorf("narrowed by glob: %+v", narrow)
		}
	})

	t.Run("list stops after 20,000 entries", func(t *testing.T) {
		// 21 directories and their files: the 20,000th entry is d19/f19979.
		got := mustCall[ListOutput](t, w, List, map[string]any{"recursive": true, "offset": maxListEntries - 1})
		if !got.LimitReached || len(got.Entries) != 1 || got.Entries[0].Path != "d19/f19979" || got.NextOffset != nil {
			t.Fatalf("at the limit: %v next %v limit_reached %v", entryKeys(got.Entries), deref(got.NextOffset), got.LimitReached)
		}
		past := mustCall[ListOutput](t, w, List, map[string]any{"recursive": true, "offset": maxListEntries + 5})
		if !past.LimitReached || len(past.Entries) != 0 {
			t.Errorf("past the limit: %+v", past)
		}
		narrow := mustCall[ListOutput](t, w, List, map[string]any{"path": "d20", "recursive": true})
		if narrow.LimitReached || len(narrow.Entries) != 1 {
			t.Errorf("narrowed by path: %+v", narrow)
		}
	})
}
