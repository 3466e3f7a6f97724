package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// DecodeJSON decodes exactly one JSON object, refusing unknown fields so that
// a typo in a setting is an error rather than silently ignored. A setting
// that decodes itself strictly (room.Page) reports its own *room.FieldError,
// which stays an invalid_config naming the field.
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
		var fe *room.FieldError
		if errors.As(err, &fe) {
			return fe
		}
		return &Error{Status: http.StatusBadRequest, Code: "bad_json", Message: "request body is not the expected JSON: " + jsonProblem(err)}
	}
	if dec.More() {
		return ErrBadJSON
	}
	return nil
}

// DuplicateKey returns the first key that an object in body gives twice, as
// decoded (so "a" and "\u0061" are the same key). A body that is not JSON has
// none: the decoder reports that.
func DuplicateKey(body []byte) (string, bool) {
	type object struct {
		keys    map[string]bool
		wantKey bool
	}
	var open []*object // nil for an array
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	// value marks the end of a value in the innermost container.
	value := func() {
		if n := len(open); n > 0 && open[n-1] != nil {
			open[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		top := (*object)(nil)
		if n := len(open); n > 0 {
			top = open[n-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				open = append(open, &object{keys: map[string]bool{}, wantKey: true})
			case '[':
				open = append(open, nil)
			default:
				open = open[:len(open)-1]
				value()
			}
		case string:
			if top != nil && top.wantKey {
				if top.keys[t] {
					return t, true
				}
				top.keys[t] = true
				top.wantKey = false
				continue
			}
			value()
		default:
			value()
		}
	}
}

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
