package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// fetchResult is the output of web_fetch.
type fetchResult struct {
	URL             string   `json:"url"`
	FinalURL        string   `json:"final_url"`
	Status          int      `json:"status"`
	StatusText      string   `json:"status_text"`
	ContentType     string   `json:"content_type"`
	Redirects       int      `json:"redirects"`
	Title           string   `json:"title,omitempty"`
	Content         string   `json:"content"`
	TextBytes       int      `json:"text_bytes"`
	OffsetBytes     int64    `json:"offset_bytes"`
	Truncated       bool     `json:"truncated"`
	NextOffsetBytes int64    `json:"next_offset_bytes,omitempty"`
	BodyBytes       int      `json:"body_bytes"`
	BodyTruncated   bool     `json:"body_truncated"`
	Notes           []string `json:"notes,omitempty"`
}

const acceptFetch = "text/html, application/xhtml+xml, text/plain;q=0.9, application/json;q=0.9, */*;q=0.5"

func (t *Tools) fetchURL(ctx context.Context, a fetchRequest) (*fetchResult, *Error) {
	limited, cancel := t.withLimit(ctx)
	defer cancel()
	target := a.url.String()
	req, err := http.NewRequestWithContext(limited, http.MethodGet, target, nil)
	if err != nil {
		return nil, newError(CodeInvalidArguments, "url %s: %v", quote(target), err)
	}
	req.Header.Set("User-Agent", t.userAgent)
	req.Header.Set("Accept", acceptFetch)
	what := "GET " + target
	resp, err := t.fetch.Do(req)
	if err != nil {
		return nil, t.failure(ctx, limited, what, err)
	}
	defer resp.Body.Close()
	body, cut, err := readLimited(resp.Body, t.maxBytes)
	if err != nil {
		return nil, t.failure(ctx, limited, what+": read the body", err)
	}
	out := &fetchResult{
		URL:           target,
		FinalURL:      resp.Request.URL.String(),
		Status:        resp.StatusCode,
		StatusText:    http.StatusText(resp.StatusCode),
		ContentType:   resp.Header.Get("Content-Type"),
		Redirects:     redirects(resp),
		BodyBytes:     len(body),
		BodyTruncated: cut,
		OffsetBytes:   a.offset,
	}
	if cut {
		out.Notes = append(out.Notes, fmt.Sprintf("the body was cut at the %d-byte read limit; the rest was not read", t.maxBytes))
	}
	title, text, note := bodyText(body, out.ContentType, resp.Request.URL, a.raw)
	out.Title = title
	if note != "" {
		out.Notes = append(out.Notes, note)
	}
	out.TextBytes = len(text)
	if a.offset > int64(len(text)) {
		return nil, newError(CodeInvalidArguments, "offset_bytes %d is past the end of the text (%d bytes)", a.offset, len(text))
	}
	start := int(a.offset)
	for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
		start--
	}
	out.OffsetBytes = int64(start)
	page := cutUTF8(text[start:], int(a.maxBytes))
	out.Content = page
	if end := start + len(page); end < len(text) {
		out.Truncated = true
		out.NextOffsetBytes = int64(end)
		out.Notes = append(out.Notes, fmt.Sprintf("the text was cut at max_bytes %d; call again with offset_bytes %d for more", a.maxBytes, end))
	}
	return out, nil
}

// bodyText returns the title and the text web_fetch shows of a body from
// base, and a note when it shows none. HTML is reduced to text unless raw.
func bodyText(body []byte, contentType string, base *url.URL, raw bool) (title, text, note string) {
	kind := contentType
	if kind == "" {
		kind = http.DetectContentType(body)
	}
	mediaType, _, err := mime.ParseMediaType(kind)
	if err != nil {
		mediaType = strings.ToLower(strings.TrimSpace(strings.SplitN(kind, ";", 2)[0]))
	}
	isHTML := mediaType == "text/html" || mediaType == "application/xhtml+xml"
	if !isHTML && !textual(mediaType) {
		if len(body) == 0 {
			return "", "", ""
		}
		return "", "", fmt.Sprintf("the body is %s (%d bytes read), not text; web_fetch shows text only", mediaType, len(body))
	}
	text = decode(body, kind)
	if !isHTML || raw {
		return "", text, ""
	}
	title, text = htmlText([]byte(text), base)
	return title, text, ""
}

// textual reports whether a media type is text web_fetch returns as it is.
func textual(mediaType string) bool {
	switch {
	case strings.HasPrefix(mediaType, "text/"),
		strings.HasSuffix(mediaType, "+json"), strings.HasSuffix(mediaType, "+xml"):
		return true
	}
	switch mediaType {
	case "application/json", "application/xml", "application/javascript",
		"application/x-javascript", "application/ecmascript", "application/x-sh",
		"application/toml", "application/yaml", "application/x-yaml", "application/sql",
		"application/graphql", "application/x-ndjson", "application/jsonl":
		return true
	}
	return false
}

// decode converts a text body to UTF-8 from the charset its content type
// or an HTML <meta> declares (UTF-8 when the body is valid UTF-8 and none
// is declared), replacing invalid sequences.
func decode(body []byte, contentType string) string {
	enc, name, _ := charset.DetermineEncoding(body, contentType)
	if name != "utf-8" {
		if b, err := enc.NewDecoder().Bytes(body); err == nil {
			body = b
		}
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// readLimited reads at most max bytes of r and reports whether more
// followed.
func readLimited(r io.Reader, max int64) ([]byte, bool, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	if n > max {
		return buf.Bytes()[:max], true, nil
	}
	return buf.Bytes(), false, nil
}
