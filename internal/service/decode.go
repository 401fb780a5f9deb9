package service

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
)

// MaxBody is the largest request body the API reads: 1 MiB.
const MaxBody = 1 << 20

// decode reads r's body, a JSON object of at most MaxBody bytes, into v,
// refusing a field v does not have (by its name), a value of the wrong
// type, a body that is not one object, and a media type other than JSON.
// It returns the digest of the body as decoded (v encoded again), which
// the same request gives whatever its spacing and field order.
func decode(w http.ResponseWriter, r *http.Request, v any) (string, *apiError) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return "", errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "Content-Type %q: send application/json", ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return "", errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "the body is over the limit of %d bytes (1 MiB)", MaxBody)
	}
	if err != nil {
		return "", errorf(http.StatusBadRequest, CodeInvalidJSON, "read the body: %v", err)
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return "", errorf(http.StatusBadRequest, CodeInvalidJSON, "the body is empty: send a JSON object")
	}
	if trimmed[0] != '{' {
		return "", errorf(http.StatusBadRequest, CodeInvalidJSON, "the body is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return "", decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", errorf(http.StatusBadRequest, CodeInvalidJSON, "the body holds more after its JSON object")
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return "", errorf(http.StatusBadRequest, CodeInvalidJSON, "the body: %v", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// decodeError says what is wrong with a body the decoder refused.
func decodeError(err error) *apiError {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "json: unknown field "):
		return errorf(http.StatusBadRequest, CodeUnknownField, "unknown field %s: the API refuses fields it does not know", strings.TrimPrefix(msg, "json: unknown field "))
	case errors.As(err, &syntax):
		return errorf(http.StatusBadRequest, CodeInvalidJSON, "not valid JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the body"
		}
		return errorf(http.StatusBadRequest, CodeInvalidArgument, "field %s: want %s, not a JSON %s", field, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, CodeInvalidJSON, "the body ends in the middle of its JSON object")
	}
	return errorf(http.StatusBadRequest, CodeInvalidArgument, "%s", strings.TrimPrefix(msg, "json: "))
}
