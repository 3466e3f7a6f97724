package queueapi_test

import (
	"github.com/vestibule-dev/vestibule/internal/apitest"
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
			f := apitest.NewFixtureOn(t, app.NewEngine(c, clk.Now), clk, func(k *token.Keys, o *api.Options) { secret = k.TicketSecret })
			id := f.Room(`{"originUrl":"https://origin.example/"}`)
			first := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			tk, err := f.Tickets.Verify(first.Str("ticket"), id, f.Clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			issued := f.Clock.Now().Add(-time.Minute)
			old := format1Ticket(t, secret, tk, issued)

			for i, path := range []string{"/poll", "/enqueue"} {
				f.Clock.Advance(time.Second) // past the minimum poll interval
				method := map[string]string{"/poll": "GET", "/enqueue": "POST"}[path]
				p := f.Do(method, "/api/rooms/"+id+path, "", apitest.Bearer(old))
				apitest.WantStatus(t, p, 200, "")
				if p.Num("position") != 1 || p.Str("state") != "waiting" {
					t.Fatalf("%d: %s with a format 1 ticket: %s", i, path, p.Body)
				}
				upgraded := p.Str("ticket")
				if upgraded == old || strings.Contains(upgraded, ".") {
					t.Fatalf("%s answered ticket %q; want format 2", path, upgraded)
				}
				v, err := f.Tickets.Check(upgraded, id, f.Clock.Now())
				if err != nil || v.Stale || v.Ticket != tk || !v.Expiry.Equal(issued.Add(api.TicketTTL)) {
					t.Fatalf("upgraded ticket: %+v, %v; want %+v expiring %v", v, err, tk, issued.Add(api.TicketTTL))
				}
				f.Clock.Advance(time.Second)
				again := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(upgraded))
				if again.Num("position") != 1 || again.Str("ticket") != upgraded {
					t.Fatalf("poll with the upgraded ticket: %s", again.Body)
				}
			}
			// A format 1 ticket of another room is refused, as it always was.
			f.Clock.Advance(time.Second)
			apitest.WantStatus(t, f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(format1Ticket(t, secret, room.Ticket{Room: "elsewhere", Visitor: tk.Visitor, Seq: tk.Seq}, issued))), 401, "invalid_ticket")
		})
	}
}
