package forge

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/jobs"
)

func testMarker(kind string) Marker {
	issue := 123
	return Marker{
		Version:       MarkerVersion,
		Kind:          kind,
		Repository:    "underpass-ai/AXLR",
		Base:          "main",
		Slug:          "20261016-0930-hello-probe-fails",
		Brief:         "Issue #123 of underpass-ai/AXLR: hello_probe fails\n\nIt exits 0 when the child fails.",
		About:         "project:axlr",
		Issue:         &issue,
		Created:       time.Date(2026, 10, 16, 9, 30, 0, 0, time.UTC),
		OriginSession: "sess-1",
		Build:         "v0.3.0",
	}
}

// gitDirOnly makes a directory with an empty .git directory, all WriteMarker
// needs.
func gitDirOnly(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMarkerRoundTrip(t *testing.T) {
	origin, _ := testOrigin(t, "main", seedFiles)
	r, err := Clone(context.Background(), origin, filepath.Join(t.TempDir(), "c"), GitAuth{})
	if err != nil {
		t.Fatal(err)
	}
	dir := r.Dir()
	want := testMarker(KindImprove)
	if err := WriteMarker(dir, want); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarker(dir, want); err != nil { // a retried prepare
		t.Fatal(err)
	}
	got, err := ReadMarker(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("ReadMarker = %+v, want %+v", *got, want)
	}
	fi, err := os.Stat(filepath.Join(dir, MarkerFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	exclude, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(exclude), "/"+MarkerFile+"\n"); n != 1 {
		t.Errorf(".git/info/exclude lists the marker %d times:\n%s", n, exclude)
	}
	// Real git hides it too, so no add -A commits it.
	if p := porcelainPaths(t, dir); len(p) != 0 {
		t.Errorf("git status shows %q", p)
	}
	runGit(t, dir, "add", "-A")
	if p := porcelainPaths(t, dir); len(p) != 0 {
		t.Errorf("git add -A staged %q", p)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, ".git"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "axlr-repair-") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

func TestMarkerJSONNames(t *testing.T) {
	dir := gitDirOnly(t)
	m := testMarker(KindRepair)
	m.Created = time.Date(2026, 10, 16, 11, 30, 0, 0, time.FixedZone("CEST", 2*3600))
	if err := WriteMarker(dir, m); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"about", "base", "brief", "build", "created", "issue", "kind", "origin_session", "repository", "slug", "version"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	if raw["created"] != "2026-10-16T09:30:00Z" {
		t.Errorf("created = %v, want RFC 3339 in UTC", raw["created"])
	}
	if raw["kind"] != "repair" || raw["version"] != 1.0 || raw["issue"] != 123.0 {
		t.Errorf("kind, version, issue = %v, %v, %v", raw["kind"], raw["version"], raw["issue"])
	}

	m = testMarker(KindRepair)
	m.Issue, m.OriginSession, m.Build = nil, "", ""
	if err := WriteMarker(dir, m); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(dir, MarkerFile))
	for _, k := range []string{"issue", "origin_session", "build"} {
		if strings.Contains(string(data), `"`+k+`"`) {
			t.Errorf("the optional %s is written when empty:\n%s", k, data)
		}
	}
}

func TestMarkerDefaults(t *testing.T) {
	dir := gitDirOnly(t)
	m := testMarker("")
	m.Base, m.About = "", ""
	if err := WriteMarker(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMarker(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != KindRepair || got.Base != "main" || got.About != "project:axlr" {
		t.Errorf("kind, base, about = %q, %q, %q; want repair, main, project:axlr", got.Kind, got.Base, got.About)
	}
}

func TestReadMarkerInvalid(t *testing.T) {
	valid, err := json.Marshal(testMarker(KindRepair))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(valid, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, content, want string
	}{
		{"not JSON", "{version: 1", "invalid character"},
		{"version 2", edit(func(m map[string]any) { m["version"] = 2 }), "version 2 is not 1"},
		{"no version", edit(func(m map[string]any) { delete(m, "version") }), "version 0 is not 1"},
		{"unknown kind", edit(func(m map[string]any) { m["kind"] = "plan" }), `kind "plan"`},
		{"no repository", edit(func(m map[string]any) { delete(m, "repository") }), "repository is empty"},
		{"no slug", edit(func(m map[string]any) { m["slug"] = "" }), "slug"},
		{"slug with a slash", edit(func(m map[string]any) { m["slug"] = "a/b" }), "slug"},
		{"bad base", edit(func(m map[string]any) { m["base"] = "a..b" }), "base"},
		{"empty brief", edit(func(m map[string]any) { m["brief"] = " " }), "brief is empty"},
		{"long brief", edit(func(m map[string]any) { m["brief"] = strings.Repeat("b", MaxBrief+1) }), "brief is 8193 bytes (at most 8192)"},
		{"issue 0", edit(func(m map[string]any) { m["issue"] = 0 }), "issue 0"},
		{"no created", edit(func(m map[string]any) { delete(m, "created") }), "created is missing"},
		{"created not a time", edit(func(m map[string]any) { m["created"] = "yesterday" }), "cannot parse"},
		{"two-line build", edit(func(m map[string]any) { m["build"] = "a\nb" }), "build must be one line"},
		{"too large", edit(func(m map[string]any) { m["extra"] = strings.Repeat("x", MaxMarker) }), "larger than 16384 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadMarker(dir)
			if err == nil {
				t.Fatal("ReadMarker accepted it")
			}
			msg := err.Error()
			if !strings.Contains(msg, ".axlr-repair.json is not a valid repair marker") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want the invalid-marker message with %q", msg, tc.want)
			}
		})
	}
}

func TestReadMarkerToleratesUnknownFields(t *testing.T) {
	dir := t.TempDir()
	content := `{"version":1,"kind":"improve","repository":"o/Name","slug":"s","brief":"b","created":"2026-10-16T09:30:00Z","future":{"x":1}}`
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMarker(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != KindImprove || m.Base != "main" || m.About != "project:name" || m.Issue != nil {
		t.Errorf("ReadMarker = %+v", m)
	}
}

func TestReadMarkerNotAFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadMarker(dir); !errors.Is(err, ErrNoMarker) {
		t.Errorf("no marker: %v, want ErrNoMarker", err)
	}
	if err := os.Mkdir(filepath.Join(dir, MarkerFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMarker(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory as marker: %v", err)
	}
	linked := t.TempDir()
	good := gitDirOnly(t)
	if err := WriteMarker(good, testMarker(KindRepair)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(good, MarkerFile), filepath.Join(linked, MarkerFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMarker(linked); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a symbolic link as marker: %v", err)
	}
}

func TestWriteMarkerRefuses(t *testing.T) {
	long := testMarker(KindRepair)
	long.Brief = strings.Repeat("é", MaxBrief/2+1)
	escaped := testMarker(KindRepair)
	escaped.Brief = strings.Repeat("\x01", MaxBrief) // each byte encodes as \u0001
	tests := []struct {
		name string
		dir  string
		m    Marker
		want string
	}{
		{"long brief", gitDirOnly(t), long, "brief is 8194 bytes (at most 8192)"},
		{"encodes too large", gitDirOnly(t), escaped, "at most 16384"},
		{"bad kind", gitDirOnly(t), testMarker("debug"), `kind "debug"`},
		{"not a clone", t.TempDir(), testMarker(KindRepair), "no .git directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteMarker(tc.dir, tc.m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("WriteMarker = %v, want %q", err, tc.want)
			}
			if _, serr := os.Stat(filepath.Join(tc.dir, MarkerFile)); serr == nil {
				t.Error("a refused marker was written")
			}
		})
	}
}

func TestCheckMarker(t *testing.T) {
	withMarker := func(kind string) string {
		dir := gitDirOnly(t)
		if err := WriteMarker(dir, testMarker(kind)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	repairDir, improveDir, plainDir := withMarker(KindRepair), withMarker(KindImprove), t.TempDir()
	invalidDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(invalidDir, MarkerFile), []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, kind string
		want            string // "" for success
		command         string
	}{
		{"repair in a repair clone", repairDir, KindRepair, "", ""},
		{"improve in an improvement clone", improveDir, KindImprove, "", ""},
		{"repair in an improvement clone", improveDir, KindRepair,
			"/repair refuses an improvement clone (" + improveDir + `): start a repair with axlr-tui --repair "<failure brief or #issue>"`,
			`axlr-tui --repair "<failure brief or #issue>"`},
		{"improve in a repair clone", repairDir, KindImprove,
			"/improve refuses a repair clone (" + repairDir + `): start an improvement with axlr-tui --improve "<improvement brief or #issue>"`,
			`axlr-tui --improve "<improvement brief or #issue>"`},
		{"repair in a workspace that is no job's", plainDir, KindRepair,
			"/repair needs a repair clone, and " + plainDir + ` has no .axlr-repair.json: start a repair with axlr-tui --repair "<failure brief or #issue>"`,
			`axlr-tui --repair "<failure brief or #issue>"`},
		{"improve in a workspace that is no job's", plainDir, KindImprove,
			"/improve needs an improvement clone, and " + plainDir + ` has no .axlr-repair.json: start an improvement with axlr-tui --improve "<improvement brief or #issue>"`,
			`axlr-tui --improve "<improvement brief or #issue>"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := CheckMarker(tc.dir, tc.kind)
			if tc.want == "" {
				if err != nil || m.Kind != tc.kind {
					t.Fatalf("CheckMarker = %+v, %v", m, err)
				}
				return
			}
			var wc *WrongCloneError
			if !errors.As(err, &wc) {
				t.Fatalf("CheckMarker = %v, want a *WrongCloneError", err)
			}
			if err.Error() != tc.want {
				t.Errorf("message\n%s\nwant\n%s", err, tc.want)
			}
			if wc.Command() != tc.command {
				t.Errorf("Command() = %s", wc.Command())
			}
		})
	}
	if _, err := CheckMarker(invalidDir, KindRepair); err == nil || !strings.Contains(err.Error(), "is not a valid repair marker") {
		t.Errorf("an invalid marker: %v", err)
	}
	if _, err := CheckMarker(repairDir, "debug"); err == nil || !strings.Contains(err.Error(), `kind "debug"`) {
		t.Errorf("an unknown mode: %v", err)
	}
}

// TestSlug: the slugs jobs names jobs with are valid marker slugs.
func TestSlug(t *testing.T) {
	tests := []struct {
		now        time.Time
		brief, out string
	}{
		{time.Date(2026, 10, 16, 9, 30, 59, 0, time.UTC), "hello probe fails", "20261016-0930-hello-probe-fails"},
		{time.Date(2026, 10, 16, 11, 30, 0, 0, time.FixedZone("CEST", 2*3600)), "hello", "20261016-0930-hello"},
		{time.Date(2026, 1, 1, 0, 5, 0, 0, time.FixedZone("PST", -8*3600)), "", "20260101-0805-failure"},
	}
	for _, tc := range tests {
		got := jobs.Slug(tc.now, tc.brief)
		if got != tc.out {
			t.Errorf("Slug(%v, %q) = %q, want %q", tc.now, tc.brief, got, tc.out)
		}
		if !validSlug(got) {
			t.Errorf("Slug %q is not a valid marker slug", got)
		}
	}
}
