package activities

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"

	"github.com/underpass-ai/axlr/made/embedded"
	"github.com/underpass-ai/axlr/workflows"
)

// teamNote is a team's own definition: two model steps and a human
// guard (ceremonies/testdata, which e2e publishes too).
var teamNote = func() string {
	b, err := os.ReadFile(filepath.Join("..", "ceremonies", "testdata", "team_note.yaml"))
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// TestPublishDefinition: a person's definition is published to MADE and
// kept, listed after axlrd's own; the same bytes again change nothing;
// other bytes under its version, a reserved name and a YAML error are
// refused with what to do, and keep nothing.
func TestPublishDefinition(t *testing.T) {
	ctx := context.Background()
	eng, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	dir := filepath.Join(t.TempDir(), "ceremonies")
	a := &Ceremony{Made: eng, Definitions: dir, Log: zerolog.Nop()}

	res, err := a.PublishDefinition(ctx, workflows.PublishDefinitionInput{YAML: teamNote})
	if err != nil || res.Outcome != "published" || res.Name != "team_note" || res.Version != "1.0" || len(res.Digest) != 64 {
		t.Fatalf("a first publication: %+v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "team_note@1.0.yaml")); err != nil || string(b) != teamNote {
		t.Fatalf("axlrd's copy: %q %v", b, err)
	}
	again, err := a.PublishDefinition(ctx, workflows.PublishDefinitionInput{YAML: teamNote})
	if err != nil || again.Outcome != "already_published" || again.Digest != res.Digest {
		t.Fatalf("the same bytes again: %+v %v", again, err)
	}
	v2 := strings.Replace(strings.Replace(teamNote, `version: "1.0"`, `version: "1.10"`, 1), "Draft a change note", "Draft a short change note", 1)
	if _, err := a.PublishDefinition(ctx, workflows.PublishDefinitionInput{YAML: v2}); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, yaml, want string
	}{
		{"other bytes", strings.Replace(teamNote, "Draft the change note.", "Draft it.", 1),
			"team_note 1.0 is published already with other bytes (digest " + res.Digest},
		{"a reserved name", strings.Replace(teamNote, "name: team_note", "name: axlr_note", 1), "line 2: name axlr_note: names that begin with axlr_ are axlrd's own"},
		{"an unquoted colon", strings.Replace(teamNote, `"Draft a change note, then have a person approve it."`, "Note: drafted", 1), "line 3: mapping values are not allowed"},
		{"too large", teamNote + "# " + strings.Repeat("x", workflows.MaxDefinitionBytes), "bytes: at most 262144"},
	} {
		_, err := a.PublishDefinition(ctx, workflows.PublishDefinitionInput{YAML: tt.yaml})
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(app.Message(), tt.want) {
			t.Errorf("%s: %v, want a final refusal with %q", tt.name, err, tt.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "team_note@1.0.yaml")); string(b) != teamNote {
		t.Fatalf("a refused publication changed the copy: %q", b)
	}

	list, err := a.ListDefinitions(ctx, workflows.ListDefinitionsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range list {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, " "); got != "axlr_debug axlr_delivery axlr_incident axlr_repair axlr_improve axlr_plan axlr_task axlr_sync axlr_session team_note" {
		t.Fatalf("listed %s", got)
	}
	debug, mine := list[0], list[len(list)-1]
	if !debug.BuiltIn || strings.Join(debug.Versions, ",") != "2.0,2.1" || debug.Starts != "/debug mode" || debug.Description == "" {
		t.Errorf("axlr_debug is listed as %+v", debug)
	}
	if mine.BuiltIn || strings.Join(mine.Versions, ",") != "1.0,1.10" || mine.Starts != "/ceremony team_note" || mine.Description != "Draft a short change note, then have a person approve it." {
		t.Errorf("team_note is listed as %+v", mine)
	}
	if list[2].Starts != "/incident mode" || list[3].Starts != "/repair jobs" || list[5].Starts != "/plan (plan)" {
		t.Errorf("the incident's, jobs' and plans' definitions start with %q, %q and %q", list[2].Starts, list[3].Starts, list[5].Starts)
	}
}
