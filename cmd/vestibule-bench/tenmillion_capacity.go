package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// The figures of ten million waiting in one room whose joins spread
// over the arrival shards (docs/ENGINE.md, "Heartbeats on the arrival shards").
// tenMillion (tenmillion_edge.go) and tenMillionRate (tenmillion.go, the
// room's admitPerMinute: 200 minutes for the last) are the crowd's.
const (
	// tenMillionBurst is the joins of the first minute the join figure is against.
	tenMillionBurst = 2_000_000.0 / 60
)

// tenMillionConfig is the room of the ten-million figures.
func tenMillionConfig() room.Config {
	cfg := benchRoomConfig()
	cfg.AdmitPerMinute = tenMillionRate
	cfg.MaxActive = 1_000_000 // the slots never bind: the tick admits the bucket
	cfg.JoinShards = room.MaxJoinShards
	return cfg
}

// fillSpread fills a spread room with n waiting visitors as its merges leave
// them, written directly (the sequences of the arrival shards, residues 1 to
// 15 in turn, 16 µs apart, ending a second before nowMS): the queue on the
// room's slot, and the heartbeats on the room's slot for the first zone
// places, on each visitor's arrival shard behind them. Each heartbeat has
// the 5-minute told class, seen at nowMS. It returns the sequences' first.
func fillSpread(ctx context.Context, rdb redis.UniversalClient, roomID string, n, zone int, nowMS int64) (int64, error) {
	base := (nowMS-1000)*1000 - int64(n)*16
	base -= base % 16
	k := roomdb.KeysFor(roomID)
	hbv := roomdb.HeartbeatValueTold(nowMS, room.ToldClass(room.MaxPollAfter.Milliseconds()))
	err := pipelined(ctx, rdb, n, 2000, func(pipe redis.Pipeliner, lo, hi int) {
		zs := make([]redis.Z, 0, hi-lo)
		own := make([]any, 0, 2*(hi-lo))
		shards := make([][]any, room.MaxJoinShards)
		for i := lo; i < hi; i++ {
			r := 1 + i%room.MaxJoinShards
			seq := base + int64(i)*16 + int64(r)
			zs = append(zs, redis.Z{Score: float64(seq), Member: strconv.FormatInt(seq, 10)})
			if i < zone {
				own = append(own, roomdb.HeartbeatField(seq), hbv)
			} else {
				shards[r-1] = append(shards[r-1], roomdb.HeartbeatField(seq), hbv)
			}
		}
		pipe.ZAdd(ctx, k.Queue, zs...)
		if len(own) > 0 {
			pipe.HSet(ctx, k.Heartbeats, own...)
		}
		for s, f := range shards {
			if len(f) > 0 {
				pipe.HSet(ctx, roomdb.ArrivalKeysFor(roomID, s).Heartbeats(), f...)
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return base, nil
}

// tenMillionZone is the zone of the ten-million room as merge.lua makes it:
// the progress's stride, twice the rate over the grace and 10 s, a bucket.
func tenMillionZone(cfg room.Config, waiting int) int {
	stride := (waiting + 255) / 256
	return stride + int((2*cfg.AdmitPerMinute*(cfg.HeartbeatTTLSeconds*1000+10000)+59999)/60000) + int((cfg.AdmitPerMinute+29)/30)
}

// tenMillionScale is the ten-million rows of the scale part: the Redis bytes
// per waiting visitor of a spread room filled with 10,000,000 (the queue and
// each one's heartbeat, on the room's slot or its arrival shard, all in one
// redis-server here) against a plain sorted set's (plainPerMember, measured
// beside it), and a tick admitting 50,000 a minute (a second's: 833) from
// them, the whole Engine.Tick (the tick script, the merge and the progress
// it publishes, the shards' sweeps): the CPU time of Redis's main thread
// over it (redisCPU: the one server holds the room and its shards; two INFO
// calls besides), median of 7, against the same tick from 30,000. The wall
// time goes to stderr: on a machine shared as this one is, it measures the
// machine's load more than the tick.
func tenMillionScale(ctx context.Context, plainPerMember float64) ([]Row, error) {
	srv, err := redistest.Start()
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	// A long read timeout: the fill's pipelines outlast the default 3 s on a loaded machine.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 8, ReadTimeout: 30 * time.Second})
	defer func() { _ = rdb.Close() }()
	t0 := time.Now().Truncate(time.Second)
	small, _, err := tickFromSpread(ctx, rdb, "bench-ten-small", 30_000, t0)
	if err != nil {
		return nil, err
	}
	big, perVisitor, err := tickFromSpread(ctx, rdb, "bench-ten-million", tenMillion, t0)
	if err != nil {
		return nil, err
	}
	logf("tick admitting 50,000 a minute from 10,000,000: %.1f ms (from 30,000: %.1f ms); %.1f bytes per waiting visitor", big, small, perVisitor)
	return []Row{
		row("tick admitting 50,000 a minute from 10,000,000 waiting (Redis CPU, spread room, median)", big, "ms", small, atMost(50)),
		row("Redis bytes per waiting visitor (10,000,000, spread room)", perVisitor, "B", plainPerMember, atMost(200)),
	}, nil
}

// tickFromSpread fills a spread room with n (fillSpread) and times 7 ticks a
// virtual second apart; it returns the median (ms) and the bytes per visitor.
func tickFromSpread(ctx context.Context, rdb *redis.Client, roomID string, n int, t0 time.Time) (float64, float64, error) {
	now := t0
	e := roomdb.New(rdb, roomdb.WithClock(func() time.Time { return now }))
	cfg := tenMillionConfig()
	if _, err := e.PutConfig(ctx, roomID, cfg); err != nil {
		return 0, 0, err
	}
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if _, err := fillSpread(ctx, rdb, roomID, n, tenMillionZone(cfg, n), t0.UnixMilli()); err != nil {
		return 0, 0, err
	}
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return 0, 0, err
	}
	logf("%d waiting filled in %s", n, time.Since(start).Round(time.Second))
	if err := rdb.HSet(ctx, roomdb.KeysFor(roomID).Config, "waiting", n).Err(); err != nil {
		return 0, 0, err
	}
	// A first tick fills the bucket's clock and publishes the progress.
	if _, err := e.Tick(ctx, roomID); err != nil {
		return 0, 0, err
	}
	var ds, walls []float64
	for range 7 {
		now = now.Add(time.Second)
		b0, err := redisCPU(ctx, rdb)
		if err != nil {
			return 0, 0, err
		}
		s := time.Now()
		r, err := e.Tick(ctx, roomID)
		el := time.Since(s)
		if err == nil && r.MergeErr != nil {
			err = r.MergeErr
		}
		if err != nil {
			return 0, 0, err
		}
		if r.Admitted < tenMillionRate/60 {
			return 0, 0, fmt.Errorf("tick admitted %d, want %d", r.Admitted, tenMillionRate/60)
		}
		b1, err := redisCPU(ctx, rdb)
		if err != nil {
			return 0, 0, err
		}
		ds = append(ds, (b1-b0)*1000)
		walls = append(walls, float64(el.Microseconds())/1000)
	}
	slices.Sort(ds)
	slices.Sort(walls)
	logf("tick of a spread room from %d: Redis CPU %.1f ms (median of 7), wall %.1f ms on this machine", n, ds[3], walls[3])
	return ds[len(ds)/2], (after - before) / float64(n), nil
}

// tenMillionPolls measures the poll capacity of a spread room holding
// 10,000,000 on a cluster of 5 primaries: the engine's Poll (as the poll
// route calls it) of 30,000 visitors, 12 % of them in the zone (the descent's
// share of a long wait's polls: docs/BENCHMARKS.md) and the rest spread
// behind it, each once per virtual second, with the admission loop ticking
// every second; polls ÷ the most CPU seconds any node's main thread used,
// against the poll rate of 10,000,000 (pollDemand's × 10).
func tenMillionPolls(ctx context.Context, d time.Duration) ([]Row, error) {
	const roomID, nodesN, polled = "bench-poll-ten-million", 5, 30_000
	cl, err := startCluster(ctx, nodesN)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	addrs, per := cl.addrs, cl.per
	rdb := cl.client(workers)
	defer func() { _ = rdb.Close() }()
	var nowNanos atomic.Int64
	t0 := time.Now().Truncate(time.Second)
	nowNanos.Store(t0.UnixNano())
	clock := func() time.Time { return time.Unix(0, nowNanos.Load()) }
	eng := app.NewEngine(rdb, clock)
	cfg := tenMillionConfig()
	if _, err := eng.PutConfig(ctx, roomID, cfg); err != nil {
		return nil, err
	}
	zone := tenMillionZone(cfg, tenMillion)
	start := time.Now()
	base, err := fillSpread(ctx, rdb, roomID, tenMillion, zone, t0.UnixMilli())
	if err != nil {
		return nil, err
	}
	logf("poll, 10,000,000 waiting on %d nodes: filled in %s", nodesN, time.Since(start).Round(time.Second))
	if err := rdb.HSet(ctx, roomdb.KeysFor(roomID).Config, "waiting", tenMillion).Err(); err != nil {
		return nil, err
	}
	tc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer func() { _ = tc.Close() }()
	ticker := app.NewEngine(tc, clock)
	if r, err := ticker.Tick(ctx, roomID); err != nil || r.MergeErr != nil {
		return nil, fmt.Errorf("first tick: %v %v", err, r.MergeErr)
	}
	tickets := make([]room.Ticket, 0, polled)
	inZone := polled * 12 / 100
	for i := range polled {
		var at int
		if i < inZone {
			at = i * (zone - 2000) / inZone // those the next seconds admit aside
			at += 2000
		} else {
			at = zone + (i-inZone)*((tenMillion-zone)/(polled-inZone))
		}
		r := 1 + at%room.MaxJoinShards
		tickets = append(tickets, room.Ticket{Room: roomID, Visitor: "f" + strconv.Itoa(at), Seq: base + int64(at)*16 + int64(r)})
	}
	stopTicks := tickEvery(ctx, ticker, roomID, time.Second)
	cpu0, err := cl.cpu(ctx)
	if err != nil {
		_ = stopTicks()
		return nil, err
	}
	var next, done, onRoom atomic.Int64
	n := int64(len(tickets))
	wall, err := throughput(ctx, d, func(ctx context.Context) error {
		i := next.Add(1) - 1
		if v := t0.Add(time.Duration(i) * time.Second / time.Duration(n)).Add(time.Second).UnixNano(); v > nowNanos.Load() {
			nowNanos.Store(v) // one virtual second per round of the tickets
		}
		p, err := eng.Poll(ctx, tickets[i%n])
		if err == nil && p.State != room.StateWaiting && p.State != room.StateAdmitted {
			err = fmt.Errorf("poll: %s", p.State)
		}
		if err != nil {
			return err
		}
		if p.Position <= int64(zone) {
			onRoom.Add(1)
		}
		done.Add(1)
		return nil
	})
	if terr := stopTicks(); err == nil {
		err = terr
	}
	if err != nil {
		return nil, err
	}
	cpu1, err := cl.cpu(ctx)
	if err != nil {
		return nil, err
	}
	roomNode := cl.owner(ctx, rdb, roomdb.KeysFor(roomID).Queue)
	busiest, used := 0.0, make([]string, len(per))
	for i := range per {
		busiest = max(busiest, cpu1[i]-cpu0[i])
		used[i] = fmt.Sprintf("%.2f s", cpu1[i]-cpu0[i])
		if i == roomNode {
			used[i] += " (the room)"
		}
	}
	polls := float64(done.Load())
	if busiest <= 0 || polls == 0 {
		return nil, fmt.Errorf("ten-million polls: %v polls, busiest node %v s", polls, busiest)
	}
	demand, source := pollDemand()
	demand *= tenMillion / roomWaiting
	bound := polls / busiest
	logf("poll, 10,000,000 waiting on %d nodes: %.0f polls (%.0f %% in the zone, on the room's shard), %.0f/s in-process; CPU of each node %s; %.0f polls per CPU-second of the busiest; demand %.0f/s (%s)",
		nodesN, polls, 100*float64(onRoom.Load())/polls, wall, strings.Join(used, ", "), bound, demand, source)
	return []Row{
		row("poll capacity, 10,000,000 waiting (busiest of 5 nodes) ÷ their poll rate", bound, "polls/s", demand, timesBaseline(capacityGoal)),
	}, nil
}

// clusterReady waits, up to a minute, until every node says the cluster is
// ok: on a loaded machine a node may still see the cluster down just after
// its start, and the first command fails with CLUSTERDOWN.
func clusterReady(ctx context.Context, per []*redis.Client) error {
	deadline := time.Now().Add(time.Minute)
	for _, c := range per {
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster not ready: %v %.80s", err, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}
