package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	r53types "github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/region"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// ownStack starts a local stack on a Redis of the test's own, which it may
// flush (a total loss) without touching any other test's keys.
func ownStack(t *testing.T) (*localstack.Stack, *redis.Client) {
	t.Helper()
	for _, k := range []string{"VESTIBULE_STACK", "VESTIBULE_ENDPOINT", "VESTIBULE_ADMIN_KEY"} {
		t.Setenv(k, "")
	}
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL: "redis://" + srv.Addr, StaticDir: t.TempDir(), KeyDir: filepath.Join(t.TempDir(), "keys"),
		AdminKey: adminKey, TickInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rdb
}

// demoVisitor joins the demo-api room, waits for the entry and opens the
// demo origin's session: its bookingSession.
func demoVisitor(t *testing.T, s *localstack.Stack) string {
	t.Helper()
	_, _, e := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/demo-api/enqueue", "", "")
	ticket, _ := e["ticket"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(pollpolicy.MinInterval)
		_, _, p := testkit.CallJSON(t, "GET", s.URL()+"/api/rooms/demo-api/poll", ticket, "")
		if tok, _ := p["entryToken"].(string); tok != "" {
			code, _, sess := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/session", "", `{"token":"`+tok+`"}`)
			bs, _ := sess["bookingSession"].(string)
			if code != 200 || bs == "" {
				t.Fatalf("origin session: %d %v", code, sess)
			}
			return bs
		}
	}
	t.Fatal("not admitted")
	return ""
}

// demoCall posts to the demo origin's backend as its page does.
func demoCall(t *testing.T, s *localstack.Stack, path string, body map[string]any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	code, _, m := testkit.CallJSON(t, "POST", s.ManualOriginURL()+path, "", string(b))
	return code, m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// The documented recipe across a total loss, on make dev's demo: a seat sold
// through the demo origin (its guard records it), `booking reconcile` run
// against the demo's live export agrees; Redis is lost, the event comes back
// closed to holds; `booking reconcile --apply` from the same export puts the
// order back and reopens it; the seat sold before is not sold again, another
// is, and the origin's record and the kit agree.
func TestSaleAcrossTotalLossSellsNothingTwice(t *testing.T) {
	s, rdb := ownStack(t)
	export := s.ManualOriginURL() + "/orders.jsonl"
	first := demoVisitor(t, s)
	code, hold := demoCall(t, s, "/hold", map[string]any{"bookingSession": first, "seat": "A1"})
	if code != 201 {
		t.Fatalf("hold: %d %v", code, hold)
	}
	if code, o := demoCall(t, s, "/confirm", map[string]any{"bookingSession": first, "hold": hold["token"]}); code != 201 {
		t.Fatalf("confirm: %d %v", code, o)
	}
	out, errs, rc := vestibule(t, s, "booking", "reconcile", "demo-api", "--origin", export)
	if rc != 0 || !strings.Contains(out, "no differences: 1 seats") {
		t.Fatalf("reconcile against the demo's export: %d %q %q", rc, out, errs)
	}

	if err := rdb.FlushAll(context.Background()).Err(); err != nil { // the test's own Redis
		t.Fatal(err)
	}
	second := demoVisitor(t, s)
	if code, m := demoCall(t, s, "/hold", map[string]any{"bookingSession": second, "seat": "A1"}); code != 503 || errCode(m) != "event_recovering" {
		t.Fatalf("a hold after the loss: %d %v", code, m)
	}
	rebuildAndSellOn(t, s, export, second)
	// --apply on an open event is refused, and says so.
	if _, errs, rc = vestibule(t, s, "booking", "reconcile", "demo-api", "--origin", export, "--apply"); rc != 1 || !strings.Contains(errs, "event_open") {
		t.Fatalf("--apply on an open event: %d %q", rc, errs)
	}
}

// reconcile trusts nothing an origin's record says: strings are checked and
// printed escaped (a terminal escape cannot fake the verdict), units below 1,
// a fencing token that is not the order's, over-long lines, too many lines
// and a redirect are refused; and the fetch has a bounded wait.
func TestBookingReconcileTrustsNothingOfTheOrigin(t *testing.T) {
	s := stack(t)
	ev := redistest.Room(t) // an event of its own on the shared Redis
	if code, _, m := testkit.CallJSON(t, "PUT", s.URL()+"/api/admin/events/"+ev, adminKey,
		map[string]any{"seats": []string{"A1"}, "stock": map[string]int64{"ga": 10}, "sessionLimit": 10}); code != 200 {
		t.Fatalf("define: %d %v", code, m)
	}
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "origin.jsonl")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	esc := "\x1b[2K\rno differences"
	for name, c := range map[string]struct{ body, want string }{
		"escape in a seat":      {`{"event":"` + ev + `","seat":"A1\u001b[2K","order":"1"}` + "\n", "line 1"},
		"escape in an order":    {`{"event":"` + ev + `","seat":"A1","order":"1\u001b[2K\rno differences"}` + "\n", "line 1"},
		"escape in a field":     {`{"event":"` + ev + `","` + esc + `":1}` + "\n", "line 1"},
		"negative units":        {`{"event":"` + ev + `","sku":"ga","units":-2,"order":"1"}` + "\n", "units"},
		"another order's token": {`{"event":"` + ev + `","seat":"A1","order":"12","fencingToken":13}` + "\n", "fencingToken"},
		"a line too long":       {`{"event":"` + ev + `","seat":"A1","order":"1","x":"` + strings.Repeat("a", 8<<10) + `"}` + "\n", "longer than"},
		"too many lines":        {strings.Repeat("\n", maxOriginLines+1), "more than"},
	} {
		out, errs, rc := vestibule(t, s, "booking", "reconcile", ev, "--origin", write(c.body))
		if rc != 1 || !strings.Contains(errs, c.want) || strings.ContainsRune(out+errs, 0x1b) || strings.Contains(out, "no differences") {
			t.Errorf("%s: %d %q %q", name, rc, out, errs)
		}
	}
	// --apply refuses, before it sends anything, an order id the kit cannot
	// have issued: one of 2^53 would move the fence past what a Lua number
	// counts, and every later hold would get the same token.
	for _, id := range []string{"9007199254740992", "12"} {
		_, errs, rc := vestibule(t, s, "booking", "reconcile", ev, "--apply", "--origin",
			write(`{"event":"`+ev+`","seat":"A1","order":"`+id+`"}`+"\n"))
		if rc != 1 || !strings.Contains(errs, "order "+id+": not an id the kit issued") {
			t.Errorf("--apply of order %s: %d %q", id, rc, errs)
		}
	}
	// The documented optional field, with the order's own token, is read.
	out, errs, rc := vestibule(t, s, "booking", "reconcile", ev, "--origin",
		write(`{"event":"`+ev+`","sku":"ga","units":1,"order":"12","fencingToken":12}`+"\n"))
	if rc != 1 || !strings.Contains(out, "order 12 sku ga: the kit sold 0 units, the origin recorded 1") {
		t.Errorf("fencingToken: %d %q %q", rc, out, errs)
	}
	// A redirect is not followed, even to a record that would agree.
	agree := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/record", http.StatusFound)
			return
		}
		w.Write([]byte("\n"))
	}))
	defer agree.Close()
	if _, errs, rc := vestibule(t, s, "booking", "reconcile", ev, "--origin", agree.URL+"/moved"); rc != 1 || !strings.Contains(errs, "redirect") {
		t.Errorf("a redirect: %d %q", rc, errs)
	}
	if _, _, rc := vestibule(t, s, "booking", "reconcile", ev, "--origin", agree.URL+"/record"); rc != 0 {
		t.Errorf("the record itself: %d", rc)
	}
	if originClient.Timeout <= 0 || originClient.Timeout > time.Minute {
		t.Errorf("the origin's record is fetched with a timeout of %v", originClient.Timeout)
	}
}

// The documented recipe across a region failover, on make dev's demo as the
// standby: a seat sold through the demo origin whose order the standby's
// copy lost (the old region's last second); before the failover closes the
// event, `booking reconcile --apply` is refused (event_open) and the seat is
// offered again. region.Failover, with the standby's rooms (unclaimed: the
// stack has no region) and events over its admin API, closes the event with the rooms paused; a hold is refused
// (event_recovering) and `--apply` from the origin's export puts the order
// back and reopens it: the seat is taken, another sells, and the record and
// the kit agree.
func TestSaleAcrossRegionFailoverSellsNothingTwice(t *testing.T) {
	s, rdb := ownStack(t)
	ctx := context.Background()
	export := s.ManualOriginURL() + "/orders.jsonl"
	first := demoVisitor(t, s)
	code, hold := demoCall(t, s, "/hold", map[string]any{"bookingSession": first, "seat": "A1"})
	if code != 201 {
		t.Fatalf("hold: %d %v", code, hold)
	}
	code, o := demoCall(t, s, "/confirm", map[string]any{"bookingSession": first, "hold": hold["token"]})
	if code != 201 {
		t.Fatalf("confirm: %d %v", code, o)
	}
	// The standby's copy lost the order: the seat shows available.
	k := bookingdb.KeysFor(localstack.DemoAPIRoomID)
	order, _ := o["order"].(string)
	if err := rdb.HSet(ctx, k.Seats, "A1", "a").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, k.Orders, order).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HIncrBy(ctx, k.Inventory, "live", -1).Err(); err != nil {
		t.Fatal(err)
	}
	if _, errs, rc := vestibule(t, s, "booking", "reconcile", "demo-api", "--origin", export, "--apply"); rc != 1 || !strings.Contains(errs, "event_open") {
		t.Fatalf("--apply before the event is closed: %d %q", rc, errs)
	}

	cl, err := operator.Connect(ctx, operator.Target{Endpoint: s.URL(), AdminKey: adminKey})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := region.Failover(ctx, region.Plan{
		Cache: globalCache{api: &fakeElastiCache{role: "PRIMARY"}, group: "standby-rg"},
		Name:  &writeName{api: &fakeRoute53{status: r53types.ChangeStatusInsync}},
		Rooms: unclaimed{apiRooms{cl}}, Events: apiEvents{cl}, Every: time.Millisecond,
	})
	if err != nil || !slices.Contains(rep.Closed, localstack.DemoAPIRoomID) {
		t.Fatalf("failover: closed %v, %v", rep.Closed, err)
	}
	second := demoVisitor(t, s)
	if code, m := demoCall(t, s, "/hold", map[string]any{"bookingSession": second, "seat": "A1"}); code != 503 || errCode(m) != "event_recovering" {
		t.Fatalf("a hold after the failover: %d %v", code, m)
	}
	rebuildAndSellOn(t, s, export, second)
}

// rebuildAndSellOn puts the origin's one order (A1) back into the closed
// demo event with reconcile --apply, then sells on: A1 is taken, second
// holds and confirms A2, and reconcile finds the kit and the origin agree.
func rebuildAndSellOn(t *testing.T, s *localstack.Stack, export, second string) {
	t.Helper()
	out, errs, rc := vestibule(t, s, "booking", "reconcile", "demo-api", "--origin", export, "--apply")
	if rc != 0 || !strings.Contains(out, "1 orders put back") || !strings.Contains(out, "no differences: 1 seats") {
		t.Fatalf("reconcile --apply: %d %q %q", rc, out, errs)
	}
	if code, m := demoCall(t, s, "/hold", map[string]any{"bookingSession": second, "seat": "A1"}); code != 409 || errCode(m) != "seat_taken" {
		t.Fatalf("A1 after the rebuild: %d %v", code, m)
	}
	code, hold := demoCall(t, s, "/hold", map[string]any{"bookingSession": second, "seat": "A2"})
	if code != 201 {
		t.Fatalf("hold A2: %d %v", code, hold)
	}
	if code, o := demoCall(t, s, "/confirm", map[string]any{"bookingSession": second, "hold": hold["token"]}); code != 201 {
		t.Fatalf("confirm A2: %d %v", code, o)
	}
	if out, errs, rc := vestibule(t, s, "booking", "reconcile", "demo-api", "--origin", export); rc != 0 || !strings.Contains(out, "no differences: 2 seats") {
		t.Fatalf("reconcile after the sale resumed: %d %q %q", rc, out, errs)
	}
}

// unclaimed is the local stack's rooms as a standby's: the stack writes for
// no region, so a claim is taken as made (internal/chaos claims for real).
type unclaimed struct{ apiRooms }

func (unclaimed) Claim(context.Context, string) (int64, error) { return 1, nil }
