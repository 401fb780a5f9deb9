package ceremonies

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
			if _, ok := StepOf(d.Name, d.Version, st.ID); !ok {
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

// TestStepsPinned holds the digest of each published version's steps: the
// fields, checks, outcomes and instructions the driver and the hand-back
// validation read for it. Runs in flight read them by name and version, so
// a published version's steps never change; a change is a new version (a
// new YAML, pin and entry in steps), and the old entry stays while runs of
// it may be in flight.
func TestStepsPinned(t *testing.T) {
	pins := map[string]string{
		"axlr_debug 2.0":    "e525952779caff90c14eb8cb273035d8a137eca3a74795a7b5f10247cb4e64ad",
		"axlr_delivery 2.0": "2b4e0ec0588ab109394ea062ed4f08cb48d65cc9ea0b2a3dd1a62ca3578bbf6b",
		"axlr_debug 2.1":    "e525952779caff90c14eb8cb273035d8a137eca3a74795a7b5f10247cb4e64ad",
		"axlr_delivery 2.1": "2b4e0ec0588ab109394ea062ed4f08cb48d65cc9ea0b2a3dd1a62ca3578bbf6b",
		"axlr_repair 1.0":   "5163e24e3d2cce3ef779821f7a445650ad2139839a5271a3aad693338ef2a83d",
		"axlr_improve 1.0":  "5fa73a440043832778e77f6d4dd77c09d51145b6093ee0982c35b60d0b47066d",
	}
	for key, list := range steps {
		b, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		got := hex.EncodeToString(sum[:])
		want, ok := pins[key]
		switch {
		case !ok:
			t.Errorf("steps of %s have no pin; add %q: %q", key, key, got)
		case got != want:
			t.Errorf("steps of %s changed: digest %s, pinned %s; publish a new version instead of changing this one", key, got, want)
		}
	}
	for key := range pins {
		if _, ok := steps[key]; !ok {
			t.Errorf("pinned steps of %s are gone: a run in flight may still read them", key)
		}
	}
}
