package noticeapi_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// noticeFixture is the API over a real engine with notices on (push and
// email), and the notify function's opener of its key.
func noticeFixture(t *testing.T, rdb redis.UniversalClient) (*apitest.Fixture, *notice.Opener) {
	t.Helper()
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	var opener *notice.Opener
	f := apitest.NewFixtureOn(t, app.NewEngine(rdb, clk.Now), clk, func(k *token.Keys, o *api.Options) {
		keys, err := notice.FromSecret(k.NoticeSecret)
		if err != nil {
			t.Fatal(err)
		}
		s, err := notice.NewSealer(keys.Public())
		if err != nil {
			t.Fatal(err)
		}
		opener = notice.NewOpener(keys)
		o.Notices = &api.NoticeOptions{Sealer: s, Hasher: notice.NewHasher(k.TicketSecret),
			Policy: notice.Policy{Push: true, Email: true}}
	})
	return f, opener
}

// The routes of notices over HTTP, from the sign-up to the ack: the offer
// in enqueue's answers (not in polls'), a sign-up by email, what is refused
// and why, the notify function's take of the granted visitor's notice (its
// sealed address opens to the email, for that place only) and its ack; the
// plain address is nowhere in Redis.
func TestNoticeRoutes(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			f, opener := noticeFixture(t, rdb)
			id := f.Room(`{"maxActive":1,"claimTTLSeconds":120,"notifiedClaimTTLSeconds":600}`)
			a := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			f.Tick(id) // a holds the slot
			b := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			offer, _ := b.JSON["notices"].(map[string]any)
			if b.Str("state") != "waiting" || offer == nil || offer["email"] != true || offer["push"] == "" || offer["vapid"] == "" {
				t.Fatalf("enqueue's answer to a waiting visitor: %s", b.Body)
			}
			if p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(b.Str("ticket"))); p.JSON["notices"] != nil {
				t.Fatalf("a poll carries the offer: %s", p.Body)
			}
			notify := func(tk, body string) apitest.Response {
				return f.Do("POST", "/api/rooms/"+id+"/notify", body, apitest.Bearer(tk))
			}
			const email = "Ana.Visitor@Example.COM"
			apitest.WantStatus(t, notify(b.Str("ticket"), `{"email":"not an address","lang":"ko"}`), 400, "invalid_notice")
			apitest.WantStatus(t, notify(b.Str("ticket"), `{"push":{"endpoint":"https://evil.example/x","keys":{"p256dh":"x","auth":"y"}}}`), 400, "invalid_notice")
			apitest.WantStatus(t, notify(b.Str("ticket"), `{"email":"a@b.example","extra":1}`), 400, "bad_json")
			apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/notify", `{"email":"a@b.example"}`, nil), 401, "missing_ticket")
			apitest.WantStatus(t, notify(a.Str("ticket"), `{"email":"a@b.example"}`), 409, "no_place")
			if r := notify(b.Str("ticket"), `{"email":"`+email+`","lang":"ko"}`); r.StatusCode != 200 || r.Str("notify") != "email" {
				t.Fatalf("sign-up: %d %s", r.StatusCode, r.Body)
			}
			// Nothing in the room's keys says the address in the clear.
			for _, k := range keysOf(t, rdb, "vst:{"+id+"}:*") {
				v, _ := rdb.Dump(context.Background(), k).Result()
				if strings.Contains(strings.ToLower(v), "example.com") || strings.Contains(v, "Ana.Visitor") {
					t.Fatalf("%s holds the address in the clear", k)
				}
			}
			take := func() []room.DueNotice {
				r := f.Admin("POST", "/api/admin/rooms/"+id+"/notices/take", `{"most":10,"leaseMs":30000}`)
				if r.StatusCode != 200 {
					t.Fatalf("take: %d %s", r.StatusCode, r.Body)
				}
				var out struct{ Notices []room.DueNotice }
				if err := json.Unmarshal([]byte(r.Body), &out); err != nil {
					t.Fatal(err)
				}
				return out.Notices
			}
			if got := take(); len(got) != 0 {
				t.Fatalf("a notice before the grant: %+v", got)
			}
			// a's turn ends; b's comes, with the notified window.
			if err := f.Q.Complete(context.Background(), id, mustSeq(t, f, id, a.Str("ticket")), "https://origin.example/"); err != nil {
				t.Fatal(err)
			}
			f.Tick(id)
			got := take()
			if len(got) != 1 {
				t.Fatalf("take after the grant: %+v", got)
			}
			seq := got[0].Seq
			addr, err := opener.Open(id, seq, got[0].Sealed)
			if err != nil || addr.Email != "Ana.Visitor@example.com" || addr.Lang != "ko" || addr.Push != nil {
				t.Fatalf("the sealed address opens to %+v (%v)", addr, err)
			}
			if _, err := opener.Open(id, seq+1, got[0].Sealed); err == nil {
				t.Fatal("the sealed address opens for another place")
			}
			if want := f.Clock.Now().Add(600 * time.Second); !got[0].Deadline.Equal(want) {
				t.Fatalf("deadline %v, want %v", got[0].Deadline, want)
			}
			apitest.WantStatus(t, f.Admin("POST", "/api/admin/rooms/"+id+"/notices/ack", `{"seq":1,"outcome":"maybe"}`), 400, "invalid_request")
			apitest.WantStatus(t, f.Admin("POST", "/api/admin/rooms/"+id+"/notices/ack", `{"seq":1,"outcome":"retry"}`), 400, "invalid_request")
			apitest.WantStatus(t, f.Admin("POST", "/api/admin/rooms/"+id+"/notices/take", `{"most":0,"leaseMs":30000}`), 400, "invalid_request")
			ack := `{"seq":` + itoa(seq) + `,"outcome":"sent"}`
			apitest.WantStatus(t, f.Admin("POST", "/api/admin/rooms/"+id+"/notices/ack", ack), 200, "")
			apitest.WantStatus(t, f.Admin("POST", "/api/admin/rooms/"+id+"/notices/ack", ack), 404, "unknown_notice")
			apitest.WantStatus(t, f.Do("POST", "/api/admin/rooms/"+id+"/notices/take", `{"most":1,"leaseMs":1000}`, nil), 401, "")
			// The granted visitor's enqueue carries no offer.
			if r := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", apitest.Bearer(b.Str("ticket"))); r.JSON["notices"] != nil || r.Str("state") != "admitted" {
				t.Fatalf("an admitted visitor's enqueue: %s", r.Body)
			}
		})
	}
}

// A withdrawal, a room without notices, a deployment without them.
func TestNoticeWithdrawAndOff(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, plain *apitest.Fixture) {
		// A deployment without notices: no offer, and a sign-up is refused.
		id := plain.Room(`{"notifiedClaimTTLSeconds":600}`)
		r := plain.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		if r.JSON["notices"] != nil {
			t.Fatalf("an offer without notices: %s", r.Body)
		}
		apitest.WantStatus(t, plain.Do("POST", "/api/rooms/"+id+"/notify", `{"email":"a@b.example"}`, apitest.Bearer(r.Str("ticket"))), 409, "notices_off")
	})
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			f, _ := noticeFixture(t, rdb)
			off := f.Room(`{}`) // the room offers none
			r := f.Do("POST", "/api/rooms/"+off+"/enqueue", "", nil)
			if r.JSON["notices"] != nil {
				t.Fatalf("an offer in a room without notices: %s", r.Body)
			}
			apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+off+"/notify", `{"email":"a@b.example"}`, apitest.Bearer(r.Str("ticket"))), 409, "notices_off")
			id := f.Room(`{"notifiedClaimTTLSeconds":600,"mode":"paused"}`)
			w := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			if w.JSON["notices"] == nil {
				t.Fatalf("no offer to a paused visitor: %s", w.Body)
			}
			apitest.WantStatus(t, f.Do("POST", "/api/rooms/"+id+"/notify", `{"email":"a@b.example"}`, apitest.Bearer(w.Str("ticket"))), 200, "")
			apitest.WantStatus(t, f.Do("DELETE", "/api/rooms/"+id+"/notify", "", apitest.Bearer(w.Str("ticket"))), 200, "")
			if n, _ := rdb.HLen(context.Background(), "vst:{"+id+"}:ntc").Result(); n != 0 {
				t.Fatalf("%d registrations after the withdrawal", n)
			}
			apitest.WantStatus(t, f.Do("DELETE", "/api/rooms/"+id+"/notify", "", apitest.Bearer("nonsense")), 401, "invalid_ticket")
		})
	}
}

// mustSeq is the sequence of a ticket of room id.
func mustSeq(t *testing.T, f *apitest.Fixture, id, tk string) int64 {
	t.Helper()
	v, err := f.Tickets.Check(tk, id, f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return v.Seq
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// keysOf lists the keys matching pattern, on every primary of a cluster.
func keysOf(t *testing.T, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	var (
		mu  sync.Mutex // ForEachMaster scans the primaries at once
		out []string
	)
	scan := func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, pattern).Result()
		mu.Lock()
		out = append(out, ks...)
		mu.Unlock()
		return err
	}
	var err error
	if c, ok := rdb.(*redis.ClusterClient); ok {
		err = c.ForEachMaster(context.Background(), scan)
	} else {
		err = scan(context.Background(), rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}
