// Package jsonargs holds the JSON conventions that axlr's tool hosts share:
// strict decoding of a tool's arguments object into a struct, and encoding a
// tool's output without HTML escaping.
//
// Decode is stricter than encoding/json: argument names match the struct's
// json names exactly, an unknown argument is refused with the names the tool
// takes, required arguments must be present and not null, and a value of
// the wrong JSON type is reported in words ("argument path of read must be a
// string, not number"). Its refusals are *Error values carrying an English
// message for the model; each caller wraps the message into its own error
// type and code. The package does no I/O and keeps no state.
package jsonargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error refuses the arguments of a call. Message is an English sentence for
// the model, such as "read needs argument path".
type Error struct {
	Message string
}

func (e *Error) Error() string { return e.Message }

func refuse(format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

// Decode decodes raw, the arguments object of tool, into dst, a non-nil
// pointer to a struct whose json tags name every accepted argument. Names
// match exactly (encoding/json alone would accept "PATH" for "path"); the
// required arguments must be present and not null. Empty raw stands for {}.
//
// A refusal of the arguments is an *Error. Any other error means dst is not
// a non-nil pointer to a struct, a mistake of the caller.
func Decode(tool string, raw json.RawMessage, dst any, required ...string) error {
	if v := reflect.ValueOf(dst); v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("decode arguments of %s: want a non-nil pointer to a struct, not %T", tool, dst)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return refuse("arguments of %s must be one JSON object", tool)
	}
	allowed := Names(dst)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if slices.Contains(allowed, name) {
			continue
		}
		takes := strings.Join(allowed, ", ")
		if len(allowed) == 0 {
			takes = "none"
		}
		return refuse("unknown argument %s for %s; it takes %s", Quote(name), tool, takes)
	}
	for _, name := range required {
		if v, ok := fields[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return refuse("%s needs argument %s", tool, name)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return refuse("argument %s of %s must be %s, not %s", te.Field, tool, typeName(te.Type), te.Value)
		}
		return refuse("arguments of %s: %v", tool, err)
	}
	return nil
}

// Names lists the json names of the exported fields of the struct dst
// points to, in field order: the tag's name, or the field's name when the
// tag gives none; fields tagged "-" are left out. It returns nil when dst is
// not a pointer to a struct.
func Names(dst any) []string {
	t := reflect.TypeOf(dst)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// typeName names the JSON type a value of t is decoded from, for messages.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}

// maxQuoted is how many bytes of a value Quote keeps.
const maxQuoted = 120

// Quote quotes a value for a message as Decode quotes an unknown argument's
// name: with strconv.Quote, shortened to its first 120 bytes (cut on a
// character boundary) and followed by "…" when longer.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// Marshal encodes v as JSON like json.Marshal, but without escaping <, >
// and & for HTML: tool outputs are read by models and people, not browsers.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
