package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxManifestBytes bounds a manifest file.
const MaxManifestBytes = 64 << 10

// MaxIDBytes bounds a plugin id.
const MaxIDBytes = 32

// MaxToolNameBytes bounds a tool name, as MCP does.
const MaxToolNameBytes = 128

// AllowAll is the allow_tools wildcard: ["*"] allows every tool the server
// advertises, now or later.
const AllowAll = "*"

// Manifest is a version 1 plugin manifest: one MCP server, reached over
// stdio (Command and Args) or Streamable HTTP (URL), and the tools of it a
// host may call.
type Manifest struct {
	// Path is the absolute path the manifest was read from.
	Path string
	// ID names the plugin: see ValidID.
	ID string
	// Command is the absolute path of a stdio server's executable; empty
	// for an HTTP server.
	Command string
	// Args are a stdio server's arguments.
	Args []string
	// URL is a Streamable HTTP server's endpoint; empty for a stdio server.
	URL string
	// AllowTools lists the tools a host may call, or is [AllowAll].
	AllowTools []string
}

// Stdio reports whether the server is a child process over stdio rather
// than a Streamable HTTP endpoint.
func (m *Manifest) Stdio() bool { return m.Command != "" }

// Allows reports whether the manifest allows the tool named name.
func (m *Manifest) Allows(name string) bool {
	return slices.Equal(m.AllowTools, []string{AllowAll}) || slices.Contains(m.AllowTools, name)
}

// ManifestError is a manifest refused: it names the file and, when one is
// at fault, the field.
type ManifestError struct {
	Path   string
	Field  string // empty when the file as a whole is at fault
	Reason string
}

func (e *ManifestError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("plugin manifest %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("plugin manifest %s: field %s: %s", e.Path, e.Field, e.Reason)
}

var idPattern = regexp.MustCompile(`^[a-z][a-z0-9]*([_-][a-z0-9]+)*$`)

// IDRule states what ValidID accepts.
const IDRule = "1 to 32 bytes of lower-case letters, digits, '-' and '_', starting with a letter, with no separator at the end or next to another"

// ValidID reports whether id can name a plugin (IDRule): such an id holds
// no '/', ':' or "__", so it splits cleanly out of a canonical name
// <plugin>/<tool>, an alias <plugin>__<tool> and a --plugin-env
// ID:KEY=VALUE.
func ValidID(id string) bool {
	return len(id) <= MaxIDBytes && idPattern.MatchString(id)
}

// ToolNameRule states what ValidToolName accepts.
const ToolNameRule = "1 to 128 bytes of ASCII letters, digits, '_', '-' and '.'"

// ValidToolName reports whether name is a tool name as MCP defines them
// (ToolNameRule). An advertised tool with another name is not offered.
func ValidToolName(name string) bool {
	if name == "" || len(name) > MaxToolNameBytes {
		return false
	}
	for i := range len(name) {
		if !toolNameByte(name[i]) && name[i] != '.' {
			return false
		}
	}
	return true
}

// toolNameByte reports whether c may appear in a model's function name.
func toolNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// ReadManifest reads and checks the manifest at path, which must be
// absolute and name a regular file of at most MaxManifestBytes. Its errors
// are *ManifestError.
func ReadManifest(path string) (*Manifest, error) {
	fail := func(format string, args ...any) error {
		return &ManifestError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if !filepath.IsAbs(path) {
		return nil, fail("the path is not absolute; name the manifest by its absolute path")
	}
	// Stat before opening: opening a FIFO would wait for a writer.
	if st, err := os.Stat(path); err != nil {
		return nil, fail("%v", errors.Unwrap(err))
	} else if !st.Mode().IsRegular() {
		return nil, fail("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fail("%v", errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fail("%v", err)
	}
	return ParseManifest(path, data)
}

// ParseManifest checks the manifest data read from the absolute path path.
// Its errors are *ManifestError.
func ParseManifest(path string, data []byte) (*Manifest, error) {
	fail := func(field, format string, args ...any) error {
		return &ManifestError{Path: path, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !filepath.IsAbs(path) {
		return nil, fail("", "the path is not absolute; name the manifest by its absolute path")
	}
	if len(data) > MaxManifestBytes {
		return nil, fail("", "the file exceeds the %d byte limit", MaxManifestBytes)
	}
	if err := checkDocument(data); err != nil {
		return nil, fail("", "%v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, fail("", "not a JSON object")
	}
	known := []string{"manifest_version", "id", "command", "args", "url", "allow_tools"}
	for name := range fields {
		if !slices.Contains(known, name) {
			return nil, fail(strconv.Quote(name), "unknown field; a version 1 manifest has %s", strings.Join(known, ", "))
		}
	}

	m := &Manifest{Path: path}
	var version int
	if err := field(fields, "manifest_version", &version); err != nil {
		return nil, fail("manifest_version", "%v", err)
	}
	if version != 1 {
		return nil, fail("manifest_version", "version %d is not supported; this axlr reads manifest_version 1", version)
	}
	if err := field(fields, "id", &m.ID); err != nil {
		return nil, fail("id", "%v", err)
	}
	if !ValidID(m.ID) {
		return nil, fail("id", "%s is not a plugin id: %s", strconv.Quote(m.ID), IDRule)
	}

	_, hasCommand := fields["command"]
	_, hasURL := fields["url"]
	switch {
	case hasCommand && hasURL:
		return nil, fail("url", "a manifest names exactly one transport: command (stdio) or url (Streamable HTTP), not both")
	case !hasCommand && !hasURL:
		return nil, fail("", "no transport: give command (stdio) or url (Streamable HTTP)")
	case hasCommand:
		if err := field(fields, "command", &m.Command); err != nil {
			return nil, fail("command", "%v", err)
		}
		if !filepath.IsAbs(m.Command) {
			return nil, fail("command", "%s is not an absolute path", strconv.Quote(m.Command))
		}
		if _, ok := fields["args"]; ok {
			if err := field(fields, "args", &m.Args); err != nil {
				return nil, fail("args", "%v", err)
			}
		}
	default:
		if _, ok := fields["args"]; ok {
			return nil, fail("args", "only a stdio manifest (command) takes args")
		}
		if err := field(fields, "url", &m.URL); err != nil {
			return nil, fail("url", "%v", err)
		}
		if err := checkURL(m.URL); err != nil {
			return nil, fail("url", "%v", err)
		}
	}

	if err := field(fields, "allow_tools", &m.AllowTools); err != nil {
		return nil, fail("allow_tools", "%v", err)
	}
	if err := checkAllowTools(m.AllowTools); err != nil {
		return nil, fail("allow_tools", "%v", err)
	}
	return m, nil
}

// checkDocument refuses data that is not exactly one JSON value, or that
// repeats a name within an object (encoding/json keeps the last silently).
func checkDocument(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkValue(dec, "the document"); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one JSON document")
	}
	return nil
}

// walkValue consumes one JSON value from dec; where names what holds it.
func walkValue(dec *json.Decoder, where string) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty; a manifest is one JSON object")
		}
		return fmt.Errorf("not valid JSON: %v", err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("not valid JSON: %v", err)
			}
			name := tok.(string)
			if seen[name] {
				return fmt.Errorf("field %s appears twice in %s", strconv.Quote(name), where)
			}
			seen[name] = true
			if err := walkValue(dec, "field "+strconv.Quote(name)); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := walkValue(dec, where); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	// The closing delimiter.
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	return nil
}

// field decodes the required field name of fields into dst, naming the
// JSON type it wants.
func field(fields map[string]json.RawMessage, name string, dst any) error {
	raw, ok := fields[name]
	if !ok {
		return errors.New("missing")
	}
	want := map[string]string{
		"manifest_version": "the integer 1",
		"args":             "an array of strings",
		"allow_tools":      "an array of strings",
	}[name]
	if want == "" {
		want = "a string"
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return fmt.Errorf("must be %s, not null", want)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("must be %s", want)
	}
	return nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%s is not a URL", strconv.Quote(raw))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s is not an http or https URL", strconv.Quote(raw))
	case u.Host == "":
		return fmt.Errorf("%s names no host", strconv.Quote(raw))
	case u.User != nil:
		// Credentials in a manifest would travel into logs and error messages.
		return errors.New("the URL carries credentials (user info); a version 1 manifest takes none")
	case u.Fragment != "" || strings.HasSuffix(raw, "#"):
		return fmt.Errorf("%s has a fragment, which an endpoint does not", strconv.Quote(raw))
	}
	return nil
}

func checkAllowTools(names []string) error {
	if len(names) == 0 {
		return errors.New(`must list at least one tool name, or be ["*"] for every tool the server advertises`)
	}
	seen := map[string]bool{}
	for _, name := range names {
		switch {
		case name == AllowAll && len(names) > 1:
			return errors.New(`the wildcard "*" must stand alone: ["*"]`)
		case name == AllowAll:
		case !ValidToolName(name):
			return fmt.Errorf("%s is not a tool name: %s", strconv.Quote(name), ToolNameRule)
		case seen[name]:
			return fmt.Errorf("%s is listed twice", strconv.Quote(name))
		}
		seen[name] = true
	}
	return nil
}
