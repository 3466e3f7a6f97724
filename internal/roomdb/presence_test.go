package roomdb_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// slotCalls counts the commands a client sends that name a key of one hash
// tag (a script's KEYS, a plain command's key).
type slotCalls struct {
	tag string
	n   atomic.Int64
}

func (h *slotCalls) count(c redis.Cmder) {
	for _, a := range c.Args() {
		if s, ok := a.(string); ok && strings.Contains(s, "{"+h.tag+"}") {
			h.n.Add(1)
			return
		}
	}
}

// farRoom is a spread room slow enough (6 a minute) that its zone, the first
// places whose polls go to the room's shard, is short: 15 places and the
// progress's stride with a 60 s grace.
func farRoom() *room.Config {
	return spreadRoom(func(c *room.Config) { c.AdmitPerMinute = 6 })
}

// joinFar joins n visitors on the arrival shards and merges them (one tick;
// the clock stands, so nobody is admitted), and returns their tickets.
func (e *env) joinFar(n int) []room.Ticket {
	e.t.Helper()
	e.enqueue("confirm") // the engine's settings, confirmed: the joins spread
	out := make([]room.Ticket, 0, n)
	for i := range n {
		p := e.join(e.eng, fmt.Sprintf("far%d", i), room.JoinProof{Client: fmt.Sprintf("10.7.%d.%d", i/250, i%250)})
		if residue(p.Ticket.Seq) == 0 {
			e.t.Fatalf("join %d went to the room's shard", i)
		}
		out = append(out, p.Ticket)
	}
	if r := e.tick(); r.MergeErr != nil {
		e.t.Fatalf("merge: %v", r.MergeErr)
	}
	return out
}

// shardBeat reports whether the ticket's arrival shard holds a heartbeat of it.
func (e *env) shardBeat(t room.Ticket) bool {
	e.t.Helper()
	k := roomdb.ArrivalKeysFor(e.room, int(residue(t.Seq))-1)
	ok, err := e.rdb.HExists(e.ctx, k.Heartbeats(), roomdb.ShardHeartbeatField(t.Seq)).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return ok
}

// rank is the ticket's exact position in the queue (0 when not there).
func (e *env) rank(t room.Ticket) int64 {
	e.t.Helper()
	r, err := e.rdb.ZRank(e.ctx, e.keys.Queue, fmt.Sprint(t.Seq)).Result()
	if err == redis.Nil {
		return 0
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return r + 1
}

// A far visitor of a spread room polls on the arrival shard it joined on: the
// poll touches no key of the room's slot, keeps the heartbeat there, and tells
// a position within half the progress's stride of the exact one (the progress
// is the last tick's, and nothing moved since).
func TestFarPollsTouchNoKeyOfTheRoomsSlot(t *testing.T) {
	h := &slotCalls{}
	rdb := hooked(t, eachCmd(h.count))
	e := newEnv(t, rdb, farRoom())
	h.tag = e.room
	tickets := e.joinFar(600)
	stride := int64((600 + 1 + 255) / 256) // the queue holds the joins and "confirm"
	far := 0
	for _, tk := range tickets[100:] {
		exact := e.rank(tk)
		before := h.n.Load()
		p := e.poll(tk)
		if n := h.n.Load() - before; n != 0 {
			t.Fatalf("a far poll (exact position %d) sent %d commands to the room's slot", exact, n)
		}
		if p.State != room.StateWaiting || p.PollWithin <= 0 {
			t.Fatalf("far poll: %+v", p)
		}
		if d := p.Position - exact; d < -stride/2-1 || d > stride/2+1 {
			t.Errorf("position %d, exact %d: off by more than half the stride %d", p.Position, exact, stride)
		}
		if !e.shardBeat(tk) {
			t.Fatalf("no heartbeat on the shard after a poll there")
		}
		// The shard's heartbeat holds the class of the budget told, as the
		// room's shard writes it (lib.lua told_at, room.ToldClass).
		v, err := e.rdb.HGet(e.ctx, roomdb.ArrivalKeysFor(e.room, int(residue(tk.Seq))-1).Heartbeats(), roomdb.ShardHeartbeatField(tk.Seq)).Result()
		if _, class, ok := roomdb.ParseHeartbeat(v); err != nil || !ok || class != room.ToldClass(p.PollWithin.Milliseconds()) {
			t.Fatalf("the shard's heartbeat: class %d (%v), want room.ToldClass(%v) = %d", class, err, p.PollWithin, room.ToldClass(p.PollWithin.Milliseconds()))
		}
		far++
	}
	// The front's visitors poll the room's shard, exactly.
	p := e.poll(tickets[0])
	if p.Position != e.rank(tickets[0]) {
		t.Errorf("front poll: position %d, exact %d", p.Position, e.rank(tickets[0]))
	}
	if far == 0 {
		t.Fatal("no far poll")
	}
}

// A visitor who stops polling on the shard is evicted once the told poll and
// the grace have passed, by the ticks' sweep of the shards; one who polls
// there as told keeps the place, though the room's shard never hears of them.
func TestShardSilenceIsEvictedAsTold(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, farRoom())
		tickets := e.joinFar(600)
		silent := map[int]bool{}
		for i := 100; i < len(tickets); i += 10 {
			silent[i] = true
			if !e.shardBeat(tickets[i]) {
				t.Fatalf("no heartbeat of %d on its shard after the merge", i)
			}
		}
		// The silent ones' heartbeats are their joins', with the told poll of
		// the last place merged, at most the far budget (rounded up to its
		// class: 19 % more); the others poll a little before each budget.
		grace := 60 * time.Second
		end := e.clk.Now().Add(room.FarPollAfter*6/5 + grace + time.Minute)
		next := make([]time.Time, len(tickets))
		var longest time.Duration // the longest budget a shard gave
		for e.clk.Now().Before(end) {
			e.clk.Advance(2 * time.Second)
			e.tick()
			for i, tk := range tickets {
				if silent[i] || e.clk.Now().Before(next[i]) {
					continue
				}
				p := e.poll(tk)
				switch p.State {
				case room.StateWaiting:
					next[i] = e.clk.Now().Add(max(p.PollWithin-5*time.Second, time.Second))
					longest = max(longest, p.PollWithin)
				case room.StateAdmitted:
					next[i] = end.Add(time.Hour)
				default:
					t.Fatalf("visitor %d, polling as told, polled %s", i, p.State)
				}
			}
		}
		for i := range silent {
			if e.rank(tickets[i]) != 0 || e.shardBeat(tickets[i]) {
				t.Errorf("silent visitor %d still queued (%d) or on its shard after the told poll and the grace", i, e.rank(tickets[i]))
			}
		}
		if s := e.stats(); s.Evicted < int64(len(silent)) {
			t.Errorf("%d evicted, want at least the %d silent", s.Evicted, len(silent))
		}
		// At 6 a minute the last places are over an hour away: their shard
		// gives them the far budget, as the room's shard would.
		if longest != room.FarPollAfter {
			t.Errorf("the longest budget a shard gave: %v, want the far budget %v", longest, room.FarPollAfter)
		}
	})
}

// The visitors of the shards come to the room's shard before the front
// reaches them, so a room whose visitors poll as told admits every one of
// them, in ticket order, and skips nobody.
func TestShardVisitorsReachTheFrontThroughTheRoom(t *testing.T) {
	e := newEnv(t, redistest.Single(t), spreadRoom(func(c *room.Config) { c.AdmitPerMinute = 120 }))
	tickets := e.joinFar(120)
	next := make([]time.Time, len(tickets))
	g := e.grantOrder()
	end := e.clk.Now().Add(3 * time.Minute)
	for e.clk.Now().Before(end) {
		e.clk.Advance(time.Second)
		e.tick()
		g.collect()
		for i, tk := range tickets {
			if e.clk.Now().Before(next[i]) {
				continue
			}
			p := e.poll(tk)
			switch {
			case p.State == room.StateWaiting:
				next[i] = e.clk.Now().Add(min(p.PollWithin, 10*time.Minute))
			case p.State == room.StateAdmitted:
				next[i] = end.Add(time.Hour)
			default:
				t.Fatalf("visitor %d polled %s", i, p.State)
			}
		}
	}
	if s := e.stats(); s.Evicted != 0 {
		t.Errorf("%d evicted, want none", s.Evicted)
	}
	for i := 1; i < len(g.order); i++ {
		if g.order[i] < g.order[i-1] {
			t.Fatalf("grant %d (%d) after %d: not in ticket order", i, g.order[i], g.order[i-1])
		}
	}
	if len(g.order) < len(tickets) {
		t.Errorf("%d of %d admitted in 3 minutes at 120 a minute", len(g.order), len(tickets))
	}
}

// A leave on the shard's side: the next poll answers expired, not a place
// from the shard's heartbeat.
func TestLeaveOfAShardVisitor(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, farRoom())
		tickets := e.joinFar(200)
		tk := tickets[150]
		if p := e.poll(tk); p.State != room.StateWaiting {
			t.Fatalf("poll: %+v", p)
		}
		if err := e.eng.Leave(e.ctx, tk); err != nil {
			t.Fatal(err)
		}
		if p := e.poll(tk); p.State != room.StateExpired {
			t.Errorf("poll after the leave: %s, want expired", p.State)
		}
	})
}

// After a total loss of Redis, a far visitor's poll restores the place on the
// room's shard and the heartbeat on the arrival shard (poll.lua's adopt); from
// the next tick's progress on, the visitor polls the shard again.
func TestTotalLossRestoresShardPresence(t *testing.T) {
	h := &slotCalls{}
	rdb := redistest.Own(t) // a server of its own: the test flushes it
	rdb.AddHook(eachCmd(h.count))
	e := newEnv(t, rdb, farRoom())
	h.tag = e.room
	tickets := e.joinFar(300)
	tk := tickets[240]
	e.poll(tk)
	if err := rdb.FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The durable store's restore puts the settings back (a new epoch), and
	// the admission loop's first tick raises the merged mark past every
	// ticket from before the loss.
	e.put(*farRoom())
	e.tick()
	// Those ahead come back first: the first of them into the zone (their
	// heartbeats on the room's shard), the rest on their shards.
	for _, o := range tickets[:240] {
		e.poll(o)
	}
	p := e.poll(tk)
	if p.State != room.StateWaiting || e.rank(tk) != 241 {
		t.Fatalf("poll after the loss: %+v, queued at %d", p, e.rank(tk))
	}
	if !e.shardBeat(tk) {
		t.Fatal("no heartbeat on the shard after the restore")
	}
	hb, err := rdb.HExists(e.ctx, e.keys.Heartbeats, roomdb.HeartbeatField(tk.Seq)).Result()
	if err != nil || hb {
		t.Fatalf("a heartbeat on the room's shard too (%v, %v): the room's sweep would judge it", hb, err)
	}
	e.tick() // publishes the progress
	before := h.n.Load()
	e.clk.Advance(2 * time.Second)
	if p := e.poll(tk); p.State != room.StateWaiting {
		t.Fatalf("poll: %+v", p)
	}
	if n := h.n.Load() - before; n != 0 {
		t.Errorf("after the tick the far poll sent %d commands to the room's slot", n)
	}
}

// A shard keeps a heartbeat in 6 bytes (the sequence over 16: its
// sequences share one residue), and takes the 7-byte fields of before: a
// poll moves one to the new field, and the sweep evicts a stale visitor of
// either field, and nobody else.
func TestShardHeartbeatFields(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, farRoom())
		tickets := e.joinFar(300)
		key := func(tk room.Ticket) string {
			return roomdb.ArrivalKeysFor(e.room, int(residue(tk.Seq))-1).Heartbeats()
		}
		for s := range room.MaxJoinShards {
			fields, err := rdb.HKeys(e.ctx, roomdb.ArrivalKeysFor(e.room, s).Heartbeats()).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fields {
				if len(f) != 6 {
					t.Fatalf("shard %d: a heartbeat field of %d bytes, want 6", s, len(f))
				}
			}
		}
		// As a shard written before: the heartbeat in the room's field.
		toOld := func(tk room.Ticket, v string) {
			k := key(tk)
			if v == "" {
				v = rdb.HGet(e.ctx, k, roomdb.ShardHeartbeatField(tk.Seq)).Val()
			}
			if err := rdb.HDel(e.ctx, k, roomdb.ShardHeartbeatField(tk.Seq)).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.HSet(e.ctx, k, roomdb.HeartbeatField(tk.Seq), v).Err(); err != nil {
				t.Fatal(err)
			}
		}
		moved := tickets[200]
		toOld(moved, "")
		if p := e.poll(moved); p.State != room.StateWaiting {
			t.Fatalf("poll of an old field: %+v", p)
		}
		if !e.shardBeat(moved) || rdb.HExists(e.ctx, key(moved), roomdb.HeartbeatField(moved.Seq)).Val() {
			t.Errorf("the poll left the heartbeat in the old field")
		}
		// Two stale, one in each field: the next tick's sweep evicts both.
		long := roomdb.HeartbeatValue(e.clk.Now().Add(-time.Hour).UnixMilli())
		staleOld, staleNew := tickets[210], tickets[221]
		toOld(staleOld, long)
		if err := rdb.HSet(e.ctx, key(staleNew), roomdb.ShardHeartbeatField(staleNew.Seq), long).Err(); err != nil {
			t.Fatal(err)
		}
		before := e.stats().Evicted
		e.tick()
		if e.rank(staleOld) != 0 || e.rank(staleNew) != 0 {
			t.Errorf("stale visitors still queued: %d (old field), %d (new)", e.rank(staleOld), e.rank(staleNew))
		}
		if n := e.stats().Evicted - before; n != 2 {
			t.Errorf("%d evicted, want the 2 stale", n)
		}
	})
}
