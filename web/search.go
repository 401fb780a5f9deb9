package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Endpoints of the search services.
const (
	duckDuckGoURL = "https://api.duckduckgo.com/"
	braveURL      = "https://api.search.brave.com/res/v1/web/search"
)

// Names of the search services in messages.
const (
	duckDuckGoName = "DuckDuckGo Instant Answers"
	braveName      = "Brave Search"
)

// searchResult is the output of web_search.
type searchResult struct {
	Engine  string `json:"engine"`
	Query   string `json:"query"`
	Results []hit  `json:"results"`
	Note    string `json:"note,omitempty"`
}

type hit struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

func (t *Tools) search(ctx context.Context, a searchRequest) (*searchResult, *Error) {
	out := &searchResult{Engine: t.Engine(), Query: a.query, Results: []hit{}}
	q := url.Values{"q": {a.query}}
	var (
		body []byte
		err  *Error
		hits []hit
	)
	if t.braveKey != "" {
		q.Set("count", strconv.Itoa(a.maxResults))
		if body, err = t.apiGet(ctx, braveName, braveURL+"?"+q.Encode(), t.braveKey); err != nil {
			return nil, err
		}
		if hits, err = parseBrave(body); err != nil {
			return nil, err
		}
		if len(hits) == 0 {
			out.Note = "Brave Search found no results for this query."
		}
	} else {
		q.Set("format", "json")
		q.Set("no_html", "1")
		q.Set("skip_disambig", "1")
		if body, err = t.apiGet(ctx, duckDuckGoName, duckDuckGoURL+"?"+q.Encode(), ""); err != nil {
			return nil, err
		}
		if hits, err = parseDuckDuckGo(body); err != nil {
			return nil, err
		}
		if len(hits) == 0 {
			out.Note = "DuckDuckGo Instant Answers has no answer for this query. It covers topics, as an encyclopedia does, not the whole web: try the name of the topic, or web_fetch a page you know."
		}
	}
	out.Results = append(out.Results, firstDistinct(hits, a.maxResults)...)
	return out, nil
}

// apiGet GETs a search service's JSON answer; key, when set, goes in the
// X-Subscription-Token header. Messages name the service, never the URL.
func (t *Tools) apiGet(ctx context.Context, service, rawURL, key string) ([]byte, *Error) {
	limited, cancel := t.withLimit(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(limited, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, newError(CodeInternalError, "build the request to %s: %v", service, cause(err))
	}
	req.Header.Set("User-Agent", t.userAgent)
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("X-Subscription-Token", key)
	}
	resp, err := t.api.Do(req)
	if err != nil {
		return nil, t.failure(ctx, limited, service, err)
	}
	defer resp.Body.Close()
	body, cut, err := readLimited(resp.Body, t.maxBytes)
	if err != nil {
		return nil, t.failure(ctx, limited, service+": read the answer", err)
	}
	switch {
	case resp.StatusCode != http.StatusOK:
		return nil, newError(CodeSearchFailed, "%s answered %d %s%s", service, resp.StatusCode, http.StatusText(resp.StatusCode), errorDetail(body))
	case cut:
		return nil, newError(CodeSearchFailed, "%s answered with more than the %d-byte read limit", service, t.maxBytes)
	case len(strings.TrimSpace(string(body))) == 0:
		return nil, newError(CodeSearchFailed, "%s answered with an empty body", service)
	}
	return body, nil
}

// errorDetail returns ": " and the reason an error answer gives: Brave's
// error.detail, or the start of the body when it is short text.
func errorDetail(body []byte) string {
	var e struct {
		Error struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Detail != "" {
		return ": " + cutUTF8(strings.TrimSpace(e.Error.Code+" "+e.Error.Detail), 200)
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "")), " ")
	if s == "" {
		return ""
	}
	return ": " + quote(cutUTF8(s, 200))
}

// braveAnswer is the part of Brave Search's web search answer read here.
type braveAnswer struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
		} `json:"results"`
	} `json:"web"`
}

func parseBrave(body []byte) ([]hit, *Error) {
	var a braveAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, newError(CodeSearchFailed, "%s answered with a body that is not its JSON: %v", braveName, err)
	}
	hits := make([]hit, 0, len(a.Web.Results))
	for _, r := range a.Web.Results {
		hits = append(hits, hit{Title: plainText(r.Title), URL: r.URL, Snippet: plainText(r.Description)})
	}
	return hits, nil
}

// ddgTopic is an entry of DuckDuckGo's Results and RelatedTopics: a topic,
// or a named group of topics.
type ddgTopic struct {
	FirstURL string     `json:"FirstURL"`
	Text     string     `json:"Text"`
	Result   string     `json:"Result"` // HTML: <a href="FirstURL">title</a> and the text
	Name     string     `json:"Name"`
	Topics   []ddgTopic `json:"Topics"`
}

// ddgAnswer is the part of DuckDuckGo's Instant Answer read here.
type ddgAnswer struct {
	Heading          string          `json:"Heading"`
	AbstractText     string          `json:"AbstractText"`
	AbstractSource   string          `json:"AbstractSource"`
	AbstractURL      string          `json:"AbstractURL"`
	Answer           json.RawMessage `json:"Answer"` // a string, or an object for some answer types
	Definition       string          `json:"Definition"`
	DefinitionSource string          `json:"DefinitionSource"`
	DefinitionURL    string          `json:"DefinitionURL"`
	Results          []ddgTopic      `json:"Results"`
	RelatedTopics    []ddgTopic      `json:"RelatedTopics"`
}

// parseDuckDuckGo lists the abstract, the answer, the definition, the
// results and the related topics (groups flattened) of an Instant Answer.
func parseDuckDuckGo(body []byte) ([]hit, *Error) {
	var a ddgAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, newError(CodeSearchFailed, "%s answered with a body that is not its JSON: %v", duckDuckGoName, err)
	}
	var hits []hit
	if a.AbstractText != "" || a.AbstractURL != "" {
		hits = append(hits, hit{Title: plainText(cmp.Or(a.Heading, a.AbstractSource)), URL: a.AbstractURL, Snippet: plainText(a.AbstractText)})
	}
	var answer string
	if json.Unmarshal(a.Answer, &answer) == nil && answer != "" {
		hits = append(hits, hit{Title: "Answer", Snippet: plainText(answer)})
	}
	if a.Definition != "" {
		hits = append(hits, hit{Title: strings.TrimSpace("Definition " + a.DefinitionSource), URL: a.DefinitionURL, Snippet: plainText(a.Definition)})
	}
	var walk func([]ddgTopic)
	walk = func(topics []ddgTopic) {
		for _, tp := range topics {
			if len(tp.Topics) > 0 {
				walk(tp.Topics)
				continue
			}
			if tp.FirstURL == "" && tp.Text == "" {
				continue
			}
			text := plainText(tp.Text)
			title := anchorText(tp.Result)
			if title == "" {
				title, _, _ = strings.Cut(text, " - ")
			}
			// Text repeats the title before the description.
			snippet := strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(text, title)), "- ")
			if snippet == "" {
				snippet = text
			}
			hits = append(hits, hit{Title: title, URL: tp.FirstURL, Snippet: snippet})
		}
	}
	walk(a.Results)
	walk(a.RelatedTopics)
	return hits, nil
}

// anchorText returns the text of the first <a> element of an HTML snippet.
func anchorText(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	in := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.A {
				in = true
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); in && atom.Lookup(name) == atom.A {
				return strings.Join(strings.Fields(b.String()), " ")
			}
		case html.TextToken:
			if in {
				b.Write(z.Text())
			}
		}
	}
}

// firstDistinct returns the first n hits, dropping repeated URLs.
func firstDistinct(hits []hit, n int) []hit {
	seen := map[string]bool{}
	out := make([]hit, 0, min(n, len(hits)))
	for _, h := range hits {
		if len(out) == n {
			break
		}
		if h.URL != "" {
			if seen[h.URL] {
				continue
			}
			seen[h.URL] = true
		}
		out = append(out, h)
	}
	return out
}

// engineNote describes the engine for the tool's description.
func engineNote(engine string) string {
	if engine == EngineBrave {
		return fmt.Sprintf("The engine is %s, a web index.", braveName)
	}
	return fmt.Sprintf("The engine is %s: summaries of topics (as an encyclopedia has them) and related topics, not a full web index, so many queries find nothing; prefer the plain name of a topic.", duckDuckGoName)
}
