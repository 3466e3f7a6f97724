package api_test

import (
	"context"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// waitingQueue answers every poll with a waiting place: the handler's own
// cost, without Redis.
type waitingQueue struct{ failing }

func (waitingQueue) Poll(_ context.Context, t room.Ticket) (room.Place, error) {
	cfg := room.DefaultConfig()
	return room.Place{Ticket: t, State: room.StateWaiting, Position: 4200, Waiting: 10000,
		RatePerMinute: 600, Config: cfg}, nil
}

// pollEvent is a poll as API Gateway sends it from a browser behind CloudFront.
func pollEvent(roomID, ticket string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: "/api/rooms/" + roomID + "/poll",
		Headers: map[string]string{
			"accept": "*/*", "accept-encoding": "gzip, deflate, br", "accept-language": "en-GB,en;q=0.9",
			"authorization": "Bearer " + ticket, "host": "api.example.com",
			"user-agent":      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
			"x-forwarded-for": "203.0.113.9", "x-forwarded-port": "443", "x-forwarded-proto": "https",
			"cloudfront-viewer-address": "203.0.113.9:51234", "via": "2.0 abc.cloudfront.net (CloudFront)",
		},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-1", Stage: "$default", RouteKey: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: "GET", Path: "/api/rooms/" + roomID + "/poll", Protocol: "HTTP/1.1", SourceIP: "203.0.113.9",
			},
		},
	}
}

// BenchmarkPollRoute is the poll route's handler (the HTTP row of make bench
// measures it over HTTP): "handler" answers from a stub engine, "redis" runs
// the real engine on a real Redis. Profile with -cpuprofile.
func BenchmarkPollRoute(b *testing.B) {
	k, err := token.NewKeys()
	if err != nil {
		b.Fatal(err)
	}
	tickets := token.NewTickets(k.TicketSecret, "vestibule")
	now := time.Now()
	tk, err := tickets.Issue(room.Ticket{Room: "bench", Visitor: "hG3k2cQ_visitor-id0123", Seq: 1 << 52}, now, api.TicketTTL)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, h *api.Handler, ev events.APIGatewayV2HTTPRequest) {
		b.ReportAllocs()
		for b.Loop() {
			resp, _ := h.Handle(b.Context(), ev)
			if resp.StatusCode != 200 {
				b.Fatalf("poll: %d %s", resp.StatusCode, resp.Body)
			}
		}
	}
	b.Run("handler", func(b *testing.B) {
		h := api.New(api.Options{Queue: waitingQueue{}, Tickets: tickets, Entries: token.NewEntries(k.Entry, "vestibule"),
			Clock: func() time.Time { return now }})
		run(b, h, pollEvent("bench", tk))
	})
	b.Run("redis", func(b *testing.B) {
		c := redistest.Single(b)
		clk := testkit.FixedClock(now)
		q := app.NewEngine(c, clk.Now)
		h := api.New(api.Options{Queue: q, Tickets: tickets, Entries: token.NewEntries(k.Entry, "vestibule"),
			Clock: clk.Now, AdminKey: apitest.AdminKey})
		id := redistest.Room(b)
		cfg := room.DefaultConfig()
		cfg.OriginURL = "https://origin.example/"
		if _, err := q.PutConfig(b.Context(), id, cfg); err != nil {
			b.Fatal(err)
		}
		// Many visitors polled in turn, each a second apart in the clock's eyes.
		var evs []events.APIGatewayV2HTTPRequest
		for i := range 1000 {
			p, err := q.Join(b.Context(), id, "visitor-"+strconv.Itoa(i), room.JoinProof{})
			if err != nil {
				b.Fatal(err)
			}
			s, err := tickets.Issue(p.Ticket, clk.Now(), api.TicketTTL)
			if err != nil {
				b.Fatal(err)
			}
			evs = append(evs, pollEvent(id, s))
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i%len(evs) == 0 {
				clk.Advance(time.Second)
			}
			resp, _ := h.Handle(b.Context(), evs[i%len(evs)])
			if resp.StatusCode != 200 {
				b.Fatalf("poll: %d %s", resp.StatusCode, resp.Body)
			}
			i++
		}
	})
}
