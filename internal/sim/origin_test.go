package sim

import (
	"context"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api/queueapi"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// The origin serves at its capacity with the service time alone, reports
// its utilisation, and past its capacity its latency grows with the backlog,
// which outlives the overload.
func TestOriginQueuesPastItsCapacity(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	o := &Origin{Workers: 4, Capacity: 60, Window: 10 * time.Second,
		Changes: []OriginChange{{At: time.Minute, Capacity: 30}}}
	o.begin(start)
	if got := o.ServiceAt(start); got != 4*time.Second {
		t.Fatalf("service %s at 60 a minute with 4 workers, want 4s", got)
	}
	load := func(ctx context.Context) string { return headersFrom(ctx)[queueapi.LoadHeader] }
	// One booking a second for a minute: at capacity, nobody waits.
	var last string
	for i := range 60 {
		last = load(o.request(context.Background(), start.Add(time.Duration(i)*time.Second), true))
	}
	if last != "1.000" {
		t.Errorf("load %s at its capacity, want 1.000", last)
	}
	for _, j := range o.Jobs() {
		if j.Latency != 4*time.Second {
			t.Fatalf("booking at %s took %s under its capacity, want the service alone", j.At.Sub(start), j.Latency)
		}
	}
	// Half a booking a second after the minute: the load is its share of
	// the new, halved, capacity; complete reports it too and adds no work.
	at := start.Add(time.Minute)
	for i := range 20 {
		o.request(context.Background(), at.Add(time.Duration(2*i)*time.Second), true)
	}
	if got := load(o.request(context.Background(), at.Add(39*time.Second), false)); got != "1.000" {
		t.Errorf("load %s at one booking every 2 s with 30 a minute, want 1.000", got)
	}
	if n := len(o.Jobs()); n != 80 {
		t.Errorf("%d bookings, want 80: a complete is no booking", n)
	}
	// Twice its capacity for 20 s: each booking waits longer than the last,
	// and the one after the overload still waits for the backlog.
	o.begin(start)
	o.Changes = nil
	for i := range 40 {
		o.request(context.Background(), start.Add(time.Duration(i)*500*time.Millisecond), true)
	}
	after := start.Add(30 * time.Second)
	o.request(context.Background(), after, true)
	jobs := o.Jobs()
	if jobs[39].Latency < 10*time.Second || jobs[39].Latency <= jobs[20].Latency {
		t.Errorf("latency %s of the 40th booking at twice the capacity (%s of the 21st), want it growing past 10s", jobs[39].Latency, jobs[20].Latency)
	}
	if l := jobs[40].Latency; l <= 4*time.Second {
		t.Errorf("latency %s after the overload, want the backlog's wait on top of 4s", l)
	}
	if got := load(o.request(context.Background(), after, false)); got != "0.100" {
		t.Errorf("load %s with one booking in the last 10 s at 60 a minute, want 0.100", got)
	}
	o.Silent = true
	if h := headersFrom(o.request(context.Background(), after, false)); h != nil {
		t.Errorf("a silent origin sent %v", h)
	}
}

// With the origin's Vestibule-Load, a room with admitPerMinuteMin cuts its
// pace to the slowed origin's capacity within 30 s, and climbs back to 90 %
// of admitPerMinute within the climb's 3 minutes (+ 30 s) of its recovery,
// never above the setting; a room without admitPerMinuteMin ignores the
// header and keeps admitting twice what the slowed origin takes.
func TestPaceFollowsTheSimulatedSiteThroughASlowdown(t *testing.T) {
	rdb := redistest.Single(t)
	const rate, capacity = 120, 180
	slow, recover := 200*time.Second, 320*time.Second
	run := func(min int64) (*Result, *Origin) {
		d, cfg := virtualRoom(t, rdb, 2*rate, rate)
		cfg.ClientEnqueuePerMinute, cfg.AdmitPerMinuteMin = 0, min
		o := &Origin{Capacity: capacity, Changes: []OriginChange{{At: slow, Capacity: rate / 2}, {At: recover, Capacity: capacity}}}
		c := Config{Visitors: 800, Shape: Burst, Seed: 41, ThinkMin: 10 * time.Second, ThinkMax: 40 * time.Second,
			Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour, Origin: o}
		res, err := Run(context.Background(), d, d.AdminKey, c)
		if err != nil {
			t.Fatal(err)
		}
		if s := res.Summarize(); !s.OK() || s.Errors != 0 || res.LostGrants() != 0 {
			t.Fatalf("admitPerMinuteMin %d: invariants %+v, %d grants lost", min, s, res.LostGrants())
		}
		return res, o
	}

	res, o := run(rate / 10)
	under, ok := PaceFirst(res, slow, func(p float64) bool { return p <= rate/2 })
	if !ok || under-slow > 30*time.Second {
		t.Errorf("pace at or under the slowed origin's %d a minute %s after the slowdown (found %v), want within 30s", rate/2, under-slow, ok)
	}
	back, ok := PaceFirst(res, recover, func(p float64) bool { return p >= 0.9*rate })
	if !ok || back-recover > 210*time.Second {
		t.Errorf("pace back at 90 %% of %d a minute %s after the recovery (found %v), want within 210s", rate, back-recover, ok)
	}
	if m := PaceMax(res, 0, res.End.Sub(res.Start)+time.Second); m > rate {
		t.Errorf("pace reached %.1f a minute, above the setting %d", m, rate)
	}
	p95 := o.LatencyQuantile(res.Start.Add(under), res.Start.Add(recover), 0.95)
	t.Logf("steered: under the capacity %s after the slowdown, back %s after the recovery; p95 %s (service %s)",
		under-slow, back-recover, p95, o.ServiceAt(res.Start.Add(slow)))

	fixed, fo := run(0)
	if at, ok := PaceFirst(fixed, slow, func(p float64) bool { return p <= rate/2 }); ok && at < recover {
		t.Errorf("a room without admitPerMinuteMin cut its pace to %d a minute at %s", rate/2, at)
	}
	fp95 := fo.LatencyQuantile(fixed.Start.Add(under), fixed.Start.Add(recover), 0.95)
	t.Logf("fixed: p95 %s over the same span", fp95)
	if fp95 <= p95 {
		t.Errorf("origin's p95 %s behind the fixed room, %s behind the steered one: want it worse", fp95, p95)
	}
}
