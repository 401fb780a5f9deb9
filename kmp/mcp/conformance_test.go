package mcp_test

import (
	"testing"

	"github.com/underpass-ai/axlr/kmp"
	"github.com/underpass-ai/axlr/kmp/embedded"
	"github.com/underpass-ai/axlr/kmp/kmptest"
	"github.com/underpass-ai/axlr/kmp/mcp"
)

// TestConformance runs the suite over kmp-mcp's kmp_* tools, as the in-test
// kmp-mcp serves a fresh embedded store and this client reads them back.
func TestConformance(t *testing.T) {
	kmptest.Run(t, func(t *testing.T) kmp.Store {
		s, err := embedded.Open(t.TempDir(), embedded.Options{})
		if err != nil {
			t.Fatalf("open embedded store: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close embedded store: %v", err)
			}
		})
		c := kmptest.Serve(t, s, mcp.NamingKMP)
		if c.Naming() != mcp.NamingKMP {
			t.Fatalf("client naming %q, want %q", c.Naming(), mcp.NamingKMP)
		}
		return c
	})
}
