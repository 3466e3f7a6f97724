package queueapi_test

import (
	"encoding/json"
	"github.com/vestibule-dev/vestibule/internal/apitest"
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
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"maxActive":1,"originUrl":"https://origin.example/"}`)
		base := "/api/rooms/" + id

		// No page: the status has none, and a version all the same.
		s := f.Do("GET", base+"/status", "", nil)
		apitest.WantStatus(t, s, 200, "")
		if _, ok := s.JSON["page"]; ok {
			t.Errorf("status of a room without a page has one: %s", s.Body)
		}
		none := s.Str("pageVersion")
		e := f.Do("POST", base+"/enqueue", "", nil)
		apitest.WantStatus(t, e, 200, "")
		if none == "" || e.Str("pageVersion") != none {
			t.Errorf("versions without a page: status %q, enqueue %q", none, e.Str("pageVersion"))
		}
		tk := e.Str("ticket")

		// A PUT of the page alone keeps the other settings.
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"page":`+brandPage+`}`), 200, "")
		if c, _ := f.Q.GetConfig(t.Context(), id); c.MaxActive != 1 || c.Page == nil {
			t.Errorf("after a page-only PUT: %+v", c)
		}
		s = f.Do("GET", base+"/status", "", nil)
		apitest.WantStatus(t, s, 200, "")
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
		f.Clock.Advance(2e9) // past the min poll interval
		p := f.Do("GET", base+"/poll", "", apitest.Bearer(tk))
		apitest.WantStatus(t, p, 200, "")
		if p.Str("pageVersion") != branded {
			t.Errorf("poll pageVersion = %q, status's = %q", p.Str("pageVersion"), branded)
		}
		if strings.Contains(p.Body, "Spring Concert") {
			t.Errorf("a poll reply carries the page itself: %s", p.Body)
		}

		// Another setting changes: the page's version does not.
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"maxActive":2}`), 200, "")
		f.Clock.Advance(2e9)
		if p := f.Do("GET", base+"/poll", "", apitest.Bearer(tk)); p.Str("pageVersion") != branded {
			t.Errorf("poll pageVersion after a maxActive change = %q, want %q", p.Str("pageVersion"), branded)
		}
		// The message changes while visitors wait: a new version.
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"page":{"title":"Spring Concert","message":"Two seats left"}}`), 200, "")
		f.Clock.Advance(2e9)
		p = f.Do("GET", base+"/poll", "", apitest.Bearer(tk))
		if v := p.Str("pageVersion"); v == branded || v == none {
			t.Errorf("poll pageVersion after a message change = %q", v)
		}
		s = f.Do("GET", base+"/status", "", nil)
		if pg, _ := s.JSON["page"].(map[string]any); pg["message"] != "Two seats left" || pg["logoUrl"] != nil || s.Str("pageVersion") != p.Str("pageVersion") {
			t.Errorf("status after the change: %s", s.Body)
		}

		// Closed: a waiting visitor's poll still carries the version; a
		// newcomer without a ticket gets none (the page reads the status).
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"mode":"closed"}`), 200, "")
		f.Clock.Advance(2e9)
		p = f.Do("GET", base+"/poll", "", apitest.Bearer(tk))
		if p.Str("state") != "closed" || p.Str("pageVersion") != s.Str("pageVersion") {
			t.Errorf("closed poll: %s", p.Body)
		}
		if c := f.Do("POST", base+"/enqueue", "", nil); c.Str("state") != "closed" || c.Str("ticket") != "" {
			t.Errorf("closed enqueue: %s", c.Body)
		}

		// null removes the page.
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"page":null}`), 200, "")
		s = f.Do("GET", base+"/status", "", nil)
		if _, ok := s.JSON["page"]; ok || s.Str("pageVersion") != none {
			t.Errorf("status after page null: %s", s.Body)
		}
	})
}

// Every rule of the page setting is refused by the admin API with 400
// invalid_config naming the field, and leaves the room as it was.
func TestPageSettingsRefused(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"page":` + brandPage + `}`)
		before, err := f.Q.GetConfig(t.Context(), id)
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
				r := f.Admin("PUT", "/api/admin/rooms/"+id, `{"maxActive":9,"page":`+c.page+`}`)
				apitest.WantStatus(t, r, 400, "invalid_config")
				e, _ := r.JSON["error"].(map[string]any)
				if msg, _ := e["message"].(string); !strings.HasPrefix(msg, "room: invalid "+c.field+": ") {
					t.Errorf("message %q does not name %s", msg, c.field)
				}
			})
		}
		after, err := f.Q.GetConfig(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("refused PUTs changed the room (-before +after):\n%s", diff)
		}
		// A new room refused for its page is not created.
		n := "never-" + id
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+n, `{"page":{"accentColor":"blue"}}`), 400, "invalid_config")
		if _, err := f.Q.GetConfig(t.Context(), n); err != room.ErrUnknownRoom {
			t.Errorf("a refused new room exists: %v", err)
		}
	})
}
