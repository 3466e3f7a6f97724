package queueapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// format1Ticket is the HS256 JWT ticket of the releases before format 2, as
// they wrote it, for tk issued at iat and valid for a day.
func format1Ticket(t *testing.T, secret []byte, tk room.Ticket, iat time.Time) string {
	t.Helper()
	claims := jwt.MapClaims{"typ": "vestibule-ticket", "iss": "vestibule", "sub": tk.Visitor, "room": tk.Room,
		"seq": tk.Seq, "iat": iat.Unix(), "exp": iat.Add(api.TicketTTL).Unix()}
	if tk.Draw != 0 {
		claims["draw"] = tk.Draw
	}
	j := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	j.Header = map[string]any{"alg": "HS256", "typ": "vst-ticket+jwt"}
	s, err := j.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFormat1TicketKeepsItsPlace: a room mid-on-sale is upgraded; a visitor
// holding a JWT ticket from before keeps the place, on poll and on a refresh
// (enqueue), and gets the same place back as a format 2 ticket with the same
// expiry, which is echoed unchanged from then on.
func TestFormat1TicketKeepsItsPlace(t *testing.T) {
	for name, c := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			var secret []byte
			clk := testkit.FixedClock(time.Now().Truncate(time.Second))
			f := newFixtureOn(t, app.NewEngine(c, clk.Now), clk, func(k *token.Keys, o *api.Options) { secret = k.TicketSecret })
			id := f.room(`{"originUrl":"https://origin.example/"}`)
			first := f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			f.do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			tk, err := f.tickets.Verify(first.str("ticket"), id, f.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			issued := f.clock.Now().Add(-time.Minute)
			old := format1Ticket(t, secret, tk, issued)

			for i, path := range []string{"/poll", "/enqueue"} {
				f.clock.Advance(time.Second) // past the minimum poll interval
				method := map[string]string{"/poll": "GET", "/enqueue": "POST"}[path]
				p := f.do(method, "/api/rooms/"+id+path, "", bearer(old))
				wantStatus(t, p, 200, "")
				if p.num("position") != 1 || p.str("state") != "waiting" {
					t.Fatalf("%d: %s with a format 1 ticket: %s", i, path, p.Body)
				}
				upgraded := p.str("ticket")
				if upgraded == old || strings.Contains(upgraded, ".") {
					t.Fatalf("%s answered ticket %q; want format 2", path, upgraded)
				}
				v, err := f.tickets.Check(upgraded, id, f.clock.Now())
				if err != nil || v.Stale || v.Ticket != tk || !v.Expiry.Equal(issued.Add(api.TicketTTL)) {
					t.Fatalf("upgraded ticket: %+v, %v; want %+v expiring %v", v, err, tk, issued.Add(api.TicketTTL))
				}
				f.clock.Advance(time.Second)
				again := f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(upgraded))
				if again.num("position") != 1 || again.str("ticket") != upgraded {
					t.Fatalf("poll with the upgraded ticket: %s", again.Body)
				}
			}
			// A format 1 ticket of another room is refused, as it always was.
			f.clock.Advance(time.Second)
			wantStatus(t, f.do("GET", "/api/rooms/"+id+"/poll", "", bearer(format1Ticket(t, secret, room.Ticket{Room: "elsewhere", Visitor: tk.Visitor, Seq: tk.Seq}, issued))), 401, "invalid_ticket")
		})
	}
}
