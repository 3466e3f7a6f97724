package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/sim"
)

// The crowds of the targets' table. Each plays the real API handler in virtual
// time against a real Redis (sim.Virtual): whatever poll policy and engine
// are in the tree is what they measure.
const (
	// longVisitors arrive in a 10 s burst and are admitted longRate a minute:
	// about 20 minutes for the last, 10 on average.
	longVisitors = 100_000
	longRate     = 5_000
	// shortVisitors at shortRate a minute: about 2 minutes for the last, one
	// on average.
	shortVisitors = 20_000
	shortRate     = 10_000
	// millionVisitors is the on-sale of `make bench BENCH_MILLION=1`; the
	// rate is -million-rate (default millionRate): 20 minutes for the last.
	millionVisitors = 1_000_000
	millionRate     = 50_000
)

// crowdConfig is a burst of visitors into a room admitting rate a minute, with
// slots enough that the rate, not maxActive, sets the pace (a completer holds
// a slot for its think time of 10–40 s), a fifth of them abandoning. The room
// has the engine's default settings otherwise (those a deployed room starts
// from), except the per-client join limit: the whole crowd comes from one
// address here.
func crowdConfig(name string, visitors int, rate int64) sim.Config {
	rc := room.DefaultConfig()
	rc.AdmitPerMinute = rate
	// Slots for a minute of admissions: completers hold one for 10–40 s after
	// consuming, no-consumers until their grant expires.
	rc.MaxActive = max(rate, 20)
	rc.OriginURL, rc.ClientEnqueuePerMinute = "http://127.0.0.1:9/origin", 0
	return sim.Config{
		Visitors: visitors, Shape: sim.Burst, Seed: 1,
		CloseTab: 0.10, NoConsume: 0.05, Leave: 0.05, AbandonAfter: time.Minute,
		ThinkMin: 10 * time.Second, ThinkMax: 40 * time.Second,
		Room: "bench-" + name, RoomConfig: rc, Workers: workers, MaxDuration: 4 * time.Hour,
	}
}

// scaled keeps a crowd's shape when -visitors shrinks it for a quick run: the
// rate shrinks with the crowd, so the waits stay as long.
func scaled(n, visitors, base int, rate int64) (int, int64) {
	if visitors == base {
		return n, rate
	}
	f := float64(visitors) / float64(base)
	return max(int(float64(n)*f), 100), max(int64(float64(rate)*f), 60)
}

// crowdFigures is what the crowd parts measured, for the parts after them
// (capacity, cost, quotas). Zero until a crowd ran.
type crowdFigures struct {
	// LongPerMinute is the long-wait crowd's requests per visitor-minute;
	// LongPollsPerMinute its polls alone.
	LongPerMinute, LongPollsPerMinute float64
	LongMeanWait                      time.Duration
	// LongWaitRequests: a visitor's waiting requests in a wait of
	// costWaitMinutes, from the long crowd's line (sim.Summary.RequestsAt).
	LongWaitRequests float64
	// FixedPerMinute is the same crowd replayed with a page polling every 3 s.
	FixedPerMinute float64
	// Bytes per request of the function's log line and of the response body,
	// measured by the capacity part on the poll and enqueue routes.
	PollLogBytes, PollBodyBytes float64
	JoinLogBytes, JoinBodyBytes float64

	// The crowds' runs, for the moments part (nil until a crowd ran).
	Long, Short *sim.Result
	// LongStatusReads: a visitor's status reads in a wait of costWaitMinutes,
	// from the long crowd's line (sim.Result.StatusLine); StatusBytes a
	// status answer's body.
	LongStatusReads, StatusBytes float64
	// The cost part's figures: the API path, and the 3 s page's.
	CostAPIPath, CostFixed float64
	// LongPeak is the long crowd's peak 10-second poll rate ÷ its mean (the
	// quotas are held at the peak; the joins' burst is their own figure).
	LongPeak float64
}

var measured crowdFigures

// playCrowd runs one crowd on a redis-server of its own, prints its report
// and returns the run with its summary.
func playCrowd(ctx context.Context, c sim.Config, chart string) (*sim.Result, sim.Summary, error) {
	rdb, stop, err := benchRedis(2 * workers)
	if err != nil {
		return nil, sim.Summary{}, err
	}
	defer stop()
	return playCrowdOn(ctx, rdb, c, chart)
}

// playCrowdOn is playCrowd on a Redis the caller started (a single node or a
// cluster).
func playCrowdOn(ctx context.Context, rdb redis.UniversalClient, c sim.Config, chart string) (*sim.Result, sim.Summary, error) {
	// BENCH_CROWD_CPUPROFILE=file profiles the crowds (the last one run overwrites it) (go tool pprof).
	if path := os.Getenv("BENCH_CROWD_CPUPROFILE"); path != "" {
		f, err := os.Create(path + "." + c.Room)
		if err != nil {
			return nil, sim.Summary{}, err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, sim.Summary{}, err
		}
		defer pprof.StopCPUProfile()
	}
	d, err := sim.NewVirtual(rdb, time.Now().Truncate(time.Second), time.Second)
	if err != nil {
		return nil, sim.Summary{}, err
	}
	res, err := sim.Run(ctx, d, d.AdminKey, c)
	if err != nil {
		return nil, sim.Summary{}, err
	}
	s := res.Summarize()
	res.Replay(&s, 3*time.Second)
	fmt.Fprintf(os.Stderr, "crowd %s: %d visitors, %d admitted a minute, maxActive %d\n",
		c.Room, len(res.Visitors), c.RoomConfig.AdmitPerMinute, c.RoomConfig.MaxActive)
	if err := s.WriteTable(os.Stderr); err != nil {
		return nil, sim.Summary{}, err
	}
	if chart != "" {
		arrive := "in a 10 s burst"
		if len(c.Waves) > 0 {
			arrive = fmt.Sprintf("in %d waves", len(c.Waves))
		}
		title := fmt.Sprintf("%d visitors %s; maxActive %d, %d admitted/min (virtual time)",
			c.Visitors, arrive, c.RoomConfig.MaxActive, c.RoomConfig.AdmitPerMinute)
		if err := res.Chart(chart, title); err != nil {
			return res, s, err
		}
	}
	return res, s, nil
}

// violations counts the invariant checks that failed: capacity, double
// consumes, replays allowed, FIFO inversions, visitors never admitted, closed
// tabs held past their eviction bound, a run cut short, and request errors
// (5xx, 429, transport).
func violations(s sim.Summary) float64 {
	n := float64(s.DoubleConsumes + s.ReplaysAllowed + s.Inversions + s.NotAdmitted + s.Errors + s.Evictions.Late)
	if s.MaxInUse > s.MaxActive {
		n++
	}
	if s.Stopped {
		n++
	}
	return n
}

// crowdRows are one crowd's rows: requests per visitor-minute against the
// page polling every 3 s (replayed), grant→seen p50/p99 against the same
// replay, the mean wait, the invariant checks and the simulation's wall time.
func crowdRows(label string, s sim.Summary, perMinuteGoal float64, wallGoal func(*Row)) []Row {
	sec := func(d time.Duration) float64 { return d.Seconds() }
	return []Row{
		row(label+": requests per visitor-minute waiting", s.RequestsPerWaitMinute, "req/min", s.FixedRequestsPerWaitMinute, atMost(perMinuteGoal)),
		row(label+": grant→seen delay p50", sec(s.SeenP50), "s", sec(s.FixedSeenP50), atMost(1)),
		row(label+": grant→seen delay p99", sec(s.SeenP99), "s", sec(s.FixedSeenP99), atMost(3)),
		row(label+": mean wait", sec(s.MeanWait), "s", 0, nil),
		row(label+": invariant violations", violations(s), "", 0, atMost(0)),
		row(label+": simulation wall time", sec(s.Wall), "s", 0, wallGoal),
	}
}

// benchCrowd plays the long-wait and the short-wait crowds (scaled to
// visitors for the long one; 100,000 is the table's).
func benchCrowd(ctx context.Context, visitors int, chart string) ([]Row, error) {
	n, rate := scaled(longVisitors, visitors, longVisitors, longRate)
	longRes, long, err := playCrowd(ctx, crowdConfig("long", n, rate), chart)
	if err != nil {
		return nil, fmt.Errorf("long crowd: %w", err)
	}
	measureLong(longRes, long)
	rows := crowdRows(fmt.Sprintf("crowd %d at %d/min", n, rate), long, 0.7, nil)
	rows = append(rows, evictionRow(fmt.Sprintf("crowd %d at %d/min", n, rate), long, longRes.Config.RoomConfig, n))
	rows = append(rows, row(fmt.Sprintf("crowd %d at %d/min: requests of a visitor waiting %.0f min (line)", n, rate, costWaitMinutes),
		measured.LongWaitRequests, "req", long.FixedRequestsPerWaitMinute*costWaitMinutes, nil))

	n, rate = scaled(shortVisitors, visitors, longVisitors, shortRate)
	shortRes, short, err := playCrowd(ctx, crowdConfig("short", n, rate), "")
	if err != nil {
		return rows, fmt.Errorf("short crowd: %w", err)
	}
	measured.Short = shortRes
	rows = append(rows, crowdRows(fmt.Sprintf("crowd %d at %d/min", n, rate), short, 3, nil)...)
	return rows, nil
}

// evictionRow is the longest a closed tab of the crowd was held after its last
// answer (sim.Evictions: each is also checked against its own bound, in the
// invariant violations), against the longest bound docs/ENGINE.md states:
// the far budget rounded up to its class, the grace, a pass of the sweep over
// the crowd (a tick sweeps the batch less what it admits), and the probes'
// resolution.
func evictionRow(label string, s sim.Summary, rc room.Config, visitors int) Row {
	bound := time.Duration(room.ToldMS(room.ToldClass(room.FarPollAfter.Milliseconds())))*time.Millisecond +
		time.Duration(rc.HeartbeatTTLSeconds)*time.Second +
		time.Duration(sim.SweepTicks(int64(visitors), roomdb.EvictBatch, rc.AdmitPerMinute))*time.Second + sim.ProbeEvery
	ev := s.Evictions
	logf("crowd: %s: %d closed tabs, %d seen evicted, %d held past their own bound; held at most %.2f of it", label, ev.Closed, ev.Observed, ev.Late, ev.Worst)
	return row(label+": a closed tab evicted after its last answer, at most (baseline: the far budget's bound)", ev.MaxDelay.Seconds(), "s", bound.Seconds(), ratioAtMost(1))
}

// measureLong keeps what the long crowd measured for the parts after it.
func measureLong(res *sim.Result, long sim.Summary) {
	measured.Long = res
	measured.LongPerMinute, measured.LongMeanWait = long.RequestsPerWaitMinute, long.MeanWait
	measured.LongWaitRequests = long.RequestsAt(costWaitMinutes)
	measured.LongPollsPerMinute = long.PollsPerWaitMinute
	measured.FixedPerMinute = long.FixedRequestsPerWaitMinute
	from, to := res.Span()
	if peak, mean := res.Log.Peak(sim.KindSet(sim.KindPoll), peakWindow, from, to); mean > 0 {
		measured.LongPeak = peak / mean
	}
	a, b := res.StatusLine()
	measured.LongStatusReads, measured.StatusBytes = a+b*costWaitMinutes, res.StatusBodyBytes()
}

// millionRateFlag is the admission rate of the million part.
var millionRateFlag = flag.Int64("million-rate", millionRate, "admissions a minute of the million part")

// moreParts are the parts beside those main lists.
func moreParts(d time.Duration, chart string) map[string]func(context.Context) ([]Row, error) {
	return map[string]func(context.Context) ([]Row, error){
		"capacity": func(ctx context.Context) ([]Row, error) { return benchCapacity(ctx, d) },
		// spread alone: the spread join figure (also part of capacity).
		"spread":  func(ctx context.Context) ([]Row, error) { return joinCapacitySpread(ctx, d) },
		"cost":    benchCost,
		"notices": func(ctx context.Context) ([]Row, error) { return benchNotices(ctx, d) },
		"million": func(ctx context.Context) ([]Row, error) { return benchMillion(ctx, *millionRateFlag, chart) },
		// tickparts alone: a tick admitting 10,000 taken apart (not in the default run).
		"tickparts": benchTickParts,
		"moments":   func(ctx context.Context) ([]Row, error) { return benchMoments(ctx, *visitorsFlag) },
		// prequeue alone: the moments' pre-queue rows (scaled by -visitors), not in the default run.
		"prequeue": func(ctx context.Context) ([]Row, error) {
			f := float64(*visitorsFlag) / longVisitors
			return prequeueRows(ctx, max(int(prequeueVisitors*f), 100), max(int64(prequeueRate*f), 60))
		},
		// prequeue-million: the moments' pre-queue rows with 1,000,000 visitors (BENCH_MILLION=1).
		"prequeue-million": func(ctx context.Context) ([]Row, error) { return benchMillionPrequeue(ctx, *millionRateFlag) },
		// tenmillion: the 10,000,000-visitor on-sale (BENCH_TEN_MILLION=1), sized by -ten-million-visitors.
		"tenmillion": func(ctx context.Context) ([]Row, error) { return benchTenMillion(ctx, *tenMillionFlag) },
	}
}

// benchMillion plays the 1,000,000-visitor on-sale with every invariant check
// on; the figure that matters is how long the simulation itself took.
func benchMillion(ctx context.Context, rate int64, chart string) ([]Row, error) {
	res, s, err := playCrowd(ctx, crowdConfig("million", millionVisitors, rate), chart)
	if err != nil {
		return nil, fmt.Errorf("million: %w", err)
	}
	label := fmt.Sprintf("on-sale %d at %d/min", millionVisitors, rate)
	return append(crowdRows(label, s, 0.7, atMost(15*60)), pollPeakRow(label, res)), nil
}
