package tools

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestPublish: the approved bytes land once, whole, under their name; a
// retry finds them done; other bytes under the name, or bytes that are not
// the approved ones, are refused and change nothing.
func TestPublish(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	data := []byte("# Checkout latency\n\nBlameless.\n")
	digest := sha256Hex(data)
	p := "docs/incidents/2026-12-02-checkout-latency.md"
	if err := f.w.Publish(ctx, p, data, digest); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(f.dir, p)); err != nil || string(got) != string(data) {
		t.Fatalf("published %q %v", got, err)
	}
	if err := f.w.Publish(ctx, p, data, digest); err != nil {
		t.Fatalf("publishing the same bytes again: %v", err)
	}
	other := []byte("# Something else\n")
	err := f.w.Publish(ctx, p, other, sha256Hex(other))
	wantError(t, err, CodeConflict, `"docs/incidents/2026-12-02-checkout-latency.md" is published already with sha256 `+digest+`, not `+sha256Hex(other)+`: a publication never overwrites`)
	err = f.w.Publish(ctx, "docs/incidents/b.md", other, digest)
	wantError(t, err, CodeConflict, `the bytes to publish to "docs/incidents/b.md" have sha256 `+sha256Hex(other)+`, not the approved `+digest)
	if _, err := os.Stat(filepath.Join(f.dir, "docs/incidents/b.md")); !os.IsNotExist(err) {
		t.Fatalf("a refused publication wrote: %v", err)
	}
	err = f.w.Publish(ctx, "out-dir/x.md", data, digest)
	wantError(t, err, CodeInvalidPath, `path "out-dir/x.md" resolves outside the workspace through a symbolic link`)
	err = f.w.Publish(ctx, "../x.md", data, digest)
	wantError(t, err, CodeInvalidRequest, `path "../x.md" climbs out of the workspace`)
	if got, _ := os.ReadFile(filepath.Join(f.dir, p)); string(got) != string(data) {
		t.Fatalf("the publication changed: %q", got)
	}
}
