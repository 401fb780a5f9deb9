package tools

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unicode/utf8"
)

// ReadArgs are the arguments of read.
type ReadArgs struct {
	Path        string `json:"path"`
	OffsetBytes *int64 `json:"offset_bytes,omitempty"`
	MaxBytes    *int64 `json:"max_bytes,omitempty"`
}

// ReadOutput is the output of read.
type ReadOutput struct {
	Content         string `json:"content"`
	OffsetBytes     int64  `json:"offset_bytes"`
	NextOffsetBytes *int64 `json:"next_offset_bytes,omitempty"`
	Truncated       bool   `json:"truncated"`
	// ContentSHA256 is the whole file's digest, present when Content is the
	// whole file.
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

type readRequest struct {
	path          string
	offset, limit int64
}

func parseRead(raw json.RawMessage) (readRequest, *Error) {
	var a ReadArgs
	if err := decodeArgs(Read, raw, &a, "path"); err != nil {
		return readRequest{}, err
	}
	p, err := filePath(a.Path)
	if err != nil {
		return readRequest{}, err
	}
	offset, err := limit("offset_bytes", a.OffsetBytes, 0, 0, -1, "")
	if err != nil {
		return readRequest{}, err
	}
	max, err := limit("max_bytes", a.MaxBytes, defaultReadBytes, 1, maxReadBytes, "byte")
	if err != nil {
		return readRequest{}, err
	}
	return readRequest{path: p, offset: offset, limit: max}, nil
}

func (w *Workspace) read(r readRequest) (ReadOutput, *Error) {
	f, fi, err := w.openRegular(r.path, true)
	if err != nil {
		return ReadOutput{}, err
	}
	defer f.Close()
	if r.offset > fi.Size() {
		return ReadOutput{}, newError(CodeInvalidOffset, "offset_bytes %d is past the end of %s (%d bytes)", r.offset, quote(r.path), fi.Size())
	}
	// Read a few bytes past the limit: they tell whether more follows and
	// where the last whole character before the limit ends.
	buf := make([]byte, r.limit+utf8.UTFMax)
	n, rerr := io.ReadFull(io.NewSectionReader(f, r.offset, int64(len(buf))), buf)
	if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
		return ReadOutput{}, fsError("path", r.path, rerr)
	}
	data := buf[:n]
	if r.offset > 0 && n > 0 && !utf8.RuneStart(data[0]) {
		return ReadOutput{}, newError(CodeInvalidOffset, "offset_bytes %d is not on a character boundary of %s", r.offset, quote(r.path))
	}
	end, more := len(data), false
	if int64(end) > r.limit {
		more = true
		end = int(r.limit)
		for end > 0 && !utf8.RuneStart(data[end]) {
			end--
		}
		if end == 0 {
			return ReadOutput{}, newError(CodeLimitTooSmall, "max_bytes %d cannot hold the character at offset_bytes %d of %s", r.limit, r.offset, quote(r.path))
		}
	}
	content := data[:end]
	if at := invalidUTF8(content); at >= 0 {
		return ReadOutput{}, newError(CodeInvalidText, "%s is not UTF-8 text (invalid byte at offset %d)", quote(r.path), r.offset+int64(at))
	}
	out := ReadOutput{Content: string(content), OffsetBytes: r.offset, Truncated: more}
	if more {
		next := r.offset + int64(end)
		out.NextOffsetBytes = &next
	} else if r.offset == 0 {
		out.ContentSHA256 = sha256Hex(content)
	}
	return out, nil
}

// invalidUTF8 returns the index of the first byte of b that is not part of a
// valid UTF-8 sequence, or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// openRegular opens the regular file p for reading. With follow, a final
// symbolic link whose target stays inside the workspace is followed (read);
// without it, p itself must be a regular file (edit, replace). A FIFO or a
// device is refused before it is opened, and the open does not block.
func (w *Workspace) openRegular(p string, follow bool) (*os.File, fs.FileInfo, *Error) {
	stat := w.root.Lstat
	if follow {
		stat = w.root.Stat
	}
	fi, err := stat(p)
	if err != nil {
		return nil, nil, fsError("path", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(p, fi.Mode())
	}
	f, err := w.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fsError("path", p, err)
	}
	opened, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsError("path", p, err)
	}
	if !opened.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(p, opened.Mode())
	}
	if !follow && !os.SameFile(fi, opened) {
		// os.Root follows a final symbolic link on open; p was replaced
		// between the check and the open.
		f.Close()
		return nil, nil, newError(CodeConflict, "%s changed while it was being opened; read it again", quote(p))
	}
	return f, opened, nil
}

func notRegular(p string, m fs.FileMode) *Error {
	kind := "not a regular file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return newError(CodeNotRegularFile, "%s is %s, not a regular file", quote(p), kind)
}
