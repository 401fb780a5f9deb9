package tools

import (
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// readDir reads the directory rel of the workspace, sorted in byte order of
// name. Entries are described as they are (symbolic links not followed).
func (w *Workspace) readDir(rel string) ([]fs.DirEntry, error) {
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// join joins a workspace path and a name.
func join(rel, name string) string {
	if rel == "." {
		return name
	}
	return rel + "/" + name
}

// neverEntered reports whether search and list stay out of a directory of
// this name found below their path: git's store, the console's session
// exports and the KMP store. search also passes over a file of such a name,
// as the .git file of a worktree or a submodule; list lists a .git file, as
// it lists a .git directory (see unlisted for the others).
func neverEntered(name string) bool {
	return name == ".git" || name == ".axlr" || name == ".kernel"
}

// unlisted reports whether list leaves an entry of this name out of the
// listing of its parent.
func unlisted(name string) bool {
	return name == ".axlr" || name == ".kernel"
}

// glob is the compiled glob argument of search and list, matched with
// path.Match: a pattern without a slash against the base name, one with a
// slash against the workspace-relative path, and after a leading **/ against
// the path below any directory.
type glob struct {
	pattern string
	all     bool // no glob given
	anyDir  bool // the pattern began with **/
	base    bool // the pattern has no slash
}

func parseGlob(p string) (glob, *Error) {
	if p == "" {
		return glob{all: true}, nil
	}
	if _, err := path.Match(p, ""); err != nil {
		return glob{}, newError(CodeInvalidArguments, "glob %s is not a valid pattern: %v", quote(p), err)
	}
	g := glob{pattern: p}
	for strings.HasPrefix(g.pattern, "**/") {
		g.pattern = g.pattern[len("**/"):]
		g.anyDir = true
	}
	g.base = !strings.Contains(g.pattern, "/")
	return g, nil
}

func (g glob) match(rel string) bool {
	if g.all {
		return true
	}
	if g.base {
		ok, _ := path.Match(g.pattern, path.Base(rel))
		return ok
	}
	for s := rel; ; {
		if ok, _ := path.Match(g.pattern, s); ok {
			return true
		}
		i := strings.IndexByte(s, '/')
		if !g.anyDir || i < 0 {
			return false
		}
		s = s[i+1:]
	}
}

// page collects one page of results: it skips offset items, then keeps at
// most max items whose encoded size, with the rest of the output, fits in
// maxBytes. A page always holds one item when any follows the offset; an
// item that cannot fit alone is limit_too_small.
type page[T any] struct {
	offset, max, maxBytes int64
	envelope              int64 // bytes of the output without items, at most
	noun                  string
	skipped               int64
	used                  int64
	items                 []T
	more                  bool
}

func newPage[T any](offset, max, maxBytes int64, noun string) *page[T] {
	return &page[T]{offset: offset, max: max, maxBytes: maxBytes, noun: noun, items: []T{}}
}

// skip reports whether the next item lies before the page, counting it.
func (p *page[T]) skip() bool {
	if p.skipped < p.offset {
		p.skipped++
		return true
	}
	return false
}

// add offers the next item after the offset. It returns false when the page
// is full and the item did not fit, so that the walk can stop: more follows.
func (p *page[T]) add(item T) (bool, *Error) {
	if int64(len(p.items)) == p.max {
		p.more = true
		return false, nil
	}
	b, err := marshal(item)
	if err != nil {
		return false, newError(CodeInternalError, "encode %s: %v", p.noun, err)
	}
	n := int64(len(b))
	if len(p.items) > 0 {
		n++ // the comma
	}
	if p.envelope+p.used+n > p.maxBytes {
		if len(p.items) == 0 {
			return false, newError(CodeLimitTooSmall, "max_bytes %d is too small to hold one %s, which needs %d bytes; raise max_bytes", p.maxBytes, p.noun, p.envelope+n)
		}
		p.more = true
		return false, nil
	}
	p.items = append(p.items, item)
	p.used += n
	return true, nil
}

// next is the next_offset of the page: present when more follows.
func (p *page[T]) next() *int64 {
	if !p.more {
		return nil
	}
	n := p.offset + int64(len(p.items))
	return &n
}

// sizeEnvelope records the size of the output without items. empty builds
// that output from the largest next_offset the page can report; it should
// set its counters to maxCount, so that the size is an upper bound.
func (p *page[T]) sizeEnvelope(empty func(next *int64) any) *Error {
	next := p.offset + p.max
	b, err := marshal(empty(&next))
	if err != nil {
		return newError(CodeInternalError, "encode an empty output: %v", err)
	}
	p.envelope = int64(len(b))
	return nil
}

// maxCount stands for a counter of an output when its envelope is sized.
const maxCount = math.MaxInt32
