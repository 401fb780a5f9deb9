package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the arguments.
const (
	maxURLBytes         = 8 << 10
	defaultTextBytes    = 64 << 10
	maxTextBytes        = 1 << 20
	maxQueryBytes       = 400 // Brave Search's own limit
	defaultSearchResult = 10
	maxSearchResults    = 20 // Brave Search's own limit
)

type fetchArgs struct {
	URL         string `json:"url"`
	Raw         bool   `json:"raw"`
	OffsetBytes *int64 `json:"offset_bytes"`
	MaxBytes    *int64 `json:"max_bytes"`
}

type fetchRequest struct {
	url      *url.URL
	raw      bool
	offset   int64
	maxBytes int64
}

func parseFetch(raw json.RawMessage) (fetchRequest, *Error) {
	var a fetchArgs
	if err := decodeArgs(Fetch, raw, &a, "url"); err != nil {
		return fetchRequest{}, err
	}
	if len(a.URL) > maxURLBytes {
		return fetchRequest{}, newError(CodeInvalidArguments, "url is %d bytes, over the %d-byte limit", len(a.URL), maxURLBytes)
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fetchRequest{}, newError(CodeInvalidArguments, "url %s is not a URL: %v", quote(a.URL), err)
	}
	if p := urlProblem(u); p != "" {
		return fetchRequest{}, newError(CodeInvalidArguments, "url %s cannot be fetched: %s", quote(u.Redacted()), p)
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := checkAddr(u.Hostname(), addr); err != nil {
			return fetchRequest{}, newError(CodeForbiddenAddress, "url %s: %v", quote(a.URL), err)
		}
	}
	u.Fragment, u.RawFragment = "", ""
	offset, lerr := limit("offset_bytes", a.OffsetBytes, 0, 0, -1)
	if lerr != nil {
		return fetchRequest{}, lerr
	}
	maxBytes, lerr := limit("max_bytes", a.MaxBytes, defaultTextBytes, 1, maxTextBytes)
	if lerr != nil {
		return fetchRequest{}, lerr
	}
	return fetchRequest{url: u, raw: a.Raw, offset: offset, maxBytes: maxBytes}, nil
}

type searchArgs struct {
	Query      string `json:"query"`
	MaxResults *int64 `json:"max_results"`
}

type searchRequest struct {
	query      string
	maxResults int
}

func parseSearch(raw json.RawMessage) (searchRequest, *Error) {
	var a searchArgs
	if err := decodeArgs(Search, raw, &a, "query"); err != nil {
		return searchRequest{}, err
	}
	q := strings.Join(strings.Fields(a.Query), " ")
	switch {
	case q == "":
		return searchRequest{}, newError(CodeInvalidArguments, "query is empty")
	case len(q) > maxQueryBytes:
		return searchRequest{}, newError(CodeInvalidArguments, "query is %d bytes, over the %d-byte limit", len(q), maxQueryBytes)
	}
	n, err := limit("max_results", a.MaxResults, defaultSearchResult, 1, maxSearchResults)
	if err != nil {
		return searchRequest{}, err
	}
	return searchRequest{query: q, maxResults: int(n)}, nil
}

// decodeArgs decodes the arguments object raw of tool into dst, a pointer to
// a struct whose json tags name every accepted argument. Names match exactly
// (encoding/json alone would accept "URL" for "url"); required arguments
// must be present and not null. Empty raw stands for {}.
func decodeArgs(tool string, raw json.RawMessage, dst any, required ...string) *Error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return newError(CodeInvalidRequest, "arguments of %s must be one JSON object", tool)
	}
	allowed := argNames(dst)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(allowed, name) {
			return newError(CodeInvalidRequest, "unknown argument %s for %s; it takes %s",
				quote(name), tool, strings.Join(allowed, ", "))
		}
	}
	for _, name := range required {
		if v, ok := fields[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return newError(CodeInvalidRequest, "%s needs argument %s", tool, name)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return newError(CodeInvalidRequest, "argument %s of %s must be %s, not %s",
				te.Field, tool, typeName(te.Type), te.Value)
		}
		return newError(CodeInvalidRequest, "arguments of %s: %v", tool, err)
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
	case reflect.Int64:
		return "an integer"
	case reflect.Pointer:
		return typeName(t.Elem())
	default:
		return t.String()
	}
}

// limit returns the value of an optional integer argument, def when absent,
// and refuses values outside [lo, hi] (hi < 0: no maximum).
func limit(name string, v *int64, def, lo, hi int64) (int64, *Error) {
	if v == nil {
		return def, nil
	}
	if *v < lo {
		return 0, newError(CodeInvalidArguments, "%s must be at least %d, not %d", name, lo, *v)
	}
	if hi >= 0 && *v > hi {
		return 0, newError(CodeInvalidArguments, "%s %d exceeds the limit of %d", name, *v, hi)
	}
	return *v, nil
}

// quote quotes a value for a message, shortened to 120 bytes.
func quote(s string) string {
	const max = 120
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(cutUTF8(s, max)) + "…"
}

// cutUTF8 returns at most n bytes of s, cut on a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
