package githubtest

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// The server's own commits (merge, squash, initial) are signed by it.
var serverSignature = object.Signature{Name: "GitHub", Email: "noreply@github.com"}

// entry is one file of a flattened tree.
type entry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

// branchHead returns the commit branch points at; ok is false when the
// branch does not exist.
func branchHead(g *git.Repository, branch string) (plumbing.Hash, bool, error) {
	ref, err := g.Reference(plumbing.NewBranchReferenceName(branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read branch %s: %w", branch, err)
	}
	return ref.Hash(), true, nil
}

// files flattens the tree of commit h to path → entry.
func files(g *git.Repository, h plumbing.Hash) (map[string]entry, error) {
	c, err := g.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read the tree of %s: %w", h, err)
	}
	out := map[string]entry{}
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("walk the tree of %s: %w", h, err)
		}
		if e.Mode != filemode.Dir {
			out[name] = entry{mode: e.Mode, hash: e.Hash}
		}
	}
}

// contents reads every file of commit h.
func contents(g *git.Repository, h plumbing.Hash) (map[string]string, error) {
	fs, err := files(g, h)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(fs))
	for p, e := range fs {
		b, err := g.BlobObject(e.hash)
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", p, h, err)
		}
		r, err := b.Reader()
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", p, h, err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", p, h, err)
		}
		out[p] = string(data)
	}
	return out, nil
}

func writeBlob(s storer.EncodedObjectStorer, content string) (plumbing.Hash, error) {
	o := s.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := io.WriteString(w, content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(o)
}

// writeTree stores the nested trees of a flattened file set and returns the
// root's hash.
func writeTree(s storer.EncodedObjectStorer, fs map[string]entry) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	dirs := map[string]map[string]entry{}
	for p, e := range fs {
		dir, rest, nested := strings.Cut(p, "/")
		if !nested {
			entries = append(entries, object.TreeEntry{Name: p, Mode: e.mode, Hash: e.hash})
			continue
		}
		if dirs[dir] == nil {
			dirs[dir] = map[string]entry{}
		}
		dirs[dir][rest] = e
	}
	for dir, sub := range dirs {
		h, err := writeTree(s, sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h})
	}
	// git orders entries by name, a directory's name ending in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	o := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(o)
}

// writeCommit stores a commit of the file set fs.
func writeCommit(g *git.Repository, fs map[string]entry, message string, parents ...plumbing.Hash) (plumbing.Hash, error) {
	tree, err := writeTree(g.Storer, fs)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write tree: %w", err)
	}
	sig := serverSignature
	sig.When = time.Now()
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree, ParentHashes: parents}
	o := g.Storer.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := g.Storer.SetEncodedObject(o)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write commit: %w", err)
	}
	return h, nil
}

// moveBranch points branch at to, provided it still points at from (zero:
// the branch must not exist yet).
func moveBranch(g *git.Repository, branch string, from, to plumbing.Hash) error {
	name := plumbing.NewBranchReferenceName(branch)
	var old *plumbing.Reference
	if !from.IsZero() {
		old = plumbing.NewHashReference(name, from)
	}
	if err := g.Storer.CheckAndSetReference(plumbing.NewHashReference(name, to), old); err != nil {
		return fmt.Errorf("move branch %s from %s to %s: %w", branch, from, to, err)
	}
	return nil
}

// isAncestor tells whether commit a is b or an ancestor of b.
func isAncestor(g *git.Repository, a, b plumbing.Hash) (bool, error) {
	if a == b {
		return true, nil
	}
	ca, err := g.CommitObject(a)
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", a, err)
	}
	cb, err := g.CommitObject(b)
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", b, err)
	}
	return ca.IsAncestor(cb)
}

// merge3 merges the files of theirs into ours, file by file, from their
// merge base: a path changed on one side takes that side; a path changed
// on both sides to different contents is a conflict. It is coarser than
// git (which merges lines), and never silently wrong.
func merge3(g *git.Repository, ours, theirs plumbing.Hash) (map[string]entry, []string, error) {
	co, err := g.CommitObject(ours)
	if err != nil {
		return nil, nil, fmt.Errorf("read commit %s: %w", ours, err)
	}
	ct, err := g.CommitObject(theirs)
	if err != nil {
		return nil, nil, fmt.Errorf("read commit %s: %w", theirs, err)
	}
	bases, err := co.MergeBase(ct)
	if err != nil {
		return nil, nil, fmt.Errorf("merge base of %s and %s: %w", ours, theirs, err)
	}
	base := map[string]entry{}
	if len(bases) > 0 {
		if base, err = files(g, bases[0].Hash); err != nil {
			return nil, nil, err
		}
	}
	o, err := files(g, ours)
	if err != nil {
		return nil, nil, err
	}
	t, err := files(g, theirs)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]entry{}
	var conflicts []string
	paths := map[string]bool{}
	for _, m := range []map[string]entry{base, o, t} {
		for p := range m {
			paths[p] = true
		}
	}
	for p := range paths {
		b, inB := base[p]
		eo, inO := o[p]
		et, inT := t[p]
		switch {
		case inO == inT && eo == et: // same on both sides
			if inO {
				out[p] = eo
			}
		case inO == inB && eo == b: // only theirs changed it
			if inT {
				out[p] = et
			}
		case inT == inB && et == b: // only ours changed it
			if inO {
				out[p] = eo
			}
		default:
			conflicts = append(conflicts, p)
		}
	}
	sort.Strings(conflicts)
	return out, conflicts, nil
}
