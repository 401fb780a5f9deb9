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
	s := NewIOStreams(r, w, io.Discard)
	if s.IsStdoutTTY() || s.IsStdinTTY() {
		t.Error("a pipe is a terminal")
	}
	s = NewIOStreams(nil, w, io.Discard)
	if b, err := io.ReadAll(s.In); err != nil || len(b) != 0 {
		t.Errorf("nil stdin reads %q, %v", b, err)
	}
	s.SetStdoutTTY(true)
	s.SetStdinTTY(true)
	if !s.IsStdoutTTY() || !s.IsStdinTTY() {
		t.Error("SetStdoutTTY(true), SetStdinTTY(true) are not terminals")
	}
}
