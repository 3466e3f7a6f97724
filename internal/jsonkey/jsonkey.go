// Package jsonkey finds a key given twice in a JSON object: encoding/json
// keeps the last of them silently, so what was meant is not known, and a
// reader that must not guess (a request body, a stored record) refuses it.
// It links nothing but the standard library, so any function may use it.
package jsonkey

import (
	"bytes"
	"encoding/json"
)

// Duplicate returns the first key that an object in body gives twice, as
// decoded (so "a" and "\u0061" are the same key). A body that is not JSON has
// none: the decoder reports that.
func Duplicate(body []byte) (string, bool) {
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
