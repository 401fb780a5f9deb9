package ceremonies

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/underpass-ai/axlr/made"
)

// TestPins checks every pin against its YAML, and that every YAML has a
// pin: a definition's content changes only with a new version and a new pin.
func TestPins(t *testing.T) {
	pinned := map[string]bool{}
	for _, d := range All() {
		pinned[d.File] = true
		y, err := d.YAML()
		if err != nil {
			t.Fatal(err)
		}
		def, err := made.Parse(y)
		if err != nil {
			t.Fatalf("%s: %v", d.File, err)
		}
		for _, f := range made.Validate(def) {
			if f.Severity == made.SeverityError {
				t.Errorf("%s: %s", d.File, f.Message)
			}
		}
		if def.Name != d.Name || def.Version != d.Version {
			t.Errorf("%s declares %s %s, pinned as %s %s", d.File, def.Name, def.Version, d.Name, d.Version)
		}
		if got := made.Digest(def); got != d.Digest {
			t.Errorf("%s: digest %s, pinned %s: bump the version and pin the new digest", d.File, got, d.Digest)
		}
		for _, st := range def.Steps {
			if _, ok := StepOf(d.Name, st.ID); !ok {
				t.Errorf("%s step %s has no driver entry", d.File, st.ID)
			}
			if p, _ := st.Config["prompt"].(string); strings.TrimSpace(p) == "" {
				t.Errorf("%s step %s has no prompt", d.File, st.ID)
			}
		}
	}
	yamls, err := fs.Glob(files, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range yamls {
		if !pinned[f] {
			t.Errorf("%s has no pin", f)
		}
	}
}
