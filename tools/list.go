package tools

import (
	"context"
	"encoding/json"
	"io/fs"
)

// Types of list entries.
const (
	EntryFile    = "file"
	EntryDir     = "dir"
	EntrySymlink = "symlink"
	EntryOther   = "other"
)

// ListArgs are the arguments of list.
type ListArgs struct {
	Path      string `json:"path,omitempty"`
	Glob      string `json:"glob,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
	// MaxDepth applies when Recursive is true; default 3.
	MaxDepth *int64 `json:"max_depth,omitempty"`
	// MaxEntries defaults to 200 and may be at most 500.
	MaxEntries *int64 `json:"max_entries,omitempty"`
	Offset     *int64 `json:"offset,omitempty"`
	// MaxBytes bounds the encoded output; default 64 KiB, at most 1 MiB.
	MaxBytes *int64 `json:"max_bytes,omitempty"`
}

// ListEntry is one entry of a listing.
type ListEntry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	// Size is present for files.
	Size *int64 `json:"size,omitempty"`
}

// ListOutput is the output of list.
type ListOutput struct {
	Entries    []ListEntry `json:"entries"`
	NextOffset *int64      `json:"next_offset,omitempty"`
	// Truncated is true when more entries follow this page.
	Truncated    bool `json:"truncated"`
	LimitReached bool `json:"limit_reached"`
}

type listRequest struct {
	path                      string
	glob                      glob
	depth                     int64
	maxEntries, offset, limit int64
}

func parseList(raw json.RawMessage) (listRequest, *Error) {
	var a ListArgs
	if err := decodeArgs(List, raw, &a); err != nil {
		return listRequest{}, err
	}
	var r listRequest
	var err *Error
	if r.path, err = cleanPath("path", a.Path); err != nil {
		return listRequest{}, err
	}
	if r.glob, err = parseGlob(a.Glob); err != nil {
		return listRequest{}, err
	}
	if r.depth, err = limit("max_depth", a.MaxDepth, defaultMaxDepth, 1, -1, ""); err != nil {
		return listRequest{}, err
	}
	if !a.Recursive {
		r.depth = 1
	}
	if r.maxEntries, err = limit("max_entries", a.MaxEntries, defaultMaxEntries, 1, maxMaxEntries, "entry"); err != nil {
		return listRequest{}, err
	}
	if r.offset, err = limit("offset", a.Offset, 0, 0, -1, ""); err != nil {
		return listRequest{}, err
	}
	if r.limit, err = limit("max_bytes", a.MaxBytes, defaultPageBytes, 1, maxPageBytes, "byte"); err != nil {
		return listRequest{}, err
	}
	return r, nil
}

type lister struct {
	w       *Workspace
	r       listRequest
	page    *page[ListEntry]
	count   int // entries of the listing met so far
	limited bool
}

func (w *Workspace) list(ctx context.Context, r listRequest) (ListOutput, *Error) {
	fi, err := w.root.Lstat(r.path)
	if err != nil {
		return ListOutput{}, fsError("path", r.path, err)
	}
	l := &lister{w: w, r: r, page: newPage[ListEntry](r.offset, r.maxEntries, r.limit, "entry")}
	if err := l.page.sizeEnvelope(func(next *int64) any {
		return ListOutput{Entries: []ListEntry{}, NextOffset: next}
	}); err != nil {
		return ListOutput{}, err
	}

	var lerr *Error
	if fi.IsDir() {
		entries, err := w.readDir(r.path)
		if err != nil {
			return ListOutput{}, fsError("path", r.path, err)
		}
		_, lerr = l.walk(ctx, r.path, entries, 1)
	} else if !l.page.skip() {
		// A path that is not a directory, a symbolic link included, is
		// described rather than followed.
		_, lerr = l.page.add(entry(r.path, fi))
	}
	if lerr != nil {
		return ListOutput{}, lerr
	}
	return ListOutput{
		Entries:      l.page.items,
		NextOffset:   l.page.next(),
		Truncated:    l.page.more,
		LimitReached: l.limited,
	}, nil
}

// walk lists the entries of the directory rel at depth, depth first. It
// returns false when the listing stops: the page is full or the limit was
// reached.
func (l *lister) walk(ctx context.Context, rel string, entries []fs.DirEntry, depth int64) (bool, *Error) {
	for _, e := range entries {
		if ctx.Err() != nil {
			return false, newError(CodeCancelled, "list was cancelled")
		}
		if unlisted(e.Name()) {
			continue
		}
		child := join(rel, e.Name())
		if l.r.glob.match(child) {
			if l.count >= maxListEntries {
				l.limited = true
				return false, nil
			}
			l.count++
			if !l.page.skip() {
				fi, err := e.Info()
				if err != nil {
					// Gone since the directory was read.
					continue
				}
				if more, err := l.page.add(entry(child, fi)); !more || err != nil {
					return false, err
				}
			}
		}
		if e.IsDir() && depth < l.r.depth && !neverEntered(e.Name()) {
			sub, err := l.w.readDir(child)
			if err != nil {
				// Listed, but it cannot be read: nothing to enter.
				continue
			}
			if more, err := l.walk(ctx, child, sub, depth+1); !more || err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

func entry(p string, fi fs.FileInfo) ListEntry {
	e := ListEntry{Path: p, Type: EntryOther}
	switch m := fi.Mode(); {
	case m.IsRegular():
		size := fi.Size()
		e.Type, e.Size = EntryFile, &size
	case m.IsDir():
		e.Type = EntryDir
	case m&fs.ModeSymlink != 0:
		e.Type = EntrySymlink
	}
	return e
}
