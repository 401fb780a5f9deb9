package web

import (
	"encoding/json"
	"fmt"
)

// Spec describes a tool for a model: the fields of a function tool.
type Spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
}

// schema is the subset of JSON Schema that OpenAI function tools accept.
type schema struct {
	Type                 string             `json:"type"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
	Minimum              *int64             `json:"minimum,omitempty"`
	Maximum              *int64             `json:"maximum,omitempty"`
}

func object(props map[string]*schema, required ...string) *schema {
	no := false
	return &schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &no}
}

func integer(desc string, lo, hi int64) *schema {
	s := &schema{Type: "integer", Description: desc, Minimum: &lo}
	if hi >= 0 {
		s.Maximum = &hi
	}
	return s
}

func str(desc string) *schema { return &schema{Type: "string", Description: desc} }

// Specs returns web_fetch and web_search as a model is offered them. The
// descriptions state this Tools' limits and search engine, so they are
// stable for one configuration.
func (t *Tools) Specs() []Spec {
	fetch := object(map[string]*schema{
		"url":          str(fmt.Sprintf("The http or https URL to GET, such as https://go.dev/doc/, at most %d bytes; no user:password@.", maxURLBytes)),
		"raw":          {Type: "boolean", Description: "Return HTML as received instead of reduced to text; default false."},
		"offset_bytes": integer("Byte offset in the text to start at; pass next_offset_bytes to continue. Default 0.", 0, -1),
		"max_bytes":    integer(fmt.Sprintf("Maximum bytes of text to return; default %d, at most %d.", defaultTextBytes, maxTextBytes), 1, maxTextBytes),
	}, "url")
	search := object(map[string]*schema{
		"query":       str(fmt.Sprintf("What to search for, at most %d bytes.", maxQueryBytes)),
		"max_results": integer(fmt.Sprintf("Results to return; default %d, at most %d.", defaultSearchResult, maxSearchResults), 1, maxSearchResults),
	}, "query")
	return []Spec{
		{
			Name: Fetch,
			Description: fmt.Sprintf("Fetch a public web page or file with GET and return status, final_url (after at most %d redirects), content_type and the body as text. "+
				"HTML is reduced to readable text with links as [text](url) unless raw is true; other text (plain, JSON, XML) is returned as it is; a binary body is not shown. "+
				"At most %d bytes of the body are read (body_truncated says it was cut) and max_bytes of text returned from offset_bytes; when truncated, call again with offset_bytes set to next_offset_bytes. "+
				"An HTTP error status such as 404 is a normal result. Private, loopback and other non-public addresses are refused, no cookies or credentials are sent, and a call ends after %s.",
				maxRedirects, t.maxBytes, t.timeout),
			Parameters: mustJSON(fetch),
		},
		{
			Name: Search,
			Description: "Search the web and return results with title, url and snippet; web_fetch a url to read it. " +
				engineNote(t.Engine()),
			Parameters: mustJSON(search),
		},
	}
}

// mustJSON encodes a schema, a tree of strings, integers and booleans that
// always encodes.
func mustJSON(s *schema) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
