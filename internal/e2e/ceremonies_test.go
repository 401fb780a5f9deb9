package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/workflows"
)

// TestCeremoniesPublish: a person publishes their definition through
// axlr-tui and axlrd; it is listed after axlrd's own, and it survives an
// axlrd restart. The same file again changes nothing; other bytes under
// its version, and an unquoted ": ", are refused with the line and what
// to do.
func TestCeremoniesPublish(t *testing.T) {
	e := newEnv(t, "http://127.0.0.1:1/v1")
	p := e.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	write := func(name, doc string) string {
		path := filepath.Join(e.dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A team's own definition: two model steps and a human guard.
	b, err := os.ReadFile(filepath.Join("..", "..", "ceremonies", "testdata", "team_note.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	teamNoteYAML := string(b)
	file := write("team_note.yaml", teamNoteYAML)
	r := e.tui(ctx, "ceremonies", "publish", file)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "team_note 1.0 published; digest ") {
		t.Fatalf("publish: %d %q %q", r.code, r.stdout, r.stderr)
	}
	digest := strings.TrimSpace(strings.TrimPrefix(r.stdout, "team_note 1.0 published; digest "))
	if r := e.tui(ctx, "ceremonies", "publish", file); r.code != 0 || r.stdout != "team_note 1.0 was published already with these bytes: nothing changed; digest "+digest+"\n" {
		t.Fatalf("publish again: %d %q %q", r.code, r.stdout, r.stderr)
	}
	changed := write("changed.yaml", strings.Replace(teamNoteYAML, "Draft the change note.", "Draft it.", 1))
	if r := e.tui(ctx, "ceremonies", "publish", changed); r.code != 1 || !strings.Contains(r.stderr, "team_note 1.0 is published already with other bytes (digest "+digest) {
		t.Fatalf("other bytes: %d %q %q", r.code, r.stdout, r.stderr)
	}
	colon := write("colon.yaml", strings.Replace(teamNoteYAML, `"Draft a change note, then have a person approve it."`, "Note: drafted", 1))
	if r := e.tui(ctx, "ceremonies", "publish", colon); r.code != 1 || !strings.Contains(r.stderr, `line 3: mapping values are not allowed in this context: a value that holds ": " must be quoted`) {
		t.Fatalf("an unquoted colon: %d %q %q", r.code, r.stdout, r.stderr)
	}

	p.stop()
	e.start()
	r = e.tui(ctx, "ceremonies", "--json")
	var defs []workflows.DefinitionSummary
	if err := json.Unmarshal([]byte(r.stdout), &defs); r.code != 0 || err != nil {
		t.Fatalf("list: %d %q %q %v", r.code, r.stdout, r.stderr, err)
	}
	last := defs[len(defs)-1]
	if len(defs) != 9 || !defs[0].BuiltIn || last.Name != "team_note" || last.Starts != "published" || last.BuiltIn {
		t.Fatalf("listed %+v", defs)
	}
	r = e.tui(ctx, "ceremonies")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(rows) != 10 || strings.Join(strings.Fields(rows[9]), " ") != "team_note 1.0 published Draft a change note, then have a person approve it." {
		t.Fatalf("list: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
