package roomdb_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// joinAt enqueues visitor v as if it joined at the clock's time: the
// sequence is Redis time in µs, so the room's last sequence is set just
// below the clock's (which the test keeps ahead of Redis's), and the next
// join takes it.
func (e *env) joinAt(at time.Time, v string) room.Ticket {
	e.t.Helper()
	e.clk.Set(at)
	if err := e.rdb.HSet(e.ctx, e.keys.State, "seq", strconv.FormatInt(at.UnixMicro()-16, 10)).Err(); err != nil {
		e.t.Fatal(err)
	}
	return e.enqueue(v).Ticket
}

// The ticks measure each admitted visitor's wait, from the join to the
// admission, into the minute of the admission: visitors who joined and were
// admitted at known times give the known percentiles (within a bucket's
// width), the current minute's while it runs, and the sale's together. The
// history's counters tell visitors who left while waiting apart from grants
// that lapsed unused.
func TestWaitsMeasured(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		// 5 a second, a tick admits at most 10 (the bucket's cap).
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.MaxActive, c.HeartbeatTTLSeconds, c.ClaimTTLSeconds = 300, 1000, 3600, 60
		}))
		// An hour ahead of Redis's clock, so the sequences follow this one.
		t0 := e.clk.Now().Add(time.Hour).Truncate(time.Minute).Add(time.Second)
		at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
		var a []room.Ticket
		for i := range 10 { // A: joins at t0+0…9 s
			a = append(a, e.joinAt(at(i), "a"+strconv.Itoa(i)))
		}
		for i := range 20 { // B: joins at t0+30…49 s
			e.joinAt(at(30+i), "b"+strconv.Itoa(i))
		}
		// Minute 1: A admitted at t0+60 s, waits 51…60 s.
		e.clk.Set(at(60))
		if r := e.tick(); r.Admitted != 10 {
			t.Fatalf("tick at t0+60 s admitted %d, want 10", r.Admitted)
		}
		// One of A redeems its grant and completes: not lapsed. The other 9 lapse.
		e.clk.Set(at(70))
		e.consume(a[0].Seq)
		if err := e.eng.Complete(e.ctx, e.room, a[0].Seq, origin); err != nil {
			t.Fatal(err)
		}
		c := e.joinAt(at(100), "c") // C joins and leaves while waiting
		e.clk.Set(at(110))
		if err := e.eng.Leave(e.ctx, c); err != nil {
			t.Fatal(err)
		}
		// Minute 3: B admitted 10 at t0+180 s (waits 141…150 s), 10 at t0+182 s (133…142 s).
		for _, s := range []int{180, 182} {
			e.clk.Set(at(s))
			if r := e.tick(); r.Admitted != 10 {
				t.Fatalf("tick at t0+%d s admitted %d, want 10", s, r.Admitted)
			}
		}
		m1, m3 := t0.Truncate(time.Minute).Add(time.Minute), t0.Truncate(time.Minute).Add(3*time.Minute)
		check := func(when string) {
			t.Helper()
			h, err := e.eng.History(e.ctx, e.room)
			if err != nil {
				t.Fatal(err)
			}
			pts := map[time.Time]room.HistoryPoint{}
			for _, p := range h {
				pts[p.Minute] = p
			}
			p1, p3 := pts[m1], pts[m3]
			if p1.Waits.Count() != 10 || p3.Waits.Count() != 20 {
				t.Fatalf("%s: waits measured %d in minute 1, %d in minute 3; want 10, 20", when, p1.Waits.Count(), p3.Waits.Count())
			}
			within(t, when+" minute 1 p50", p1.Waits.Quantile(0.5), 55.5)
			within(t, when+" minute 1 p95", p1.Waits.Quantile(0.95), 59.5)
			within(t, when+" minute 3 p50", p3.Waits.Quantile(0.5), 141.5)
			within(t, when+" minute 3 p95", p3.Waits.Quantile(0.95), 149.5)
			// The sale: 51…60, then 133…150 (141 and 142 twice): the 15th of 30 is 137, the 29th 149.
			tot := room.ReportOf(h, nil).Totals
			if tot.WaitsMeasured != 30 {
				t.Fatalf("%s: %d waits over the sale", when, tot.WaitsMeasured)
			}
			within(t, when+" sale p50", tot.WaitP50Seconds, 137)
			within(t, when+" sale p95", tot.WaitP95Seconds, 149)
			if p1.Left != 0 || p1.Lapsed != 0 || p3.Left != 1 || p3.Lapsed != 9 {
				t.Errorf("%s: left %d, %d, lapsed %d, %d; want 0, 1 and 0, 9", when, p1.Left, p3.Left, p1.Lapsed, p3.Lapsed)
			}
		}
		check("during minute 3") // minute 3's waits from the state
		e.clk.Set(at(240))
		e.tick()
		check("after minute 3") // moved to the history
		if n, err := rdb.HExists(e.ctx, e.keys.State, "wm").Result(); err != nil || n {
			t.Errorf("the state keeps a finished minute's waits: %v %v", n, err)
		}
	})
}

func within(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 0.19*want {
		t.Errorf("%s: %.1f s, want %.1f s within a bucket's width", what, got, want)
	}
}

// The tick's buckets are room.WaitBucket's, exactly, for waits across many
// buckets admitted in one tick (the tick counts a run of neighbours in one
// bucket without its log).
func TestWaitBucketsAgreeWithGo(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.MaxActive, c.HeartbeatTTLSeconds, c.ClaimTTLSeconds = 6000, 1000, 3600, 60
		}))
		admit := e.clk.Now().Add(3 * time.Hour).Truncate(time.Minute).Add(10 * time.Second)
		want := room.WaitHistogram{}
		for i, ms := range []int64{3_000_000, 2_000_000, 1_500_000, 1_000_000, 700_000, 400_000, 200_000, 100_000, 60_000,
			59_000, 58_000, 30_000, 10_000, 5_000, 2_000, 1_999, 1_500, 1_000, 500, 1} {
			tk := e.joinAt(admit.Add(-time.Duration(ms)*time.Millisecond), "v"+strconv.Itoa(i))
			want[room.WaitBucket(admit.Sub(time.UnixMicro(tk.Seq)))]++
		}
		e.clk.Set(admit)
		if r := e.tick(); r.Admitted != 20 {
			t.Fatalf("admitted %d, want 20", r.Admitted)
		}
		h, err := e.eng.History(e.ctx, e.room)
		if err != nil {
			t.Fatal(err)
		}
		var got room.WaitHistogram
		for _, p := range h {
			if p.Minute.Equal(admit.Truncate(time.Minute)) {
				got = p.Waits
			}
		}
		if len(got) != len(want) {
			t.Fatalf("buckets %v, want %v", got, want)
		}
		for b, n := range want {
			if got[b] != n {
				t.Errorf("bucket %d: %d, want %d (all: %v, want %v)", b, got[b], n, got, want)
			}
		}
	})
}
