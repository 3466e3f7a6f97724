package queueapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// The whole visitor journey through the HTTP layer: enqueue, poll until
// admitted, consume, replay refused, complete, and the next visitor admitted.
func TestJourney(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"maxActive":1,"admitPerMinute":60,"mode":"queue","originUrl":"https://origin.example/book"}`)
		base := "/api/rooms/" + id

		a := f.do("POST", base+"/enqueue", "", nil)
		wantStatus(t, a, 200, "")
		if a.str("state") != "waiting" || a.num("position") != 1 || a.str("ticket") == "" {
			t.Fatalf("first enqueue: %s", a.Body)
		}
		if a.json["etaSeconds"] == nil || a.num("pollAfterMs") != 1000 {
			t.Fatalf("first in line: want an ETA and a 1 s poll, got %s", a.Body)
		}
		if r, ok := a.json["ratePerMinute"].(float64); !ok || r != 60 {
			t.Fatalf("a free slot: want the configured pace, ratePerMinute 60, got %s", a.Body)
		}
		b := f.do("POST", base+"/enqueue", "", nil)
		if b.num("position") != 2 || b.str("ticket") == a.str("ticket") {
			t.Fatalf("second enqueue: %s", b.Body)
		}
		// Enqueue again with the ticket (a poll: not sooner than the minimum
		// interval): the same place, the same ticket.
		f.clock.Advance(pollpolicy.MinInterval)
		again := f.do("POST", base+"/enqueue", "", bearer(a.str("ticket")))
		if again.num("position") != 1 || again.str("ticket") != a.str("ticket") {
			t.Fatalf("re-enqueue with ticket: %s", again.Body)
		}

		var admitted response
		for i := 0; i < 5; i++ {
			f.clock.Advance(pollpolicy.MinInterval)
			admitted = f.do("GET", base+"/poll", "", bearer(a.str("ticket")))
			wantStatus(t, admitted, 200, "")
			if admitted.str("state") == "admitted" {
				break
			}
			f.tick(id)
		}
		if admitted.str("state") != "admitted" || admitted.str("entryToken") == "" || admitted.str("originUrl") != "https://origin.example/book" {
			t.Fatalf("never admitted: %s", admitted.Body)
		}
		if admitted.num("pollAfterMs") != 0 {
			t.Fatalf("admitted: pollAfterMs = %d, want 0", admitted.num("pollAfterMs"))
		}
		if _, ok := admitted.json["ratePerMinute"]; ok {
			t.Fatalf("admitted: a rate is for those waiting, got %s", admitted.Body)
		}
		// The second visitor, waiting in the full room, is told the rate measured
		// since the first was admitted.
		f.clock.Advance(pollpolicy.MinInterval)
		if w := f.do("GET", base+"/poll", "", bearer(b.str("ticket"))); w.str("state") != "waiting" || w.num("ratePerMinute") <= 0 {
			t.Fatalf("second visitor after one admission: want a measured ratePerMinute, got %s", w.Body)
		}
		tok := admitted.str("entryToken")
		c, err := f.entries.Verify(tok, f.clock.Now())
		if err != nil || c.Audience != "https://origin.example/book" || c.Room != id {
			t.Fatalf("entry token: %+v, %v", c, err)
		}

		// Holding the token is not enough: only the room's origin redeems it.
		body := `{"token":"` + tok + `"}`
		wantStatus(t, f.do("POST", "/api/consume", body, nil), 401, "invalid_origin_credential")
		wantStatus(t, f.do("POST", "/api/consume", body, bearer(f.origins.Credential(id+"x"))), 401, "invalid_origin_credential")
		wantStatus(t, f.do("POST", "/api/consume", body, bearer(a.str("ticket"))), 401, "invalid_origin_credential")
		wantStatus(t, f.do("POST", "/api/complete", body, nil), 401, "invalid_origin_credential")

		consume := f.redeem("/api/consume", tok)
		wantStatus(t, consume, 200, "")
		if consume.str("room") != id || consume.str("visitor") != c.Visitor {
			t.Fatalf("consume: %s", consume.Body)
		}
		exp, err := time.Parse(time.RFC3339, consume.str("sessionExpiresAt"))
		if err != nil || !exp.After(f.clock.Now()) {
			t.Fatalf("sessionExpiresAt %q: %v", consume.str("sessionExpiresAt"), err)
		}
		wantStatus(t, f.redeem("/api/consume", tok), 409, "already_consumed")

		// The room is full: the second visitor waits however many ticks pass.
		f.tick(id)
		f.tick(id)
		if p := f.do("GET", base+"/poll", "", bearer(b.str("ticket"))); p.str("state") != "waiting" || p.num("position") != 1 {
			t.Fatalf("second visitor while full: %s", p.Body)
		}
		wantStatus(t, f.redeem("/api/complete", tok), 200, "")
		f.tick(id)
		if p := f.do("GET", base+"/poll", "", bearer(b.str("ticket"))); p.str("state") != "admitted" || p.str("entryToken") == "" {
			t.Fatalf("second visitor after complete: %s", p.Body)
		}
	})
}

func TestErrors(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"originUrl":"https://origin.example/"}`)
		other := f.room(`{"originUrl":"https://origin.example/"}`)
		base := "/api/rooms/" + id
		tk := f.do("POST", base+"/enqueue", "", nil).str("ticket")
		otherTk := f.do("POST", "/api/rooms/"+other+"/enqueue", "", nil).str("ticket")
		big := `{"token":"` + strings.Repeat("a", api.MaxBody) + `"}`

		cases := []struct {
			name         string
			method, path string
			body         string
			headers      map[string]string
			status       int
			code         string
		}{
			{"unknown route", "GET", "/api/nope", "", nil, 404, "unknown_route"},
			{"unknown route under a room", "GET", base + "/nope", "", nil, 404, "unknown_route"},
			{"wrong method", "GET", base + "/enqueue", "", nil, 405, "method_not_allowed"},
			{"invalid room id", "POST", "/api/rooms/bad%7Broom%7D/enqueue", "", nil, 400, "invalid_room"},
			{"room id too long", "GET", "/api/rooms/" + strings.Repeat("r", 65) + "/status", "", nil, 400, "invalid_room"},
			{"unknown room enqueue", "POST", "/api/rooms/no-such-room-x/enqueue", "", nil, 404, "unknown_room"},
			{"unknown room status", "GET", "/api/rooms/no-such-room-x/status", "", nil, 404, "unknown_room"},
			{"poll without ticket", "GET", base + "/poll", "", nil, 401, "missing_ticket"},
			{"poll with garbage", "GET", base + "/poll", "", bearer("garbage"), 401, "invalid_ticket"},
			{"poll with another room's ticket", "GET", base + "/poll", "", bearer(otherTk), 401, "invalid_ticket"},
			{"leave without ticket", "POST", base + "/leave", "", nil, 401, "missing_ticket"},
			{"poll with an entry-shaped non-ticket", "GET", base + "/poll", "", map[string]string{"Authorization": "Basic " + tk}, 401, "missing_ticket"},
			{"consume bad json", "POST", "/api/consume", `{"token":`, nil, 400, "bad_json"},
			{"consume unknown field", "POST", "/api/consume", `{"tok":"x"}`, nil, 400, "bad_json"},
			{"consume no token", "POST", "/api/consume", `{}`, nil, 400, "missing_token"},
			{"consume garbage token", "POST", "/api/consume", `{"token":"a.b.c"}`, nil, 401, "invalid_token"},
			{"consume a ticket", "POST", "/api/consume", `{"token":"` + tk + `"}`, nil, 401, "invalid_token"},
			{"complete garbage token", "POST", "/api/complete", `{"token":"x"}`, nil, 401, "invalid_token"},
			{"body over 8 KiB", "POST", "/api/consume", big, nil, 413, "body_too_large"},
			{"admin without key", "GET", "/api/admin/rooms", "", nil, 401, "unauthorized"},
			{"admin wrong key", "GET", "/api/admin/rooms", "", bearer(adminKey + "x"), 401, "unauthorized"},
			{"admin ticket as key", "GET", "/api/admin/rooms/" + id, "", bearer(tk), 401, "unauthorized"},
			{"admin invalid config", "PUT", "/api/admin/rooms/" + id, `{"maxActive":0}`, bearer(adminKey), 400, "invalid_config"},
			{"admin bad mode", "PUT", "/api/admin/rooms/" + id, `{"mode":"sideways"}`, bearer(adminKey), 400, "invalid_config"},
			{"admin unknown field", "PUT", "/api/admin/rooms/" + id, `{"maxActiv":3}`, bearer(adminKey), 400, "bad_json"},
			{"admin not json", "PUT", "/api/admin/rooms/" + id, `maxActive=3`, bearer(adminKey), 400, "bad_json"},
			{"admin unknown room", "GET", "/api/admin/rooms/no-such-room-x", "", bearer(adminKey), 404, "unknown_room"},
			{"admin wrong method", "PATCH", "/api/admin/rooms/" + id, "", bearer(adminKey), 405, "method_not_allowed"},
			{"admin delete with visitors waiting", "DELETE", "/api/admin/rooms/" + id, "", bearer(adminKey), 409, "room_not_empty"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := f.do(c.method, c.path, c.body, c.headers)
				wantStatus(t, r, c.status, c.code)
				if r.Headers["Content-Type"] != "application/json; charset=utf-8" || r.Headers["Cache-Control"] != "no-store" {
					t.Errorf("headers %v", r.Headers)
				}
				if c.status == 405 && r.Headers["Allow"] == "" {
					t.Errorf("405 without Allow")
				}
			})
		}
		// The failed admin update changed nothing.
		if cfg, _ := f.q.GetConfig(t.Context(), id); cfg.MaxActive != room.DefaultConfig().MaxActive {
			t.Errorf("maxActive after refused updates = %d", cfg.MaxActive)
		}
	})
}

func TestEnqueueTickets(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"originUrl":"https://origin.example/"}`)
		other := f.room(`{"originUrl":"https://origin.example/"}`)
		first := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		// Another room's ticket on enqueue: a fresh place in this room, not an error.
		o := f.do("POST", "/api/rooms/"+other+"/enqueue", "", bearer(first.str("ticket")))
		wantStatus(t, o, 200, "")
		if o.num("position") != 1 || o.str("ticket") == first.str("ticket") {
			t.Fatalf("enqueue with another room's ticket: %s", o.Body)
		}
		t1, _ := f.tickets.Verify(first.str("ticket"), id, f.clock.Now())
		t2, err := f.tickets.Verify(o.str("ticket"), other, f.clock.Now())
		if err != nil || t1.Visitor == t2.Visitor {
			t.Fatalf("fresh place must get a fresh visitor id: %v %v %v", t1, t2, err)
		}
		// A garbage bearer on enqueue is ignored the same way.
		if g := f.do("POST", "/api/rooms/"+id+"/enqueue", "", bearer("nonsense")); g.num("position") != 3 {
			t.Fatalf("enqueue with garbage bearer: %s", g.Body)
		}
		// Leave, then the place is gone; the ticket still authenticates.
		wantStatus(t, f.do("POST", "/api/rooms/"+id+"/leave", "", bearer(first.str("ticket"))), 200, "")
		if p := f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(first.str("ticket"))); p.str("state") != "expired" || p.num("pollAfterMs") != 0 {
			t.Fatalf("poll after leave: %s", p.Body)
		}
		// An expired ticket is refused on poll.
		f.clock.Advance(api.TicketTTL + time.Hour)
		wantStatus(t, f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(first.str("ticket"))), 401, "invalid_ticket")
	})
}

func TestConsumeChecks(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"maxActive":5,"admitPerMinute":600,"claimTTLSeconds":30,"originUrl":"https://origin.example/"}`)
		admit := func() string {
			t.Helper()
			e := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			for i := 0; i < 5; i++ {
				p := f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(e.str("ticket")))
				if tok := p.str("entryToken"); tok != "" {
					return tok
				}
				f.tick(id)
			}
			t.Fatal("not admitted")
			return ""
		}
		// A token for an origin the room no longer has is refused.
		tok := admit()
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"https://elsewhere.example/"}`), 200, "")
		wantStatus(t, f.redeem("/api/consume", tok), 401, "invalid_token")
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"https://origin.example/"}`), 200, "")

		// Past the claim window the token is expired: 410.
		tok = admit()
		f.clock.Advance(31*time.Second + 10*time.Second)
		wantStatus(t, f.redeem("/api/consume", tok), 410, "token_expired")

		// Complete works after the claim window, during the session.
		tok = admit()
		wantStatus(t, f.redeem("/api/consume", tok), 200, "")
		f.clock.Advance(2 * time.Minute)
		wantStatus(t, f.redeem("/api/complete", tok), 200, "")
		// A well-formed token signed by another deployment's key is refused.
		forged, err := token.NewEntries(keys(t).Entry, "vestibule").Issue(token.EntryClaims{
			Room: id, Visitor: "v", Seq: 1, Audience: "https://origin.example/",
			IssuedAt: f.clock.Now(), NotBefore: f.clock.Now(), Expiry: f.clock.Now().Add(time.Minute),
		})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, f.redeem("/api/consume", forged), 401, "invalid_token")
		wantStatus(t, f.redeem("/api/complete", forged), 401, "invalid_token")
	})
}

func TestStatusJWKSAndAdmin(t *testing.T) {
	forEachRedis(t, func(t *testing.T, f *fixture) {
		id := f.room(`{"maxActive":7,"admitPerMinute":120,"originUrl":"https://origin.example/"}`)
		f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)

		s := f.do("GET", "/api/rooms/"+id+"/status", "", nil)
		wantStatus(t, s, 200, "")
		if s.Headers["Cache-Control"] != "public, max-age=1" {
			t.Errorf("status Cache-Control = %q", s.Headers["Cache-Control"])
		}
		if s.str("room") != id || s.str("mode") != "queue" || s.num("waiting") != 2 || s.num("maxActive") != 7 ||
			s.num("admitPerMinute") != 120 || s.num("etaSeconds") != 2 {
			t.Errorf("status: %s", s.Body)
		}
		for _, k := range []string{"active", "admitted"} {
			if _, ok := s.json[k]; !ok {
				t.Errorf("status lacks %q: %s", k, s.Body)
			}
		}

		j := f.do("GET", "/api/jwks.json", "", nil)
		if j.StatusCode != 200 || !strings.Contains(j.Headers["Cache-Control"], "public") {
			t.Fatalf("jwks: %d %v", j.StatusCode, j.Headers)
		}
		var set struct {
			Keys []struct{ Kid, Kty, Crv string } `json:"keys"`
		}
		if err := json.Unmarshal([]byte(j.Body), &set); err != nil || len(set.Keys) == 0 || set.Keys[0].Kid == "" || set.Keys[0].Crv != "P-256" {
			t.Fatalf("jwks body %s: %v", j.Body, err)
		}

		g := f.admin("GET", "/api/admin/rooms/"+id, "")
		wantStatus(t, g, 200, "")
		cfg, _ := g.json["config"].(map[string]any)
		st, _ := g.json["stats"].(map[string]any)
		if cfg["maxActive"] != float64(7) || st["waiting"] != float64(2) {
			t.Errorf("admin get: %s", g.Body)
		}
		// A partial update keeps the other settings.
		u := f.admin("PUT", "/api/admin/rooms/"+id, `{"mode":"paused"}`)
		wantStatus(t, u, 200, "")
		if c, _ := f.q.GetConfig(t.Context(), id); c.Mode != room.ModePaused || c.MaxActive != 7 {
			t.Errorf("after partial update: %+v", c)
		}
		l := f.admin("GET", "/api/admin/rooms", "")
		wantStatus(t, l, 200, "")
		if !strings.Contains(l.Body, `"room":"`+id+`"`) {
			t.Errorf("room list lacks %s: %.300s", id, l.Body)
		}
		// A new room takes the deployment default for what the body leaves out.
		n := redistest.Room(t)
		wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+n, `{"maxActive":3}`), 200, "")
		if c, _ := f.q.GetConfig(t.Context(), n); c.OriginURL != "https://origin.example/" || c.MaxActive != 3 ||
			c.AdmitPerMinute != room.DefaultConfig().AdmitPerMinute {
			t.Errorf("new room from defaults: %+v", c)
		}
	})
}

func TestAdminIAM(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	h := api.New(api.Options{Queue: f.q, Tickets: f.tickets, Entries: f.entries, AdminAuth: api.AdminIAM})
	ev := event("GET", "/api/admin/rooms", "", bearer(adminKey))
	wantStatus(t, send(t, h, ev), 401, "unauthorized")
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "123456789012", UserARN: "arn:aws:iam::123456789012:user/ops"},
	}
	wantStatus(t, send(t, h, ev), 200, "")
}

func TestStates(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	opens := f.clock.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	id := f.room(`{"opensAt":"` + opens + `","heartbeatTTLSeconds":60,"originUrl":"https://origin.example/"}`)
	p := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	// Opening in 10 min: a join is told anywhere in the mean far interval (the
	// 5-minute budget less half of FarSpread), here half of it (the jitter is
	// 1); a move of the opening reaches the page through the status route.
	if p.str("state") != "prequeue" || p.num("pollAfterMs") != 127500 || p.str("opensAt") == "" {
		t.Fatalf("pre-queue: %s", p.Body)
	}
	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"opensAt":null,"mode":"paused"}`), 200, "")
	f.clock.Advance(pollpolicy.MinInterval)
	if p := f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(p.str("ticket"))); p.str("state") != "paused" {
		t.Fatalf("paused: %s", p.Body)
	}
	wantStatus(t, f.admin("PUT", "/api/admin/rooms/"+id, `{"mode":"closed"}`), 200, "")
	c := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	if c.StatusCode != 200 || c.str("state") != "closed" || c.str("ticket") != "" {
		t.Fatalf("closed: %s", c.Body)
	}
}

// The request log: one JSON line per request with route, status, latency and
// room, and never a token or the Authorization header.
func TestRequestLog(t *testing.T) {
	f := newFixture(t, redistest.Single(t))
	id := f.room(`{"originUrl":"https://origin.example/"}`)
	e := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	f.clock.Advance(pollpolicy.MinInterval)
	f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(e.str("ticket")))
	logs := f.logs.String()
	if strings.Contains(logs, e.str("ticket")) || strings.Contains(strings.ToLower(logs), "bearer") || strings.Contains(logs, adminKey) {
		t.Fatalf("log leaks a secret:\n%s", logs)
	}
	var last map[string]any
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last["route"] != "GET /api/rooms/{room}/poll" || last["status"] != float64(200) || last["room"] != id {
		t.Fatalf("log line: %v", last)
	}
	if _, ok := last["latency_ms"].(float64); !ok {
		t.Fatalf("no latency_ms: %v", last)
	}
}
