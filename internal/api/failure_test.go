package api_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// failing is a Queue whose every call fails with err, or panics when err is nil.
type failing struct{ err error }

func (f failing) fail() error {
	if f.err == nil {
		panic("boom: a bug in the engine")
	}
	return f.err
}
func (f failing) Join(context.Context, string, string, room.JoinProof) (room.Place, error) {
	return room.Place{}, f.fail()
}
func (f failing) Poll(context.Context, room.Ticket) (room.Place, error) {
	return room.Place{}, f.fail()
}
func (f failing) Leave(context.Context, room.Ticket) error { return f.fail() }
func (f failing) Consume(context.Context, string, int64, string) (room.Session, error) {
	return room.Session{}, f.fail()
}
func (f failing) Complete(context.Context, string, int64, string) error { return f.fail() }
func (f failing) Renew(context.Context, string, int64, string, time.Time) (room.Session, error) {
	return room.Session{}, f.fail()
}
func (f failing) Tick(context.Context, string) (room.TickResult, error) {
	return room.TickResult{}, f.fail()
}
func (f failing) PutConfig(context.Context, string, room.Config) (room.Config, error) {
	return room.Config{}, f.fail()
}
func (f failing) GetConfig(context.Context, string) (room.Config, error) {
	return room.Config{}, f.fail()
}
func (f failing) RegisterNotice(context.Context, room.Ticket, room.NoticeSignup) error {
	return f.fail()
}
func (f failing) WithdrawNotice(context.Context, room.Ticket) error { return f.fail() }
func (f failing) TakeNotices(context.Context, string, int, time.Duration) ([]room.DueNotice, error) {
	return nil, f.fail()
}
func (f failing) AckNotice(context.Context, string, int64, room.NoticeOutcome, time.Time) error {
	return f.fail()
}
func (f failing) Rooms(context.Context) ([]string, error) { return nil, f.fail() }
func (f failing) Status(context.Context, string) (room.Config, room.Stats, error) {
	return room.Config{}, room.Stats{}, f.fail()
}
func (f failing) AllowEnqueue(context.Context, string, string) error { return f.fail() }
func (f failing) History(context.Context, string) ([]room.HistoryPoint, error) {
	return nil, f.fail()
}
func (f failing) Drain(context.Context, string) (int64, error) { return 0, f.fail() }
func (f failing) ClaimRegion(context.Context, string) (room.RegionClaim, error) {
	return room.RegionClaim{}, f.fail()
}
func (f failing) Delete(context.Context, string) error { return f.fail() }
func (f failing) AppendAudit(context.Context, string, room.AuditEntry) error {
	return f.fail()
}
func (f failing) Audit(context.Context, string) ([]room.AuditEntry, error) { return nil, f.fail() }
func (f failing) Schedule(context.Context, string) ([]room.ScheduledChange, error) {
	return nil, f.fail()
}
func (f failing) PutScheduled(context.Context, string, room.ScheduledChange) error { return f.fail() }
func (f failing) LeaseScheduled(context.Context, string, string) (room.ScheduledChange, string, error) {
	return room.ScheduledChange{}, "", f.fail()
}
func (f failing) ReleaseScheduled(context.Context, string, string, string) error { return f.fail() }
func (f failing) RemoveScheduled(context.Context, string, string, string) error  { return f.fail() }
func (f failing) ScheduleCopy(context.Context, string) ([]room.ScheduledChange, int64, int64, error) {
	return nil, 0, 0, f.fail()
}
func (f failing) ScheduleStored(context.Context, string, int64) error { return f.fail() }
func (f failing) Invitation(context.Context, string, string) (room.InvitationState, error) {
	return room.InvitationState{}, f.fail()
}
func (f failing) RevokeInvitation(context.Context, string, string) (time.Time, error) {
	return time.Time{}, f.fail()
}
func (f failing) Visitor(context.Context, string, string) (room.VisitorState, error) {
	return room.VisitorState{}, f.fail()
}
func (f failing) RestorePlace(context.Context, string, string) (room.VisitorState, error) {
	return room.VisitorState{}, f.fail()
}
func (f failing) ReportLoad(context.Context, string, float64) error { return f.fail() }

func handlerOver(t *testing.T, q api.Queue) *api.Handler {
	k := apitest.Keys(t)
	return api.New(api.Options{Queue: q, Tickets: token.NewTickets(k.TicketSecret, "vestibule"),
		Entries: token.NewEntries(k.Entry, "vestibule"), AdminAuth: api.AdminKey, AdminKey: apitest.AdminKey})
}

// Every engine error maps to its status in one place; Redis trouble and the
// unforeseen are 503 with Retry-After, and the cause never reaches the body.
func TestErrorMapping(t *testing.T) {
	secret := "10.0.0.7:6379 i/o timeout"
	cases := []struct {
		err        error
		status     int
		code       string
		retryAfter string
	}{
		{room.ErrUnknownRoom, 404, "unknown_room", ""},
		{room.ErrInvalidRoom, 400, "invalid_room", ""},
		{&room.FieldError{Field: "maxActive", Reason: "too big"}, 400, "invalid_config", ""},
		{room.ErrAlreadyConsumed, 409, "already_consumed", ""},
		{room.ErrGrantExpired, 410, "grant_expired", ""},
		{room.ErrUnknownGrant, 401, "unknown_grant", ""},
		{&room.RetryError{After: 2500 * time.Millisecond}, 429, "rate_limited", "3"},
		{room.ErrRateLimited, 429, "rate_limited", strconv.Itoa(api.RetryAfterSeconds)},
		{fmt.Errorf("%w: %s", room.ErrUnavailable, secret), 503, "unavailable", strconv.Itoa(api.RetryAfterSeconds)},
		{errors.New(secret), 503, "unavailable", strconv.Itoa(api.RetryAfterSeconds)},
		{context.DeadlineExceeded, 503, "unavailable", strconv.Itoa(api.RetryAfterSeconds)},
	}
	for _, c := range cases {
		t.Run(c.code+"/"+c.err.Error(), func(t *testing.T) {
			h := handlerOver(t, failing{c.err})
			for _, ev := range []struct{ method, path string }{
				{"POST", "/api/rooms/r1/enqueue"}, {"GET", "/api/rooms/r1/status"}, {"GET", "/api/admin/rooms"},
			} {
				r := apitest.Send(t, h, apitest.Event(ev.method, ev.path, "", apitest.Bearer(apitest.AdminKey)))
				apitest.WantStatus(t, r, c.status, c.code)
				if got := r.Headers["Retry-After"]; got != c.retryAfter {
					t.Errorf("%s %s: Retry-After %q, want %q", ev.method, ev.path, got, c.retryAfter)
				}
				if strings.Contains(r.Body, "10.0.0.7") || strings.Contains(r.Body, "timeout") {
					t.Errorf("body leaks the cause: %s", r.Body)
				}
			}
		})
	}
}

// A panic anywhere below the handler becomes a 500 with a generic body, not a
// crashed Lambda. (No input causes one; this proves the net is there.)
func TestPanicIsA500(t *testing.T) {
	h := handlerOver(t, failing{nil})
	r := apitest.Send(t, h, apitest.Event("GET", "/api/rooms/r1/status", "", nil))
	apitest.WantStatus(t, r, 500, "internal")
	if strings.Contains(r.Body, "boom") {
		t.Errorf("body leaks the panic: %s", r.Body)
	}
}

// Redis down or unreachable: 503 with Retry-After, well inside a generous
// deadline, for a single node and a cluster, through the production client
// options (app.NewRedis).
func TestRedisDown(t *testing.T) {
	closed, err := testkit.FreePort() // nothing listens here
	if err != nil {
		t.Fatal(err)
	}
	// A black hole: accepts connections and never answers.
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	k := apitest.Keys(t)
	for _, c := range []struct {
		name    string
		addr    string
		cluster bool
	}{
		{"refused", fmt.Sprintf("127.0.0.1:%d", closed), false},
		{"refused cluster", fmt.Sprintf("127.0.0.1:%d", closed), true},
		{"black hole", hole.Addr().String(), false},
		{"black hole cluster", hole.Addr().String(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rdb, err := app.NewRedis("redis://"+c.addr, c.cluster, "")
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			h := api.New(api.Options{Queue: roomdb.New(rdb), Tickets: token.NewTickets(k.TicketSecret, "vestibule"),
				Entries: token.NewEntries(k.Entry, "vestibule"), AdminAuth: api.AdminKey, AdminKey: apitest.AdminKey})
			for _, ev := range []struct{ method, path, body string }{
				{"POST", "/api/rooms/r1/enqueue", ""},
				{"GET", "/api/rooms/r1/status", ""},
				{"PUT", "/api/admin/rooms/r1", `{"originUrl":"https://o.example/"}`},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				resp, err := h.Handle(ctx, apitest.Event(ev.method, ev.path, ev.body, apitest.Bearer(apitest.AdminKey)))
				late := ctx.Err()
				cancel()
				if err != nil || resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" {
					t.Fatalf("%s %s: %d %v %s, want 503 with Retry-After", ev.method, ev.path, resp.StatusCode, resp.Headers, resp.Body)
				}
				if late != nil {
					t.Fatalf("%s %s: answered only after the 3 s deadline", ev.method, ev.path)
				}
			}
		})
	}
}

// Redis down: a page with 503 and Retry-After, never a 500 or a cookie; a
// deployment without gate keys answers the gate's routes 404.
func TestGateFailures(t *testing.T) {
	k := apitest.Keys(t)
	ring, err := k.GateKeys()
	if err != nil {
		t.Fatal(err)
	}
	entries := token.NewEntries(k.Entry, "vestibule")
	down := api.New(api.Options{Queue: failing{fmt.Errorf("%w: refused", room.ErrUnavailable)},
		Tickets: token.NewTickets(k.TicketSecret, "vestibule"), Entries: entries, Gate: &api.GateOptions{Keys: ring}})
	now := time.Now()
	tok, err := entries.Issue(token.EntryClaims{Room: "r1", Visitor: "v", Seq: 7, Audience: apitest.Site,
		IssuedAt: now, NotBefore: now, Expiry: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	ev := apitest.Event("POST", "/.vestibule/enter", "", map[string]string{"host": "site.example"})
	ev.Body = url.Values{"token": {tok}, "return": {"/a"}}.Encode()
	r := apitest.Send(t, down, ev)
	if r.StatusCode != 503 || r.Headers["Retry-After"] == "" || len(r.Cookies) != 0 || strings.Contains(r.Body, "refused") {
		t.Fatalf("enter with Redis down: %d %v %s", r.StatusCode, r.Headers, r.Body)
	}
	cookie := gate.Sign(ring.Current, gate.Session{Room: "r1", Seq: 7, Expires: now.Add(time.Minute)})
	ev = apitest.Event("POST", "/.vestibule/leave", "", nil)
	ev.Cookies = []string{gate.CookieName + "=" + cookie}
	if r := apitest.Send(t, down, ev); r.StatusCode != 503 || len(r.Cookies) != 0 {
		t.Fatalf("leave with Redis down: %d %v", r.StatusCode, r.Cookies)
	}
	renewing := gate.Sign(ring.Current, gate.Session{Room: "r1", Seq: 7, Expires: now.Add(time.Minute), RenewAt: now.Add(-time.Second), Start: now.Add(-time.Minute)})
	ev = apitest.Event("GET", "/.vestibule/renew?return=%2Fa", "", nil)
	ev.Cookies = []string{gate.CookieName + "=" + renewing}
	if r := apitest.Send(t, down, ev); r.StatusCode != 503 || r.Headers["Location"] != "" || len(r.Cookies) != 0 || !strings.Contains(r.Body, `href="/a"`) {
		t.Fatalf("renew with Redis down: %d %v %v", r.StatusCode, r.Headers, r.Cookies)
	}

	none := handlerOver(t, failing{room.ErrUnavailable})
	for _, e := range []events.APIGatewayV2HTTPRequest{apitest.Event("POST", "/.vestibule/enter", "token=x", nil), apitest.Event("GET", "/.vestibule/leave", "", nil), apitest.Event("GET", "/.vestibule/renew", "", nil)} {
		if r := apitest.Send(t, none, e); r.StatusCode != 404 || !strings.HasPrefix(r.Headers["Content-Type"], "text/html") {
			t.Errorf("no gate keys: %s %d %s", e.RawPath, r.StatusCode, r.Body)
		}
	}
}
