package roomdb_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// A change of settings reaches a room's arrival shards before it is stored: a
// join that an engine sends there with the settings it held before the change
// (confirmed within the second, so it goes to a shard without asking the
// room's) is answered as the new settings say. A closing takes no join after
// it, so a drain right after it leaves nobody waiting; a challenge turned on
// asks for its work at once.
func TestSettingsChangeFencesArrivalShards(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(nil))
		admin := roomdb.New(rdb, roomdb.WithClock(e.clk.Now)) // the admin API's engine: the joins' holds the old settings
		e.enqueue("confirm")
		if p := e.join(e.eng, "a", room.JoinProof{Client: "10.9.0.1"}); residue(p.Ticket.Seq) == 0 {
			t.Fatalf("join went to the room's shard: %d", p.Ticket.Seq)
		}

		closed := *spreadRoom(func(c *room.Config) { c.Mode = room.ModeClosed })
		if _, err := admin.PutConfig(e.ctx, e.room, closed); err != nil {
			t.Fatal(err)
		}
		for i := range 5 { // clients of different shards, the clock standing still
			if p, err := e.eng.Join(e.ctx, e.room, fmt.Sprintf("late%d", i), room.JoinProof{Client: fmt.Sprintf("10.9.1.%d", i)}); !errors.Is(err, room.ErrClosed) {
				t.Errorf("join %d after the closing: %v (sequence %d), want ErrClosed", i, err, p.Ticket.Seq)
			}
		}
		n, err := admin.Drain(e.ctx, e.room)
		if err != nil || n != 2 {
			t.Errorf("Drain: %d, %v; want the 2 joins before the closing", n, err)
		}
		if r := e.tick(); r.MergeErr != nil || r.Merged != 0 {
			t.Errorf("a tick after the drain merged %d, %v", r.Merged, r.MergeErr)
		}
		if q := e.queued(); len(q) != 0 {
			t.Errorf("queue after the drain: %v", q)
		}

		// Open again: the engine learns it on the room's shard, then spreads.
		if _, err := admin.PutConfig(e.ctx, e.room, *spreadRoom(nil)); err != nil {
			t.Fatal(err)
		}
		e.enqueue("confirm2")
		if p := e.join(e.eng, "b", room.JoinProof{Client: "10.9.0.2"}); residue(p.Ticket.Seq) == 0 {
			t.Errorf("join after the reopening went to the room's shard")
		}
		// A challenge turned on is asked of the next join, not a second later.
		asks := *spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 8 })
		if _, err := admin.PutConfig(e.ctx, e.room, asks); err != nil {
			t.Fatal(err)
		}
		var ce *room.ChallengeError
		if _, err := e.eng.Join(e.ctx, e.room, "c", room.JoinProof{Client: "10.9.0.3"}); !errors.As(err, &ce) || ce.Bits != 8 {
			t.Errorf("join without a proof after the challenge was turned on: %v, want a ChallengeError of 8 bits", err)
		}
		// The engine holds the new settings now: a proof joins on its shard.
		until := e.clk.Now().Add(time.Minute)
		if p := e.join(e.eng, "d", room.JoinProof{Bits: 8, Nonce: nonce("n-after", true), Until: until}); residue(p.Ticket.Seq) == 0 {
			t.Errorf("a proof after the change went to the room's shard")
		}
	})
}

// settingsRace runs a second PutConfig, once, while the first one's settings
// are on their way to the room's shard.
type settingsRace struct {
	put     func()
	armed   atomic.Bool
	thisKey string
}

func (h *settingsRace) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *settingsRace) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a := cmd.Args()
		n := strings.ToLower(cmd.Name())
		// config.lua is the one script whose first key is the room's settings and that names a seed.
		if (n == "evalsha" || n == "eval") && len(a) > 12 && fmt.Sprint(a[3]) == h.thisKey && h.armed.CompareAndSwap(true, false) {
			h.put()
		}
		return next(ctx, cmd)
	}
}
func (h *settingsRace) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Two settings changes at once: the one whose fence is older, stored after
// the newer one's, would leave the shards fenced past the settings every
// engine reads, so no join would ever spread again. It is tried again with a
// new fence instead; the settings stored are the last PUT's, and joins spread.
func TestSettingsFenceNeverGoesBack(t *testing.T) {
	h := &settingsRace{}
	c := hooked(t, h)
	e := newEnv(t, c, spreadRoom(nil))
	h.thisKey = e.keys.Config
	other := roomdb.New(e.rdb, roomdb.WithClock(e.clk.Now))
	h.put = func() {
		if _, err := other.PutConfig(e.ctx, e.room, *spreadRoom(func(c *room.Config) { c.AdmitPerMinute = 120 })); err != nil {
			t.Errorf("the racing PUT: %v", err)
		}
	}
	h.armed.Store(true)
	if _, err := e.eng.PutConfig(e.ctx, e.room, *spreadRoom(func(c *room.Config) { c.AdmitPerMinute = 240 })); err != nil {
		t.Fatal(err)
	}
	if h.armed.Load() {
		t.Fatal("the racing PUT did not run")
	}
	got, err := e.eng.GetConfig(e.ctx, e.room)
	if err != nil || got.AdmitPerMinute != 240 {
		t.Errorf("settings after the race: %d, %v; want the PUT that finished last (240)", got.AdmitPerMinute, err)
	}
	fresh := roomdb.New(e.rdb, roomdb.WithClock(e.clk.Now))
	if _, err := fresh.Enqueue(e.ctx, e.room, "confirm"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		p, err := fresh.Join(e.ctx, e.room, fmt.Sprintf("r%d", i), room.JoinProof{Client: fmt.Sprintf("10.9.2.%d", i)})
		if err != nil || residue(p.Ticket.Seq) == 0 {
			t.Errorf("join %d after the race: sequence %d, %v; want it on an arrival shard", i, p.Ticket.Seq, err)
		}
	}
}

// While a change is under way (the shards fenced, its settings not stored
// yet), or after one failed once it fenced, a join goes to the room's shard,
// which decides; a proof is spent on its nonce's shard first, so it still
// joins once.
func TestJoinDuringASettingsChange(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(nil))
		e.enqueue("confirm")
		// A change that fenced the shards and has not stored its settings: the
		// fence it issued (fence.lua) is above the stored version's.
		ver, err := rdb.HGet(e.ctx, e.keys.Config, "ver").Result()
		if err != nil {
			t.Fatal(err)
		}
		stored, err := strconv.ParseInt(strings.SplitN(ver, ".", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("settings version %q carries no fence: %v", ver, err)
		}
		fence := strconv.FormatInt(stored+1, 10)
		if err := rdb.Set(e.ctx, e.keys.Fence(), fence, 0).Err(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := rdb.HSet(e.ctx, roomdb.ArrivalKeysFor(e.room, i).State, "v", fence).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3 {
			p, err := e.eng.Join(e.ctx, e.room, fmt.Sprintf("u%d", i), room.JoinProof{Client: fmt.Sprintf("10.9.3.%d", i)})
			if err != nil || residue(p.Ticket.Seq) != 0 {
				t.Errorf("join %d during a change: sequence %d, %v; want it on the room's shard", i, p.Ticket.Seq, err)
			}
		}
		until := e.clk.Now().Add(time.Minute)
		during := room.JoinProof{Bits: 4, Nonce: nonce("n-during", true), Until: until}
		if p, err := e.eng.Join(e.ctx, e.room, "p", during); err != nil || residue(p.Ticket.Seq) != 0 {
			t.Errorf("a proof during a change: sequence %d, %v; want it on the room's shard", p.Ticket.Seq, err)
		}
		// It was spent on its own shard: once the change is stored, and the
		// room asks a challenge, it joins there no more.
		e.put(*spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 4 }))
		if _, err := e.eng.Join(e.ctx, e.room, "p2", during); !errors.Is(err, room.ErrChallengeSpent) {
			t.Errorf("the proof again after the change: %v, want ErrChallengeSpent", err)
		}
	})
}

// Whatever the settings and whatever each engine last confirmed, a join is
// answered as the settings stored last say, at once: closed, the challenge's
// work, or a place made under those settings; and a proof joins once, across
// every change (the nonces are of challenges issued as the room spread its
// joins over 3 or 5 shards, or did not). Engines that join through
// arrival shards with settings confirmed less than a second ago are the case
// fences are for; clock steps over a second make them confirm on the room's
// shard again.
func TestSettingsHoldAtOnce(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		base := redistest.Room(t)
		if len(base) > 50 {
			base = base[len(base)-50:]
		}
		run := 0
		rapid.Check(t, func(rt *rapid.T) {
			run++
			id, clk := fmt.Sprintf("%s-%d", base, run), newClock()
			admin := roomdb.New(rdb, roomdb.WithClock(clk.Now))
			engs := []*roomdb.Engine{roomdb.New(rdb, roomdb.WithClock(clk.Now)), roomdb.New(rdb, roomdb.WithClock(clk.Now))}
			ctx := context.Background()
			modes := []room.Mode{room.ModeQueue, room.ModeQueue, room.ModeAuto, room.ModePaused, room.ModeClosed, room.ModePassthrough}
			put := func() room.Config {
				c := *spreadRoom(func(c *room.Config) {
					c.Mode = rapid.SampledFrom(modes).Draw(rt, "mode")
					c.JoinShards = rapid.SampledFrom([]int64{0, 3, 3, 5}).Draw(rt, "shards")
					c.JoinChallengeBits = rapid.SampledFrom([]int64{0, 0, 4}).Draw(rt, "bits")
				})
				stored, err := admin.PutConfig(ctx, id, c)
				if err != nil {
					rt.Fatalf("PutConfig: %v", err)
				}
				return stored
			}
			cfg := put()
			spent := map[string]bool{} // the proofs that joined (spent, whether or not a challenge was asked)
			for i := range 30 {
				switch rapid.SampledFrom([]string{"join", "join", "join", "put", "advance", "tick"}).Draw(rt, "action") {
				case "put":
					cfg = put()
				case "advance":
					clk.Advance(time.Duration(rapid.IntRange(0, 1200).Draw(rt, "ms")) * time.Millisecond)
				case "tick":
					if _, err := admin.Tick(ctx, id); err != nil {
						rt.Fatalf("Tick: %v", err)
					}
				case "join":
					eng := engs[rapid.IntRange(0, len(engs)-1).Draw(rt, "engine")]
					proof := room.JoinProof{Client: fmt.Sprintf("10.10.%d.%d", run%250, i)}
					if rapid.Bool().Draw(rt, "proof") {
						// A few nonces, used again, of challenges issued with the
						// room not spread or spread over 3 or 5 shards.
						n := rapid.SampledFrom([]string{"", "s3-", "s5-"}).Draw(rt, "issued") + strconv.Itoa(rapid.IntRange(0, 3).Draw(rt, "nonce"))
						proof.Bits, proof.Nonce, proof.Until = 4, n, clk.Now().Add(time.Minute)
					}
					p, err := eng.Join(ctx, id, fmt.Sprintf("v%d", i), proof)
					var ce *room.ChallengeError
					switch {
					case cfg.Mode == room.ModeClosed:
						if !errors.Is(err, room.ErrClosed) {
							rt.Fatalf("join %d in a closed room: %v (place %+v)", i, err, p)
						}
					case cfg.JoinChallengeBits > int64(proof.Bits):
						if !errors.As(err, &ce) || int64(ce.Bits) != cfg.JoinChallengeBits {
							rt.Fatalf("join %d with %d bits where %d are asked: %v", i, proof.Bits, cfg.JoinChallengeBits, err)
						}
					case cfg.JoinChallengeBits > 0 && spent[proof.Nonce]:
						if !errors.Is(err, room.ErrChallengeSpent) {
							rt.Fatalf("join %d with proof %s, which joined before: %v (place %+v), want ErrChallengeSpent", i, proof.Nonce, err, p)
						}
					case err != nil:
						rt.Fatalf("join %d: %v", i, err)
					case !reflect.DeepEqual(p.Config, cfg):
						rt.Fatalf("join %d answered under settings %+v, want the stored %+v", i, p.Config, cfg)
					case proof.Nonce != "":
						spent[proof.Nonce] = true
					}
				}
			}
		})
	})
}
