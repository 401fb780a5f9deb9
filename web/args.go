package web

import (
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/underpass-ai/axlr/jsonargs"
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

// decodeArgs decodes the arguments object raw of tool into dst with
// jsonargs.Decode: exact names, required arguments present and not null.
// Its refusals are invalid_request.
func decodeArgs(tool string, raw json.RawMessage, dst any, required ...string) *Error {
	err := jsonargs.Decode(tool, raw, dst, required...)
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*jsonargs.Error](err); ok {
		return newError(CodeInvalidRequest, "%s", e.Message)
	}
	return newError(CodeInternalError, "%v", err)
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

// quote quotes a value for a message as jsonargs.Quote does.
func quote(s string) string { return jsonargs.Quote(s) }

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
