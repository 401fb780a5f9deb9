package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"syscall"
	"unicode/utf8"
)

// SearchArgs are the arguments of search.
type SearchArgs struct {
	// Pattern is a Go RE2 expression, or text when Literal is true.
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	Literal    bool   `json:"literal,omitempty"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	// ContextLines defaults to 0 and may be at most 20.
	ContextLines *int64 `json:"context_lines,omitempty"`
	// MaxResults defaults to 50 and may be at most 200.
	MaxResults *int64 `json:"max_results,omitempty"`
	Offset     *int64 `json:"offset,omitempty"`
	// MaxBytes bounds the encoded output; default 64 KiB, at most 1 MiB.
	MaxBytes *int64 `json:"max_bytes,omitempty"`
}

// SearchMatch is the first match of one line.
type SearchMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	// Column is the 1-based byte column of the match in the line.
	Column int      `json:"column"`
	Text   string   `json:"text"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
	// Truncated is true when the line or a context line was cut.
	Truncated bool `json:"truncated,omitempty"`
}

// SearchOutput is the output of search.
type SearchOutput struct {
	Matches      []SearchMatch `json:"matches"`
	FilesScanned int           `json:"files_scanned"`
	FilesSkipped int           `json:"files_skipped"`
	NextOffset   *int64        `json:"next_offset,omitempty"`
	// Truncated is true when more matches follow this page.
	Truncated    bool `json:"truncated"`
	LimitReached bool `json:"limit_reached"`
}

type searchRequest struct {
	re                         *regexp.Regexp
	path                       string
	glob                       glob
	context                    int
	maxResults, offset, maxLen int64
}

func parseSearch(raw json.RawMessage) (searchRequest, *Error) {
	var a SearchArgs
	if err := decodeArgs(Search, raw, &a, "pattern"); err != nil {
		return searchRequest{}, err
	}
	if a.Pattern == "" {
		return searchRequest{}, newError(CodeInvalidArguments, "pattern must not be empty")
	}
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, rerr := regexp.Compile(expr)
	if rerr != nil {
		return searchRequest{}, newError(CodeInvalidArguments, "pattern %s is not a valid RE2 expression: %v", quote(a.Pattern), rerr)
	}
	r := searchRequest{re: re}
	var err *Error
	if r.path, err = cleanPath("path", a.Path); err != nil {
		return searchRequest{}, err
	}
	if r.glob, err = parseGlob(a.Glob); err != nil {
		return searchRequest{}, err
	}
	lines, err := limit("context_lines", a.ContextLines, 0, 0, maxContextLines, "line")
	if err != nil {
		return searchRequest{}, err
	}
	r.context = int(lines)
	if r.maxResults, err = limit("max_results", a.MaxResults, defaultMaxResults, 1, maxMaxResults, "result"); err != nil {
		return searchRequest{}, err
	}
	if r.offset, err = limit("offset", a.Offset, 0, 0, -1, ""); err != nil {
		return searchRequest{}, err
	}
	if r.maxLen, err = limit("max_bytes", a.MaxBytes, defaultPageBytes, 1, maxPageBytes, "byte"); err != nil {
		return searchRequest{}, err
	}
	return r, nil
}

type searcher struct {
	w       *Workspace
	r       searchRequest
	page    *page[SearchMatch]
	files   int // regular files met that pass the glob
	read    int64
	scanned int
	skipped int
	limited bool
}

func (w *Workspace) search(ctx context.Context, r searchRequest) (SearchOutput, *Error) {
	fi, err := w.root.Lstat(r.path)
	if err != nil {
		return SearchOutput{}, fsError("path", r.path, err)
	}
	s := &searcher{w: w, r: r, page: newPage[SearchMatch](r.offset, r.maxResults, r.maxLen, "match")}
	if err := s.page.sizeEnvelope(func(next *int64) any {
		return SearchOutput{Matches: []SearchMatch{}, FilesScanned: maxCount, FilesSkipped: maxCount, NextOffset: next}
	}); err != nil {
		return SearchOutput{}, err
	}

	var serr *Error
	switch {
	case fi.IsDir():
		entries, err := w.readDir(r.path)
		if err != nil {
			return SearchOutput{}, fsError("path", r.path, err)
		}
		_, serr = s.walk(ctx, r.path, entries)
	case fi.Mode().IsRegular():
		serr = s.one(r.path, fi)
	case fi.Mode()&fs.ModeSymlink != 0:
		return SearchOutput{}, newError(CodeNotSearchable, "path %s is a symbolic link, which search does not follow", quote(r.path))
	default:
		return SearchOutput{}, newError(CodeNotSearchable, "path %s is not a regular file or a directory", quote(r.path))
	}
	if serr != nil {
		return SearchOutput{}, serr
	}
	return SearchOutput{
		Matches:      s.page.items,
		FilesScanned: s.scanned,
		FilesSkipped: s.skipped,
		NextOffset:   s.page.next(),
		Truncated:    s.page.more,
		LimitReached: s.limited,
	}, nil
}

// one searches the single file that path names.
func (s *searcher) one(rel string, fi fs.FileInfo) *Error {
	data, reason, err := s.w.loadText(rel, fi)
	if err != nil {
		return fsError("path", rel, err)
	}
	if reason != "" {
		return newError(CodeNotSearchable, "path %s is not searchable: %s", quote(rel), reason)
	}
	s.scanned++
	_, serr := s.scan(rel, data)
	return serr
}

// walk searches the entries of the directory rel, depth first. It returns
// false when the search stops: the page is full or a limit was reached.
func (s *searcher) walk(ctx context.Context, rel string, entries []fs.DirEntry) (bool, *Error) {
	for _, e := range entries {
		if ctx.Err() != nil {
			return false, newError(CodeCancelled, "search was cancelled")
		}
		if neverEntered(e.Name()) {
			// Whatever its type: a .git file is the gitfile of a worktree
			// or a submodule, git's store as much as a .git directory.
			continue
		}
		child := join(rel, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			sub, err := s.w.readDir(child)
			if err != nil {
				s.skipped++
				continue
			}
			if more, err := s.walk(ctx, child, sub); !more || err != nil {
				return false, err
			}
		case t.IsRegular():
			if !s.r.glob.match(child) {
				continue
			}
			if more, err := s.file(child, e); !more || err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

func (s *searcher) file(rel string, e fs.DirEntry) (bool, *Error) {
	if s.files >= maxSearchFiles || s.read >= maxSearchRead {
		s.limited = true
		return false, nil
	}
	s.files++
	fi, err := e.Info()
	if err != nil {
		s.skipped++
		return true, nil
	}
	data, reason, err := s.w.loadText(rel, fi)
	s.read += int64(len(data))
	if err != nil || reason != "" {
		s.skipped++
		return true, nil
	}
	s.scanned++
	return s.scan(rel, data)
}

// loadText reads the regular file rel, which must still be the file want
// describes (search never follows a symbolic link). A file search skips comes
// back with the reason, and with the bytes read.
func (w *Workspace) loadText(rel string, want fs.FileInfo) ([]byte, string, error) {
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, want) {
		return nil, "it changed while it was being opened", nil
	}
	if fi.Size() > maxFileBytes {
		return nil, "it is over 1 MiB", nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return data, "", err
	}
	switch {
	case len(data) > maxFileBytes:
		return data, "it is over 1 MiB", nil
	case bytes.IndexByte(data[:min(len(data), binaryProbeBytes)], 0) >= 0:
		return data, "it has a NUL byte in its first 8 KiB", nil
	case !utf8.Valid(data):
		return data, "it is not UTF-8 text", nil
	}
	return data, "", nil
}

// scan matches the lines of one file.
func (s *searcher) scan(rel string, data []byte) (bool, *Error) {
	lines := splitLines(string(data))
	for i, line := range lines {
		loc := s.r.re.FindStringIndex(line)
		if loc == nil || s.page.skip() {
			continue
		}
		m := SearchMatch{Path: rel, Line: i + 1, Column: loc[0] + 1}
		m.Text, m.Truncated = cutLine(line, loc[0], loc[1])
		if s.r.context > 0 {
			var cut bool
			m.Before, cut = cutLines(lines[max(0, i-s.r.context):i])
			m.Truncated = m.Truncated || cut
			m.After, cut = cutLines(lines[i+1 : min(len(lines), i+1+s.r.context)])
			m.Truncated = m.Truncated || cut
		}
		if more, err := s.page.add(m); !more || err != nil {
			return false, err
		}
	}
	return true, nil
}

// splitLines splits text at "\n", without a final empty line, and drops the
// "\r" of a "\r\n" line end.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// cutLine returns a line of at most maxLineBytes bytes as it is. A longer one
// is cut at character boundaries to at most maxLineBytes bytes around the
// match [start, end), each cut end marked with "…"; cut reports it.
func cutLine(line string, start, end int) (text string, cut bool) {
	if len(line) <= maxLineBytes {
		return line, false
	}
	lo := start
	if end-start < maxLineBytes {
		lo = start - (maxLineBytes-(end-start))/2
	}
	lo = max(0, min(lo, len(line)-maxLineBytes))
	hi := lo + maxLineBytes
	for lo < len(line) && !utf8.RuneStart(line[lo]) {
		lo++
	}
	for hi > lo && hi < len(line) && !utf8.RuneStart(line[hi]) {
		hi--
	}
	text = line[lo:hi]
	if lo > 0 {
		text = "…" + text
	}
	if hi < len(line) {
		text += "…"
	}
	return text, true
}

// cutLines cuts context lines, which hold no match, from their start.
func cutLines(lines []string) ([]string, bool) {
	out := make([]string, len(lines))
	anyCut := false
	for i, l := range lines {
		var cut bool
		out[i], cut = cutLine(l, 0, 0)
		anyCut = anyCut || cut
	}
	return out, anyCut
}
