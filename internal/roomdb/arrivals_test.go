package roomdb_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// spreadRoom is a queue room whose joins spread over three arrival shards,
// with a bucket that admits nobody until the clock moves.
func spreadRoom(f func(*room.Config)) *room.Config {
	return cfgWith(func(c *room.Config) {
		c.JoinShards = 3
		c.MaxActive = 100_000
		c.AdmitPerMinute = 600 // 10 a second
		if f != nil {
			f(c)
		}
	})
}

// join joins through eng with the proof, failing the test on an error.
func (e *env) join(eng *roomdb.Engine, visitor string, proof room.JoinProof) room.Place {
	e.t.Helper()
	p, err := eng.Join(e.ctx, e.room, visitor, proof)
	if err != nil {
		e.t.Fatalf("Join(%s): %v", visitor, err)
	}
	return p
}

// grants records the sequences granted, in the order ticks granted them.
type grants struct {
	e     *env
	order []int64
	seen  map[int64]bool
}

func (e *env) grantOrder() *grants { return &grants{e: e, seen: map[int64]bool{}} }

// collect appends the grants made since the last call (after a tick).
func (g *grants) collect() {
	for _, s := range g.e.grants() {
		if !g.seen[s] {
			g.seen[s] = true
			g.order = append(g.order, s)
		}
	}
}

// queued is the queue's members in score order.
func (e *env) queued() []int64 { return e.members(e.keys.Queue) }

// residue is the source a sequence came from: 0 the room's own shard, i+1 arrival shard i.
func residue(seq int64) int64 { return seq % room.SeqResidues }

// Joins spread over the arrival shards (and the room's own shard, for an
// engine that has not confirmed the settings yet) are queued in ticket order
// once merged, whatever the interleaving of joins and ticks, every one exactly
// once; positions are then exact, and admissions follow ticket order (I3).
func TestArrivalShardsKeepTicketOrder(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(nil))
		rng := rand.New(rand.NewPCG(7, 11))
		engines := []*roomdb.Engine{e.eng, roomdb.New(rdb, roomdb.WithClock(e.clk.Now))}
		var tickets []room.Ticket
		sources := map[int64]int{}
		for i := range 300 {
			eng := engines[rng.IntN(len(engines))]
			if rng.IntN(25) == 0 {
				// A fresh engine (a new Lambda) goes to the room's shard first.
				eng = roomdb.New(rdb, roomdb.WithClock(e.clk.Now))
			}
			p := e.join(eng, fmt.Sprintf("v%d", i), room.JoinProof{Client: fmt.Sprintf("10.0.%d.%d", i/250, i%250)})
			if p.State != room.StateWaiting || p.Position < 1 || p.Ticket.Seq == 0 {
				t.Fatalf("join %d: %+v", i, p)
			}
			tickets = append(tickets, p.Ticket)
			sources[residue(p.Ticket.Seq)]++
			if rng.IntN(40) == 0 {
				e.tick() // the clock stands still: nobody is admitted, arrivals are merged
			}
		}
		if len(sources) < 3 {
			t.Errorf("joins came from %d sources (%v), want the shards and the room's own", len(sources), sources)
		}
		all := seqs(tickets)
		slices.Sort(all)
		if len(slices.Compact(slices.Clone(all))) != len(all) {
			t.Fatal("two joins got the same sequence")
		}
		// WHEN the next tick merges what is left. A read of the shards that
		// timed out on a loaded machine holds this engine's merges back while
		// its clock stands still; another engine (another Lambda) tries again,
		// as the admission loop's next tick would once the hold ended.
		r := e.tick()
		for try := 0; errors.Is(r.MergeErr, room.ErrUnavailable) && try < 20; try++ {
			var err error
			if r, err = roomdb.New(rdb, roomdb.WithClock(e.clk.Now)).Tick(e.ctx, e.room); err != nil {
				t.Fatalf("Tick: %v", err)
			}
		}
		if r.MergeErr != nil || r.Admitted != 0 {
			t.Fatalf("tick: %+v", r)
		}
		// THEN the queue holds every join once, in ticket order
		if got := e.queued(); !slices.Equal(got, all) {
			t.Fatalf("queue after the merge: %d members, want the %d joins in sequence order", len(got), len(all))
		}
		if s := e.stats(); s.Waiting != int64(len(all)) {
			t.Errorf("waiting %d, want %d", s.Waiting, len(all))
		}
		// and each visitor's position is exact
		for _, tk := range tickets[:20] {
			if p := e.poll(tk); p.State != room.StateWaiting || p.Position != int64(slices.Index(all, tk.Seq)+1) {
				t.Errorf("poll %d: %s at %d, want waiting at %d", tk.Seq, p.State, p.Position, slices.Index(all, tk.Seq)+1)
			}
		}
		// and admissions follow ticket order
		var admitted []int64
		for range 40 {
			e.clk.Advance(time.Second)
			e.tick()
			admitted = e.grants()
			if len(admitted) == len(all) {
				break
			}
		}
		if !slices.Equal(admitted, all[:len(admitted)]) || len(admitted) < 300 {
			t.Errorf("admitted %d, not the first in ticket order", len(admitted))
		}
	})
}

// A poll before the merge finds an arriving visitor waiting and restores
// nothing (a restored place would overtake arrivals still on a shard); after
// the tick the place is exact. A visitor who leaves before the merge is never
// queued.
func TestArrivalBeforeTheMerge(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(nil))
		first := e.enqueue("first") // the room's own shard: confirms the settings
		if residue(first.Ticket.Seq) != 0 {
			t.Fatalf("first join's sequence %d is not the room's own", first.Ticket.Seq)
		}
		a := e.join(e.eng, "a", room.JoinProof{Client: "10.1.0.1"})
		b := e.join(e.eng, "b", room.JoinProof{Client: "10.1.0.2"})
		if residue(a.Ticket.Seq) == 0 || residue(b.Ticket.Seq) == 0 {
			t.Fatalf("joins after the confirmation did not go to a shard: %d %d", a.Ticket.Seq, b.Ticket.Seq)
		}
		// The place is an estimate until the merge: come back after the next tick.
		if a.PollWithin != 2*time.Second || a.State != room.StateWaiting {
			t.Errorf("a shard's join: %s, poll within %s; want waiting, 2s", a.State, a.PollWithin)
		}
		// WHEN a polls before any tick
		p := e.poll(a.Ticket)
		// THEN it is waiting, and nothing was put in the queue
		if p.State != room.StateWaiting || p.Position < 1 {
			t.Errorf("poll before the merge: %+v", p)
		}
		if q := e.queued(); len(q) != 0 {
			t.Errorf("a poll before the merge queued %v", q)
		}
		// and b leaves before the merge
		if err := e.eng.Leave(e.ctx, b.Ticket); err != nil {
			t.Fatal(err)
		}
		if r := e.tick(); r.Merged != 2 || r.MergeErr != nil {
			t.Errorf("tick merged %d (%v), want first and a", r.Merged, r.MergeErr)
		}
		want := []int64{first.Ticket.Seq, a.Ticket.Seq}
		slices.Sort(want)
		if q := e.queued(); !slices.Equal(q, want) {
			t.Errorf("queue %v, want %v (b left)", q, want)
		}
		if p := e.poll(a.Ticket); p.State != room.StateWaiting || p.Position != int64(slices.Index(want, a.Ticket.Seq)+1) {
			t.Errorf("poll after the merge: %s at %d", p.State, p.Position)
		}
		if p := e.poll(b.Ticket); p.State != room.StateExpired {
			t.Errorf("b after leaving: %s, want expired", p.State)
		}
		// and a second tick merges nothing again
		if r := e.tick(); r.Merged != 0 {
			t.Errorf("second tick merged %d again", r.Merged)
		}
	})
}

// On a shard a client's join limit and a challenge's nonce are checked as on
// the room's shard; settings not confirmed for a second send the join to the
// room's shard again.
func TestArrivalShardChecks(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(func(c *room.Config) { c.ClientEnqueuePerMinute = 1 }))
		e.enqueue("confirm")
		p := e.join(e.eng, "a", room.JoinProof{Client: "10.2.0.1"})
		if residue(p.Ticket.Seq) == 0 {
			t.Fatalf("join went to the room's shard: %d", p.Ticket.Seq)
		}
		var re *room.RetryError
		if _, err := e.eng.Join(e.ctx, e.room, "a2", room.JoinProof{Client: "10.2.0.1"}); !errors.As(err, &re) {
			t.Errorf("second join of one client within a minute: %v, want a RetryError", err)
		}
		// Settings older than a second: a join without a client address goes
		// to the room's shard, which confirms them.
		e.clk.Advance(1500 * time.Millisecond)
		if p := e.join(e.eng, "c", room.JoinProof{}); residue(p.Ticket.Seq) != 0 {
			t.Errorf("join with stale settings went to shard %d", residue(p.Ticket.Seq)-1)
		}
		if p := e.join(e.eng, "d", room.JoinProof{Client: "10.2.0.4"}); residue(p.Ticket.Seq) == 0 {
			t.Errorf("join after the confirmation went to the room's shard")
		}
		// One with a client address reads them first, and joins on the
		// client's shard, where its joins are counted.
		e.clk.Advance(1500 * time.Millisecond)
		if p := e.join(e.eng, "c2", room.JoinProof{Client: "10.2.0.3"}); residue(p.Ticket.Seq) == 0 {
			t.Errorf("a client's join with stale settings went to the room's shard")
		}

		// A room asking a challenge: not enough work is refused on the shard, a nonce joins once.
		c := *spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 4 })
		e.put(c)
		e.clk.Advance(1500 * time.Millisecond)
		until := e.clk.Now().Add(time.Minute)
		// Nonces as a challenge of the spread room carries them: spent on their shard.
		n2, n3 := nonce("n2-", true), nonce("n3-", true)
		e.join(e.eng, "e", room.JoinProof{Bits: 4, Nonce: nonce("n-confirm", true), Until: until})
		var ce *room.ChallengeError
		if _, err := e.eng.Join(e.ctx, e.room, "f", room.JoinProof{Bits: 2, Nonce: "n1", Until: until}); !errors.As(err, &ce) || ce.Bits != 4 {
			t.Errorf("join with 2 bits of 4: %v", err)
		}
		if p := e.join(e.eng, "g", room.JoinProof{Bits: 4, Nonce: n2, Until: until}); residue(p.Ticket.Seq) == 0 {
			t.Errorf("challenge join went to the room's shard")
		}
		if _, err := e.eng.Join(e.ctx, e.room, "h", room.JoinProof{Bits: 4, Nonce: n2, Until: until}); !errors.Is(err, room.ErrChallengeSpent) {
			t.Errorf("a nonce's second join: %v, want ErrChallengeSpent", err)
		}
		// Once the settings are older than a second, a proof still goes to its
		// arrival shard (the engine confirms the settings first): the nonce it
		// spent there cannot join again through the room's shard.
		e.clk.Advance(1500 * time.Millisecond)
		if _, err := e.eng.Join(e.ctx, e.room, "i", room.JoinProof{Bits: 4, Nonce: n2, Until: until}); !errors.Is(err, room.ErrChallengeSpent) {
			t.Errorf("a nonce's join with stale settings after its join on a shard: %v, want ErrChallengeSpent", err)
		}
		e.clk.Advance(1500 * time.Millisecond)
		if p := e.join(e.eng, "j", room.JoinProof{Bits: 4, Nonce: n3, Until: until}); residue(p.Ticket.Seq) == 0 {
			t.Errorf("a proof with stale settings went to the room's shard")
		}
		if _, err := e.eng.Join(e.ctx, e.room, "k", room.JoinProof{Bits: 4, Nonce: n3, Until: until}); !errors.Is(err, room.ErrChallengeSpent) {
			t.Errorf("a nonce's second join: %v, want ErrChallengeSpent", err)
		}
	})
}

// Ticks running at once with joins still arriving merge each arrival once, and
// a room whose joinShards went back to 0 still merges what its shards hold.
func TestArrivalMergesUnderConcurrentTicks(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(nil))
		conf := e.enqueue("confirm")
		var mu sync.Mutex
		var all []int64
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				eng := roomdb.New(rdb, roomdb.WithClock(e.clk.Now))
				for i := range 60 {
					p, err := eng.Join(e.ctx, e.room, fmt.Sprintf("w%d-%d", w, i), room.JoinProof{Client: fmt.Sprintf("10.3.%d.%d", w, i)})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					all = append(all, p.Ticket.Seq)
					mu.Unlock()
				}
			}()
		}
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				eng := roomdb.New(rdb, roomdb.WithClock(e.clk.Now))
				for range 30 {
					if r, err := eng.Tick(e.ctx, e.room); err != nil || r.MergeErr != nil {
						t.Error(err, r.MergeErr)
						return
					}
				}
			}()
		}
		wg.Wait()
		// joinShards back to 0: the shards' leftovers are still merged.
		e.put(*cfgWith(func(c *room.Config) { c.MaxActive, c.AdmitPerMinute = 100_000, 600 }))
		e.tick()
		got := e.queued()
		want := append([]int64{}, all...)
		want = append(want, conf.Ticket.Seq)
		slices.Sort(want)
		want = slices.Compact(want)
		if !slices.Equal(got, want) {
			t.Errorf("queue has %d, want the %d joins once each, in order", len(got), len(want))
		}
		if s := e.stats(); s.Waiting != int64(len(got)) {
			t.Errorf("waiting %d, queue %d", s.Waiting, len(got))
		}
	})
}

// Draining a closed room drops the joins not merged yet too: they are gone
// for good, like the queue's.
func TestArrivalDrain(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(nil))
		e.enqueue("confirm")
		var ts []room.Ticket
		for i := range 5 {
			ts = append(ts, e.join(e.eng, fmt.Sprintf("d%d", i), room.JoinProof{Client: fmt.Sprintf("10.4.0.%d", i)}).Ticket)
		}
		c := *spreadRoom(func(c *room.Config) { c.Mode = room.ModeClosed })
		e.put(c)
		n, err := e.eng.Drain(e.ctx, e.room)
		if err != nil || n != 6 {
			t.Fatalf("Drain: %d, %v; want the 6 joins", n, err)
		}
		e.put(*spreadRoom(nil))
		if r := e.tick(); r.Merged != 0 {
			t.Errorf("a tick after the drain merged %d", r.Merged)
		}
		// and a drained arrival polls expired, and is not restored
		for _, tk := range ts {
			if p := e.poll(tk); p.State != room.StateExpired {
				t.Errorf("drained arrival %d polls %s", tk.Seq, p.State)
			}
		}
		if q := e.queued(); len(q) != 0 {
			t.Errorf("queue after the drain: %v", q)
		}
	})
}

// A shard's keys carry their own hash tag, never a room's: "~" is not in a room id.
func TestArrivalKeysHaveTheirOwnTag(t *testing.T) {
	tag := roomdb.ArrivalTag("r1", 2)
	if !strings.HasPrefix(tag, "r1~c") {
		t.Fatalf("shard 2's tag is %s, not r1~c<n>", tag)
	}
	k := roomdb.ArrivalKeysFor("r1", 2)
	for _, key := range []string{k.State, k.Arrivals, k.Limiter("h"), k.Proof("n")} {
		if !strings.HasPrefix(key, "vst:{"+tag+"}:") {
			t.Errorf("%s: not under {%s}", key, tag)
		}
	}
	if room.ValidRoomID(tag) {
		t.Error("a room id may contain ~: its tag could be another room's shard's")
	}
	if got := roomdb.KeysFor("r1").Arrivals(); got != "vst:{r1}:arr" {
		t.Errorf("the room's own arrival list is %s", got)
	}
}

// The shards' tags are spread over the slot space, away from the room's slot,
// so a cluster's contiguous slot ranges get them about evenly: checked against
// the real cluster's own hashing (CLUSTER KEYSLOT) and its slot map.
func TestArrivalShardsSpreadOverTheCluster(t *testing.T) {
	rdb := redistest.Cluster(t)
	ctx := context.Background()
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	nodeOf := func(slot int) int {
		for n, s := range shards {
			for _, r := range s.Slots {
				if int64(slot) >= r.Start && int64(slot) <= r.End {
					return n
				}
			}
		}
		t.Fatalf("slot %d has no node", slot)
		return -1
	}
	var onRoomsNode, elsewhere, most int
	for r := range 200 {
		id := fmt.Sprintf("onsale-%d", r)
		slot, err := rdb.ClusterKeySlot(ctx, roomdb.KeysFor(id).Config).Result()
		if err != nil || int(slot) != roomdb.Slot(id) {
			t.Fatalf("%s: the cluster hashes its keys to slot %d (%v), Slot says %d", id, slot, err, roomdb.Slot(id))
		}
		per := make([]int, len(shards))
		for i := range room.MaxJoinShards {
			tag := roomdb.ArrivalTag(id, i)
			got, err := rdb.ClusterKeySlot(ctx, roomdb.ArrivalKeysFor(id, i).Arrivals).Result()
			if err != nil || int(got) != roomdb.Slot(tag) {
				t.Fatalf("%s: the cluster hashes its keys to slot %d (%v), Slot says %d", tag, got, err, roomdb.Slot(tag))
			}
			// Shard i in arc i + 2 of 18 from the room's slot, so no two in one arc.
			lo, off := (i+2)*16384/(room.MaxJoinShards+3), (int(got)-int(slot)+16384)%16384
			if off < lo || off >= lo+16384/(room.MaxJoinShards+3) {
				t.Fatalf("%s: slot %d is %d past the room's slot %d, not in shard %d's arc from %d", tag, got, off, slot, i, lo)
			}
			per[nodeOf(int(got))]++
		}
		home := nodeOf(int(slot))
		for n, c := range per {
			if n == home {
				onRoomsNode += c
			} else {
				elsewhere += c
			}
			most = max(most, c)
		}
	}
	// 15 shards over 3 nodes of 5,461 slots, arcs of 910: a node meets at most 7 arcs.
	if most > 7 {
		t.Errorf("a node holds %d of a room's 15 shards", most)
	}
	if mean, other := float64(onRoomsNode)/200, float64(elsewhere)/200/float64(len(shards)-1); mean >= other {
		t.Errorf("the room's node holds %.2f shards on average, the others %.2f: it should hold fewer", mean, other)
	}
}

// Admissions while joins still arrive on the shards: across every tick, the
// visitors admitted come in ticket order, one tick's after the last's (I3),
// whatever shard or engine took each join and whenever the ticks run.
func TestArrivalAdmissionsInTicketOrderWhileJoining(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(func(c *room.Config) { c.AdmitPerMinute = 1200 })) // 2 a tick of 100 ms
		rng := rand.New(rand.NewPCG(3, 5))
		engines := []*roomdb.Engine{e.eng, roomdb.New(rdb, roomdb.WithClock(e.clk.Now)), roomdb.New(rdb, roomdb.WithClock(e.clk.Now))}
		granted := e.grantOrder()
		joins := 0
		for op := range 600 {
			e.clk.Advance(100 * time.Millisecond)
			if rng.IntN(3) > 0 {
				eng := engines[rng.IntN(len(engines))]
				e.join(eng, fmt.Sprintf("w%d", op), room.JoinProof{Client: fmt.Sprintf("10.5.%d.%d", op/250, op%250)})
				joins++
			}
			if rng.IntN(4) == 0 {
				// Any engine ticks; the grants of one tick are read after it.
				if _, err := engines[rng.IntN(len(engines))].Tick(e.ctx, e.room); err != nil {
					t.Fatal(err)
				}
				granted.collect()
			}
		}
		for range 400 {
			e.clk.Advance(time.Second)
			e.tick()
			granted.collect()
			if len(granted.order) == joins {
				break
			}
		}
		if len(granted.order) != joins {
			t.Fatalf("admitted %d of %d joins", len(granted.order), joins)
		}
		if !slices.IsSorted(granted.order) {
			for i := 1; i < len(granted.order); i++ {
				if granted.order[i] < granted.order[i-1] {
					t.Fatalf("granted %d after %d: out of ticket order (at %d of %d)", granted.order[i], granted.order[i-1], i, len(granted.order))
				}
			}
		}
	})
}

// The same with joins arriving concurrently with the ticks: a join may land
// on a shard between a tick's reads of two shards, which the watermark keeps
// for a later merge instead of letting it be queued behind a later join.
func TestArrivalAdmissionsInTicketOrderUnderConcurrentJoins(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(func(c *room.Config) { c.AdmitPerMinute = 6000 }))
		e.enqueue("confirm")
		var mu sync.Mutex
		joins := 1
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				eng := roomdb.New(rdb, roomdb.WithClock(e.clk.Now))
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := eng.Join(e.ctx, e.room, fmt.Sprintf("c%d-%d", w, i), room.JoinProof{Client: fmt.Sprintf("10.6.%d.%d", w, i%250)}); err != nil {
						var re *room.RetryError
						if !errors.As(err, &re) { // the same address again within its limit is fine
							t.Error(err)
							return
						}
						continue
					}
					mu.Lock()
					joins++
					mu.Unlock()
				}
			}()
		}
		granted := e.grantOrder()
		ticker := roomdb.New(rdb, roomdb.WithClock(e.clk.Now))
		for range 150 {
			e.clk.Advance(100 * time.Millisecond)
			if _, err := ticker.Tick(e.ctx, e.room); err != nil {
				t.Fatal(err)
			}
			granted.collect()
		}
		close(stop)
		wg.Wait()
		for range 2000 {
			e.clk.Advance(time.Second)
			e.tick()
			granted.collect()
			if len(granted.order) >= joins {
				break
			}
		}
		if len(granted.order) != joins {
			t.Fatalf("admitted %d of %d joins", len(granted.order), joins)
		}
		for i := 1; i < len(granted.order); i++ {
			if granted.order[i] < granted.order[i-1] {
				t.Fatalf("granted %d after %d: out of ticket order (at %d of %d)", granted.order[i], granted.order[i-1], i, len(granted.order))
			}
		}
	})
}

// hooked is a client of the single node with the hook added: Single makes a
// client per call, so the hook sees this test's commands alone.
func hooked(t *testing.T, h redis.Hook) *redis.Client {
	c := redistest.Single(t)
	c.AddHook(h)
	return c
}

// hgetalls counts the HGETALL calls a client makes.
type hgetalls struct{ n atomic.Int64 }

func (h *hgetalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *hgetalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "hgetall" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *hgetalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A proof reads the settings first only where the room would spread the join:
// before the opening (the pre-queue's crowd of joins) every join goes to the
// room's shard, with no extra read, however old the engine's settings are.
func TestArrivalProofReadsSettingsOnlyWhereJoinsSpread(t *testing.T) {
	reads := &hgetalls{}
	c := hooked(t, reads)
	e := newEnv(t, c, spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 4 }))
	opens := e.clk.Now().Add(time.Hour)
	e.put(*spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 4; c.OpensAt = &opens }))
	until := e.clk.Now().Add(2 * time.Hour)
	for i := range 5 {
		e.clk.Advance(1500 * time.Millisecond) // the engine's settings lapse before every join
		// A challenge issued before the opening: its proof is spent on the room's shard.
		n := nonce(fmt.Sprintf("pre-n%d", i), false)
		p := e.join(e.eng, fmt.Sprintf("pre%d", i), room.JoinProof{Bits: 4, Nonce: n, Until: until})
		if p.State != room.StatePrequeue {
			t.Fatalf("join before the opening: %s", p.State)
		}
	}
	if n := reads.n.Load(); n != 0 {
		t.Errorf("%d settings reads for 5 proofs before the opening, want 0", n)
	}
	// Past the opening the settings held say the joins spread, but they lapsed:
	// one read, and the proof goes to its shard.
	e.clk.Advance(2 * time.Hour)
	p := e.join(e.eng, "open", room.JoinProof{Bits: 4, Nonce: nonce("open-n", true), Until: e.clk.Now().Add(time.Minute)})
	if n := reads.n.Load(); n != 1 || residue(p.Ticket.Seq) == 0 {
		t.Errorf("a proof in the open room with lapsed settings: %d settings reads (want 1), shard %d", n, residue(p.Ticket.Seq)-1)
	}
}

// make dev's embedded Redis (miniredis) runs the arrival shards' scripts too:
// joins on the shards, the merge in ticket order, and the pipelined reads.
func TestArrivalShardsOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	e := newEnv(t, rdb, spreadRoom(nil))
	e.enqueue("confirm")
	var seqs []int64
	for i := range 12 {
		p := e.join(e.eng, fmt.Sprintf("m%d", i), room.JoinProof{Client: fmt.Sprintf("10.9.0.%d", i)})
		if residue(p.Ticket.Seq) == 0 {
			t.Fatalf("join %d went to the room's shard", i)
		}
		seqs = append(seqs, p.Ticket.Seq)
	}
	if r, err := e.eng.Tick(e.ctx, e.room); err != nil || r.MergeErr != nil {
		t.Fatalf("tick: %v %v", err, r.MergeErr)
	}
	queued, err := rdb.ZRange(e.ctx, roomdb.KeysFor(e.room).Queue, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(seqs)
	slices.Sort(sorted)
	var want []string
	for _, s := range sorted {
		want = append(want, strconv.FormatInt(s, 10))
	}
	if got := queued[len(queued)-len(want):]; !slices.Equal(got, want) {
		t.Errorf("queue after the merge ends %v, want the joins in sequence order %v", got, want)
	}
}

// shardsDown fails, while down is set, every pipeline to a room's arrival
// shards (as a stopped node's calls fail), counting them.
type shardsDown struct {
	down     atomic.Bool
	attempts atomic.Int64
}

var errShardDown = errors.New("arrival shard's node down (test)")

func (h *shardsDown) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *shardsDown) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *shardsDown) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.down.Load() || !slices.ContainsFunc(cmds, onShard) {
			return next(ctx, cmds)
		}
		h.attempts.Add(1)
		for _, c := range cmds {
			c.SetErr(errShardDown)
		}
		return errShardDown
	}
}

// onShard reports whether a script call's first key is an arrival shard's.
func onShard(c redis.Cmder) bool {
	a := c.Args()
	return len(a) > 3 && strings.Contains(fmt.Sprint(a[3]), "~")
}

// After a failed read of its arrival shards a room's merges are held back,
// twice as long after each failure (250 ms, at most 2 s), so a stopped node
// costs its ticks a read now and then, not on every tick; the admissions go
// on, and the first read that succeeds merges every arrival, in order.
func TestMergeHeldAfterShardFailure(t *testing.T) {
	h := &shardsDown{}
	c := hooked(t, h)
	e := newEnv(t, c, spreadRoom(nil))
	e.enqueue("confirm")
	join := func(i int) int64 {
		return e.join(e.eng, fmt.Sprintf("a%d", i), room.JoinProof{Client: fmt.Sprintf("10.8.0.%d", i)}).Ticket.Seq
	}
	for i := range 4 { // queued before the node stops: the ticks admit them meanwhile
		join(i)
	}
	if r := e.tick(); r.MergeErr != nil || r.Merged != 5 {
		t.Fatalf("first merge: %d, %v; want 5", r.Merged, r.MergeErr)
	}
	var seqs []int64
	for i := 4; i < 10; i++ {
		s := join(i)
		if residue(s) == 0 {
			t.Fatalf("join %d went to the room's shard", i)
		}
		seqs = append(seqs, s)
	}

	h.down.Store(true)
	var held, failed, admitted int64
	for range 200 { // 10 s of ticks, one every 50 ms
		r := e.tick()
		admitted += r.Admitted
		switch {
		case errors.Is(r.MergeErr, room.ErrMergeHeld):
			held++
		case errors.Is(r.MergeErr, room.ErrUnavailable):
			failed++
		default:
			t.Fatalf("tick merged with the shards down: %d, %v", r.Merged, r.MergeErr)
		}
		e.clk.Advance(50 * time.Millisecond)
	}
	// Reads at 0, 0.25, 0.75, 1.75, 3.75, 5.75, 7.75 and 9.75 s.
	if n := h.attempts.Load(); n != 8 || failed != 8 || held != 192 {
		t.Errorf("10 s of ticks with the shards down: %d reads, %d failed and %d held merges; want 8, 8 and 192", n, failed, held)
	}
	if admitted == 0 {
		t.Error("no admission while the merges were held back")
	}

	h.down.Store(false)
	e.clk.Advance(2 * time.Second)
	r := e.tick()
	if r.MergeErr != nil || r.Merged != int64(len(seqs)) {
		t.Fatalf("first tick after the hold: merged %d, %v; want %d", r.Merged, r.MergeErr, len(seqs))
	}
	slices.Sort(seqs)
	if q := e.queued(); !slices.Equal(q[len(q)-len(seqs):], seqs) {
		t.Errorf("queue ends %v after the merge, want the joins in order %v", q, seqs)
	}
	// The hold ended with the read that succeeded: a new failure waits 250 ms again.
	h.down.Store(true)
	e.tick()
	e.clk.Advance(250 * time.Millisecond)
	e.tick()
	if n := h.attempts.Load(); n != 10 {
		t.Errorf("after a successful read, two failures 250 ms apart made %d reads in all, want 10", n)
	}
}

// mergeCalls records the arrivals each merge call of a room carries.
type mergeCalls struct {
	key  string // the room's own arrival list, which the merge names (and the enqueue)
	mu   sync.Mutex
	took []int
}

func (h *mergeCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *mergeCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		a := cmd.Args()
		// A call answered NOSCRIPT is sent again as EVAL: count the one that ran.
		if n := strings.ToLower(cmd.Name()); (n == "evalsha" || n == "eval") && len(a) > 3 && err == nil {
			keys, _ := strconv.Atoi(fmt.Sprint(a[2]))
			if 3+keys <= len(a) && slices.Contains(a[3:3+keys], any(h.key)) {
				h.mu.Lock()
				h.took = append(h.took, (len(a)-3-keys-2)/2) // less now and the mark; two arguments an arrival
				h.mu.Unlock()
			}
		}
		return err
	}
}
func (h *mergeCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A tick merges a backlog of arrivals a chunk at a time, each call up to its
// last arrival, so no call holds the room's shard for the whole backlog; the
// queue gets every one, in ticket order, as one call would.
func TestMergeInChunks(t *testing.T) {
	h := &mergeCalls{}
	c := hooked(t, h)
	e := newEnv(t, c, spreadRoom(nil), roomdb.WithMergeChunk(10))
	h.key = e.keys.Arrivals()
	e.enqueue("confirm") // on the room's own list: the first call takes it with its chunk
	var seqs []int64
	for i := range 34 {
		seqs = append(seqs, e.join(e.eng, fmt.Sprintf("c%d", i), room.JoinProof{Client: fmt.Sprintf("10.7.0.%d", i)}).Ticket.Seq)
	}
	h.mu.Lock()
	h.took = nil // the enqueue names the room's list too
	h.mu.Unlock()
	r := e.tick()
	if r.MergeErr != nil || r.Merged != 35 {
		t.Fatalf("tick: merged %d, %v; want 35", r.Merged, r.MergeErr)
	}
	h.mu.Lock()
	took := slices.Clone(h.took)
	h.mu.Unlock()
	if !slices.Equal(took, []int{10, 10, 10, 4}) {
		t.Errorf("the merge calls took %v arrivals from the shards, want 10, 10, 10 and 4", took)
	}
	slices.Sort(seqs)
	q := e.queued()
	if len(q) != 35 || !slices.Equal(q[1:], seqs) {
		t.Errorf("queue after the merge: %v, want the room's own join, then %v", q, seqs)
	}
	// The shards were trimmed: the next tick merges nothing again.
	if r := e.tick(); r.MergeErr != nil || r.Merged != 0 {
		t.Errorf("the next tick merged %d, %v; want 0", r.Merged, r.MergeErr)
	}
}

// A room that spreads its joins counts a client's joins in one place, as a
// room that does not: a join every 250 ms for 30 s under a limit of 10 a
// minute (a burst of 1) joins as often with joinShards 8 as with none, also
// through engines that have not confirmed the room's settings for a while
// (whose joins would go to the room's shard) and through a fresh engine.
func TestSpreadRoomCountsAClientInOnePlace(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		joined := func(shards int64) int {
			e := newEnv(t, rdb, spreadRoom(func(c *room.Config) { c.JoinShards, c.ClientEnqueuePerMinute = shards, 10 }))
			engines := []*roomdb.Engine{e.eng, e.eng, e.eng, roomdb.New(rdb, roomdb.WithClock(e.clk.Now))}
			n := 0
			for i := range 120 {
				eng := engines[i%len(engines)]
				if i%10 == 9 {
					eng = roomdb.New(rdb, roomdb.WithClock(e.clk.Now)) // an engine that never saw the room
				}
				_, err := eng.Join(e.ctx, e.room, "v"+strconv.Itoa(i), room.JoinProof{Client: "2001:db8::" + strconv.Itoa(i%7+1)})
				switch {
				case err == nil:
					n++
				case !errors.Is(err, room.ErrRateLimited):
					t.Fatalf("join %d: %v", i, err)
				}
				e.clk.Advance(250 * time.Millisecond)
			}
			return n
		}
		one, spread := joined(0), joined(8)
		if one != 5 || spread != one {
			t.Errorf("one client's joins in 30 s at 10 a minute: %d with joinShards 8, %d with none; want 5 both", spread, one)
		}
	})
}
