package embedded_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/underpass-ai/axlr/kmp"
)

var words = []string{"parse", "format", "divide", "overflow", "separator", "rounding", "panic", "index", "empty", "input",
	"timeout", "checks", "merge", "branch", "vendor", "config", "settings", "session", "queue", "retry"}

// BenchmarkWake wakes a 2 KiB recall with a brief as intent from a store
// of 10,000 entries over 50 abouts (200 each).
func BenchmarkWake(b *testing.B) {
	dir := b.TempDir()
	s := open(b, dir)
	ctx := context.Background()
	for a := range 50 {
		about := fmt.Sprintf("repo:acme/r%d", a)
		for w := range 20 { // 20 writes of 10 memories
			ms := make([]kmp.Memory, 10)
			for i := range ms {
				n := w*10 + i
				ms[i] = kmp.Memory{ID: fmt.Sprint("m", i), Kind: kmp.Kinds[n%len(kmp.Kinds)],
					Summary:  fmt.Sprintf("%s %s in %s number %d fails because of %s", words[n%20], words[(n/20)%20], about, n, words[(n*7)%20]),
					Evidence: fmt.Sprintf("go test ./... exit 1: %s %s", words[(n*3)%20], words[(n*11)%20])}
			}
			if _, err := s.Write(ctx, kmp.WriteRequest{About: about, Actor: "bench", IdempotencyKey: fmt.Sprint(about, ":", w), Memories: ms}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// As axlrd finds it at start: opened again, its index merged.
	s.Close()
	s = open(b, dir)
	req := kmp.WakeRequest{About: "repo:acme/r17", Intent: "TestParse panics with index out of range on empty input after the rounding change",
		Budget: &kmp.Budget{MaxBytes: 2048}}
	b.ResetTimer()
	for b.Loop() {
		res, err := s.Wake(ctx, req)
		if err != nil || res.Projection.Page.Returned == 0 {
			b.Fatal(res.Projection, err)
		}
	}
}

// BenchmarkWrite writes one memory per write, each under its own key.
func BenchmarkWrite(b *testing.B) {
	s := open(b, b.TempDir())
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Write(ctx, kmp.WriteRequest{About: "repo:acme/calc", Actor: "bench", IdempotencyKey: fmt.Sprint("k", i),
			Memories: []kmp.Memory{{ID: "m", Kind: kmp.KindErrorPath, Summary: fmt.Sprintf("cause %d: %s", i, words[i%20]), Evidence: "go test exit 1"}}}); err != nil {
			b.Fatal(err)
		}
	}
}
