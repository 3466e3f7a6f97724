package room_test

import (
	"math"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// The report's minutes take admissions, evictions, leaves and lapsed grants
// from the next minute's point, joins from the queue's change, a gap leaves
// the minute before it without them, a reset counter counts from 0; waits
// come from each minute's histogram and the sale's from all of them; orders
// from the minute they were made.
func TestReportOf(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	b := func(d time.Duration) int { return room.WaitBucket(d) }
	pts := []room.HistoryPoint{
		{Minute: m(0), Waiting: 100, Evicted: 5, Left: 1, Lapsed: 2},
		// 60 admitted, 4 evicted, 2 left, 3 lapsed in minute 0
		{Minute: m(1), Waiting: 400, AdmittedLastMinute: 60, Evicted: 9, Left: 3, Lapsed: 5,
			Waits: room.WaitHistogram{b(100 * time.Second): 300}},
		{Minute: m(2), Waiting: 200, AdmittedLastMinute: 300, Evicted: 9, Left: 3, Lapsed: 5},
		// a gap: minute 3 has no point
		{Minute: m(4), Waiting: 50, AdmittedLastMinute: 100, Evicted: 2, Waits: room.WaitHistogram{b(10 * time.Second): 90, b(1000 * time.Second): 10}}, // counters reset by a loss
		{Minute: m(5), Waiting: 0, AdmittedLastMinute: 50, Evicted: 3, Left: 1, Lapsed: 4},
	}
	orders := []room.OrderMinute{{Minute: m(1), Confirmed: 7, Cancelled: 1}, {Minute: m(4), Confirmed: 2}}
	r := room.ReportOf(pts, orders)
	type row struct{ adm, ev, left, aband, lapsed, joins, waits, conf, canc int64 }
	want := []row{
		{60, 4, 2, 6, 3, 366, 0, 0, 0},
		{300, 0, 0, 0, 0, 100, 300, 7, 1},
		{0, 0, 0, 0, 0, 0, 0, 0, 0},
		{50, 1, 1, 2, 4, 2, 100, 2, 0},
		{0, 0, 0, 0, 0, 0, 0, 0, 0},
	}
	if len(r.Minutes) != len(want) {
		t.Fatalf("%d minutes, want %d", len(r.Minutes), len(want))
	}
	for i, w := range want {
		g := r.Minutes[i]
		got := row{g.AdmittedPerMinute, g.EvictedPerMinute, g.LeftPerMinute, g.AbandonedPerMinute, g.LapsedPerMinute,
			g.JoinsPerMinute, g.WaitsMeasured, g.OrdersConfirmed, g.OrdersCancelled}
		if got != w {
			t.Errorf("minute %d: %+v, want %+v", i, got, w)
		}
	}
	within := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want*0.19 {
			t.Errorf("%s: %v, want %v within a bucket", what, got, want)
		}
	}
	within("minute 1 p50", r.Minutes[1].WaitP50Seconds, 100)
	within("minute 4 p50", r.Minutes[3].WaitP50Seconds, 10)
	within("minute 4 p95", r.Minutes[3].WaitP95Seconds, 1000)
	tot := r.Totals
	if tot.Visitors != 100+366+100+2 || tot.Admitted != 410 || tot.Evicted != 5 || tot.Left != 3 || tot.Abandoned != 8 ||
		tot.Lapsed != 7 || tot.PeakWaiting != 400 || tot.PeakJoins != 366 || tot.OrdersConfirmed != 9 || tot.OrdersCancelled != 1 ||
		tot.Minutes != 5 || !tot.From.Equal(m(0)) || !tot.To.Equal(m(5)) || tot.WaitsMeasured != 400 {
		t.Errorf("totals %+v", tot)
	}
	// Over the sale: 90 at 10 s, 300 at 100 s, 10 at 1000 s.
	within("sale p50", tot.WaitP50Seconds, 100)
	within("sale p95", tot.WaitP95Seconds, 100)
	if e := room.ReportOf(nil, nil); len(e.Minutes) != 0 || e.Totals.Minutes != 0 {
		t.Errorf("empty history: %+v", e)
	}
}

// The report's notices a minute are the counters' rise to the next minute's
// point, like the other counts: none across a gap, from 0 after a reset.
func TestReportCountsNotices(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	pts := []room.HistoryPoint{
		{Minute: m(0), NoticesSent: 2, NoticesFailed: 1},
		{Minute: m(1), NoticesSent: 5, NoticesFailed: 1, TurnsSaved: 2},
		{Minute: m(2), NoticesSent: 5, NoticesFailed: 3, TurnsSaved: 3},
		// a gap: minute 3 has no point
		{Minute: m(4), NoticesSent: 9, NoticesFailed: 3, TurnsSaved: 4},
		{Minute: m(5), NoticesSent: 1, TurnsSaved: 4}, // sent reset by a loss
	}
	r := room.ReportOf(pts, nil)
	want := [][3]int64{{3, 0, 2}, {0, 2, 1}, {0, 0, 0}, {1, 0, 0}, {0, 0, 0}}
	for i, w := range want {
		g := r.Minutes[i]
		if got := [3]int64{g.NoticesSent, g.NoticesFailed, g.TurnsSaved}; got != w {
			t.Errorf("minute %d: sent, failed, saved %v, want %v", i, got, w)
		}
	}
	if tot := r.Totals; tot.NoticesSent != 4 || tot.NoticesFailed != 2 || tot.TurnsSaved != 3 {
		t.Errorf("totals: sent %d failed %d saved %d, want 4 2 3", tot.NoticesSent, tot.NoticesFailed, tot.TurnsSaved)
	}
}

// Every wait lands in the bucket whose bounds hold it, and a histogram's
// quantile is within the bucket's width of the true one.
func TestWaitHistogram(t *testing.T) {
	for _, d := range []time.Duration{0, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second,
		time.Minute, 17*time.Minute + 3*time.Second, 5 * time.Hour} {
		b := room.WaitBucket(d)
		if s := d.Seconds(); s < room.WaitBucketLow(b) || s >= room.WaitBucketHigh(b) {
			t.Errorf("%v in bucket %d [%v, %v)", d, b, room.WaitBucketLow(b), room.WaitBucketHigh(b))
		}
	}
	if b := room.WaitBucket(1000 * time.Hour); b != room.WaitBuckets-1 {
		t.Errorf("a very long wait in bucket %d", b)
	}
	// 1..100 s, one each: p50 = 50 s, p95 = 95 s.
	h := room.WaitHistogram{}
	for s := 1; s <= 100; s++ {
		h[room.WaitBucket(time.Duration(s)*time.Second)]++
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 50}, {0.95, 95}} {
		b := room.WaitBucket(time.Duration(c.want * float64(time.Second)))
		if got := h.Quantile(c.q); got < room.WaitBucketLow(b) || got > room.WaitBucketHigh(b) {
			t.Errorf("q%.2f = %v, want in [%v, %v]", c.q, got, room.WaitBucketLow(b), room.WaitBucketHigh(b))
		}
	}
	if (room.WaitHistogram{}).Quantile(0.5) != 0 || h.Count() != 100 {
		t.Error("empty quantile or count")
	}
}

// A minute's peak is the most waiting at any of its ticks, at least its
// first tick's count; the sale's peak is the highest of them.
func TestReportPeakWaiting(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := room.ReportOf([]room.HistoryPoint{
		{Minute: t0, Waiting: 0, PeakWaiting: 9},
		{Minute: t0.Add(time.Minute), Waiting: 4},
		{Minute: t0.Add(2 * time.Minute), Waiting: 2, PeakWaiting: 3},
	}, nil)
	var got []int64
	for _, m := range r.Minutes {
		got = append(got, m.PeakWaiting)
	}
	if len(got) != 3 || got[0] != 9 || got[1] != 4 || got[2] != 3 || r.Totals.PeakWaiting != 9 {
		t.Fatalf("peaks %v, sale's %d; want [9 4 3] and 9", got, r.Totals.PeakWaiting)
	}
}
