package queueapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// brandPage is a page setting with every field, in two languages.
const brandPage = `{"title":"Spring Concert","message":{"en":"Sold out. Thank you!","ko":"매진되었습니다."},` +
	`"logoUrl":"https://cdn.example/logo.png","accentColor":"#c0ffee"}`

// The public status carries the page and its version; place replies carry
// the version only, and it changes when the page does, and only then.
func TestStatusCarriesThePage(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"maxActive":1,"originUrl":"https://origin.example/"}`)
		base := "/api/rooms/" + id

		// No page: the status has none, and a version all the same.
		s := f.do("GET", base+"/status", "", nil)
		wantStatus(t, s, 200, "")
		if _, ok := s.json["page"]; ok {
			t.Errorf("status of a room without a page has one: %s", s.Body)
		}
		none := s.str("pageVersion")
		e := f.do("POST", base+"/enqueue", "", nil)
		wantStatus(t, e, 200, "")
		if none == "" || e.str("pageVersion") != none {
			t.Errorf("versions without a page: status %q, enqueue %q", none, e.str("pageVersion"))
		}
		tk := e.str("ticket")

		// A PUT of the page alone keeps the other settings.
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"page":`+brandPage+`}`), 200, "")
		if c, _ := f.q.GetConfig(t.Context(), id); c.MaxActive != 1 || c.Page == nil {
			t.Errorf("after a page-only PUT: %+v", c)
		}
		s = f.do("GET", base+"/status", "", nil)
		wantStatus(t, s, 200, "")
		if s.Headers["Cache-Control"] != "public, max-age=1" {
			t.Errorf("status Cache-Control = %q", s.Headers["Cache-Control"])
		}
		var body struct {
			Page        json.RawMessage `json:"page"`
			PageVersion string          `json:"pageVersion"`
		}
		if err := json.Unmarshal([]byte(s.Body), &body); err != nil {
			t.Fatal(err)
		}
		if string(body.Page) != brandPage {
			t.Errorf("status page = %s, want %s", body.Page, brandPage)
		}
		branded := body.PageVersion
		if branded == "" || branded == none {
			t.Errorf("the page's version did not change: %q", branded)
		}
		f.clock.Advance(2e9) // past the min poll interval
		p := f.do("GET", base+"/poll", "", bearer(tk))
		wantStatus(t, p, 200, "")
		if p.str("pageVersion") != branded {
			t.Errorf("poll pageVersion = %q, status's = %q", p.str("pageVersion"), branded)
		}
		if strings.Contains(p.Body, "Spring Concert") {
			t.Errorf("a poll reply carries the page itself: %s", p.Body)
		}

		// Another setting changes: the page's version does not.
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"maxActive":2}`), 200, "")
		f.clock.Advance(2e9)
		if p := f.do("GET", base+"/poll", "", bearer(tk)); p.str("pageVersion") != branded {
			t.Errorf("poll pageVersion after a maxActive change = %q, want %q", p.str("pageVersion"), branded)
		}
		// The message changes while visitors wait: a new version.
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"page":{"title":"Spring Concert","message":"Two seats left"}}`), 200, "")
		f.clock.Advance(2e9)
		p = f.do("GET", base+"/poll", "", bearer(tk))
		if v := p.str("pageVersion"); v == branded || v == none {
			t.Errorf("poll pageVersion after a message change = %q", v)
		}
		s = f.do("GET", base+"/status", "", nil)
		if pg, _ := s.json["page"].(map[string]any); pg["message"] != "Two seats left" || pg["logoUrl"] != nil || s.str("pageVersion") != p.str("pageVersion") {
			t.Errorf("status after the change: %s", s.Body)
		}

		// Closed: a waiting visitor's poll still carries the version; a
		// newcomer without a ticket gets none (the page reads the status).
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"mode":"closed"}`), 200, "")
		f.clock.Advance(2e9)
		p = f.do("GET", base+"/poll", "", bearer(tk))
		if p.str("state") != "closed" || p.str("pageVersion") != s.str("pageVersion") {
			t.Errorf("closed poll: %s", p.Body)
		}
		if c := f.do("POST", base+"/enqueue", "", nil); c.str("state") != "closed" || c.str("ticket") != "" {
			t.Errorf("closed enqueue: %s", c.Body)
		}

		// null removes the page.
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"page":null}`), 200, "")
		s = f.do("GET", base+"/status", "", nil)
		if _, ok := s.json["page"]; ok || s.str("pageVersion") != none {
			t.Errorf("status after page null: %s", s.Body)
		}
	})
}

// Every rule of the page setting is refused by the admin API with 400
// invalid_config naming the field, and leaves the room as it was.
func TestPageSettingsRefused(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"page":` + brandPage + `}`)
		before, err := f.q.GetConfig(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct{ name, page, field string }{
			{"not an object", `"Spring"`, "page"},
			{"unknown field", `{"title":"x","colour":"#000000"}`, "page"},
			{"title of the wrong type", `{"title":5}`, "page.title"},
			{"title too long", `{"title":"` + strings.Repeat("x", 121) + `"}`, "page.title"},
			{"title blank", `{"title":"   "}`, "page.title"},
			{"title with a control character", `{"title":"a\u0007b"}`, "page.title"},
			{"title in no language", `{"title":{}}`, "page.title"},
			{"title under a bad tag", `{"title":{"english":"x"}}`, "page.title"},
			{"message too long", `{"message":"` + strings.Repeat("y", 1001) + `"}`, "page.message"},
			{"message in too many languages", `{"message":{"en":"a","ko":"b","ja":"c","zh":"d","fr":"e","de":"f","es":"g","it":"h","pt":"i","nl":"j","sv":"k"}}`, "page.message"},
			{"message empty in a language", `{"message":{"en":"a","ko":""}}`, "page.message"},
			{"logo over http", `{"logoUrl":"http://cdn.example/logo.png"}`, "page.logoUrl"},
			{"logo as javascript", `{"logoUrl":"javascript:alert(1)"}`, "page.logoUrl"},
			{"logo relative", `{"logoUrl":"/logo.png"}`, "page.logoUrl"},
			{"logo with credentials", `{"logoUrl":"https://u:p@cdn.example/logo.png"}`, "page.logoUrl"},
			{"logo of the wrong type", `{"logoUrl":{"src":"https://cdn.example/"}}`, "page.logoUrl"},
			{"accent by name", `{"accentColor":"red"}`, "page.accentColor"},
			{"accent short", `{"accentColor":"#abc"}`, "page.accentColor"},
			{"accent with CSS after it", `{"accentColor":"#000000;background:url(x)"}`, "page.accentColor"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := f.admin("PUT", "/api/admin/rooms/"+id, `{"maxActive":9,"page":`+c.page+`}`)
				wantStatus(t, r, 400, "invalid_config")
				e, _ := r.json["error"].(map[string]any)
				if msg, _ := e["message"].(string); !strings.HasPrefix(msg, "room: invalid "+c.field+": ") {
					t.Errorf("message %q does not name %s", msg, c.field)
				}
			})
		}
		after, err := f.q.GetConfig(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("refused PUTs changed the room (-before +after):\n%s", diff)
		}
		// A new room refused for its page is not created.
		n := "never-" + id
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+n, `{"page":{"accentColor":"blue"}}`), 400, "invalid_config")
		if _, err := f.q.GetConfig(t.Context(), n); err != room.ErrUnknownRoom {
			t.Errorf("a refused new room exists: %v", err)
		}
	})
}
