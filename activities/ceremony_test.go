package activities

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/ceremonies"
	"github.com/underpass-ai/axlr/made"
	"github.com/underpass-ai/axlr/workflows"
)

// TestPinnedDigestMismatch: a definition MADE holds under another digest
// stops that ceremony's start with both digests; the other ceremony still
// publishes.
func TestPinnedDigestMismatch(t *testing.T) {
	eng, err := made.OpenEmbedded(t.TempDir(), made.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	debug, _ := ceremonies.ForMode("debug")
	y, err := debug.YAML()
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(y, []byte("description: \"Reproduce"), []byte("description: \"Changed: reproduce"), 1)
	other, err := eng.Publish(context.Background(), changed)
	if err != nil {
		t.Fatal(err)
	}
	_, err = PublishPinned(context.Background(), eng, debug)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != workflows.ErrTypeMadeRefused || !app.NonRetryable() ||
		!strings.Contains(app.Message(), other.Digest) || !strings.Contains(app.Message(), debug.Digest) {
		t.Fatalf("error %v, want a refusal naming %s and %s", err, other.Digest, debug.Digest)
	}
	delivery, _ := ceremonies.ForMode("delivery")
	if _, err := PublishPinned(context.Background(), eng, delivery); err != nil {
		t.Fatalf("delivery: %v", err)
	}
}
