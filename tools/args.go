package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path"
	"strings"

	"github.com/underpass-ai/axlr/jsonargs"
)

// decodeArgs decodes the arguments object raw of tool into dst with
// jsonargs.Decode: exact names, required arguments present and not null.
// Its refusals are Malformed.
func decodeArgs(tool string, raw json.RawMessage, dst any, required ...string) *Error {
	err := jsonargs.Decode(tool, raw, dst, required...)
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*jsonargs.Error](err); ok {
		return malformed("%s", e.Message)
	}
	return newError(CodeInternalError, "%v", err)
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

// quote quotes a value for a message as jsonargs.Quote does.
func quote(s string) string { return jsonargs.Quote(s) }

// marshal encodes a tool output as the worker sends it: without HTML escaping.
func marshal(v any) (json.RawMessage, error) { return jsonargs.Marshal(v) }
