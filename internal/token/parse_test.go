package token

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestFlatObject(t *testing.T) {
	allowed := []string{"a", "b", "c"}
	for _, tc := range []struct {
		json  string
		names string // sorted names accepted; "" with ok=false means refused
		ok    bool
	}{
		{`{}`, "", true},
		{` { "a" : 1 , "b":"x" } `, "a,b", true},
		{`{"a":"x,y","b":"\",\"c\":1","c":true}`, "a,b,c", true},
		{`{"a":"\\","b":"}"}`, "a,b", true},
		{`{"a":1,"a":2}`, "", false},
		{`{"a":1,"\u0061":2}`, "", false},
		{`{"a":1,"A":2}`, "", false},
		{`{"a":1,"d":2}`, "", false},
		{`{"a":null}`, "", false},
		{`{"a":[1]}`, "", false},
		{`{"a":{"b":1,"b":2}}`, "", false},
		{`null`, "", false},
		{`[]`, "", false},
		{`"a"`, "", false},
		{`{"a":1}{"a":2}`, "", false},
		{`{"a":1,}`, "", false},
		{``, "", false},
	} {
		m, err := flatObject([]byte(tc.json), allowed)
		if (err == nil) != tc.ok {
			t.Errorf("flatObject(%s): err = %v, want ok=%v", tc.json, err, tc.ok)
			continue
		}
		var names []string
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		if got := strings.Join(names, ","); tc.ok && got != tc.names {
			t.Errorf("flatObject(%s) names %q, want %q", tc.json, got, tc.names)
		}
	}
}

// FuzzFlatObject checks flatObject (a map plus a raw member count) against a
// slow but obvious reference: a json.Decoder token walk that sees every name.
func FuzzFlatObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a":"\"","b":[1,{"c":2}]}`, `{"a":1,"\u0061":2}`, `{"a":null}`, ` {"b" : true} `} {
		f.Add([]byte(s))
	}
	allowed := []string{"a", "b", "c"}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := flatObject(b, allowed)
		want := referenceFlatObject(b, allowed)
		if (err == nil) != want {
			t.Fatalf("flatObject(%q) err = %v; reference accepts: %v", b, err, want)
		}
		if err == nil && len(m) > len(allowed) {
			t.Fatalf("flatObject(%q) returned %d names", b, len(m))
		}
	})
}

func referenceFlatObject(b []byte, allowed []string) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		name, ok := t.(string)
		if err != nil || !ok || seen[name] || !slices.Contains(allowed, name) {
			return false
		}
		seen[name] = true
		v, err := dec.Token()
		if err != nil {
			return false
		}
		switch v.(type) {
		case string, float64, bool:
		default:
			return false
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}
