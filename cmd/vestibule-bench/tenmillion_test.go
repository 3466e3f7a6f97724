package main

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/sim"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// The tenmillion part's wiring, with a tiny crowd through the same code:
// the shape's waves (a fifth in the first minute, the rest over nine), the
// joins spread over arrival shards of a 5-node cluster, every invariant
// check of the simulator held, and every row of the part produced, the
// projections to 10,000,000 with them.
func TestTenMillionWiring(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a 5-node cluster for the bench's wiring; make test runs it")
	}
	const visitors, rate = 400, 400
	rows, run, err := tenMillionPart(context.Background(), visitors, rate)
	if err != nil {
		t.Fatal(err)
	}
	s := run.Sum
	if !s.OK() || s.Errors != 0 || s.Outcomes["failed"] != 0 || s.Outcomes["pending"] != 0 {
		t.Fatalf("invariants: %+v", s)
	}
	first, shard := 0, 0
	for _, v := range run.Res.Visitors {
		if v.Arrive.Sub(run.Res.Start) < time.Minute {
			first++
		}
		if v.Seq%room.SeqResidues != 0 {
			shard++
		}
		if v.StatusReads != 0 {
			t.Fatalf("visitor %d read the status %d times: the part plays no watch", v.ID, v.StatusReads)
		}
	}
	if first != visitors/5 {
		t.Errorf("%d of %d arrived in the first minute, want a fifth", first, visitors)
	}
	if shard < visitors/2 {
		t.Errorf("%d of %d joins went through an arrival shard", shard, visitors)
	}
	if run.ProcessCPU <= 0 || run.RedisCPU <= 0 || run.BusiestCPU <= 0 || run.BusiestCPU > run.RedisCPU || run.HeapPeak == 0 || run.RedisPeak == 0 {
		t.Errorf("meter: process CPU %s, Redis CPU %s, heap %d B, Redis %d B", run.ProcessCPU, run.RedisCPU, run.HeapPeak, run.RedisPeak)
	}
	want := []string{
		"requests per visitor-minute waiting", "grant→seen delay p99", "invariant violations",
		"simulation wall time", "peak 10-s poll rate (baseline", "÷ the mean of its 5 min", "API requests per visitor", "CPU per API request",
		"simulator heap per visitor", "Redis memory at the peak", "wall time projected to 10,000,000",
		"least wall time at 10,000,000 on 2 idle cores", "the busiest node's CPU projected to 10,000,000",
		"the busiest node's CPU per API request", "simulator heap projected to 10,000,000",
	}
	for _, w := range want {
		var found *Row
		for i := range rows {
			if strings.HasPrefix(rows[i].Name, "on-sale 400 at 400/min (10,000,000's shape): ") && strings.Contains(rows[i].Name, w) {
				found = &rows[i]
			}
		}
		switch {
		case found == nil:
			t.Errorf("no row %q in %v", w, rows)
		case w == "invariant violations" && found.Value != 0:
			t.Errorf("%s = %v", found.Name, found.Value)
		case w != "invariant violations" && found.Value <= 0:
			t.Errorf("%s = %v, want > 0", found.Name, found.Value)
		}
	}
}

// The shape at 10,000,000 is the issue's: 2,000,000 in the first minute,
// 8,000,000 over the nine after it, 50,000 admitted a minute, and its rows
// carry "10,000,000" in their names, with the wall time's goal of an hour.
func TestTenMillionShape(t *testing.T) {
	c := tenMillionShape(tenMillionVisitors, tenMillionRateFor(tenMillionVisitors))
	want := []sim.Wave{
		{N: 2_000_000, Shape: sim.Steady, Spread: time.Minute},
		{N: 8_000_000, At: time.Minute, Shape: sim.Steady, Spread: 9 * time.Minute},
	}
	if len(c.Waves) != 2 || c.Waves[0] != want[0] || c.Waves[1] != want[1] {
		t.Errorf("waves %+v, want %+v", c.Waves, want)
	}
	if c.RoomConfig.AdmitPerMinute != 50_000 || c.RoomConfig.JoinShards != room.MaxJoinShards || !c.NoWatch {
		t.Errorf("rate %d, joinShards %d, no watch %v", c.RoomConfig.AdmitPerMinute, c.RoomConfig.JoinShards, c.NoWatch)
	}
	if got := tenMillionRateFor(1_000_000); got != 5_000 {
		t.Errorf("rate of the shape at 1,000,000: %d, want 5,000", got)
	}
	rows := tenMillionRows(tenMillionVisitors, 50_000, &tenMillionRun{Res: &sim.Result{Log: sim.NewRequestLog(time.Unix(0, 0), time.Minute)},
		Sum: sim.Summary{Wall: time.Hour}})
	for _, r := range rows {
		if !strings.HasPrefix(r.Name, "on-sale 10,000,000 at 50,000/min: ") {
			t.Errorf("row %q", r.Name)
		}
		if strings.Contains(r.Name, "projected") {
			t.Errorf("a run of 10,000,000 projects nothing: %q", r.Name)
		}
		if strings.Contains(r.Name, "wall time") && r.Goal != "≤ 3600 s" {
			t.Errorf("%s: goal %q", r.Name, r.Goal)
		}
	}
}

// localPeak finds a bunch of polls against the minutes around it, and finds
// none in a crowd that only shrinks, whose peak over the whole span's mean
// is 2.
func TestLocalPeak(t *testing.T) {
	start := time.Unix(0, 0)
	at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
	bunch := sim.NewRequestLog(start, time.Hour)
	for sec := range 1000 {
		n := 10
		if sec >= 500 && sec < 510 {
			n = 30
		}
		for range n {
			bunch.Add(sim.KindPoll, at(sec))
		}
	}
	if peak, around := localPeak(bunch, 0, 1000); peak != 30 || math.Abs(around-(290*10+10*30)/300.0) > 1e-9 {
		t.Errorf("bunch: peak %v around %v", peak, around)
	}
	shrinking := sim.NewRequestLog(start, time.Hour)
	for sec := range 3000 {
		for range (3000 - sec) / 30 {
			shrinking.Add(sim.KindPoll, at(sec))
		}
	}
	peak, mean := shrinking.Peak(sim.KindSet(sim.KindPoll), peakWindow, 0, 3000)
	if r := peak / mean; r < 1.9 {
		t.Errorf("shrinking: peak ÷ mean %v, want about 2", r)
	}
	if peak, around := localPeak(shrinking, 0, 3000); peak/around > 1.1 {
		t.Errorf("shrinking: local peak %v ÷ %v", peak, around)
	}
}

// fillSpread writes every visitor once, over its batches and workers: each
// in the queue, each with one heartbeat, on the room's slot for the zone and
// on its arrival shard behind it.
func TestFillSpread(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Single(t)
	id := redistest.Room(t)
	const n, zone = 4_321, 1_000 // batches of 2,000: two full, one not
	if _, err := fillSpread(ctx, rdb, id, n, zone, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if q := rdb.ZCard(ctx, roomdb.KeysFor(id).Queue).Val(); q != n {
		t.Errorf("%d in the queue, want %d", q, n)
	}
	own := rdb.HLen(ctx, roomdb.KeysFor(id).Heartbeats).Val()
	var shards int64
	for s := range room.MaxJoinShards {
		shards += rdb.HLen(ctx, roomdb.ArrivalKeysFor(id, s).Heartbeats()).Val()
	}
	if own != zone || shards != n-zone {
		t.Errorf("heartbeats: %d on the room's slot, %d on the shards; want %d and %d", own, shards, zone, n-zone)
	}
}
