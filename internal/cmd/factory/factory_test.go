package factory

import (
	"io"
	"os"
	"testing"
)

func TestNewIOStreams(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	s := NewIOStreams(nil, w, io.Discard)
	if s.IsStdoutTTY() {
		t.Error("a pipe is a terminal")
	}
	if b, err := io.ReadAll(s.In); err != nil || len(b) != 0 {
		t.Errorf("nil stdin reads %q, %v", b, err)
	}
	s.SetStdoutTTY(true)
	if !s.IsStdoutTTY() {
		t.Error("SetStdoutTTY(true) is not a terminal")
	}
}
