package queueapi_test

import (
	"encoding/json"
	"github.com/vestibule-dev/vestibule/internal/apitest"
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
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"maxActive":1,"admitPerMinute":60,"mode":"queue","originUrl":"https://origin.example/book"}`)
		base := "/api/rooms/" + id

		a := f.Do("POST", base+"/enqueue", "", nil)
		apitest.WantStatus(t, a, 200, "")
		if a.Str("state") != "waiting" || a.Num("position") != 1 || a.Str("ticket") == "" {
			t.Fatalf("first enqueue: %s", a.Body)
		}
		if a.JSON["etaSeconds"] == nil || a.Num("pollAfterMs") != 1000 {
			t.Fatalf("first in line: want an ETA and a 1 s poll, got %s", a.Body)
		}
		if r, ok := a.JSON["ratePerMinute"].(float64); !ok || r != 60 {
			t.Fatalf("a free slot: want the configured pace, ratePerMinute 60, got %s", a.Body)
		}
		b := f.Do("POST", base+"/enqueue", "", nil)
		if b.Num("position") != 2 || b.Str("ticket") == a.Str("ticket") {
			t.Fatalf("second enqueue: %s", b.Body)
		}
		// Enqueue again with the ticket (a poll: not sooner than the minimum
		// interval): the same place, the same ticket.
		f.Clock.Advance(pollpolicy.MinInterval)
		again := f.Do("POST", base+"/enqueue", "", apitest.Bearer(a.Str("ticket")))
		if again.Num("position") != 1 || again.Str("ticket") != a.Str("ticket") {
			t.Fatalf("re-enqueue with ticket: %s", again.Body)
		}

		var admitted apitest.Response
		for i := 0; i < 5; i++ {
			f.Clock.Advance(pollpolicy.MinInterval)
			admitted = f.Do("GET", base+"/poll", "", apitest.Bearer(a.Str("ticket")))
			apitest.WantStatus(t, admitted, 200, "")
			if admitted.Str("state") == "admitted" {
				break
			}
			f.Tick(id)
		}
		if admitted.Str("state") != "admitted" || admitted.Str("entryToken") == "" || admitted.Str("originUrl") != "https://origin.example/book" {
			t.Fatalf("never admitted: %s", admitted.Body)
		}
		if admitted.Num("pollAfterMs") != 0 {
			t.Fatalf("admitted: pollAfterMs = %d, want 0", admitted.Num("pollAfterMs"))
		}
		if _, ok := admitted.JSON["ratePerMinute"]; ok {
			t.Fatalf("admitted: a rate is for those waiting, got %s", admitted.Body)
		}
		// The second visitor, waiting in the full room, is told the rate measured
		// since the first was admitted.
		f.Clock.Advance(pollpolicy.MinInterval)
		if w := f.Do("GET", base+"/poll", "", apitest.Bearer(b.Str("ticket"))); w.Str("state") != "waiting" || w.Num("ratePerMinute") <= 0 {
			t.Fatalf("second visitor after one admission: want a measured ratePerMinute, got %s", w.Body)
		}
		tok := admitted.Str("entryToken")
		c, err := f.Entries.Verify(tok, f.Clock.Now())
		if err != nil || c.Audience != "https://origin.example/book" || c.Room != id {
			t.Fatalf("entry token: %+v, %v", c, err)
		}

		// Holding the token is not enough: only the room's origin redeems it.
		body := `{"token":"` + tok + `"}`
		apitest.WantStatus(t, f.Do("POST", "/api/consume", body, nil), 401, "invalid_origin_credential")
		apitest.WantStatus(t, f.Do("POST", "/api/consume", body, apitest.Bearer(f.Origins.Credential(id+"x"))), 401, "invalid_origin_credential")
		apitest.WantStatus(t, f.Do("POST", "/api/consume", body, apitest.Bearer(a.Str("ticket"))), 401, "invalid_origin_credential")
		apitest.WantStatus(t, f.Do("POST", "/api/complete", body, nil), 401, "invalid_origin_credential")

		consume := f.Redeem("/api/consume", tok)
		apitest.WantStatus(t, consume, 200, "")
		if consume.Str("room") != id || consume.Str("visitor") != c.Visitor {
			t.Fatalf("consume: %s", consume.Body)
		}
		exp, err := time.Parse(time.RFC3339, consume.Str("sessionExpiresAt"))
		if err != nil || !exp.After(f.Clock.Now()) {
			t.Fatalf("sessionExpiresAt %q: %v", consume.Str("sessionExpiresAt"), err)
		}
		apitest.WantStatus(t, f.Redeem("/api/consume", tok), 409, "already_consumed")

		// The room is full: the second visitor waits however many ticks pass.
		f.Tick(id)
		f.Tick(id)
		if p := f.Do("GET", base+"/poll", "", apitest.Bearer(b.Str("ticket"))); p.Str("state") != "waiting" || p.Num("position") != 1 {
			t.Fatalf("second visitor while full: %s", p.Body)
		}
		apitest.WantStatus(t, f.Redeem("/api/complete", tok), 200, "")
		f.Tick(id)
		if p := f.Do("GET", base+"/poll", "", apitest.Bearer(b.Str("ticket"))); p.Str("state") != "admitted" || p.Str("entryToken") == "" {
			t.Fatalf("second visitor after complete: %s", p.Body)
		}
	})
}

func TestErrors(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"originUrl":"https://origin.example/"}`)
		other := f.Room(`{"originUrl":"https://origin.example/"}`)
		base := "/api/rooms/" + id
		tk := f.Do("POST", base+"/enqueue", "", nil).Str("ticket")
		otherTk := f.Do("POST", "/api/rooms/"+other+"/enqueue", "", nil).Str("ticket")
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
			{"poll with garbage", "GET", base + "/poll", "", apitest.Bearer("garbage"), 401, "invalid_ticket"},
			{"poll with another room's ticket", "GET", base + "/poll", "", apitest.Bearer(otherTk), 401, "invalid_ticket"},
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
			{"admin wrong key", "GET", "/api/admin/rooms", "", apitest.Bearer(apitest.AdminKey + "x"), 401, "unauthorized"},
			{"admin ticket as key", "GET", "/api/admin/rooms/" + id, "", apitest.Bearer(tk), 401, "unauthorized"},
			{"admin invalid config", "PUT", "/api/admin/rooms/" + id, `{"maxActive":0}`, apitest.Bearer(apitest.AdminKey), 400, "invalid_config"},
			{"admin bad mode", "PUT", "/api/admin/rooms/" + id, `{"mode":"sideways"}`, apitest.Bearer(apitest.AdminKey), 400, "invalid_config"},
			{"admin unknown field", "PUT", "/api/admin/rooms/" + id, `{"maxActiv":3}`, apitest.Bearer(apitest.AdminKey), 400, "bad_json"},
			{"admin not json", "PUT", "/api/admin/rooms/" + id, `maxActive=3`, apitest.Bearer(apitest.AdminKey), 400, "bad_json"},
			{"admin unknown room", "GET", "/api/admin/rooms/no-such-room-x", "", apitest.Bearer(apitest.AdminKey), 404, "unknown_room"},
			{"admin wrong method", "PATCH", "/api/admin/rooms/" + id, "", apitest.Bearer(apitest.AdminKey), 405, "method_not_allowed"},
			{"admin delete with visitors waiting", "DELETE", "/api/admin/rooms/" + id, "", apitest.Bearer(apitest.AdminKey), 409, "room_not_empty"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := f.Do(c.method, c.path, c.body, c.headers)
				apitest.WantStatus(t, r, c.status, c.code)
				if r.Headers["Content-Type"] != "application/json; charset=utf-8" || r.Headers["Cache-Control"] != "no-store" {
					t.Errorf("headers %v", r.Headers)
				}
				if c.status == 405 && r.Headers["Allow"] == "" {
					t.Errorf("405 without Allow")
				}
			})
		}
		// The failed admin update changed nothing.
		if cfg, _ := f.Q.GetConfig(t.Context(), id); cfg.MaxActive != room.DefaultConfig().MaxActive {
			t.Errorf("maxActive after refused updates = %d", cfg.MaxActive)
		}
	})
}

func TestEnqueueTickets(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"originUrl":"https://origin.example/"}`)
		other := f.Room(`{"originUrl":"https://origin.example/"}`)
		first := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		// Another room's ticket on enqueue: a fresh place in this room, not an error.
		o := f.Do("POST", "/api/rooms/"+other+"/enqueue", "", apitest.Bearer(first.Str("ticket")))
		apitest.WantStatus(t, o, 200, "")
		if o.Num("position") != 1 || o.Str("ticket") == first.Str("ticket") {
			t.Fatalf("enqueue with another room's ticket: %s", o.Body)
		}
		t1, _ := f.Tickets.Verify(first.Str("ticket"), id, f.Clock.Now())
		t2, err := f.Tickets.Verify(o.Str("ticket"), other, f.Clock.Now())
		if err != nil || t1.Visitor == t2.Visitor {
			t.Fatalf("fresh place must get a fresh visitor id: %v %v %v", t1, t2, err)
		}
		// A garbage bearer on enqueue is ignored the same way.
		if g := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer("nonsense")); g.Num("position") != 3 {
			t.Fatalf("enqueue with garbage bearer: %s", g.Body)
		}
		// Leave, then the place is gone; the ticket still authenticates.
		apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/leave", "", apitest.Bearer(first.Str("ticket"))), 200, "")
		if p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(first.Str("ticket"))); p.Str("state") != "expired" || p.Num("pollAfterMs") != 0 {
			t.Fatalf("poll after leave: %s", p.Body)
		}
		// An expired ticket is refused on poll.
		f.Clock.Advance(api.TicketTTL + time.Hour)
		apitest.WantStatus(t, f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(first.Str("ticket"))), 401, "invalid_ticket")
	})
}

func TestConsumeChecks(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"maxActive":5,"admitPerMinute":600,"claimTTLSeconds":30,"originUrl":"https://origin.example/"}`)
		admit := func() string {
			t.Helper()
			e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			for i := 0; i < 5; i++ {
				p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket")))
				if tok := p.Str("entryToken"); tok != "" {
					return tok
				}
				f.Tick(id)
			}
			t.Fatal("not admitted")
			return ""
		}
		// A token for an origin the room no longer has is refused.
		tok := admit()
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"https://elsewhere.example/"}`), 200, "")
		apitest.WantStatus(t, f.Redeem("/api/consume", tok), 401, "invalid_token")
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"originUrl":"https://origin.example/"}`), 200, "")

		// Past the claim window the token is expired: 410.
		tok = admit()
		f.Clock.Advance(31*time.Second + 10*time.Second)
		apitest.WantStatus(t, f.Redeem("/api/consume", tok), 410, "token_expired")

		// Complete works after the claim window, during the session.
		tok = admit()
		apitest.WantStatus(t, f.Redeem("/api/consume", tok), 200, "")
		f.Clock.Advance(2 * time.Minute)
		apitest.WantStatus(t, f.Redeem("/api/complete", tok), 200, "")
		// A well-formed token signed by another deployment's key is refused.
		forged, err := token.NewEntries(apitest.Keys(t).Entry, "vestibule").Issue(token.EntryClaims{
			Room: id, Visitor: "v", Seq: 1, Audience: "https://origin.example/",
			IssuedAt: f.Clock.Now(), NotBefore: f.Clock.Now(), Expiry: f.Clock.Now().Add(time.Minute),
		})
		if err != nil {
			t.Fatal(err)
		}
		apitest.WantStatus(t, f.Redeem("/api/consume", forged), 401, "invalid_token")
		apitest.WantStatus(t, f.Redeem("/api/complete", forged), 401, "invalid_token")
	})
}

func TestStatusJWKSAndAdmin(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"maxActive":7,"admitPerMinute":120,"originUrl":"https://origin.example/"}`)
		f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)

		s := f.Do("GET", "/api/rooms/"+id+"/status", "", nil)
		apitest.WantStatus(t, s, 200, "")
		if s.Headers["Cache-Control"] != "public, max-age=1" {
			t.Errorf("status Cache-Control = %q", s.Headers["Cache-Control"])
		}
		if s.Str("room") != id || s.Str("mode") != "queue" || s.Num("waiting") != 2 || s.Num("maxActive") != 7 ||
			s.Num("admitPerMinute") != 120 || s.Num("etaSeconds") != 2 {
			t.Errorf("status: %s", s.Body)
		}
		for _, k := range []string{"active", "admitted"} {
			if _, ok := s.JSON[k]; !ok {
				t.Errorf("status lacks %q: %s", k, s.Body)
			}
		}

		j := f.Do("GET", "/api/jwks.json", "", nil)
		if j.StatusCode != 200 || !strings.Contains(j.Headers["Cache-Control"], "public") {
			t.Fatalf("jwks: %d %v", j.StatusCode, j.Headers)
		}
		var set struct {
			Keys []struct{ Kid, Kty, Crv string } `json:"keys"`
		}
		if err := json.Unmarshal([]byte(j.Body), &set); err != nil || len(set.Keys) == 0 || set.Keys[0].Kid == "" || set.Keys[0].Crv != "P-256" {
			t.Fatalf("jwks body %s: %v", j.Body, err)
		}

		g := f.Admin("GET", "/api/admin/rooms/"+id, "")
		apitest.WantStatus(t, g, 200, "")
		cfg, _ := g.JSON["config"].(map[string]any)
		st, _ := g.JSON["stats"].(map[string]any)
		if cfg["maxActive"] != float64(7) || st["waiting"] != float64(2) {
			t.Errorf("admin get: %s", g.Body)
		}
		// A partial update keeps the other settings.
		u := f.Admin("PUT", "/api/admin/rooms/"+id, `{"mode":"paused"}`)
		apitest.WantStatus(t, u, 200, "")
		if c, _ := f.Q.GetConfig(t.Context(), id); c.Mode != room.ModePaused || c.MaxActive != 7 {
			t.Errorf("after partial update: %+v", c)
		}
		l := f.Admin("GET", "/api/admin/rooms", "")
		apitest.WantStatus(t, l, 200, "")
		if !strings.Contains(l.Body, `"room":"`+id+`"`) {
			t.Errorf("room list lacks %s: %.300s", id, l.Body)
		}
		// A new room takes the deployment default for what the body leaves out.
		n := redistest.Room(t)
		apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+n, `{"maxActive":3}`), 200, "")
		if c, _ := f.Q.GetConfig(t.Context(), n); c.OriginURL != "https://origin.example/" || c.MaxActive != 3 ||
			c.AdmitPerMinute != room.DefaultConfig().AdmitPerMinute {
			t.Errorf("new room from defaults: %+v", c)
		}
	})
}

func TestAdminIAM(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	h := api.New(api.Options{Queue: f.Q, Tickets: f.Tickets, Entries: f.Entries, AdminAuth: api.AdminIAM})
	ev := apitest.Event("GET", "/api/admin/rooms", "", apitest.Bearer(apitest.AdminKey))
	apitest.WantStatus(t, apitest.Send(t, h, ev), 401, "unauthorized")
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "123456789012", UserARN: "arn:aws:iam::123456789012:user/ops"},
	}
	apitest.WantStatus(t, apitest.Send(t, h, ev), 200, "")
}

func TestStates(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	opens := f.Clock.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	id := f.Room(`{"opensAt":"` + opens + `","heartbeatTTLSeconds":60,"originUrl":"https://origin.example/"}`)
	p := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	// Opening in 10 min: a join is told anywhere in the mean far interval (the
	// 5-minute budget less half of FarSpread), here half of it (the jitter is
	// 1); a move of the opening reaches the page through the status route.
	if p.Str("state") != "prequeue" || p.Num("pollAfterMs") != 127500 || p.Str("opensAt") == "" {
		t.Fatalf("pre-queue: %s", p.Body)
	}
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"opensAt":null,"mode":"paused"}`), 200, "")
	f.Clock.Advance(pollpolicy.MinInterval)
	if p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(p.Str("ticket"))); p.Str("state") != "paused" {
		t.Fatalf("paused: %s", p.Body)
	}
	apitest.WantStatus(t, f.Admin("PUT", "/api/admin/rooms/"+id, `{"mode":"closed"}`), 200, "")
	c := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	if c.StatusCode != 200 || c.Str("state") != "closed" || c.Str("ticket") != "" {
		t.Fatalf("closed: %s", c.Body)
	}
}

// The request log: one JSON line per request with route, status, latency and
// room, and never a token or the Authorization header.
func TestRequestLog(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	id := f.Room(`{"originUrl":"https://origin.example/"}`)
	e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
	f.Clock.Advance(pollpolicy.MinInterval)
	f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket")))
	logs := f.Logs.String()
	if strings.Contains(logs, e.Str("ticket")) || strings.Contains(strings.ToLower(logs), "bearer") || strings.Contains(logs, apitest.AdminKey) {
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
