package roomdb_test

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// toldEnv is a room where nobody is admitted (its one slot held by a session)
// but whose pace is admitPerMinute, as a room's with a free slot is (lib.lua
// pace: the flag the ticks keep is cleared by hand; they take nine ticks to set
// it again, and a silent visitor's heartbeat keeps the class it was told); the
// visitor under test stands behind `ahead` others who keep polling.
func toldEnv(t *testing.T, rdb redis.UniversalClient, rate int64, ahead int, opts ...roomdb.Option) (*env, []room.Ticket, room.Ticket) {
	t.Helper()
	cfg := cfgWith(func(c *room.Config) { c.MaxActive, c.SessionTTLSeconds, c.AdmitPerMinute = 1, 86_400, 60 })
	e := newEnv(t, rdb, cfg, opts...)
	e.warm()
	holder := e.enqueueN(1)[0]
	e.tick()
	e.consume(holder.Seq)
	// A minute later nothing was admitted in the last minute: ETAs come from the setting.
	e.clk.Advance(61 * time.Second)
	e.tick()
	cfg.AdmitPerMinute = rate
	e.put(*cfg)
	e.rdb.HSet(e.ctx, e.keys.Config, "full", "0")
	e.rdb.HSet(e.ctx, e.keys.State, "fl", "0")
	var front []room.Ticket
	for i := range ahead {
		front = append(front, e.enqueue("a"+string(rune('a'+i))).Ticket)
	}
	return e, front, e.enqueue("me").Ticket
}

// silence advances the clock by d in steps of at most 7 s, ticking after each
// step and polling the visitors in front (so only the one under test is
// silent), and returns what the ticks evicted.
func (e *env) silence(d time.Duration, front []room.Ticket) (evicted int64) {
	e.t.Helper()
	for d > 0 {
		step := min(d, 7*time.Second)
		e.clk.Advance(step)
		d -= step
		for _, f := range front {
			e.poll(f)
		}
		evicted += e.tick().Evicted
	}
	return evicted
}

// The heartbeat is a deadline: a visitor told to come back in N minutes (the
// engine's budget, PollWithin) who comes back within it plus the grace is
// never evicted, by the sweep or by admission, and keeps the place; one who
// misses it by more is evicted by the sweep, also when the queue is longer than
// the sweep's batch.
func TestToldPollIsTheHeartbeat(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		grace := time.Duration(baseConfig().HeartbeatTTLSeconds) * time.Second
		for _, c := range []struct {
			name   string
			rate   int64
			ahead  int
			batch  int
			within time.Duration // the budget the engine gives the visitor
		}{
			// 4 ahead at 1 a minute: ETA 5 min, plus the slack, capped.
			{"5 minutes back: the longest near budget", 1, 4, 2000, room.MaxPollAfter},
			// 2 ahead at 60 a minute: ETA 3 s plus the slack.
			{"near the front: ETA plus slack", 60, 2, 2000, 3*time.Second + room.PollSlack},
			{"queue longer than the sweep's batch", 1, 4, 2, room.MaxPollAfter},
			// 11 ahead at 1 a minute: ETA 12 min, farther than the longest
			// near budget and FarLeft: the ETA less FarLeft.
			{"farther: the ETA less FarLeft", 1, 11, 2000, 12*time.Minute - room.FarLeft},
			// 20 ahead: ETA 21 min, the longest budget; a silence of it and
			// the grace keeps the place.
			{"far back: the far budget", 1, 20, 2000, room.FarPollAfter},
			{"far back, queue longer than the sweep's batch", 1, 20, 2, room.FarPollAfter},
		} {
			t.Run(c.name, func(t *testing.T) {
				var opts []roomdb.Option
				if c.batch != 2000 {
					opts = append(opts, roomdb.WithEvictBatch(c.batch))
				}
				told := time.Duration(room.ToldMS(room.ToldClass(c.within.Milliseconds()))) * time.Millisecond
				t.Run("on time", func(t *testing.T) {
					e, front, me := toldEnv(t, rdb, c.rate, c.ahead, opts...)
					p := e.poll(me)
					if p.PollWithin != c.within {
						t.Fatalf("PollWithin = %v, want %v", p.PollWithin, c.within)
					}
					if told < c.within || told > c.within*6/5 {
						t.Fatalf("told %v for a budget of %v: the class must round up by at most a fifth", told, c.within)
					}
					// Back at the last instant: the budget, its rounding and the grace.
					if ev := e.silence(told+grace, front); ev != 0 {
						t.Fatalf("evicted %d while the visitor was within the told poll and the grace", ev)
					}
					if got := e.members(e.keys.Queue); !contains(got, me.Seq) {
						t.Fatalf("the visitor is gone from the queue %v", got)
					}
					restored := e.rdb.HGet(e.ctx, e.keys.State, "restored").Val()
					if p := e.poll(me); p.State != room.StateWaiting || p.Position != int64(c.ahead+1) {
						t.Fatalf("back on time: %+v, want waiting at %d", viewOf(p), c.ahead+1)
					}
					if again := e.rdb.HGet(e.ctx, e.keys.State, "restored").Val(); again != restored {
						t.Fatalf("the place was restored (restored %q → %q): it had been evicted", restored, again)
					}
				})
				t.Run("on time, then admitted", func(t *testing.T) {
					e, front, me := toldEnv(t, rdb, c.rate, c.ahead, opts...)
					e.poll(me)
					for _, f := range front {
						if err := e.eng.Leave(e.ctx, f); err != nil {
							t.Fatal(err)
						}
					}
					e.clk.Advance(told + grace)
					// A slot frees at the visitor's last allowed instant: admission
					// checks the heartbeat exactly and grants it.
					cfg := baseConfig()
					cfg.MaxActive, cfg.SessionTTLSeconds, cfg.AdmitPerMinute = 2, 86_400, 60
					e.put(cfg)
					if r := e.tick(); r.Admitted != 1 || r.Evicted != 0 {
						t.Fatalf("tick %+v, want the visitor admitted", r)
					}
					if p := e.poll(me); p.State != room.StateAdmitted {
						t.Fatalf("visitor %s, want admitted", p.State)
					}
				})
				t.Run("missed", func(t *testing.T) {
					e, front, me := toldEnv(t, rdb, c.rate, c.ahead, opts...)
					e.poll(me)
					ev := e.silence(told+grace, front)
					e.clk.Advance(time.Millisecond)
					for range 4 + (c.ahead+1)/c.batch { // ticks enough for a sweep longer than one batch
						ev += e.silence(500*time.Millisecond, front)
					}
					if ev != 1 {
						t.Fatalf("evicted %d once the told poll and the grace passed, want 1", ev)
					}
					if got := e.members(e.keys.Queue); contains(got, me.Seq) || len(got) != c.ahead {
						t.Fatalf("queue %v: want the %d in front, without the silent visitor", got, c.ahead)
					}
				})
			})
		}
	})
}

// The engine stores the class of the budget it answers with (the layout
// HeartbeatValueTold describes), and a heartbeat without a class (a tool's
// HeartbeatValue, or one written before classes) allows the grace alone.
func TestToldHeartbeatLayout(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e, front, me := toldEnv(t, rdb, 60, 2)
		p := e.poll(me)
		now := e.clk.Now().UnixMilli()
		got := e.rdb.HGet(e.ctx, e.keys.Heartbeats, roomdb.HeartbeatField(me.Seq)).Val()
		class := room.ToldClass(p.PollWithin.Milliseconds())
		if want := roomdb.HeartbeatValueTold(now, class); got != want {
			t.Fatalf("heartbeat %x, want %x", got, want)
		}
		if seen, c, ok := roomdb.ParseHeartbeat(got); !ok || seen != now || c != class {
			t.Fatalf("ParseHeartbeat = %d, %d, %v; want %d, %d", seen, c, ok, now, class)
		}
		// Class 0: stale after the grace alone.
		if err := e.rdb.HSet(e.ctx, e.keys.Heartbeats, roomdb.HeartbeatField(me.Seq), roomdb.HeartbeatValue(now)).Err(); err != nil {
			t.Fatal(err)
		}
		grace := time.Duration(baseConfig().HeartbeatTTLSeconds) * time.Second
		if ev := e.silence(grace, front); ev != 0 {
			t.Fatalf("evicted %d within the grace", ev)
		}
		e.clk.Advance(time.Millisecond)
		if ev := e.silence(time.Second, front); ev != 1 {
			t.Fatalf("evicted %d after the grace, want 1", ev)
		}
	})
}

func TestToldClass(t *testing.T) {
	for _, ms := range []int64{0, 1, 999, 1000, 1001, 5000, 65_000, 299_999, 300_000, 3_600_000} {
		c := room.ToldClass(ms)
		if room.ToldMS(c) < ms || (c > 1 && room.ToldMS(c-1) >= ms) || c > 63 {
			t.Errorf("ToldClass(%d) = %d (told %d ms): not the smallest class covering it", ms, c, room.ToldMS(c))
		}
	}
}

func contains(xs []int64, x int64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// The embedded Redis of make dev (miniredis, no struct library) runs the same
// scripts: heartbeats with their class in the same bytes, eviction after the
// told poll and the grace, admission, and the join limit in the join.
func TestToldPollOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	e, front, me := toldEnv(t, rdb, 60, 2)
	p := e.poll(me)
	now := e.clk.Now().UnixMilli()
	class := room.ToldClass(p.PollWithin.Milliseconds())
	if got, want := rdb.HGet(e.ctx, e.keys.Heartbeats, roomdb.HeartbeatField(me.Seq)).Val(), roomdb.HeartbeatValueTold(now, class); got != want {
		t.Fatalf("heartbeat %x, want %x", got, want)
	}
	told := time.Duration(room.ToldMS(class)) * time.Millisecond
	grace := time.Duration(baseConfig().HeartbeatTTLSeconds) * time.Second
	if ev := e.silence(told+grace, front); ev != 0 {
		t.Fatalf("evicted %d within the told poll and the grace", ev)
	}
	e.clk.Advance(time.Millisecond)
	if ev := e.silence(time.Second, front); ev != 1 {
		t.Fatalf("evicted %d after them, want 1", ev)
	}
	cfg := cfgWith(func(c *room.Config) { c.MaxActive, c.AdmitPerMinute, c.ClientEnqueuePerMinute = 10, 600, 10 })
	e.put(*cfg)
	e.clk.Advance(time.Second)
	if r := e.tick(); r.Admitted != 2 {
		t.Fatalf("tick %+v, want the 2 in front admitted", r)
	}
	if _, err := e.eng.Join(e.ctx, e.room, "x", room.JoinProof{Client: "192.0.2.1"}); err != nil {
		t.Fatalf("first join: %v", err)
	}
	if _, err := e.eng.Join(e.ctx, e.room, "y", room.JoinProof{Client: "192.0.2.1"}); !errors.Is(err, room.ErrRateLimited) {
		t.Fatalf("second join at 10 a minute (burst 1): %v, want limited", err)
	}
}

// commandCalls reads INFO commandstats: calls per command.
func commandCalls(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, l := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(l, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		out[name] = n
	}
	return out
}

// A waiting visitor's poll makes four commands in its script (HMGET of the
// settings, ZRANK, HGET and HSET of the heartbeat: no ZCARD, the count is kept
// with the settings), on a server of its own so nothing else counts.
func TestPollCommonPathCalls(t *testing.T) {
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	e := newEnv(t, rdb, cfgWith(nil), roomdb.WithMinPollInterval(500*time.Millisecond))
	ts := e.enqueueN(3)
	e.clk.Advance(time.Second)
	e.poll(ts[1]) // the script is loaded and the settings cached
	e.clk.Advance(time.Second)
	before := commandCalls(t, rdb)
	if p := e.poll(ts[1]); p.State != room.StateWaiting || p.Position != 2 || p.Waiting != 3 {
		t.Fatalf("poll: %+v", viewOf(p))
	}
	after := commandCalls(t, rdb)
	calls := map[string]int64{}
	for name, n := range after {
		if d := n - before[name]; d > 0 && name != "info" && name != "evalsha" {
			calls[name] = d
		}
	}
	want := map[string]int64{"hmget": 1, "zrank": 1, "hget": 1, "hset": 1}
	if !maps.Equal(calls, want) {
		t.Errorf("a waiting visitor's poll ran %v, want %v", calls, want)
	}
}
