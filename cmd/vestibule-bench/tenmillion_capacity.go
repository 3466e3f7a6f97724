package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/app"
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
	// The default grace (the bench's rooms otherwise wait an hour): the zone
	// is what the front can reach in a grace, 217,000 places at this rate,
	// not six million, so the far visitors' heartbeats are on their shards
	// as in a room deployed with its defaults.
	cfg.HeartbeatTTLSeconds = 120
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
				shards[r-1] = append(shards[r-1], roomdb.ShardHeartbeatField(seq), hbv)
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

// tenMillionCluster is the cluster the ten-million rows run on: the 5 primaries.
const tenMillionCluster = 5

// tenMillionScale is the ten-million rows of the scale part, on a cluster of
// tenMillionCluster primaries as a deployment runs it (tenMillionScaleOf).
func tenMillionScale(ctx context.Context, plainPerMember float64) ([]Row, error) {
	return tenMillionScaleOf(ctx, plainPerMember, tenMillion)
}

// tenMillionScaleOf is tenMillionScale with n waiting (the tenscale part's
// -ten-million-visitors, for a look at its shape): the Redis bytes per
// waiting visitor of a spread room filled with n (the queue and each one's
// heartbeat, on the room's slot or its arrival shard) against a plain sorted
// set's (plainPerMember, measured beside it), and a tick admitting 50,000 a
// minute (a second's: 833) from them, the whole Engine.Tick (the tick script,
// the merge and the progress it publishes, the shards' trims and sweeps),
// timed per node: the CPU time each node's main thread used over it, each
// node's median of 7, the worst node's the figure, against the same from
// 30,000. The sum over the nodes is a second row (what one server holding
// it all would spend). The wall time goes to stderr: on a machine shared as
// this one is, it measures the machine's load more than the tick.
func tenMillionScaleOf(ctx context.Context, plainPerMember float64, n int) ([]Row, error) {
	cl, err := startCluster(ctx, tenMillionCluster)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	rdb := cl.client(8)
	defer func() { _ = rdb.Close() }()
	t0 := time.Now().Truncate(time.Second)
	small, err := tickFromSpread(ctx, cl, rdb, "bench-ten-small", 30_000, t0)
	if err != nil {
		return nil, err
	}
	big, err := tickFromSpread(ctx, cl, rdb, "bench-ten-million", n, t0)
	if err != nil {
		return nil, err
	}
	logf("tick admitting 50,000 a minute from %d on %d nodes: the worst node %.1f ms, the room's %.1f ms, summed %.1f ms (from 30,000: %.1f, %.1f, %.1f ms); %.1f bytes per waiting visitor (%.1f at the end of the fill)",
		n, tenMillionCluster, big.worst, big.room, big.sum, small.worst, small.room, small.sum, big.perVisitor, big.unsettled)
	return []Row{
		row(fmt.Sprintf("tick admitting 50,000 a minute from 10,000,000 waiting (Redis CPU, spread room, worst of %d nodes, median)", tenMillionCluster), big.worst, "ms", small.worst, atMost(50)),
		row(fmt.Sprintf("tick admitting 50,000 a minute from 10,000,000 waiting (Redis CPU, spread room, summed over %d nodes, median)", tenMillionCluster), big.sum, "ms", small.sum, nil),
		row("Redis bytes per waiting visitor (10,000,000, spread room)", big.perVisitor, "B", plainPerMember, atMost(200)),
	}, nil
}

// spreadTick is what tickFromSpread measured: the worst node's median CPU
// time of a tick, the room's node's and the sum over the nodes (ms), and
// the Redis bytes per waiting visitor once the hash tables settled, and
// before (at the end of the fill).
type spreadTick struct {
	worst, room, sum      float64
	perVisitor, unsettled float64
}

// tickFromSpread fills a spread room with n (fillSpread) on the cluster and
// times 7 ticks a virtual second apart, each node's CPU time apart.
func tickFromSpread(ctx context.Context, cl *cluster, rdb *redis.ClusterClient, roomID string, n int, t0 time.Time) (spreadTick, error) {
	var out spreadTick
	now := t0
	e := roomdb.New(rdb, roomdb.WithClock(func() time.Time { return now }))
	cfg := tenMillionConfig()
	if _, err := e.PutConfig(ctx, roomID, cfg); err != nil {
		return out, err
	}
	before, err := cl.usedMemory(ctx)
	if err != nil {
		return out, err
	}
	start := time.Now()
	if _, err := fillSpread(ctx, rdb, roomID, n, tenMillionZone(cfg, n), t0.UnixMilli()); err != nil {
		return out, err
	}
	filled, err := cl.usedMemory(ctx)
	if err != nil {
		return out, err
	}
	logf("%d waiting filled in %s", n, time.Since(start).Round(time.Second))
	start = time.Now()
	if err := settleSpread(ctx, rdb, roomID); err != nil {
		return out, err
	}
	settled, err := cl.usedMemory(ctx)
	if err != nil {
		return out, err
	}
	logf("%d waiting: hash tables settled in %s", n, time.Since(start).Round(time.Second))
	out.unsettled, out.perVisitor = (filled-before)/float64(n), (settled-before)/float64(n)
	if err := rdb.HSet(ctx, roomdb.KeysFor(roomID).Config, "waiting", n).Err(); err != nil {
		return out, err
	}
	// A first tick fills the bucket's clock and publishes the progress.
	if _, err := e.Tick(ctx, roomID); err != nil {
		return out, err
	}
	roomNode := cl.owner(ctx, rdb, roomdb.KeysFor(roomID).Queue)
	per := make([][]float64, len(cl.per))
	var sums, walls []float64
	var stats0, stats1 []cmdStats
	redone := 0
	for i := 0; i < 7; i++ {
		now = now.Add(time.Second)
		b0, err := cl.cpu(ctx)
		if err != nil {
			return out, err
		}
		if i == 3 {
			if stats0, err = cl.commandStats(ctx); err != nil {
				return out, err
			}
		}
		s := time.Now()
		r, err := e.Tick(ctx, roomID)
		el := time.Since(s)
		if err == nil && r.MergeErr != nil && redone < 3 {
			// A shard over its budget on this loaded machine: the engine now
			// holds its merges back, so the tick is timed again on another,
			// as the next Lambda's would be.
			logf("tick of a spread room from %d: %v; timed again", n, r.MergeErr)
			e = roomdb.New(rdb, roomdb.WithClock(func() time.Time { return now }))
			redone++
			i--
			continue
		}
		if err == nil && r.MergeErr != nil {
			err = r.MergeErr
		}
		if err != nil {
			return out, err
		}
		if r.Admitted < tenMillionRate/60 {
			return out, fmt.Errorf("tick admitted %d, want %d", r.Admitted, tenMillionRate/60)
		}
		b1, err := cl.cpu(ctx)
		if err != nil {
			return out, err
		}
		if i == 3 {
			if stats1, err = cl.commandStats(ctx); err != nil {
				return out, err
			}
		}
		sum := 0.0
		for j := range b1 {
			per[j] = append(per[j], (b1[j]-b0[j])*1000)
			sum += (b1[j] - b0[j]) * 1000
		}
		sums = append(sums, sum)
		walls = append(walls, float64(el.Microseconds())/1000)
	}
	medians := make([]string, len(per))
	for j, p := range per {
		m := median(p)
		out.worst = max(out.worst, m)
		medians[j] = fmt.Sprintf("%.1f", m)
		if j == roomNode {
			out.room = m
			medians[j] += " (the room)"
		}
	}
	out.sum = median(sums)
	logf("tick of a spread room from %d: Redis CPU of each node (median of 7, ms) %s; summed %.1f ms; wall %.1f ms on this machine",
		n, strings.Join(medians, ", "), out.sum, median(walls))
	if roomNode >= 0 && stats0 != nil {
		logf("tick of a spread room from %d, the room's node, one tick by command: %s", n, stats1[roomNode].since(stats0[roomNode]))
	}
	return out, nil
}

// median is the middle of xs (sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// settleScript makes as many lookups in a sorted set or hash as ARGV[1]
// says. Each lookup moves an incremental rehash of its table one step, as
// every poll's ZRANK and HGET does in a live room.
var settleScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1])['ok']
local cmd = t == 'zset' and 'ZSCORE' or 'HEXISTS'
for _ = 1, tonumber(ARGV[1]) do redis.call(cmd, KEYS[1], '') end
return 0
`)

// settleSpread finishes the incremental rehash of the spread room's queue and
// heartbeat tables. A table twice the size is made when the entries reach
// its size, and every lookup or write moves one bucket of the old one to it:
// filled with 10,000,000 without a poll, the queue's 8,388,608 old buckets
// are still partly there (about 7 bytes a visitor, and 6 more for the
// shards' heartbeats). In a live room the polls move them within a minute
// or two (a poll's ZRANK and HGET are each a step); here as many lookups as
// the table has entries (at least one bucket a step) do it at once.
func settleSpread(ctx context.Context, rdb redis.UniversalClient, roomID string) error {
	keys := []string{roomdb.KeysFor(roomID).Queue, roomdb.KeysFor(roomID).Heartbeats}
	for s := range room.MaxJoinShards {
		keys = append(keys, roomdb.ArrivalKeysFor(roomID, s).Heartbeats())
	}
	for _, k := range keys {
		var n int64
		var err error
		if k == keys[0] {
			n, err = rdb.ZCard(ctx, k).Result()
		} else {
			n, err = rdb.HLen(ctx, k).Result()
		}
		if err != nil {
			return err
		}
		for left := n; left > 0; left -= 500_000 {
			if err := settleScript.Run(ctx, rdb, []string{k}, min(left, 500_000)).Err(); err != nil && err != redis.Nil {
				return err
			}
		}
	}
	return nil
}

// tenMillionPolls measures the poll capacity of a spread room holding
// 10,000,000 on a cluster of 5 primaries: the engine's Poll (as the poll
// route calls it) of 30,000 visitors, 12 % of them in the zone (the descent's
// share of a long wait's polls: docs/BENCHMARKS.md) and the rest spread
// behind it, each once per virtual second, with the admission loop ticking
// every second; polls ÷ the most CPU seconds any node's main thread used,
// against the poll rate of 10,000,000 (pollDemand's × 10). Each node's
// commands, by time, go to stderr.
func tenMillionPolls(ctx context.Context, d time.Duration) ([]Row, error) {
	return tenMillionPollsOf(ctx, d, tenMillion)
}

// tenMillionPollsOf is tenMillionPolls with n waiting (the tenpolls part's
// -ten-million-visitors), against the poll rate of n.
func tenMillionPollsOf(ctx context.Context, d time.Duration, n int) ([]Row, error) {
	const roomID, nodesN, polled = "bench-poll-ten-million", tenMillionCluster, 30_000
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
	zone := tenMillionZone(cfg, n)
	start := time.Now()
	base, err := fillSpread(ctx, rdb, roomID, n, zone, t0.UnixMilli())
	if err != nil {
		return nil, err
	}
	logf("poll, %d waiting on %d nodes: filled in %s", n, nodesN, time.Since(start).Round(time.Second))
	// The tables as a live room's polls leave them (settleSpread).
	if err := settleSpread(ctx, rdb, roomID); err != nil {
		return nil, err
	}
	if err := rdb.HSet(ctx, roomdb.KeysFor(roomID).Config, "waiting", n).Err(); err != nil {
		return nil, err
	}
	tc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer func() { _ = tc.Close() }()
	// The first tick publishes the progress the far polls need. On a loaded
	// machine a shard may miss its budget: an engine that failed holds its
	// merges back, so the next try is another's, as the next Lambda's would be.
	var ticker *roomdb.Engine
	for try := 0; ; try++ {
		ticker = app.NewEngine(tc, clock)
		r, err := ticker.Tick(ctx, roomID)
		if err == nil && r.MergeErr == nil {
			break
		}
		if try == 4 {
			return nil, fmt.Errorf("first tick: %v %v", err, r.MergeErr)
		}
		logf("poll, %d waiting: first tick: %v %v; again", n, err, r.MergeErr)
	}
	tickets := make([]room.Ticket, 0, polled)
	inZone := polled * 12 / 100
	for i := range polled {
		var at int
		if i < inZone {
			at = i * (zone - 2000) / inZone // those the next seconds admit aside
			at += 2000
		} else {
			at = zone + (i-inZone)*((n-zone)/(polled-inZone))
		}
		r := 1 + at%room.MaxJoinShards
		tickets = append(tickets, room.Ticket{Room: roomID, Visitor: "f" + strconv.Itoa(at), Seq: base + int64(at)*16 + int64(r)})
	}
	// In a fixed random order, so that the polls of a run too short for a
	// round of the tickets (a loaded machine) are of the same mix.
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(tickets), func(i, j int) { tickets[i], tickets[j] = tickets[j], tickets[i] })
	// A shard that misses its budget on this loaded machine costs a tick its
	// sweeps (and holds its merges, of which there are none here): counted,
	// not a failure of the polls' figure.
	stopTicks := tickEveryLenient(ctx, ticker, roomID, time.Second)
	cpu0, err := cl.cpu(ctx)
	if err != nil {
		_ = stopTicks()
		return nil, err
	}
	stats0, err := cl.commandStats(ctx)
	if err != nil {
		_ = stopTicks()
		return nil, err
	}
	var next, done, onRoom atomic.Int64
	nt := int64(len(tickets))
	wall, err := throughput(ctx, d, func(ctx context.Context) error {
		i := next.Add(1) - 1
		if v := t0.Add(time.Duration(i) * time.Second / time.Duration(nt)).Add(time.Second).UnixNano(); v > nowNanos.Load() {
			nowNanos.Store(v) // one virtual second per round of the tickets
		}
		p, err := eng.Poll(ctx, tickets[i%nt])
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
	stats1, err := cl.commandStats(ctx)
	if err != nil {
		return nil, err
	}
	roomNode := cl.owner(ctx, rdb, roomdb.KeysFor(roomID).Queue)
	shardsOn := make([]int, len(per))
	for i := range room.MaxJoinShards {
		if o := cl.owner(ctx, rdb, roomdb.ArrivalKeysFor(roomID, i).Heartbeats()); o >= 0 {
			shardsOn[o]++
		}
	}
	busiest, used := 0.0, make([]string, len(per))
	for i := range per {
		busiest = max(busiest, cpu1[i]-cpu0[i])
		used[i] = fmt.Sprintf("%.2f s (%d shards", cpu1[i]-cpu0[i], shardsOn[i])
		if i == roomNode {
			used[i] += " and the room"
		}
		used[i] += ")"
		logf("poll, %d waiting: node %d, %s: %s", n, i, used[i], stats1[i].since(stats0[i]))
	}
	polls := float64(done.Load())
	if busiest <= 0 || polls == 0 {
		return nil, fmt.Errorf("ten-million polls: %v polls, busiest node %v s", polls, busiest)
	}
	demand, source := pollDemand()
	demand *= float64(n) / roomWaiting
	bound := polls / busiest
	logf("poll, %d waiting on %d nodes: %.0f polls (%.0f %% in the zone, on the room's shard), %.0f/s in-process; CPU of each node %s; %.0f polls per CPU-second of the busiest; demand %.0f/s (%s)",
		n, nodesN, polls, 100*float64(onRoom.Load())/polls, wall, strings.Join(used, ", "), bound, demand, source)
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
