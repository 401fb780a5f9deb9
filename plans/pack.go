package plans

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/jsonargs"
)

// Pack is the context pack of task in the plan id of decomposition d, as
// its worker reads it first, built from fsys, the workspace:
//
//	Task <id> of plan <plan>, wave <n>: <goal>
//	Scope (the only files you may change): a.go, b.go (new)
//	Unit check: go test ./a
//	Test first: … (under test_first)
//	Do not change: … (when it protects files)
//	Interfaces shared by the plan: … (when the plan has interfaces)
//	--- a.go:1-41 ---
//	<the lines>
//
// A scope file that is not in the workspace is marked (new). Each cited
// line is shown with Margin lines either side, and regions of one file that
// overlap or touch are merged into one; files come in the order they are
// first cited, regions in line order.
//
// A citation that does not hold (its file missing, not text or over
// MaxCitedFile bytes, its line past the end, its quote of at least MinQuote
// characters not on that line with whitespace collapsed) or a pack over
// MaxPack bytes is refused with Defects, as is a decomposition whose waves
// cannot be computed. A workspace file that cannot be read is a defect
// naming the error. An unknown task is an error.
func Pack(id string, d Decomposition, task string, fsys fs.FS) (string, error) {
	i := slices.IndexFunc(d.Tasks, func(t ceremonies.PlanTask) bool { return t.ID == task })
	if i < 0 {
		return "", fmt.Errorf("context pack of plan %s: no task %q", id, task)
	}
	d = normalize(d)
	waves, defects := computeWaves(d.Tasks)
	if len(defects) > 0 {
		return "", defects
	}
	pack, defects := buildPack(id, d, i, waveOf(waves, task), fsys)
	if len(defects) > 0 {
		return "", defects
	}
	return pack, nil
}

// region is lines first to last (from 1) of a cited file.
type region struct {
	first, last int
}

// citedFile is a workspace file as a citation reads it: its lines, or why
// it cannot be cited.
type citedFile struct {
	lines   []string
	problem string
}

func buildPack(id string, d Decomposition, i, wave int, fsys fs.FS) (string, Defects) {
	t := d.Tasks[i]
	var ds Defects
	defect := func(format string, args ...any) {
		ds = append(ds, Defect{Tasks: []string{label(d.Tasks, i)}, Text: fmt.Sprintf(format, args...)})
	}
	scope := make([]string, 0, len(t.Scope))
	var tests []string
	for _, raw := range t.Scope {
		p, ok := CleanPath(raw)
		if !ok {
			defect("scope path %q is not inside the workspace; give a path relative to its root, without \"..\"", raw)
			continue
		}
		if test, _ := IsTestFile(p); test {
			tests = append(tests, p)
		}
		info, err := fs.Stat(fsys, p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			scope = append(scope, p+" (new)")
		case err != nil:
			defect("scope path %s cannot be read: %s", p, reason(err))
		case info.IsDir():
			defect("scope path %s is a directory; list the files the task changes", p)
		default:
			scope = append(scope, p)
		}
	}

	files := map[string]*citedFile{}
	var order []string // cited paths in the order first cited
	regions := map[string][]region{}
	for j, c := range t.Context {
		p, ok := CleanPath(c.Path)
		if !ok {
			defect("citation %d: path %q is not inside the workspace; give a path relative to its root, without \"..\"", j+1, c.Path)
			continue
		}
		f, read := files[p]
		if !read {
			f = readCited(fsys, p)
			files[p] = f
		}
		if f.problem != "" {
			defect("citation %d: %s", j+1, f.problem)
			continue
		}
		switch n := len(f.lines); {
		case c.Line < 1:
			defect("citation %d: line %d of %s; lines count from 1", j+1, c.Line, p)
			continue
		case c.Line > n:
			defect("citation %d: %s has %d %s; line %d is past its end", j+1, p, n, plural(n, "line", "lines"), c.Line)
			continue
		}
		line := collapse(f.lines[c.Line-1])
		if quote := collapse(c.Quote); utf8.RuneCountInString(quote) < MinQuote || !strings.Contains(line, quote) {
			defect("%s:%d does not contain the quote (at least %d characters); the line reads %s", p, c.Line, MinQuote, jsonargs.Quote(line))
			continue
		}
		if _, seen := regions[p]; !seen {
			order = append(order, p)
		}
		regions[p] = append(regions[p], region{max(1, c.Line-Margin), min(len(f.lines), c.Line+Margin)})
	}
	if len(ds) > 0 {
		return "", ds
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Task %s of plan %s, wave %d: %s\n", t.ID, id, wave, t.Goal)
	fmt.Fprintf(&b, "Scope (the only files you may change): %s\n", strings.Join(scope, ", "))
	fmt.Fprintf(&b, "Unit check: %s\n", t.UnitCheck)
	if t.TestFirst {
		in := ""
		if len(tests) > 0 {
			in = " in " + strings.Join(tests, ", ")
		}
		fmt.Fprintf(&b, "Test first: write a test%s that fails, and see the unit check fail, before you change the code; then make it pass.\n", in)
	}
	if len(t.Protect) > 0 {
		fmt.Fprintf(&b, "Do not change: %s\n", strings.Join(t.Protect, ", "))
	}
	if interfaces := strings.TrimSpace(d.Interfaces); interfaces != "" {
		fmt.Fprintf(&b, "Interfaces shared by the plan:\n%s\n", interfaces)
	}
	for _, p := range order {
		lines := files[p].lines
		for _, r := range merge(regions[p]) {
			fmt.Fprintf(&b, "--- %s:%d-%d ---\n", p, r.first, r.last)
			for _, l := range lines[r.first-1 : r.last] {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
	}
	pack := b.String()
	if len(pack) > MaxPack {
		defect("its context pack is %d bytes (at most %d); split the task or cite less", len(pack), MaxPack)
		return "", ds
	}
	return pack, nil
}

// readCited reads a cited file once for all its citations.
func readCited(fsys fs.FS, p string) *citedFile {
	info, err := fs.Stat(fsys, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &citedFile{problem: fmt.Sprintf("cited file %s does not exist; cite a file of the workspace", p)}
	case err != nil:
		return &citedFile{problem: fmt.Sprintf("cited file %s cannot be read: %s", p, reason(err))}
	case info.IsDir():
		return &citedFile{problem: fmt.Sprintf("cited path %s is a directory; cite a line of a file", p)}
	case info.Size() > MaxCitedFile:
		return &citedFile{problem: fmt.Sprintf("cited file %s is %d bytes; cite files of at most %d bytes", p, info.Size(), MaxCitedFile)}
	}
	data, err := fs.ReadFile(fsys, p)
	switch {
	case err != nil:
		return &citedFile{problem: fmt.Sprintf("cited file %s cannot be read: %s", p, reason(err))}
	case len(data) > MaxCitedFile:
		return &citedFile{problem: fmt.Sprintf("cited file %s is %d bytes; cite files of at most %d bytes", p, len(data), MaxCitedFile)}
	case bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data):
		return &citedFile{problem: fmt.Sprintf("cited file %s is not text; cite a source file", p)}
	}
	if len(data) == 0 {
		return &citedFile{}
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for k, l := range lines {
		lines[k] = strings.TrimSuffix(l, "\r")
	}
	return &citedFile{lines: lines}
}

// merge sorts regions by their first line and merges those that overlap or
// touch.
func merge(rs []region) []region {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b region) int { return a.first - b.first })
	out := []region{rs[0]}
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.first <= last.last+1 {
			last.last = max(last.last, r.last)
			continue
		}
		out = append(out, r)
	}
	return out
}

// reason is the error of a file operation without the path it repeats.
func reason(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
