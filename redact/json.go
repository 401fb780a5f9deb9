package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// maxDepth is the deepest nesting JSON accepts, the same limit as
// encoding/json, so that a document is valid here exactly when json.Valid
// says so.
const maxDepth = 10000

var errTooDeep = errors.New("exceeded max depth")

// JSON rewrites a JSON document so that it carries no credentials:
//
//   - Every string, object keys included, has secret values replaced (see
//     String). The work is done on decoded strings, so a secret written with
//     JSON escapes is still found, and the result is re-encoded.
//   - The value of a credential field (see CredentialField) becomes the string
//     Marker, whatever its type.
//   - A number whose literal contains a secret value becomes the string
//     Marker; other numbers keep their exact literal.
//   - An object that is the value of a "properties" key (a JSON schema's
//     property map) keeps its child keys' values even when a key names a
//     credential field: tool schemas describe such fields without containing
//     credentials. Secret values are still replaced inside it, and objects
//     nested deeper are treated normally.
//
// Object key order, duplicate keys and number literals are preserved; the
// output is compact (no insignificant white space) and does not escape
// HTML characters. A document that is not valid JSON (json.Valid) is
// returned with String applied to the whole text.
func (r *Redactor) JSON(doc []byte) []byte {
	out, err := r.json(doc)
	if err != nil {
		return []byte(r.String(string(doc)))
	}
	return out
}

// json is JSON without the fallback: it fails for invalid documents.
func (r *Redactor) json(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	w := walker{r: r, dec: dec, out: make([]byte, 0, len(doc))}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if err := w.value(tok, 0, false); err != nil {
		return nil, err
	}
	if tok, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the top-level value: %v %v", tok, err)
	}
	return w.out, nil
}

type walker struct {
	r   *Redactor
	dec *json.Decoder
	out []byte
}

// value writes the value that starts with tok at the given depth. props says
// the value is the value of a "properties" key.
func (w *walker) value(tok json.Token, depth int, props bool) error {
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return errTooDeep
		}
		if t == '{' {
			return w.object(depth+1, props)
		}
		return w.array(depth + 1) // Token returns '}' and ']' only as closers
	case string:
		w.out = appendString(w.out, w.r.String(t))
	case json.Number:
		if w.r.contains(string(t)) {
			w.out = appendString(w.out, Marker)
		} else {
			w.out = append(w.out, t...)
		}
	case bool:
		if t {
			w.out = append(w.out, "true"...)
		} else {
			w.out = append(w.out, "false"...)
		}
	default: // nil; with UseNumber, Token returns no float64
		w.out = append(w.out, "null"...)
	}
	return nil
}

// object writes the rest of an object whose '{' was read. props says the
// object is a schema's property map, whose values are kept.
func (w *walker) object(depth int, props bool) error {
	w.out = append(w.out, '{')
	for first := true; w.dec.More(); first = false {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // the decoder returns only strings as keys
		if !first {
			w.out = append(w.out, ',')
		}
		w.out = appendString(w.out, w.r.String(key))
		w.out = append(w.out, ':')
		if tok, err = w.dec.Token(); err != nil {
			return err
		}
		if !props && CredentialField(key) {
			if err := w.skip(tok, depth); err != nil {
				return err
			}
			w.out = appendString(w.out, Marker)
			continue
		}
		if err := w.value(tok, depth, key == "properties"); err != nil {
			return err
		}
	}
	return w.end('}')
}

// array writes the rest of an array whose '[' was read.
func (w *walker) array(depth int) error {
	w.out = append(w.out, '[')
	for first := true; w.dec.More(); first = false {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		if !first {
			w.out = append(w.out, ',')
		}
		if err := w.value(tok, depth, false); err != nil {
			return err
		}
	}
	return w.end(']')
}

// end reads the closing delimiter of the current container and writes it.
// The decoder checks that it matches the opening one.
func (w *walker) end(closer byte) error {
	if _, err := w.dec.Token(); err != nil {
		return err
	}
	w.out = append(w.out, closer)
	return nil
}

// skip reads and discards the value that starts with tok, still checking
// that it is well formed and not nested too deep.
func (w *walker) skip(tok json.Token, depth int) error {
	open := 0
	for {
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				open++
				if depth+open > maxDepth {
					return errTooDeep
				}
			default:
				open--
			}
		}
		if open == 0 {
			return nil
		}
		var err error
		if tok, err = w.dec.Token(); err != nil {
			return err
		}
	}
}

// appendString appends s as a JSON string. HTML characters are not escaped;
// each invalid UTF-8 byte becomes U+FFFD, as encoding/json does.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				out = append(out, '\\', c)
			case c == '\n':
				out = append(out, '\\', 'n')
			case c == '\r':
				out = append(out, '\\', 'r')
			case c == '\t':
				out = append(out, '\\', 't')
			case c < 0x20:
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, "\uFFFD"...)
		case r == '\u2028' || r == '\u2029':
			out = append(out, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return append(out, '"')
}

// CredentialField reports whether an object key names a credential. Keys are
// compared case-insensitively after removing '-', '_' and '.', so "API-Key",
// "api_key" and "apiKey" are the same field. The fields are:
//
//	apikey, api_key, x-api-key, api-token, x-auth-token, auth-token,
//	ocp-apim-subscription-key, x-goog-api-key, authorization,
//	proxy-authorization, bearer, password, passwd, passphrase, secret,
//	client_secret, api_secret, secret_key, private_key, token,
//	access_token, refresh_token, id_token, session_token, cookie,
//	set-cookie, aws_secret_access_key, credential, credentials.
//
// Keys that only contain such a word ("token_count", "max_tokens",
// "secret_name") are not credential fields.
func CredentialField(key string) bool {
	k := make([]byte, 0, len(key))
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == '-' || c == '_' || c == '.':
		case 'A' <= c && c <= 'Z':
			k = append(k, c+'a'-'A')
		default:
			k = append(k, c)
		}
	}
	switch string(k) {
	case "apikey", "xapikey", "apitoken", "xauthtoken", "authtoken",
		"ocpapimsubscriptionkey", "xgoogapikey",
		"authorization", "proxyauthorization", "bearer",
		"password", "passwd", "passphrase",
		"secret", "clientsecret", "apisecret", "secretkey", "privatekey",
		"token", "accesstoken", "refreshtoken", "idtoken", "sessiontoken",
		"cookie", "setcookie",
		"awssecretaccesskey", "credential", "credentials":
		return true
	}
	return false
}
