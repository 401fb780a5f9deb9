package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeArgs decodes the arguments object raw of tool into dst, a pointer to
// a struct whose json tags name every accepted argument. Names match exactly
// (encoding/json alone would accept "PATH" for "path"); required arguments
// must be present and not null. Empty raw stands for {}. Its errors are
// Malformed.
func decodeArgs(tool string, raw json.RawMessage, dst any, required ...string) *Error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return malformed("arguments of %s must be one JSON object", tool)
	}
	allowed := argNames(dst)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(allowed, name) {
			return malformed("unknown argument %s for %s; it takes %s",
				quote(name), tool, strings.Join(allowed, ", "))
		}
	}
	for _, name := range required {
		if v, ok := fields[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return malformed("%s needs argument %s", tool, name)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return malformed("argument %s of %s must be %s, not %s",
				te.Field, tool, typeName(te.Type), te.Value)
		}
		return malformed("arguments of %s: %v", tool, err)
	}
	return nil
}

// argNames lists the json names of the fields of the struct dst points to.
func argNames(dst any) []string {
	t := reflect.TypeOf(dst).Elem()
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "an array of strings"
	case reflect.Pointer:
		return typeName(t.Elem())
	default:
		return t.String()
	}
}

// cleanPath checks a path argument (named what) for the workspace and returns
// it cleaned, "." for the workspace itself. It reads no file.
func cleanPath(what, p string) (string, *Error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", newError(CodeInvalidRequest, "%s contains a NUL byte", what)
	}
	if p == "" {
		return ".", nil
	}
	if strings.HasPrefix(p, "/") {
		return "", newError(CodeInvalidRequest, "%s %s is absolute; use a path relative to the workspace", what, quote(p))
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", newError(CodeInvalidRequest, "%s %s climbs out of the workspace", what, quote(p))
	}
	return c, nil
}

// filePath checks the path argument of read, write and edit, which must name
// a file: not the workspace itself, not ending with a separator.
func filePath(p string) (string, *Error) {
	c, err := cleanPath("path", p)
	if err != nil {
		return "", err
	}
	if c == "." || strings.HasSuffix(p, "/") {
		return "", newError(CodeInvalidRequest, "path %s does not name a file", quote(p))
	}
	return c, nil
}

// limit returns the value of an optional numeric argument, its default when
// absent, and refuses values outside [lo, hi] (hi < 0: no maximum). unit
// names what the maximum counts, as in "the 300000 ms limit".
func limit(name string, v *int64, def, lo, hi int64, unit string) (int64, *Error) {
	if v == nil {
		return def, nil
	}
	if *v < lo {
		return 0, newError(CodeInvalidArguments, "%s must be at least %d, not %d", name, lo, *v)
	}
	if hi >= 0 && *v > hi {
		return 0, newError(CodeInvalidArguments, "%s %d exceeds the %d %s limit", name, *v, hi, unit)
	}
	return *v, nil
}

// checkDigest refuses an expected_sha256 that is not a SHA-256 hex digest.
func checkDigest(d string) *Error {
	if len(d) != sha256.Size*2 {
		return newError(CodeInvalidArguments, "expected_sha256 %s is not a SHA-256 hex digest (64 hexadecimal characters)", quote(d))
	}
	if _, err := hex.DecodeString(d); err != nil {
		return newError(CodeInvalidArguments, "expected_sha256 %s is not a SHA-256 hex digest (64 hexadecimal characters)", quote(d))
	}
	return nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// quote quotes a value for a message, shortened to 120 bytes.
func quote(s string) string {
	const max = 120
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// marshal encodes a tool output as the worker sends it: without HTML escaping.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
