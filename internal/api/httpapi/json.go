package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/vestibule-dev/vestibule/internal/jsonkey"
)

// DecodeJSON decodes exactly one JSON object, refusing unknown fields so that
// a typo in a setting is an error rather than silently ignored. A setting
// that decodes itself strictly (room.Page) reports its own error, one that
// wraps its engine's (*room.FieldError wraps room.ErrInvalidConfig): it
// stays itself, for the product's answers (an invalid_config naming the field).
func DecodeJSON(body []byte, v any) error {
	if k, ok := DuplicateKey(body); ok {
		// encoding/json would take the last of them: what the caller meant
		// is not known, so nothing is taken.
		if len(k) > 64 {
			k = k[:64]
		}
		return &Error{Status: http.StatusBadRequest, Code: "bad_json", Message: fmt.Sprintf("request body is not the expected JSON: duplicate key %q", k)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var own interface{ Unwrap() error }
		if errors.As(err, &own) {
			return err
		}
		return &Error{Status: http.StatusBadRequest, Code: "bad_json", Message: "request body is not the expected JSON: " + jsonProblem(err)}
	}
	if dec.More() {
		return ErrBadJSON
	}
	return nil
}

// DuplicateKey returns the first key that an object in body gives twice
// (jsonkey.Duplicate, which the durable store's readers use too).
var DuplicateKey = jsonkey.Duplicate

// jsonProblem describes a decoding error without echoing the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "syntax error"
	case errors.As(err, &te):
		if te.Field == "" {
			return "wrong type"
		}
		return "wrong type for " + te.Field
	case errors.Is(err, io.EOF):
		return "empty body"
	default:
		// Unknown-field errors name the field; that is what the caller needs.
		msg := err.Error()
		if len(msg) > 120 {
			msg = msg[:120]
		}
		return msg
	}
}
