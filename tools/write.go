package tools

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// Modes of write.
const (
	ModeCreate  = "create"
	ModeReplace = "replace"
)

// WriteArgs are the arguments of write.
type WriteArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Mode is ModeCreate or ModeReplace.
	Mode string `json:"mode"`
	// ExpectedSHA256 is required by replace and refused by create.
	ExpectedSHA256 string `json:"expected_sha256,omitempty"`
}

// WriteOutput is the output of write.
type WriteOutput struct {
	WrittenBytes  int64  `json:"written_bytes"`
	ContentSHA256 string `json:"content_sha256"`
}

// EditArgs are the arguments of edit.
type EditArgs struct {
	Path           string `json:"path"`
	OldText        string `json:"old_text"`
	NewText        string `json:"new_text"`
	ExpectedSHA256 string `json:"expected_sha256,omitempty"`
}

// EditOutput is the output of edit.
type EditOutput struct {
	WrittenBytes  int64  `json:"written_bytes"`
	ContentSHA256 string `json:"content_sha256"`
}

type writeRequest struct {
	path, content, mode, expected string
}

func parseWrite(raw json.RawMessage) (writeRequest, *Error) {
	var a WriteArgs
	if err := decodeArgs(Write, raw, &a, "path", "content", "mode"); err != nil {
		return writeRequest{}, err
	}
	p, err := filePath(a.Path)
	if err != nil {
		return writeRequest{}, err
	}
	if err := textSize("content", a.Content); err != nil {
		return writeRequest{}, err
	}
	switch a.Mode {
	case ModeCreate:
		if a.ExpectedSHA256 != "" {
			return writeRequest{}, newError(CodeInvalidArguments, "mode create takes no expected_sha256: create never overwrites; use mode replace to change an existing file")
		}
	case ModeReplace:
		if a.ExpectedSHA256 == "" {
			return writeRequest{}, newError(CodeInvalidArguments, "mode replace needs expected_sha256, the content_sha256 of the whole file as last read")
		}
		if err := checkDigest(a.ExpectedSHA256); err != nil {
			return writeRequest{}, err
		}
	default:
		return writeRequest{}, newError(CodeInvalidArguments, "mode %s is neither create nor replace", quote(a.Mode))
	}
	return writeRequest{path: p, content: a.Content, mode: a.Mode, expected: a.ExpectedSHA256}, nil
}

type editRequest struct {
	path, oldText, newText, expected string
}

func parseEdit(raw json.RawMessage) (editRequest, *Error) {
	var a EditArgs
	if err := decodeArgs(Edit, raw, &a, "path", "old_text", "new_text"); err != nil {
		return editRequest{}, err
	}
	p, err := filePath(a.Path)
	if err != nil {
		return editRequest{}, err
	}
	if a.OldText == "" {
		return editRequest{}, newError(CodeInvalidArguments, "old_text must not be empty")
	}
	if err := textSize("old_text", a.OldText); err != nil {
		return editRequest{}, err
	}
	if err := textSize("new_text", a.NewText); err != nil {
		return editRequest{}, err
	}
	if a.ExpectedSHA256 != "" {
		if err := checkDigest(a.ExpectedSHA256); err != nil {
			return editRequest{}, err
		}
	}
	return editRequest{path: p, oldText: a.OldText, newText: a.NewText, expected: a.ExpectedSHA256}, nil
}

func textSize(name, s string) *Error {
	if len(s) > maxFileBytes {
		return newError(CodeInvalidRequest, "%s is %d bytes, over the %d byte write limit", name, len(s), maxFileBytes)
	}
	return nil
}

func (w *Workspace) write(ctx context.Context, r writeRequest) (WriteOutput, *Error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data := []byte(r.content)
	if r.mode == ModeCreate {
		if err := w.create(ctx, r.path, data); err != nil {
			return WriteOutput{}, err
		}
	} else {
		old, fi, err := w.current(r.path)
		if err != nil {
			return WriteOutput{}, err
		}
		if err := matchDigest(r.path, old, r.expected); err != nil {
			return WriteOutput{}, err
		}
		if err := w.replace(ctx, r.path, fi.Mode(), data); err != nil {
			return WriteOutput{}, err
		}
	}
	return WriteOutput{WrittenBytes: int64(len(data)), ContentSHA256: sha256Hex(data)}, nil
}

func (w *Workspace) edit(ctx context.Context, r editRequest) (EditOutput, *Error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old, fi, err := w.current(r.path)
	if err != nil {
		return EditOutput{}, err
	}
	if r.expected != "" {
		if err := matchDigest(r.path, old, r.expected); err != nil {
			return EditOutput{}, err
		}
	}
	if at := invalidUTF8(old); at >= 0 {
		return EditOutput{}, newError(CodeInvalidText, "%s is not UTF-8 text (invalid byte at offset %d)", quote(r.path), at)
	}
	text := string(old)
	n, at := occurrences(text, r.oldText)
	switch {
	case n == 0:
		return EditOutput{}, newError(CodeConflict, "old_text does not occur in %s", quote(r.path))
	case n > 1:
		return EditOutput{}, newError(CodeConflict, "old_text occurs %d times in %s (overlapping occurrences count); include more of the surrounding text so that it occurs once", n, quote(r.path))
	}
	data := []byte(text[:at] + r.newText + text[at+len(r.oldText):])
	if len(data) > maxFileBytes {
		return EditOutput{}, newError(CodeFileTooLarge, "the edit would make %s %d bytes, over the %d byte editable limit", quote(r.path), len(data), maxFileBytes)
	}
	if err := w.replace(ctx, r.path, fi.Mode(), data); err != nil {
		return EditOutput{}, err
	}
	return EditOutput{WrittenBytes: int64(len(data)), ContentSHA256: sha256Hex(data)}, nil
}

// occurrences counts the occurrences of sub in s, overlapping ones included,
// and returns the index of the first.
func occurrences(s, sub string) (n, first int) {
	first = -1
	for i := 0; i <= len(s); {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			break
		}
		if first < 0 {
			first = i + j
		}
		n++
		i += j + 1
	}
	return n, first
}

func matchDigest(p string, content []byte, expected string) *Error {
	if got := sha256Hex(content); !strings.EqualFold(got, expected) {
		return newError(CodeConflict, "%s has content_sha256 %s, not the expected %s; read it again", quote(p), got, strings.ToLower(expected))
	}
	return nil
}

// current reads the whole regular file p (not a symbolic link) of at most the
// editable size.
func (w *Workspace) current(p string) ([]byte, fs.FileInfo, *Error) {
	f, fi, err := w.openRegular(p, false)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > maxFileBytes {
		return nil, nil, tooLarge(p, fi.Size())
	}
	data, rerr := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if rerr != nil {
		return nil, nil, fsError("path", p, rerr)
	}
	if len(data) > maxFileBytes {
		return nil, nil, tooLarge(p, int64(len(data)))
	}
	return data, fi, nil
}

func tooLarge(p string, size int64) *Error {
	return newError(CodeFileTooLarge, "%s is %d bytes, over the %d byte editable limit", quote(p), size, maxFileBytes)
}

// create writes data to the new file p, creating its parent directories. The
// file appears whole or not at all: data goes to a synced temporary file that
// is then hard-linked to p, which fails rather than replace anything at p.
// An entry already at p is refused before anything is written.
func (w *Workspace) create(ctx context.Context, p string, data []byte) *Error {
	if _, err := w.root.Lstat(p); err == nil {
		return exists(p)
	}
	dir := path.Dir(p)
	if err := w.root.MkdirAll(dir, 0o777); err != nil {
		if !escapes(err) && (errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist)) {
			return newError(CodeConflict, "a parent of %s is not a directory", quote(p))
		}
		return fsError("path", p, err)
	}
	tmp, err := w.writeTemp(p, data, nil)
	if err != nil {
		return err
	}
	defer w.root.Remove(tmp)
	if ctx.Err() != nil {
		return newError(CodeCancelled, "write of %s was cancelled; nothing was written", quote(p))
	}
	if err := w.root.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return exists(p)
		}
		return fsError("path", p, err)
	}
	w.syncDir(dir)
	return nil
}

func exists(p string) *Error {
	return newError(CodeConflict, "%s already exists and create never overwrites; read it and use mode replace with its content_sha256", quote(p))
}

// replace atomically replaces the file p with data, keeping mode: data goes
// to a synced temporary file in the same directory, renamed over p.
func (w *Workspace) replace(ctx context.Context, p string, mode fs.FileMode, data []byte) *Error {
	keep := mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	tmp, err := w.writeTemp(p, data, &keep)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		w.root.Remove(tmp)
		return newError(CodeCancelled, "change of %s was cancelled; nothing was written", quote(p))
	}
	if err := w.root.Rename(tmp, p); err != nil {
		w.root.Remove(tmp)
		return fsError("path", p, err)
	}
	w.syncDir(path.Dir(p))
	return nil
}

// writeTemp writes data to a new temporary file beside p and syncs it. A nil
// mode leaves the default permissions (0666 less the umask).
func (w *Workspace) writeTemp(p string, data []byte, mode *fs.FileMode) (string, *Error) {
	tmp := path.Join(path.Dir(p), ".axlr-tmp-"+rand.Text())
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return "", fsError("path", p, err)
	}
	_, err = f.Write(data)
	if err == nil && mode != nil {
		err = f.Chmod(*mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.root.Remove(tmp)
		return "", fsError("path", p, err)
	}
	return tmp, nil
}

// syncDir makes a new name in dir durable. A failure is not reported: the
// file is in place, and some file systems cannot sync a directory.
func (w *Workspace) syncDir(dir string) {
	d, err := w.root.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
