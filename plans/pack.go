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

// packer builds one task's pack: the defects it finds, and what the pack
// is written from.
type packer struct {
	d    Decomposition
	i    int
	fsys fs.FS
	ds   Defects
	// scope are the task's scope paths as the pack shows them ("(new)"
	// for one that does not exist yet), tests the test files among them.
	scope, tests []string
	// files are the cited files, order their paths as first cited, and
	// regions what the pack quotes of each.
	files   map[string]*citedFile
	order   []string
	regions map[string][]region
}

func (pk *packer) defect(format string, args ...any) {
	pk.ds = append(pk.ds, Defect{Tasks: []string{label(pk.d.Tasks, pk.i)}, Text: fmt.Sprintf(format, args...)})
}

func buildPack(id string, d Decomposition, i, wave int, fsys fs.FS) (string, Defects) {
	pk := &packer{d: d, i: i, fsys: fsys, files: map[string]*citedFile{}, regions: map[string][]region{}}
	pk.readScope()
	pk.readCitations()
	if len(pk.ds) > 0 {
		return "", pk.ds
	}
	pack := pk.write(id, wave)
	if len(pack) > MaxPack {
		pk.defect("its context pack is %d bytes (at most %d); split the task or cite less", len(pack), MaxPack)
		return "", pk.ds
	}
	return pack, nil
}

// readScope checks the task's scope paths against the workspace.
func (pk *packer) readScope() {
	for _, raw := range pk.d.Tasks[pk.i].Scope {
		p, ok := CleanPath(raw)
		if !ok {
			pk.defect("scope path %q is not inside the workspace; give a path relative to its root, without \"..\"", raw)
			continue
		}
		if test, _ := IsTestFile(p); test {
			pk.tests = append(pk.tests, p)
		}
		info, err := fs.Stat(pk.fsys, p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			pk.scope = append(pk.scope, p+" (new)")
		case err != nil:
			pk.defect("scope path %s cannot be read: %s", p, reason(err))
		case info.IsDir():
			pk.defect("scope path %s is a directory; list the files the task changes", p)
		default:
			pk.scope = append(pk.scope, p)
		}
	}
}

// readCitations checks each citation against its file and keeps the
// region around it.
func (pk *packer) readCitations() {
	for j, c := range pk.d.Tasks[pk.i].Context {
		p, ok := CleanPath(c.Path)
		if !ok {
			pk.defect("citation %d: path %q is not inside the workspace; give a path relative to its root, without \"..\"", j+1, c.Path)
			continue
		}
		f, read := pk.files[p]
		if !read {
			f = readCited(pk.fsys, p)
			pk.files[p] = f
		}
		if f.problem != "" {
			pk.defect("citation %d: %s", j+1, f.problem)
			continue
		}
		switch n := len(f.lines); {
		case c.Line < 1:
			pk.defect("citation %d: line %d of %s; lines count from 1", j+1, c.Line, p)
			continue
		case c.Line > n:
			pk.defect("citation %d: %s has %d %s; line %d is past its end", j+1, p, n, plural(n, "line", "lines"), c.Line)
			continue
		}
		line := collapse(f.lines[c.Line-1])
		if quote := collapse(c.Quote); utf8.RuneCountInString(quote) < MinQuote || !strings.Contains(line, quote) {
			pk.defect("%s:%d does not contain the quote (at least %d characters); the line reads %s", p, c.Line, MinQuote, jsonargs.Quote(line))
			continue
		}
		if _, seen := pk.regions[p]; !seen {
			pk.order = append(pk.order, p)
		}
		pk.regions[p] = append(pk.regions[p], region{max(1, c.Line-Margin), min(len(f.lines), c.Line+Margin)})
	}
}

// write is the pack's text.
func (pk *packer) write(id string, wave int) string {
	t := pk.d.Tasks[pk.i]
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s of plan %s, wave %d: %s\n", t.ID, id, wave, t.Goal)
	fmt.Fprintf(&b, "Scope (the only files you may change): %s\n", strings.Join(pk.scope, ", "))
	fmt.Fprintf(&b, "Unit check: %s\n", t.UnitCheck)
	if t.TestFirst {
		in := ""
		if len(pk.tests) > 0 {
			in = " in " + strings.Join(pk.tests, ", ")
		}
		fmt.Fprintf(&b, "Test first: write a test%s that fails, and see the unit check fail, before you change the code; then make it pass.\n", in)
	}
	if len(t.Protect) > 0 {
		fmt.Fprintf(&b, "Do not change: %s\n", strings.Join(t.Protect, ", "))
	}
	if interfaces := strings.TrimSpace(pk.d.Interfaces); interfaces != "" {
		fmt.Fprintf(&b, "Interfaces shared by the plan:\n%s\n", interfaces)
	}
	for _, p := range pk.order {
		lines := pk.files[p].lines
		for _, r := range merge(pk.regions[p]) {
			fmt.Fprintf(&b, "--- %s:%d-%d ---\n", p, r.first, r.last)
			for _, l := range lines[r.first-1 : r.last] {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
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
