package queueapi_test

import (
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// Admin bodies are strict JSON: a key given twice is refused (encoding/json
// would take the last), at any depth, with a 400 that names it.
func TestAdminJSONRefusesDuplicateKeys(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"maxActive":5}`)
	for _, body := range []string{
		`{"maxActive":6,"maxActive":7}`,
		`{"mode":"paused","maxActive":6,"mode":"queue"}`,
		`{"page":{"title":"A","title":"B"}}`,
		`{"page":{"message":{"en":"a","en":"b"}}}`,
		`{"maxActive":6,"max\u0041ctive":7}`, // the same key, escaped
	} {
		r := f.Admin("PUT", "/api/admin/rooms/"+id, body)
		apitest.WantStatus(t, r, 400, "bad_json")
		if e, _ := r.JSON["error"].(map[string]any); !strings.Contains(e["message"].(string), "duplicate key") {
			t.Errorf("%s: %s, want the duplicate named", body, r.Body)
		}
	}
	g := f.Admin("GET", "/api/admin/rooms/"+id, "")
	if c := g.JSON["config"].(map[string]any); c["maxActive"] != float64(5) || c["mode"] != "queue" {
		t.Errorf("a refused body changed the room: %s", g.Body)
	}
	// The same key in two objects is no duplicate.
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"page":{"title":{"en":"x"},"message":{"en":"y"}}}`), 200, "")
	// Every body is decoded so (decodeJSON): consume's too.
	apitest.WantStatus(t, f.Do("POST", "/api/consume", `{"token":"a","token":"b"}`, nil), 400, "bad_json")
}

// originUrl takes no credentials and only a port a URL can have.
func TestOriginURLRules(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"maxActive":5}`)
	for _, u := range []string{
		"https://user:pw@shop.example/", "https://user@shop.example/", "https://shop.example:99999/",
		"https://shop.example:0/", "https://shop.example:65536/", "https://[::1]:70000/",
		"https://shop.example/\u0085path", "https://shop.example/\u2028",
	} {
		r := f.Admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"`+u+`"}`)
		apitest.WantStatus(t, r, 400, "invalid_config")
		if e, _ := r.JSON["error"].(map[string]any); !strings.Contains(e["message"].(string), "originUrl") {
			t.Errorf("%s: %s, want originUrl named", u, r.Body)
		}
	}
	for _, u := range []string{"https://shop.example:8443/buy", "https://shop.example:65535/", "http://localhost:3000/"} {
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"`+u+`"}`), 200, "")
	}
	// The page's logo follows the same rules.
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"page":{"logoUrl":"https://cdn.example:99999/l.png"}}`), 400, "invalid_config")
	// Page texts: lines and tabs, but no other control character, C1 (NEL) included.
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"page":{"message":"two\nlines"}}`), 200, "")
	for _, s := range []string{`a\u0085b`, `a\u0000b`, `a\u001bb`, `a\u009bb`} {
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"page":{"title":"`+s+`"}}`), 400, "invalid_config")
	}
}

func TestDuplicateKey(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`: "",
		`{"a":[1,{"b":1,"b":2}]}`:                   "b",
		`{"a":{"x":"a"},"a":1}`:                     "a",
		`{"k":"k","v":"k"}`:                         "",
		`[{"a":1},{"a":1}]`:                         "",
		`{"\u00e9":1,"é":2}`:                        "é",
		`{"a":1,`:                                   "",
		`not json`:                                  "",
	} {
		got, dup := httpapi.DuplicateKey([]byte(body))
		if got != want || dup != (want != "") {
			t.Errorf("DuplicateKey(%s) = %q %v, want %q", body, got, dup, want)
		}
	}
}
