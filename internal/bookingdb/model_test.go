package bookingdb_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// What the model knows of a hold and of an order.
type mhold struct {
	token   int64
	session string
	seats   []string
	units   map[string]int64
	expires time.Time
}

type morder struct {
	mhold
	key       string
	cancelled bool
}

func (h *mhold) items() int64 {
	n := int64(len(h.seats))
	for _, q := range h.units {
		n += q
	}
	return n
}

// bmodel is a plain in-memory inventory run beside the engine. Its checks run
// in the order the scripts run theirs, so each call has exactly one expected
// answer.
type bmodel struct {
	rt     *rapid.T
	ctx    context.Context
	rdb    redis.UniversalClient
	eng    *bookingdb.Engine
	clk    *testkit.Clock
	event  string
	keys   bookingdb.EventKeys
	limit  int64
	ttl    time.Duration
	total  map[string]int64
	seats  map[string]string // "a", "h<token>", "o<token>"
	stock  map[string]int64
	holds  map[int64]*mhold
	orders map[int64]*morder
	idem   map[string]int64
	sess   map[string]int64
	issued []int64 // every token issued, in order
	fence  int64

	holdsN, confirmed, cancelled, released, expired int64
	events                                          map[string]int
}

var (
	mSeats    = []string{"S0", "S1", "S2", "S3", "S4"}
	mSessions = []string{"room:1", "room:2", "room:3"}
	mKeys     = []string{"k1", "k2", "k3", "k4", "k5", "k6"}
)

func newBModel(rt *rapid.T, rdb redis.UniversalClient, event string, events map[string]int) *bmodel {
	clk := testkit.EngineClock()
	m := &bmodel{rt: rt, ctx: context.Background(), rdb: rdb, clk: clk,
		eng: bookingdb.New(rdb, bookingdb.WithClock(clk.Now)), event: event, keys: bookingdb.KeysFor(event),
		limit: 4, ttl: 10 * time.Second, total: map[string]int64{"ga": 4, "vip": 2},
		seats: map[string]string{}, stock: map[string]int64{}, holds: map[int64]*mhold{},
		orders: map[int64]*morder{}, idem: map[string]int64{}, sess: map[string]int64{}, events: events}
	for _, s := range mSeats {
		m.seats[s] = "a"
	}
	maps.Copy(m.stock, m.total)
	inv := booking.Inventory{Seats: mSeats, Stock: m.total, HoldTTL: m.ttl, SessionLimit: m.limit}
	if err := m.eng.Define(m.ctx, event, inv); err != nil {
		rt.Fatalf("Define: %v", err)
	}
	return m
}

func (m *bmodel) mark(k string, t int64) string { return k + strconv.FormatInt(t, 10) }

// drop returns a hold's items and forgets it.
func (m *bmodel) drop(h *mhold) {
	for _, s := range h.seats {
		if m.seats[s] == m.mark("h", h.token) {
			m.seats[s] = "a"
		}
	}
	for k, q := range h.units {
		m.stock[k] += q
	}
	m.sessAdd(h.session, -h.items())
	delete(m.holds, h.token)
}

func (m *bmodel) sessAdd(s string, d int64) {
	m.sess[s] += d
	if m.sess[s] <= 0 {
		delete(m.sess, s)
	}
}

// overdue lists the holds past their TTL in the order ZRANGE BYSCORE gives
// them: expiry, then token (same-length decimals sort as numbers).
func (m *bmodel) overdue() []*mhold {
	var out []*mhold
	for _, h := range m.holds {
		if !m.clk.Now().Before(h.expires) {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].expires.Equal(out[j].expires) {
			return out[i].expires.Before(out[j].expires)
		}
		return out[i].token < out[j].token
	})
	return out
}

func (m *bmodel) sweep(max int) int {
	due := m.overdue()
	if len(due) > max {
		due = due[:max]
	}
	for _, h := range due {
		m.drop(h)
		m.expired++
	}
	return len(due)
}

func (m *bmodel) hold() {
	session := rapid.SampledFrom(mSessions).Draw(m.rt, "session")
	var req booking.Request
	for _, s := range mSeats {
		if rapid.IntRange(0, 3).Draw(m.rt, "seat "+s) == 0 {
			req.Seats = append(req.Seats, s)
		}
	}
	for _, k := range []string{"ga", "vip"} {
		if q := rapid.IntRange(0, 2).Draw(m.rt, "units "+k); q > 0 {
			if req.Units == nil {
				req.Units = map[string]int64{}
			}
			req.Units[k] = int64(q)
		}
	}
	if len(req.Seats) == 0 && len(req.Units) == 0 {
		req.Seats = []string{rapid.SampledFrom(mSeats).Draw(m.rt, "seat")}
	}
	got, err := m.eng.Hold(m.ctx, m.event, session, req)

	if m.sweep(64) > 0 {
		m.events["expired by hold"]++
	}
	want := int64(len(req.Seats))
	for _, q := range req.Units {
		want += q
	}
	var expect error
	if m.sess[session]+want > m.limit {
		expect = booking.ErrLimit
	}
	var taken []string
	for _, s := range req.Seats {
		if m.seats[s] != "a" {
			taken = append(taken, s)
		}
	}
	if expect == nil && len(taken) > 0 {
		expect = &booking.TakenError{Seats: taken}
	}
	if expect == nil {
		for _, k := range slices.Sorted(maps.Keys(req.Units)) {
			if m.stock[k] < req.Units[k] {
				expect = &booking.SoldOutError{SKU: k, Available: m.stock[k]}
				break
			}
		}
	}
	switch e := expect.(type) {
	case nil:
		if err != nil {
			m.rt.Fatalf("Hold(%s, %+v) = %v, want a hold", session, req, err)
		}
		if got.Token <= m.fence {
			m.rt.Fatalf("token %d not above the last %d", got.Token, m.fence)
		}
		if !got.ExpiresAt.Equal(m.clk.Now().Add(m.ttl)) {
			m.rt.Fatalf("expires %v, want %v", got.ExpiresAt, m.clk.Now().Add(m.ttl))
		}
		m.fence = got.Token
		h := &mhold{token: got.Token, session: session, seats: req.Seats, units: req.Units, expires: got.ExpiresAt}
		for _, s := range h.seats {
			m.seats[s] = m.mark("h", h.token)
		}
		for k, q := range h.units {
			m.stock[k] -= q
		}
		m.sessAdd(session, want)
		m.holds[h.token] = h
		m.issued = append(m.issued, h.token)
		m.holdsN++
		m.events["held"]++
	case *booking.TakenError:
		var te *booking.TakenError
		if !errors.As(err, &te) || !slices.Equal(te.Seats, e.Seats) {
			m.rt.Fatalf("Hold(%s, %+v) = %v, want taken %v", session, req, err, e.Seats)
		}
		m.events["taken"]++
	case *booking.SoldOutError:
		var so *booking.SoldOutError
		if !errors.As(err, &so) || *so != *e {
			m.rt.Fatalf("Hold(%s, %+v) = %v, want %v", session, req, err, e)
		}
		m.events["sold out"]++
	default:
		if !errors.Is(err, expect) {
			m.rt.Fatalf("Hold(%s, %+v) = %v, want %v", session, req, err, expect)
		}
		m.events["limit"]++
	}
}

// token picks a token: one issued (live, confirmed, released or expired), or one never issued.
func (m *bmodel) token() int64 {
	if len(m.issued) == 0 || rapid.IntRange(0, 9).Draw(m.rt, "unissued") == 0 {
		return m.fence + 1 + int64(rapid.IntRange(0, 5).Draw(m.rt, "ahead"))
	}
	return rapid.SampledFrom(m.issued).Draw(m.rt, "token")
}

// sessionFor is the hold's session, or sometimes any.
func (m *bmodel) sessionFor(t int64) string {
	if h, ok := m.holds[t]; ok && rapid.IntRange(0, 5).Draw(m.rt, "other session") > 0 {
		return h.session
	}
	if o, ok := m.orders[t]; ok && rapid.Bool().Draw(m.rt, "order's session") {
		return o.session
	}
	return rapid.SampledFrom(mSessions).Draw(m.rt, "session")
}

func (m *bmodel) confirm() {
	t := m.token()
	session := m.sessionFor(t)
	key := rapid.SampledFrom(mKeys).Draw(m.rt, "key")
	got, err := m.eng.Confirm(m.ctx, m.event, session, t, key)

	var expect error
	var order *morder
	replay := false
	if prior, ok := m.idem[key]; ok {
		switch {
		case prior != t:
			expect = booking.ErrIdempotencyKey
		case m.orders[t].session != session:
			expect = booking.ErrWrongSession
		case m.orders[t].cancelled:
			expect, order, replay = booking.ErrOrderCancelled, m.orders[t], true
		default:
			order, replay = m.orders[t], true
		}
	} else if _, ok := m.orders[t]; ok {
		expect = booking.ErrAlreadyConfirmed
	} else if h, ok := m.holds[t]; !ok {
		expect = booking.ErrStaleToken
	} else if h.session != session {
		expect = booking.ErrWrongSession
	} else if !m.clk.Now().Before(h.expires) {
		m.drop(h)
		m.expired++
		expect = booking.ErrHoldExpired
	} else {
		order = &morder{mhold: *h, key: key}
		for _, s := range h.seats {
			m.seats[s] = m.mark("o", t)
		}
		delete(m.holds, t)
		m.orders[t] = order
		m.idem[key] = t
		m.confirmed++
	}
	if !errors.Is(err, expect) || (expect == nil && err != nil) {
		m.rt.Fatalf("Confirm(%s, %d, %s) = %v, want %v", session, t, key, err, expect)
	}
	m.events[fmt.Sprintf("confirm: %v (replay %v)", expect, replay)]++
	if order != nil && (expect == nil || errors.Is(expect, booking.ErrOrderCancelled)) {
		if got.Order != strconv.FormatInt(t, 10) || got.FencingToken != t || got.Session != order.session ||
			got.IdempotencyKey != order.key || got.Replayed != replay || !slices.Equal(got.Seats, order.seats) ||
			!maps.Equal(got.Units, order.units) {
			m.rt.Fatalf("Confirm(%s, %d, %s) = %+v, want order %+v (replay %v)", session, t, key, got, order, replay)
		}
	}
}

func (m *bmodel) release() {
	t := m.token()
	session := m.sessionFor(t)
	err := m.eng.Release(m.ctx, m.event, session, t)
	var expect error
	if h, ok := m.holds[t]; !ok {
		if _, ok := m.orders[t]; ok {
			expect = booking.ErrAlreadyConfirmed
		}
	} else if h.session != session {
		expect = booking.ErrWrongSession
	} else {
		m.drop(h)
		m.released++
	}
	if !errors.Is(err, expect) || (expect == nil && err != nil) {
		m.rt.Fatalf("Release(%s, %d) = %v, want %v", session, t, err, expect)
	}
	m.events[fmt.Sprintf("release: %v", expect)]++
}

func (m *bmodel) cancel() {
	id := strconv.FormatInt(m.token(), 10)
	got, err := m.eng.Cancel(m.ctx, m.event, id, "payment failed")
	t, _ := strconv.ParseInt(id, 10, 64)
	o, ok := m.orders[t]
	if !ok {
		if !errors.Is(err, booking.ErrUnknownOrder) {
			m.rt.Fatalf("Cancel(%s) = %v, want ErrUnknownOrder", id, err)
		}
		m.events["cancel: unknown"]++
		return
	}
	if err != nil || got.Type != booking.OrderCancelled || got.Replayed != o.cancelled || got.Order != id {
		m.rt.Fatalf("Cancel(%s) = %+v, %v; want cancelled (replay %v)", id, got, err, o.cancelled)
	}
	if o.cancelled {
		m.events["cancel: replay"]++
		return
	}
	o.cancelled = true
	for _, s := range o.seats {
		if m.seats[s] == m.mark("o", t) {
			m.seats[s] = "a"
		}
	}
	for k, q := range o.units {
		m.stock[k] += q
	}
	m.sessAdd(o.session, -o.items())
	m.cancelled++
	m.events["cancel"]++
}

func (m *bmodel) sweepOp() {
	max := rapid.IntRange(1, 3).Draw(m.rt, "max")
	n, over, err := m.eng.Sweep(m.ctx, m.event, max)
	want := m.sweep(max)
	if err != nil || n != int64(want) || over != int64(len(m.overdue())) {
		m.rt.Fatalf("Sweep(%d) = %d, %d, %v; want %d, %d", max, n, over, err, want, len(m.overdue()))
	}
	if want > 0 {
		m.events["swept"]++
	}
}

func (m *bmodel) advance() {
	d := rapid.SampledFrom([]time.Duration{time.Second, 3 * time.Second, 10 * time.Second}).Draw(m.rt, "advance")
	m.clk.Advance(d)
}

// view compares View (which expires overdue holds first) with the model.
func (m *bmodel) view() {
	v, err := m.eng.View(m.ctx, m.event)
	if err != nil {
		m.rt.Fatalf("View: %v", err)
	}
	if m.sweep(1000) > 0 {
		m.events["expired by view"]++
	}
	for s, st := range m.seats {
		want := map[byte]booking.SeatState{'a': booking.SeatAvailable, 'h': booking.SeatHeld, 'o': booking.SeatSold}[st[0]]
		if v.Seats[s] != want {
			m.rt.Fatalf("View: seat %s is %s, model %s", s, v.Seats[s], st)
		}
	}
	if !maps.Equal(v.Stock, m.stock) {
		m.rt.Fatalf("View: stock %v, model %v", v.Stock, m.stock)
	}
	live := int64(0)
	for _, o := range m.orders {
		if !o.cancelled {
			live++
		}
	}
	if v.Fence != m.fence || v.Holds != m.holdsN || v.Confirmed != m.confirmed || v.Cancelled != m.cancelled ||
		v.Released != m.released || v.Expired != m.expired || v.Live != live {
		m.rt.Fatalf("View: counters %+v; model fence %d holds %d confirmed %d cancelled %d released %d expired %d live %d",
			v, m.fence, m.holdsN, m.confirmed, m.cancelled, m.released, m.expired, live)
	}
}

// hgetall reads a hash of the event.
func (m *bmodel) hgetall(key string) map[string]string {
	h, err := m.rdb.HGetAll(m.ctx, key).Result()
	if err != nil {
		m.rt.Fatalf("HGETALL %s: %v", key, err)
	}
	return h
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// check compares the raw keys of the event with the model after every step,
// without expiring anything: overdue holds the scripts have not met yet are
// still there in both.
func (m *bmodel) check(after string) {
	if got := m.hgetall(m.keys.Seats); !maps.Equal(got, m.seats) {
		m.rt.Fatalf("after %s: seats %v, model %v", after, got, m.seats)
	}
	stock := map[string]string{}
	for k, n := range m.stock {
		stock[k] = itoa(n)
	}
	if got := m.hgetall(m.keys.Stock); !maps.Equal(got, stock) {
		m.rt.Fatalf("after %s: stock %v, model %v", after, got, stock)
	}
	sess := map[string]string{}
	for k, n := range m.sess {
		sess[k] = itoa(n)
	}
	if got := m.hgetall(m.keys.Sessions); !maps.Equal(got, sess) {
		m.rt.Fatalf("after %s: sessions %v, model %v", after, got, sess)
	}
	holds := m.hgetall(m.keys.Holds)
	exp, err := m.rdb.ZRangeWithScores(m.ctx, m.keys.Expiry, 0, -1).Result()
	if err != nil {
		m.rt.Fatalf("ZRANGE expiry: %v", err)
	}
	if len(holds) != len(m.holds) || len(exp) != len(m.holds) {
		m.rt.Fatalf("after %s: %d hold records, %d expiries, model %d holds", after, len(holds), len(exp), len(m.holds))
	}
	for _, z := range exp {
		t, _ := strconv.ParseInt(z.Member.(string), 10, 64)
		h, ok := m.holds[t]
		if !ok || int64(z.Score) != h.expires.UnixMilli() {
			m.rt.Fatalf("after %s: expiry %v, model hold %+v", after, z, h)
		}
	}
	inv := m.hgetall(m.keys.Inventory)
	for f, n := range map[string]int64{"fence": m.fence, "holds": m.holdsN, "confirmed": m.confirmed,
		"cancelled": m.cancelled, "released": m.released, "expired": m.expired} {
		if got := inv[f]; got != itoa(n) && !(n == 0 && got == "") {
			m.rt.Fatalf("after %s: counter %s = %q, model %d", after, f, got, n)
		}
	}
	// Conservation: what is available, held and sold is what was defined.
	for k, total := range m.total {
		sum := m.stock[k]
		for _, h := range m.holds {
			sum += h.units[k]
		}
		for _, o := range m.orders {
			if !o.cancelled {
				sum += o.units[k]
			}
		}
		if sum != total || m.stock[k] < 0 {
			m.rt.Fatalf("after %s: %s available %d, accounted %d of %d", after, k, m.stock[k], sum, total)
		}
	}
}

// TestModel drives random interleavings of holds, confirms (with reused,
// foreign and stale tokens and keys), releases, cancels, sweeps and clock
// jumps, and after each step compares Redis with the in-memory model.
func TestModel(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		run := 0
		seen := map[string]int{}
		rapid.Check(t, func(rt *rapid.T) {
			run++
			m := newBModel(rt, rdb, redistest.Room(t), seen) // a fresh event every run
			actions := []string{"hold", "hold", "hold", "confirm", "confirm", "release", "cancel", "sweep", "view", "advance", "advance"}
			for i := 0; i < 40; i++ {
				a := rapid.SampledFrom(actions).Draw(rt, "action")
				switch a {
				case "hold":
					m.hold()
				case "confirm":
					m.confirm()
				case "release":
					m.release()
				case "cancel":
					m.cancel()
				case "sweep":
					m.sweepOp()
				case "view":
					m.view()
				case "advance":
					m.advance()
				}
				m.check(a)
			}
		})
		t.Logf("events over %d runs: %v", run, seen)
		if testing.Short() { // a fifth of the checks: coverage is the full run's to require
			return
		}
		// The run is only worth something if it reached the common branches;
		// the rare ones (a few per hundred runs, each also covered by a unit
		// test) are reported, not required, so the random draw cannot fail CI.
		for _, ev := range []string{"held", "taken", "sold out", "limit", "cancel", "cancel: unknown",
			"confirm: <nil> (replay false)", "confirm: " + booking.ErrStaleToken.Error() + " (replay false)",
			"confirm: " + booking.ErrAlreadyConfirmed.Error() + " (replay false)", "release: <nil>"} {
			if seen[ev] == 0 {
				t.Errorf("no run reached %q", ev)
			}
		}
		for _, ev := range []string{"swept", "expired by view", "expired by hold", "cancel: replay", "confirm: <nil> (replay true)",
			"confirm: " + booking.ErrHoldExpired.Error() + " (replay false)", "confirm: " + booking.ErrWrongSession.Error() + " (replay false)",
			"confirm: " + booking.ErrIdempotencyKey.Error() + " (replay false)", "confirm: " + booking.ErrOrderCancelled.Error() + " (replay true)",
			"release: " + booking.ErrWrongSession.Error(), "release: " + booking.ErrAlreadyConfirmed.Error()} {
			if seen[ev] == 0 {
				t.Logf("no run reached the rare branch %q this time", ev)
			}
		}
	})
}
