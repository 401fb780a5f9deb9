package forge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
)

// MarkerFile is the name of the file, at the root of a job's clone, that
// says which job the clone belongs to.
const MarkerFile = ".axlr-repair.json"

// The kinds of job a marker names.
const (
	KindRepair  = "repair"
	KindImprove = "improve"
)

// MarkerVersion is the only version of the marker's format.
const MarkerVersion = 1

// Limits of a marker.
const (
	MaxBrief  = 8 << 10  // bytes of Marker.Brief
	MaxMarker = 16 << 10 // bytes of the encoded file
	maxSlug   = 80
	maxField  = 256 // bytes of repository, about, origin_session, build
)

// ErrNoMarker is returned, wrapped, by ReadMarker for a directory without
// a marker: a workspace that is not a job's clone.
var ErrNoMarker = errors.New("no " + MarkerFile)

// Marker is the content of MarkerFile.
type Marker struct {
	Version int `json:"version"` // MarkerVersion
	// Kind is KindRepair or KindImprove; empty reads as KindRepair, as the
	// markers that predate improvements were written.
	Kind       string `json:"kind"`
	Repository string `json:"repository"` // owner/name
	// Base is the branch the pull request targets; empty means "main".
	Base  string `json:"base"`
	Slug  string `json:"slug"`
	Brief string `json:"brief"` // at most MaxBrief bytes
	// About is the KMP about of the job's memory; empty means
	// "project:<repository name, lower-case>".
	About string `json:"about"`
	// Issue is the number of the issue the brief was read from, if any.
	Issue *int `json:"issue,omitempty"`
	// Created is written in UTC (RFC 3339).
	Created time.Time `json:"created"`
	// OriginSession is the session that requested the job, if one did.
	OriginSession string `json:"origin_session,omitempty"`
	// Build is the build of axlr that requested the job, if one did.
	Build string `json:"build,omitempty"`
}

// normalize fills the defaults and checks every field, naming the first one
// that is wrong.
func (m *Marker) normalize() error {
	if m.Version != MarkerVersion {
		return fmt.Errorf("version %d is not %d", m.Version, MarkerVersion)
	}
	switch m.Kind {
	case "":
		m.Kind = KindRepair
	case KindRepair, KindImprove:
	default:
		return fmt.Errorf("kind %q is neither %q nor %q", m.Kind, KindRepair, KindImprove)
	}
	if err := checkLine("repository", m.Repository, true); err != nil {
		return err
	}
	if m.Base == "" {
		m.Base = "main"
	}
	if plumbing.NewBranchReferenceName(m.Base).Validate() != nil {
		return fmt.Errorf("base %q is not a valid branch name", m.Base)
	}
	if !validSlug(m.Slug) {
		return fmt.Errorf("slug %q must be 1 to %d of a-z, 0-9 and -, starting with a letter or digit", m.Slug, maxSlug)
	}
	switch {
	case strings.TrimSpace(m.Brief) == "":
		return errors.New("brief is empty")
	case len(m.Brief) > MaxBrief:
		return fmt.Errorf("brief is %d bytes (at most %d)", len(m.Brief), MaxBrief)
	case !utf8.ValidString(m.Brief):
		return errors.New("brief is not valid UTF-8")
	}
	if m.About == "" {
		m.About = "project:" + strings.ToLower(path.Base(strings.TrimSuffix(m.Repository, "/")))
	}
	if err := checkLine("about", m.About, true); err != nil {
		return err
	}
	if m.Issue != nil && *m.Issue <= 0 {
		return fmt.Errorf("issue %d is not a positive number", *m.Issue)
	}
	if m.Created.IsZero() {
		return errors.New("created is missing")
	}
	m.Created = m.Created.UTC()
	if err := checkLine("origin_session", m.OriginSession, false); err != nil {
		return err
	}
	return checkLine("build", m.Build, false)
}

func checkLine(field, v string, required bool) error {
	switch {
	case v == "" && required:
		return fmt.Errorf("%s is empty", field)
	case len(v) > maxField:
		return fmt.Errorf("%s is %d bytes (at most %d)", field, len(v), maxField)
	case !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%s must be one line of text", field)
	}
	return nil
}

func validSlug(s string) bool {
	if s == "" || len(s) > maxSlug || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// WriteMarker writes m, with its defaults filled in, as dir's MarkerFile
// (mode 0600, replaced in one step) and lists the file in
// .git/info/exclude, so that it is never committed. dir must be the root of
// a clone with a .git directory.
func WriteMarker(dir string, m Marker) error {
	if err := m.normalize(); err != nil {
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	if buf.Len() > MaxMarker {
		return fmt.Errorf("write %s in %s: it encodes to %d bytes (at most %d)", MarkerFile, dir, buf.Len(), MaxMarker)
	}
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("write %s in %s: it is not the root of a clone (no .git directory)", MarkerFile, dir)
	}
	if err := excludeMarker(gitDir); err != nil {
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	// The temporary file lives in .git, on the clone's filesystem but out of
	// its worktree, so a crash leaves nothing for git status to show.
	tmp, err := os.CreateTemp(gitDir, "axlr-repair-*.json")
	if err != nil {
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, MarkerFile)); err != nil {
		return fmt.Errorf("write %s in %s: %w", MarkerFile, dir, err)
	}
	return nil
}

// excludeMarker adds "/.axlr-repair.json" to gitDir/info/exclude unless a
// line already names the marker.
func excludeMarker(gitDir string) error {
	info := filepath.Join(gitDir, "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return fmt.Errorf("exclude the marker: %w", err)
	}
	name := filepath.Join(info, "exclude")
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("exclude the marker: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l == MarkerFile || l == "/"+MarkerFile {
			return nil
		}
	}
	line := "/" + MarkerFile + "\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		line = "\n" + line
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("exclude the marker: %w", err)
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("exclude the marker: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("exclude the marker: %w", err)
	}
	return nil
}

// ReadMarker reads dir's MarkerFile. A directory without one gives an error
// wrapping ErrNoMarker; a file that is not a regular file, is larger than
// MaxMarker, is not JSON or has a wrong field gives "<path> is not a valid
// repair marker: <why>". Unknown fields are ignored, and the defaults are
// filled in.
func ReadMarker(dir string) (*Marker, error) {
	name := filepath.Join(dir, MarkerFile)
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%s is not a valid repair marker: %s", name, fmt.Sprintf(format, args...))
	}
	fi, err := os.Lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has %w", dir, ErrNoMarker)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, invalid("it is not a regular file")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxMarker+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > MaxMarker {
		return nil, invalid("it is larger than %d bytes", MaxMarker)
	}
	var m Marker
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, invalid("%v", err)
	}
	if err := m.normalize(); err != nil {
		return nil, invalid("%v", err)
	}
	return &m, nil
}

// WrongCloneError is CheckMarker's refusal: the workspace is not a clone of
// the kind of job the mode needs. Its message ends with the launcher
// command that makes the right clone.
type WrongCloneError struct {
	Dir   string
	Want  string // the mode's kind: KindRepair or KindImprove
	Found string // the marker's kind; empty when there is no marker
}

// Command is the launcher command that starts a job of the wanted kind.
func (e *WrongCloneError) Command() string {
	if e.Want == KindImprove {
		return `axlr-tui --improve "<improvement brief or #issue>"`
	}
	return `axlr-tui --repair "<failure brief or #issue>"`
}

func (e *WrongCloneError) Error() string {
	mode, clone, what := "/repair", "a repair clone", "a repair"
	if e.Want == KindImprove {
		mode, clone, what = "/improve", "an improvement clone", "an improvement"
	}
	if e.Found == "" {
		return fmt.Sprintf("%s needs %s, and %s has no %s: start %s with %s", mode, clone, e.Dir, MarkerFile, what, e.Command())
	}
	other := "a repair clone"
	if e.Found == KindImprove {
		other = "an improvement clone"
	}
	return fmt.Sprintf("%s refuses %s (%s): start %s with %s", mode, other, e.Dir, what, e.Command())
}

// CheckMarker returns dir's marker when dir is a clone of a job of kind
// (KindRepair for /repair, KindImprove for /improve). A workspace without a
// marker and a clone of the other kind are refused with a
// *WrongCloneError; an unreadable marker with ReadMarker's error.
func CheckMarker(dir, kind string) (*Marker, error) {
	if kind != KindRepair && kind != KindImprove {
		return nil, fmt.Errorf("check %s: kind %q is neither %q nor %q", MarkerFile, kind, KindRepair, KindImprove)
	}
	m, err := ReadMarker(dir)
	if errors.Is(err, ErrNoMarker) {
		return nil, &WrongCloneError{Dir: dir, Want: kind}
	}
	if err != nil {
		return nil, err
	}
	if m.Kind != kind {
		return nil, &WrongCloneError{Dir: dir, Want: kind, Found: m.Kind}
	}
	return m, nil
}
