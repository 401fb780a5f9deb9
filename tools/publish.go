package tools

import (
	"context"
	"errors"
	"io"
	"io/fs"
)

// Publish writes data, whose SHA-256 is digest, to the new file p once:
// whole or not at all (create's synced temporary file, linked into
// place), then read back and compared with digest before it returns. A
// file already at p with that digest is the publication done, as a
// retried activity finds it; one with other bytes is a conflict, since a
// publication never overwrites. A read-back that differs removes what it
// wrote, so a retry can publish again. p is workspace-relative; its
// parents are created.
func (w *Workspace) Publish(ctx context.Context, p string, data []byte, digest string) error {
	c, err := filePath(p)
	if err != nil {
		return err
	}
	if got := sha256Hex(data); got != digest {
		return newError(CodeConflict, "the bytes to publish to %s have sha256 %s, not the approved %s", quote(c), got, digest)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	old, _, rerr := w.current(c)
	switch {
	case rerr == nil && sha256Hex(old) == digest:
		return nil
	case rerr == nil:
		return newError(CodeConflict, "%s is published already with sha256 %s, not %s: a publication never overwrites", quote(c), sha256Hex(old), digest)
	case rerr.Code != CodeNotFound:
		return rerr
	}
	if err := w.create(ctx, c, data); err != nil {
		return err
	}
	back, _, rerr := w.current(c)
	if rerr != nil {
		return rerr
	}
	if got := sha256Hex(back); got != digest {
		if err := w.root.Remove(c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fsError("path", c, err)
		}
		return newError(CodeConflict, "%s read back with sha256 %s, not the approved %s: removed, to publish again", quote(c), got, digest)
	}
	return nil
}

// ReadWhole reads the regular file p (workspace-relative, a final link
// followed only inside the workspace) whole, when it holds at most limit
// bytes; a larger one is a conflict naming its size and the limit.
func (w *Workspace) ReadWhole(p string, limit int64) ([]byte, error) {
	c, err := filePath(p)
	if err != nil {
		return nil, err
	}
	f, fi, oerr := w.openRegular(c, true)
	if oerr != nil {
		return nil, oerr
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, newError(CodeConflict, "%s is %d bytes: at most %d", quote(c), fi.Size(), limit)
	}
	data, rerr := io.ReadAll(io.LimitReader(f, limit+1))
	if rerr != nil {
		return nil, fsError("path", c, rerr)
	}
	if int64(len(data)) > limit {
		return nil, newError(CodeConflict, "%s grew past %d bytes while it was read", quote(c), limit)
	}
	return data, nil
}

// Exists reports whether the workspace path p names a file or a directory
// inside the workspace.
func (w *Workspace) Exists(p string) bool {
	c, err := filePath(p)
	if err != nil {
		return false
	}
	_, serr := w.root.Stat(c)
	return serr == nil
}
