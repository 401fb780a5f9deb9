package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestRead(t *testing.T) {
	w, dir := newWorkspace(t)
	multi := "aé€😀b" // 1, 2, 3, 4 and 1 bytes
	big := strings.Repeat("0123456789abcdef", 100<<10/16)
	huge := strings.Repeat("x", 1<<20+10)
	writeFile(t, filepath.Join(dir, "ten.txt"), "0123456789")
	writeFile(t, filepath.Join(dir, "empty.txt"), "")
	writeFile(t, filepath.Join(dir, "multi.txt"), multi)
	writeFile(t, filepath.Join(dir, "big.txt"), big)
	writeFile(t, filepath.Join(dir, "huge.txt"), huge)
	symlink(t, "ten.txt", filepath.Join(dir, "link"))
	writeFile(t, filepath.Join(dir, "sub", "deep.txt"), "deep")
	symlink(t, "sub", filepath.Join(dir, "sublink"))

	tests := []struct {
		name string
		args map[string]any
		want ReadOutput
	}{
		{"whole file", map[string]any{"path": "ten.txt"}, ReadOutput{Content: "0123456789", ContentSHA256: digestOf("0123456789")}},
		{"empty file", map[string]any{"path": "empty.txt"}, ReadOutput{Content: "", ContentSHA256: digestOf("")}},
		{"first page", map[string]any{"path": "ten.txt", "max_bytes": 4}, ReadOutput{Content: "0123", NextOffsetBytes: ptr[int64](4), Truncated: true}},
		{"middle page", map[string]any{"path": "ten.txt", "offset_bytes": 4, "max_bytes": 4}, ReadOutput{Content: "4567", OffsetBytes: 4, NextOffsetBytes: ptr[int64](8), Truncated: true}},
		{"last page has no digest", map[string]any{"path": "ten.txt", "offset_bytes": 8, "max_bytes": 4}, ReadOutput{Content: "89", OffsetBytes: 8}},
		{"exact fit", map[string]any{"path": "ten.txt", "max_bytes": 10}, ReadOutput{Content: "0123456789", ContentSHA256: digestOf("0123456789")}},
		{"offset at the end", map[string]any{"path": "ten.txt", "offset_bytes": 10}, ReadOutput{Content: "", OffsetBytes: 10}},
		{"cut backs off to a character boundary", map[string]any{"path": "multi.txt", "max_bytes": 4}, ReadOutput{Content: "aé", NextOffsetBytes: ptr[int64](3), Truncated: true}},
		{"continue after a cut", map[string]any{"path": "multi.txt", "offset_bytes": 3, "max_bytes": 7}, ReadOutput{Content: "€😀", OffsetBytes: 3, NextOffsetBytes: ptr[int64](10), Truncated: true}},
		{"whole multibyte file", map[string]any{"path": "multi.txt"}, ReadOutput{Content: multi, ContentSHA256: digestOf(multi)}},
		{"default size is 64 KiB", map[string]any{"path": "big.txt"}, ReadOutput{Content: big[:64<<10], NextOffsetBytes: ptr[int64](64 << 10), Truncated: true}},
		{"at most 1 MiB of a larger file", map[string]any{"path": "huge.txt", "max_bytes": 1 << 20}, ReadOutput{Content: huge[:1<<20], NextOffsetBytes: ptr[int64](1 << 20), Truncated: true}},
		{"symlink inside the workspace", map[string]any{"path": "link"}, ReadOutput{Content: "0123456789", ContentSHA256: digestOf("0123456789")}},
		{"through a directory link inside", map[string]any{"path": "sublink/deep.txt"}, ReadOutput{Content: "deep", ContentSHA256: digestOf("deep")}},
		{"cleaned path", map[string]any{"path": "./sub/../ten.txt"}, ReadOutput{Content: "0123456789", ContentSHA256: digestOf("0123456789")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustCall[ReadOutput](t, w, Read, tt.args)
			if got.Content != tt.want.Content || got.OffsetBytes != tt.want.OffsetBytes ||
				got.Truncated != tt.want.Truncated || got.ContentSHA256 != tt.want.ContentSHA256 ||
				!equalPtr(got.NextOffsetBytes, tt.want.NextOffsetBytes) {
				t.Errorf("got content %.40q offset %d next %v truncated %v sha %q\nwant content %.40q offset %d next %v truncated %v sha %q",
					got.Content, got.OffsetBytes, deref(got.NextOffsetBytes), got.Truncated, got.ContentSHA256,
					tt.want.Content, tt.want.OffsetBytes, deref(tt.want.NextOffsetBytes), tt.want.Truncated, tt.want.ContentSHA256)
			}
		})
	}
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestReadErrors(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, filepath.Join(dir, "ten.txt"), "0123456789")
	writeFile(t, filepath.Join(dir, "multi.txt"), "aé€")
	writeFile(t, filepath.Join(dir, "latin1.txt"), "abc\xe9def")
	mkdir(t, filepath.Join(dir, "sub"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, "loop", filepath.Join(dir, "loop"))
	device := "device"
	if err := syscall.Mknod(filepath.Join(dir, device), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		device = "" // creating a device needs privilege
	}
	symlink(t, "missing", filepath.Join(dir, "dangling"))

	tests := []struct {
		name string
		args map[string]any
		code string
		msg  string
	}{
		{"past the end", map[string]any{"path": "ten.txt", "offset_bytes": 11}, CodeInvalidOffset, `offset_bytes 11 is past the end of "ten.txt" (10 bytes)`},
		{"inside a character", map[string]any{"path": "multi.txt", "offset_bytes": 2}, CodeInvalidOffset, `offset_bytes 2 is not on a character boundary of "multi.txt"`},
		{"limit smaller than a character", map[string]any{"path": "multi.txt", "offset_bytes": 3, "max_bytes": 2}, CodeLimitTooSmall, "max_bytes 2 cannot hold the character at offset_bytes 3"},
		{"not UTF-8", map[string]any{"path": "latin1.txt"}, CodeInvalidText, `"latin1.txt" is not UTF-8 text (invalid byte at offset 3)`},
		{"not UTF-8 past an offset", map[string]any{"path": "latin1.txt", "offset_bytes": 1}, CodeInvalidText, "invalid byte at offset 3"},
		{"directory", map[string]any{"path": "sub"}, CodeNotRegularFile, `"sub" is a directory, not a regular file`},
		{"named pipe", map[string]any{"path": "fifo"}, CodeNotRegularFile, `"fifo" is a named pipe, not a regular file`},
		{"missing", map[string]any{"path": "missing.txt"}, CodeNotFound, `path "missing.txt" does not exist`},
		{"below a file", map[string]any{"path": "ten.txt/x"}, CodeNotFound, `path "ten.txt/x" does not exist`},
		{"dangling link", map[string]any{"path": "dangling"}, CodeNotFound, `path "dangling" does not exist`},
		{"symlink loop", map[string]any{"path": "loop"}, CodeFilesystemError, `path "loop": too many levels of symbolic links`},
		{"name too long", map[string]any{"path": strings.Repeat("n", 300)}, CodeFilesystemError, "file name too long"},
	}
	if device != "" {
		tests = append(tests, struct {
			name string
			args map[string]any
			code string
			msg  string
		}{"device", map[string]any{"path": device}, CodeNotRegularFile, `"device" is a device, not a regular file`})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call[ReadOutput](t, w, Read, tt.args)
			wantError(t, err, tt.code, tt.msg)
		})
	}
}
