package roomdb_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// forEachRedis runs f against the single node and the 3-node cluster.
var forEachRedis = redistest.ForEach

// view is the part of a Place a case asserts.
type view struct {
	State    room.State
	Position int64
	Waiting  int64
	Active   bool
	Deadline time.Time // the grant deadline, when admitted and not yet active
}

func viewOf(p room.Place) view {
	v := view{State: p.State, Position: p.Position, Waiting: p.Waiting, Active: p.Active}
	if p.State == room.StateAdmitted && !p.Active {
		v.Deadline = p.GrantDeadline
	}
	return v
}

func cfgWith(f func(*room.Config)) *room.Config {
	c := baseConfig()
	if f != nil {
		f(&c)
	}
	return &c
}

func TestKeysShareTheRoomsHashTag(t *testing.T) {
	k := roomdb.KeysFor("r1")
	want := []string{"vst:{r1}:cfg", "vst:{r1}:st", "vst:{r1}:q", "vst:{r1}:hb", "vst:{r1}:adm",
		"vst:{r1}:act", "vst:{r1}:used", "vst:{r1}:left"}
	if diff := cmp.Diff(want, k.List()); diff != "" {
		t.Errorf("KeysFor(r1).List() (-want +got):\n%s", diff)
	}
	if roomdb.RegistryKey != "vst:rooms" {
		t.Errorf("RegistryKey = %q, want vst:rooms", roomdb.RegistryKey)
	}
}

func TestEnqueue(t *testing.T) {
	cases := []struct {
		name    string
		cfg     func(*room.Config)
		prepare func(e *env) // runs before the enqueue under test
		want    view
		wantErr error
		check   func(t *testing.T, e *env, p room.Place)
	}{{
		name:    "queue: a new visitor waits at the back",
		prepare: func(e *env) { e.enqueueN(2) },
		want:    view{State: room.StateWaiting, Position: 3, Waiting: 3},
	}, {
		name:    "closed: refused, nothing stored",
		cfg:     func(c *room.Config) { c.Mode = room.ModeClosed },
		wantErr: room.ErrClosed,
		check: func(t *testing.T, e *env, _ room.Place) {
			if n := e.rdb.ZCard(e.ctx, e.keys.Queue).Val(); n != 0 {
				t.Errorf("queue holds %d after a refused enqueue, want 0", n)
			}
		},
	}, {
		name:    "paused: waits, reported paused",
		cfg:     func(c *room.Config) { c.Mode = room.ModePaused },
		prepare: func(e *env) { e.enqueueN(1) },
		want:    view{State: room.StatePaused, Position: 2, Waiting: 2},
	}, {
		name:    "auto: empty and free room admits at once",
		cfg:     func(c *room.Config) { c.Mode = room.ModeAuto },
		prepare: func(e *env) { e.clk.Advance(time.Second) },
		check: func(t *testing.T, e *env, p room.Place) {
			want := view{State: room.StateAdmitted, Deadline: e.clk.Now().Add(120 * time.Second)}
			if diff := cmp.Diff(want, viewOf(p)); diff != "" {
				t.Errorf("place (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]int64{p.Ticket.Seq}, e.grants()); diff != "" {
				t.Errorf("grants (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "auto: full room queues",
		cfg:  func(c *room.Config) { c.Mode, c.MaxActive = room.ModeAuto, 1 },
		prepare: func(e *env) {
			e.clk.Advance(time.Second)
			if p := e.enqueue("first"); p.State != room.StateAdmitted {
				e.t.Fatalf("first visitor of an empty auto room: state %s, want admitted", p.State)
			}
		},
		want: view{State: room.StateWaiting, Position: 1, Waiting: 1},
	}, {
		name: "auto: a formed queue keeps new arrivals waiting even with room and rate",
		cfg:  func(c *room.Config) { c.Mode, c.MaxActive, c.AdmitPerMinute = room.ModeAuto, 10, 1 },
		prepare: func(e *env) {
			e.clk.Advance(2 * time.Minute) // the bucket holds its one token
			if p := e.enqueue("first"); p.State != room.StateAdmitted {
				e.t.Fatalf("first: state %s, want admitted", p.State)
			}
			if p := e.enqueue("second"); p.State != room.StateWaiting {
				e.t.Fatalf("second (bucket empty): state %s, want waiting", p.State)
			}
			e.clk.Advance(2 * time.Minute) // a token again, but a queue exists
		},
		want: view{State: room.StateWaiting, Position: 2, Waiting: 2},
	}, {
		name:    "passthrough: admits beyond capacity and rate",
		cfg:     func(c *room.Config) { c.Mode, c.MaxActive, c.AdmitPerMinute = room.ModePassthrough, 1, 1 },
		prepare: func(e *env) { e.enqueueN(2) },
		check: func(t *testing.T, e *env, p room.Place) {
			if p.State != room.StateAdmitted {
				t.Errorf("state %s, want admitted", p.State)
			}
			if n := len(e.grants()); n != 3 {
				t.Errorf("%d grants, want 3 (passthrough ignores maxActive)", n)
			}
		},
	}, {
		name:    "before opensAt: pre-queue with a draw in [0,1)",
		cfg:     func(c *room.Config) { c.OpensAt = ptr(time.Now().Add(time.Hour)) },
		prepare: func(e *env) { e.enqueueN(2) },
		check: func(t *testing.T, e *env, p room.Place) {
			if diff := cmp.Diff(view{State: room.StatePrequeue, Waiting: 3}, viewOf(p)); diff != "" {
				t.Errorf("place (-want +got):\n%s", diff)
			}
			if p.Ticket.Draw <= 0 || p.Ticket.Draw >= 1 {
				t.Errorf("draw = %v, want in (0,1)", p.Ticket.Draw)
			}
		},
	}}
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, rdb, cfgWith(tc.cfg))
				if tc.prepare != nil {
					tc.prepare(e)
				}
				p, err := e.eng.Enqueue(e.ctx, e.room, "visitor")
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Enqueue error = %v, want %v", err, tc.wantErr)
				}
				if err == nil {
					if p.Ticket.Room != e.room || p.Ticket.Visitor != "visitor" || p.Ticket.Seq <= 0 {
						t.Errorf("ticket = %+v, want room %s, visitor \"visitor\", seq > 0", p.Ticket, e.room)
					}
					if p.Config.OriginURL != baseConfig().OriginURL {
						t.Errorf("place config origin = %q", p.Config.OriginURL)
					}
				}
				if tc.check != nil {
					tc.check(t, e, p)
					return
				}
				if err == nil {
					if diff := cmp.Diff(tc.want, viewOf(p)); diff != "" {
						t.Errorf("place (-want +got):\n%s", diff)
					}
				}
			})
		}
	})
}

// Sequences grow, and polling with the ticket gives the same place back (refresh, tabs).
func TestEnqueueThenPollKeepsThePlace(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(nil))
		ts := e.enqueueN(5)
		if !slices.IsSorted(seqs(ts)) || len(slices.Compact(seqs(ts))) != 5 {
			t.Fatalf("sequences %v are not strictly increasing", seqs(ts))
		}
		for round := 0; round < 2; round++ {
			for i, tk := range ts {
				p := e.poll(tk)
				want := view{State: room.StateWaiting, Position: int64(i + 1), Waiting: 5}
				if diff := cmp.Diff(want, viewOf(p)); diff != "" {
					t.Errorf("round %d, poll %d (-want +got):\n%s", round, i, diff)
				}
				if diff := cmp.Diff(tk, p.Ticket); diff != "" {
					t.Errorf("poll %d ticket (-want +got):\n%s", i, diff)
				}
				if p.RatePerMinute != 600 {
					t.Errorf("RatePerMinute = %v before any admission, want the configured 600", p.RatePerMinute)
				}
			}
		}
	})
}

// The pre-queue is drawn at opening: its visitors come first, in draw order,
// then those who arrived after opening, first come first served.
func TestPrequeueOrderAtOpening(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil)
		opens := e.clk.Now().Add(5 * time.Minute)
		e.put(*cfgWith(func(c *room.Config) {
			c.OpensAt, c.MaxActive, c.AdmitPerMinute, c.HeartbeatTTLSeconds = &opens, 1, 6000, 3600
		}))
		pre := e.enqueueN(12)
		for i, tk := range pre {
			if tk.Draw <= 0 || tk.Draw >= 1 {
				t.Fatalf("pre-queue ticket %d draw %v, want in (0,1)", i, tk.Draw)
			}
			if p := e.poll(tk); p.State != room.StatePrequeue || p.Position != 0 || p.Waiting != 12 {
				t.Errorf("poll before opening: %+v, want prequeue, position 0, waiting 12", viewOf(p))
			}
		}
		// The place each will have at the opening comes with the pre-queue
		// reply (not as the shown position): the draw's rank.
		byDraw := slices.Clone(pre)
		sort.Slice(byDraw, func(i, j int) bool { return byDraw[i].Draw < byDraw[j].Draw })
		for i, tk := range byDraw {
			if p := e.poll(tk); p.OpeningRank != int64(i+1) || p.Position != 0 {
				t.Errorf("pre-queue poll of draw rank %d: opening rank %d, position %d; want %d, 0", i, p.OpeningRank, p.Position, i+1)
			}
		}
		if r := e.tick(); r.Admitted != 0 {
			t.Fatalf("a tick before opening admitted %d", r.Admitted)
		}
		e.clk.Set(opens.Add(time.Second))
		post := e.enqueueN(4)
		for i, tk := range post {
			if tk.Draw != 0 {
				t.Errorf("arrival %d after opening has a draw %v", i, tk.Draw)
			}
		}
		byDraw = slices.Clone(pre)
		sort.Slice(byDraw, func(i, j int) bool { return byDraw[i].Draw < byDraw[j].Draw })
		want := append(seqs(byDraw), seqs(post)...)
		for i, tk := range byDraw {
			if p := e.poll(tk); p.State != room.StateWaiting || p.Position != int64(i+1) {
				t.Errorf("after opening, visitor with draw rank %d: %+v, want waiting at %d", i, viewOf(p), i+1)
			}
		}
		// maxActive 1: each tick admits one, each grant is consumed and completed.
		var got []int64
		for range want {
			e.clk.Advance(time.Second)
			e.tick()
			g := e.grants()
			if len(g) != 1 {
				t.Fatalf("after a tick: grants %v, want exactly one", g)
			}
			got = append(got, g[0])
			e.consume(g[0])
			if err := e.eng.Complete(e.ctx, e.room, g[0], origin); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("admission order (-want +got):\n%s", diff)
		}
	})
}

// A pre-queue join answers with the place the newcomer's draw gives them among
// those in the pre-queue (not shown: the position stays 0).
func TestPrequeueJoinKnowsItsOpeningRank(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil)
		opens := e.clk.Now().Add(5 * time.Minute)
		e.put(*cfgWith(func(c *room.Config) { c.OpensAt = &opens }))
		var draws []float64
		for i := range 20 {
			p := e.enqueue("v" + strconv.Itoa(i))
			draws = append(draws, p.Ticket.Draw)
			below := int64(0)
			for _, d := range draws {
				if d < p.Ticket.Draw {
					below++
				}
			}
			if p.State != room.StatePrequeue || p.Position != 0 || p.OpeningRank != below+1 {
				t.Errorf("join %d: %+v, opening rank %d; want prequeue, position 0, rank %d", i, viewOf(p), p.OpeningRank, below+1)
			}
		}
	})
}

// The draw is a function of the room's seed and the visitor: the same visitor
// draws the same place, different rooms draw differently.
func TestPrequeueDrawIsStablePerVisitor(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := cfgWith(func(c *room.Config) { c.OpensAt = ptr(time.Now().Add(time.Hour)) })
		e := newEnv(t, rdb, cfg)
		a, b := e.enqueue("alice"), e.enqueue("alice")
		if a.Ticket.Draw != b.Ticket.Draw {
			t.Errorf("same visitor drew %v then %v", a.Ticket.Draw, b.Ticket.Draw)
		}
		if c := e.enqueue("bob"); c.Ticket.Draw == a.Ticket.Draw {
			t.Errorf("alice and bob drew the same %v", c.Ticket.Draw)
		}
	})
}

func TestPoll(t *testing.T) {
	const claim, session = 120 * time.Second, 600 * time.Second
	cases := []struct {
		name    string
		cfg     func(*room.Config)
		prepare func(e *env) room.Ticket // returns the ticket to poll
		want    func(e *env) view
	}{{
		name: "waiting: position and count",
		prepare: func(e *env) room.Ticket {
			return e.enqueueN(4)[2]
		},
		want: func(*env) view { return view{State: room.StateWaiting, Position: 3, Waiting: 4} },
	}, {
		name: "admitted: grant deadline",
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(3)
			e.tick()
			return ts[0]
		},
		want: func(e *env) view { return view{State: room.StateAdmitted, Deadline: e.clk.Now().Add(claim)} },
	}, {
		name: "active: grant consumed",
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			e.consume(ts[0].Seq)
			return ts[0]
		},
		want: func(*env) view { return view{State: room.StateAdmitted, Active: true} },
	}, {
		name: "expired: served and completed",
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(2)
			e.tick()
			e.consume(ts[0].Seq)
			if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
				e.t.Fatal(err)
			}
			return ts[0]
		},
		want: func(*env) view { return view{State: room.StateExpired} },
	}, {
		name: "expired: session ended by time",
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			e.consume(ts[0].Seq)
			e.clk.Advance(session + time.Second)
			e.tick()
			return ts[0]
		},
		want: func(*env) view { return view{State: room.StateExpired} },
	}, {
		name: "expired: left the queue",
		prepare: func(e *env) room.Ticket {
			ts := e.enqueueN(3)
			if err := e.eng.Leave(e.ctx, ts[1]); err != nil {
				e.t.Fatal(err)
			}
			return ts[1]
		},
		want: func(*env) view { return view{State: room.StateExpired} },
	}, {
		name: "expired: grant not claimed in time, reclaimed",
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			e.clk.Advance(claim + time.Second)
			if r := e.tick(); r.GrantsReclaimed != 1 {
				e.t.Fatalf("tick reclaimed %d grants, want 1", r.GrantsReclaimed)
			}
			return ts[0]
		},
		want: func(*env) view { return view{State: room.StateExpired} },
	}, {
		name: "expired: grant deadline passed, not yet reclaimed",
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			e.clk.Advance(claim + time.Second)
			return ts[0]
		},
		want: func(*env) view { return view{State: room.StateExpired} },
	}, {
		name: "paused room",
		prepare: func(e *env) room.Ticket {
			ts := e.enqueueN(2)
			e.put(*cfgWith(func(c *room.Config) { c.Mode = room.ModePaused }))
			return ts[1]
		},
		want: func(*env) view { return view{State: room.StatePaused, Position: 2, Waiting: 2} },
	}, {
		name: "closed room",
		prepare: func(e *env) room.Ticket {
			ts := e.enqueueN(2)
			e.put(*cfgWith(func(c *room.Config) { c.Mode = room.ModeClosed }))
			return ts[1]
		},
		want: func(*env) view { return view{State: room.StateClosed, Waiting: 2} },
	}, {
		name: "restored after the queue keys were lost (score above the head)",
		prepare: func(e *env) room.Ticket {
			e.put(*cfgWith(func(c *room.Config) { c.MaxActive = 2 }))
			e.warm()
			ts := e.enqueueN(5)
			e.tick() // admits ts[0], ts[1]: the head is ts[1]
			e.rdb.Del(e.ctx, e.keys.Queue, e.keys.Heartbeats)
			e.poll(ts[4])
			return ts[3]
		},
		want: func(*env) view { return view{State: room.StateWaiting, Position: 1, Waiting: 2} },
	}, {
		name: "lost grant at or below the head is not restored",
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(3)
			e.tick()
			e.rdb.Del(e.ctx, e.keys.Grants)
			return ts[1]
		},
		want: func(*env) view { return view{State: room.StateExpired} },
	}, {
		name: "evicted, head not past: the place comes back",
		cfg:  func(c *room.Config) { c.MaxActive = 1 },
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(3)
			e.tick() // ts[0] admitted; room full
			e.consume(ts[0].Seq)
			e.clk.Advance(pastNearTold) // heartbeats of ts[1], ts[2] go stale
			e.poll(ts[2])
			if r := e.tick(); r.Evicted != 1 {
				e.t.Fatalf("tick evicted %d, want 1", r.Evicted)
			}
			return ts[1]
		},
		want: func(*env) view { return view{State: room.StateWaiting, Position: 1, Waiting: 2} },
	}, {
		name: "evicted, head passed: the place is gone",
		cfg:  func(c *room.Config) { c.MaxActive = 1 },
		prepare: func(e *env) room.Ticket {
			e.warm()
			ts := e.enqueueN(3)
			e.tick()
			e.consume(ts[0].Seq)
			e.clk.Advance(pastNearTold)
			e.poll(ts[2])
			e.tick() // evicts ts[1]
			if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
				e.t.Fatal(err)
			}
			e.clk.Advance(time.Second)
			e.tick() // admits ts[2]: the head passes ts[1]
			return ts[1]
		},
		want: func(*env) view { return view{State: room.StateExpired} },
	}, {
		name: "pre-queue",
		cfg:  func(c *room.Config) { c.OpensAt = ptr(time.Now().Add(time.Hour)) },
		prepare: func(e *env) room.Ticket {
			return e.enqueueN(3)[0]
		},
		want: func(*env) view { return view{State: room.StatePrequeue, Waiting: 3} },
	}}
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, rdb, cfgWith(tc.cfg))
				tk := tc.prepare(e)
				p := e.poll(tk)
				if diff := cmp.Diff(tc.want(e), viewOf(p)); diff != "" {
					t.Errorf("Poll (-want +got):\n%s", diff)
				}
				if p.Ticket.Seq != tk.Seq {
					t.Errorf("poll answered for seq %d, want %d", p.Ticket.Seq, tk.Seq)
				}
			})
		}
	})
}

// Polling is the heartbeat: a visitor who polls is not evicted, one who stops is.
func TestPollRefreshesHeartbeat(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive, c.SessionTTLSeconds = 1, 3600 }))
		e.warm()
		holder := e.enqueueN(1)[0]
		e.tick()
		e.consume(holder.Seq) // the room stays full: only eviction moves the queue
		a, b := e.enqueue("a").Ticket, e.enqueue("b").Ticket
		var evicted int64
		for i := 0; i < 5; i++ {
			e.clk.Advance(40 * time.Second)
			if p := e.poll(a); p.State != room.StateWaiting {
				t.Fatalf("round %d: the polling visitor is %s", i, p.State)
			}
			evicted += e.tick().Evicted
		}
		if evicted != 1 {
			t.Errorf("evicted %d over 200 s, want 1 (the visitor who stopped polling)", evicted)
		}
		if diff := cmp.Diff([]int64{a.Seq}, e.members(e.keys.Queue)); diff != "" {
			t.Errorf("queue (-want +got):\n%s", diff)
		}
		// b was evicted, but nobody behind it was admitted: it comes back to its place.
		if p := e.poll(b); p.State != room.StateWaiting || p.Position != 2 {
			t.Errorf("the evicted visitor returns: %+v, want waiting at 2", viewOf(p))
		}
	})
}

func TestTickQuotaCarriesTheFraction(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.MaxActive, c.HeartbeatTTLSeconds, c.ClaimTTLSeconds = 90, 1000, 3600, 3600
		}))
		e.enqueueN(200)
		e.tick() // the bucket's first refill point: what it held before is spent here
		var got []int64
		var sum int64
		for i := 0; i < 60; i++ {
			e.clk.Advance(time.Second)
			r := e.tick()
			got = append(got, r.Admitted)
			sum += r.Admitted
		}
		want := make([]int64, 60)
		for i := range want {
			want[i] = int64(1 + i%2) // 1.5 a second: 1, 2, 1, 2, ...
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("admitted per 1 s tick at 90/min (-want +got):\n%s", diff)
		}
		if sum != 90 {
			t.Errorf("admitted %d in 60 s at 90/min, want 90", sum)
		}
	})
}

// A long pause between ticks does not build a burst beyond two seconds of rate.
func TestTickBurstIsCapped(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.MaxActive, c.HeartbeatTTLSeconds = 600, 1000, 3600
		}))
		e.enqueueN(100)
		e.tick()
		e.clk.Advance(time.Minute)
		if r := e.tick(); r.Admitted != 20 {
			t.Errorf("after a 60 s gap at 600/min: admitted %d, want 20 (two seconds of rate)", r.Admitted)
		}
	})
}

func TestTick(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(*room.Config)
		run  func(t *testing.T, e *env)
	}{{
		name: "capacity caps admission; a freed slot is refilled",
		cfg:  func(c *room.Config) { c.MaxActive, c.AdmitPerMinute = 3, 6000 },
		run: func(t *testing.T, e *env) {
			e.warm()
			ts := e.enqueueN(10)
			if r := e.tick(); r.Admitted != 3 {
				t.Fatalf("admitted %d, want 3 (maxActive)", r.Admitted)
			}
			e.clk.Advance(time.Second)
			if r := e.tick(); r.Admitted != 0 {
				t.Fatalf("full room admitted %d", r.Admitted)
			}
			e.consume(ts[0].Seq)
			if r := e.tick(); r.Admitted != 0 {
				t.Fatalf("consuming a grant freed a slot: admitted %d", r.Admitted)
			}
			if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
				t.Fatal(err)
			}
			e.clk.Advance(time.Second)
			if r := e.tick(); r.Admitted != 1 {
				t.Fatalf("after complete: admitted %d, want 1", r.Admitted)
			}
			if diff := cmp.Diff(seqs(ts[1:4]), e.grants()); diff != "" {
				t.Errorf("grants (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "unclaimed grants are reclaimed after claimTTL and their slots return",
		cfg:  func(c *room.Config) { c.MaxActive, c.ClaimTTLSeconds, c.HeartbeatTTLSeconds = 2, 10, 3600 },
		run: func(t *testing.T, e *env) {
			e.warm()
			ts := e.enqueueN(4)
			e.tick()
			e.clk.Advance(9 * time.Second)
			if r := e.tick(); r.GrantsReclaimed != 0 || r.Admitted != 0 {
				t.Fatalf("before the deadline: %+v", r)
			}
			e.clk.Advance(2 * time.Second)
			want := room.TickResult{Admitted: 2, GrantsReclaimed: 2, FirstSeq: ts[2].Seq, LastSeq: ts[3].Seq,
				After: room.TickCounts{Admitted: 2}}
			if diff := cmp.Diff(want, e.tick()); diff != "" {
				t.Errorf("tick after claimTTL (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(seqs(ts[2:]), e.grants()); diff != "" {
				t.Errorf("grants (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "sessions end after sessionTTL and their slots return",
		cfg: func(c *room.Config) {
			c.MaxActive, c.SessionTTLSeconds, c.ClaimTTLSeconds, c.HeartbeatTTLSeconds = 1, 30, 3600, 3600
		},
		run: func(t *testing.T, e *env) {
			e.warm()
			ts := e.enqueueN(2)
			e.tick()
			e.consume(ts[0].Seq)
			e.clk.Advance(29 * time.Second)
			if r := e.tick(); r.SessionsEnded != 0 || r.Admitted != 0 {
				t.Fatalf("before sessionTTL: %+v", r)
			}
			e.clk.Advance(2 * time.Second)
			want := room.TickResult{Admitted: 1, SessionsEnded: 1, FirstSeq: ts[1].Seq, LastSeq: ts[1].Seq,
				After: room.TickCounts{Admitted: 1}}
			if diff := cmp.Diff(want, e.tick()); diff != "" {
				t.Errorf("tick after sessionTTL (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "stale heartbeats are evicted in batches",
		cfg:  func(c *room.Config) { c.MaxActive, c.SessionTTLSeconds = 1, 3600 },
		run: func(t *testing.T, e *env) {
			e.warm()
			ts := e.enqueueN(13)
			e.tick()
			e.consume(ts[0].Seq) // the room stays full: only eviction moves the queue
			e.clk.Advance(pastNearTold)
			var got []int64
			for i := 0; i < 4; i++ {
				got = append(got, e.tick().Evicted)
			}
			if diff := cmp.Diff([]int64{5, 5, 2, 0}, got); diff != "" {
				t.Errorf("evicted per tick with batch 5 (-want +got):\n%s", diff)
			}
			if n := e.rdb.ZCard(e.ctx, e.keys.Queue).Val(); n != 0 {
				t.Errorf("queue holds %d after eviction, want 0", n)
			}
			if n := e.rdb.HLen(e.ctx, e.keys.Heartbeats).Val(); n != 0 {
				t.Errorf("heartbeats hold %d after eviction, want 0", n)
			}
		},
	}, {
		name: "stale visitors past the eviction batch are skipped, not admitted",
		cfg:  func(c *room.Config) { c.Mode = room.ModePaused },
		run: func(t *testing.T, e *env) {
			ts := e.enqueueN(9)
			e.clk.Advance(pastAnyTold)
			e.poll(ts[7])
			e.poll(ts[8])
			// Batch 5 evicts ts[0..4] first; ts[5], ts[6] are stale at the front of the admission pass.
			e.put(*cfgWith(func(c *room.Config) { c.AdmitPerMinute = 6000 }))
			var evicted int64
			for i := 0; i < 3; i++ {
				evicted += e.tick().Evicted
				e.clk.Advance(time.Second)
			}
			if diff := cmp.Diff(seqs(ts[7:]), e.grants()); diff != "" {
				t.Errorf("grants (-want +got):\n%s", diff)
			}
			if evicted != 7 {
				t.Errorf("evicted %d, want 7", evicted)
			}
		},
	}, {
		name: "stale visitors skipped at admission keep their places: the head is the highest admitted",
		cfg:  func(c *room.Config) { c.Mode = room.ModePaused },
		run: func(t *testing.T, e *env) {
			ts := e.enqueueN(8)
			e.clk.Advance(pastAnyTold)
			e.poll(ts[0]) // ts[1..7] go stale; batch 5 evicts ts[1..5], the admission pass meets ts[6], ts[7]
			e.put(*cfgWith(func(c *room.Config) { c.AdmitPerMinute = 6000 }))
			for e.rdb.ZCard(e.ctx, e.keys.Grants).Val() == 0 {
				e.tick()
				e.clk.Advance(time.Second)
			}
			if diff := cmp.Diff(seqs(ts[:1]), e.grants()); diff != "" {
				t.Fatalf("grants (-want +got):\n%s", diff)
			}
			// Nobody behind them was admitted: back before the head passes, they keep the place (I4).
			for _, i := range []int{1, 7} {
				if p := e.poll(ts[i]); p.State != room.StateWaiting {
					t.Errorf("stale visitor %d returns: %s, want waiting (head is visitor 0)", i, p.State)
				}
			}
		},
	}, {
		name: "lowering admitPerMinute caps the carried tokens at once",
		cfg:  func(c *room.Config) { c.AdmitPerMinute, c.MaxActive, c.HeartbeatTTLSeconds = 6000, 1, 3600 },
		run: func(t *testing.T, e *env) {
			e.warm()
			e.enqueueN(10)
			if r := e.tick(); r.Admitted != 1 { // capacity-bound: ~99 tokens stay in the bucket
				t.Fatalf("admitted %d, want 1", r.Admitted)
			}
			e.put(*cfgWith(func(c *room.Config) { c.AdmitPerMinute, c.MaxActive, c.HeartbeatTTLSeconds = 1, 100, 3600 }))
			if r := e.tick(); r.Admitted > 1 {
				t.Errorf("at 1/min (burst 1 token) a tick admitted %d", r.Admitted)
			}
		},
	}, {
		name: "paused: admits and evicts nothing, but reclaims",
		cfg:  func(c *room.Config) { c.MaxActive, c.ClaimTTLSeconds = 2, 10 },
		run: func(t *testing.T, e *env) {
			e.warm()
			e.enqueueN(5)
			e.tick() // 2 grants
			e.put(*cfgWith(func(c *room.Config) { c.Mode, c.MaxActive, c.ClaimTTLSeconds = room.ModePaused, 2, 10 }))
			e.clk.Advance(61 * time.Second)
			want := room.TickResult{GrantsReclaimed: 2, After: room.TickCounts{Waiting: 3}}
			if diff := cmp.Diff(want, e.tick()); diff != "" {
				t.Errorf("paused tick (-want +got):\n%s", diff)
			}
			if n := e.rdb.ZCard(e.ctx, e.keys.Queue).Val(); n != 3 {
				t.Errorf("paused room's queue holds %d, want 3", n)
			}
		},
	}, {
		name: "closed: admits nothing, but reclaims",
		cfg:  func(c *room.Config) { c.MaxActive, c.ClaimTTLSeconds = 2, 10 },
		run: func(t *testing.T, e *env) {
			e.warm()
			e.enqueueN(5)
			e.tick()
			e.put(*cfgWith(func(c *room.Config) { c.Mode, c.MaxActive, c.ClaimTTLSeconds = room.ModeClosed, 2, 10 }))
			e.clk.Advance(11 * time.Second)
			want := room.TickResult{GrantsReclaimed: 2, After: room.TickCounts{Waiting: 3}}
			if diff := cmp.Diff(want, e.tick()); diff != "" {
				t.Errorf("closed tick (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "a second tick at the same instant admits nothing",
		cfg:  func(c *room.Config) { c.AdmitPerMinute, c.MaxActive, c.HeartbeatTTLSeconds = 6000, 10000, 3600 },
		run: func(t *testing.T, e *env) {
			e.warm()
			e.enqueueN(500)
			if r := e.tick(); r.Admitted < 100 {
				t.Fatalf("first tick admitted %d, want at least one second of rate (100)", r.Admitted)
			}
			for i := 0; i < 3; i++ {
				if r := e.tick(); r.Admitted != 0 {
					t.Fatalf("repeat tick %d at the same instant admitted %d", i, r.Admitted)
				}
			}
			e.clk.Advance(time.Second)
			if r := e.tick(); r.Admitted != 100 {
				t.Errorf("one second later: admitted %d, want 100", r.Admitted)
			}
		},
	}, {
		name: "an empty queue admits nothing and keeps no debt",
		cfg:  func(c *room.Config) { c.AdmitPerMinute = 60 },
		run: func(t *testing.T, e *env) {
			e.warm()
			if r := e.tick(); r != (room.TickResult{}) {
				t.Fatalf("empty room tick: %+v", r)
			}
			e.enqueueN(5)
			e.clk.Advance(time.Second)
			if r := e.tick(); r.Admitted != 2 {
				t.Errorf("admitted %d, want 2 (the capped bucket of 60/min)", r.Admitted)
			}
		},
	}}
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tc.run(t, newEnv(t, rdb, cfgWith(tc.cfg), roomdb.WithEvictBatch(5)))
			})
		}
	})
}

func TestConsume(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(e *env) int64 // returns the seq to consume
		wantErr error
		alsoOK  error // a second acceptable answer where the spec allows two
	}{{
		name: "ok",
		prepare: func(e *env) int64 {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			return ts[0].Seq
		},
	}, {
		name: "already consumed",
		prepare: func(e *env) int64 {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			e.consume(ts[0].Seq)
			return ts[0].Seq
		},
		wantErr: room.ErrAlreadyConsumed,
	}, {
		name: "already consumed, session completed since",
		prepare: func(e *env) int64 {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			e.consume(ts[0].Seq)
			if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
				e.t.Fatal(err)
			}
			return ts[0].Seq
		},
		wantErr: room.ErrAlreadyConsumed,
	}, {
		name: "expired: claim deadline passed",
		prepare: func(e *env) int64 {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			e.clk.Advance(121 * time.Second)
			return ts[0].Seq
		},
		wantErr: room.ErrGrantExpired,
	}, {
		name: "expired and reclaimed by a tick",
		prepare: func(e *env) int64 {
			e.warm()
			ts := e.enqueueN(1)
			e.tick()
			e.clk.Advance(121 * time.Second)
			e.tick()
			return ts[0].Seq
		},
		wantErr: room.ErrGrantExpired,
		alsoOK:  room.ErrUnknownGrant,
	}, {
		name: "unknown: still waiting",
		prepare: func(e *env) int64 {
			return e.enqueueN(2)[1].Seq
		},
		wantErr: room.ErrUnknownGrant,
	}, {
		name:    "unknown: never issued",
		prepare: func(*env) int64 { return 42 },
		wantErr: room.ErrUnknownGrant,
	}}
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, rdb, cfgWith(nil))
				seq := tc.prepare(e)
				before := e.inUse()
				s, err := e.eng.Consume(e.ctx, e.room, seq, origin)
				if !errors.Is(err, tc.wantErr) && (tc.alsoOK == nil || !errors.Is(err, tc.alsoOK)) {
					t.Fatalf("Consume = %v, want %v", err, tc.wantErr)
				}
				if err != nil {
					if after := e.inUse(); after > before {
						t.Errorf("a refused consume raised admitted+active from %d to %d", before, after)
					}
					return
				}
				want := room.Session{Room: e.room, ExpiresAt: e.clk.Now().Add(600 * time.Second)}
				if diff := cmp.Diff(want, s); diff != "" {
					t.Errorf("session (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]int64{seq}, e.members(e.keys.Active)); diff != "" {
					t.Errorf("active sessions (-want +got):\n%s", diff)
				}
				if g := e.grants(); len(g) != 0 {
					t.Errorf("grant still held after consume: %v", g)
				}
				// A replay (the visitor, or a thief, again): refused and counted.
				if _, err := e.eng.Consume(e.ctx, e.room, seq, origin); !errors.Is(err, room.ErrAlreadyConsumed) {
					t.Errorf("replay: %v, want ErrAlreadyConsumed", err)
				}
			})
		}
	})
}

// A grant of one room is worthless in another (I2).
func TestConsumeInAnotherRoom(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		a := newEnv(t, rdb, cfgWith(nil))
		b := newEnv(t, rdb, cfgWith(nil))
		a.warm()
		ts := a.enqueueN(1)
		a.tick()
		if _, err := b.eng.Consume(b.ctx, b.room, ts[0].Seq, origin); !errors.Is(err, room.ErrUnknownGrant) {
			t.Errorf("room A's grant in room B: %v, want ErrUnknownGrant", err)
		}
		a.consume(ts[0].Seq)
	})
}

func TestCompleteFreesTheSlotOnce(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 2 }))
		e.warm()
		ts := e.enqueueN(6)
		e.tick()
		e.consume(ts[0].Seq)
		e.consume(ts[1].Seq)
		for i := 0; i < 2; i++ { // completing twice frees one slot, not two
			_ = e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin)
		}
		if n := e.inUse(); n != 1 {
			t.Fatalf("admitted+active after complete = %d, want 1", n)
		}
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Admitted != 1 {
			t.Errorf("after one complete: admitted %d, want 1", r.Admitted)
		}
		if p := e.poll(ts[0]); p.State != room.StateExpired {
			t.Errorf("completed visitor polls %s, want expired", p.State)
		}
		if p := e.poll(ts[1]); p.State != room.StateAdmitted || !p.Active {
			t.Errorf("still active visitor: %+v", viewOf(p))
		}
	})
}

func TestLeave(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 2 }))
		ts := e.enqueueN(4)
		if err := e.eng.Leave(e.ctx, ts[1]); err != nil {
			t.Fatal(err)
		}
		if err := e.eng.Leave(e.ctx, ts[1]); err != nil {
			t.Errorf("leaving twice: %v", err)
		}
		if p := e.poll(ts[2]); p.Position != 2 || p.Waiting != 3 {
			t.Errorf("behind the leaver: position %d of %d, want 2 of 3", p.Position, p.Waiting)
		}
		// The leaver's score is above the head, yet polling must not restore the place.
		for i := 0; i < 2; i++ {
			if p := e.poll(ts[1]); p.State != room.StateExpired {
				t.Errorf("leaver polls %s, want expired", p.State)
			}
		}
		e.warm()
		e.tick()
		if diff := cmp.Diff([]int64{ts[0].Seq, ts[2].Seq}, e.grants()); diff != "" {
			t.Errorf("grants after the leave (-want +got):\n%s", diff)
		}
		if s := e.stats(); s.Waiting != 1 {
			t.Errorf("stats waiting = %d, want 1", s.Waiting)
		}
	})
}

func TestConfig(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil)
		if _, err := e.eng.GetConfig(e.ctx, e.room); !errors.Is(err, room.ErrUnknownRoom) {
			t.Fatalf("GetConfig of a new room: %v, want ErrUnknownRoom", err)
		}
		opens := time.Date(2031, 5, 4, 10, 0, 0, 0, time.UTC)
		want := room.Config{MaxActive: 7, AdmitPerMinute: 77, SessionTTLSeconds: 700, ClaimTTLSeconds: 70,
			HeartbeatTTLSeconds: 17, Mode: room.ModeAuto, OpensAt: &opens, OriginURL: "http://localhost:3000/buy?x=1"}
		got, err := e.eng.PutConfig(e.ctx, e.room, want)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PutConfig (-want +got):\n%s", diff)
		}
		if got, err = e.eng.GetConfig(e.ctx, e.room); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetConfig (-want +got):\n%s", diff)
		}
		rooms, err := e.eng.Rooms(e.ctx)
		if err != nil || !slices.Contains(rooms, e.room) {
			t.Errorf("Rooms() = %d rooms, %v; want it to list %s", len(rooms), err, e.room)
		}
		// Clearing opensAt is an update too.
		want.OpensAt, want.Mode = nil, room.ModeQueue
		e.put(want)
		if got, _ = e.eng.GetConfig(e.ctx, e.room); !cmp.Equal(want, got) {
			t.Errorf("after clearing opensAt (-want +got):\n%s", cmp.Diff(want, got))
		}
	})
}

func TestConfigValidation(t *testing.T) {
	bad := []struct {
		name string
		f    func(*room.Config)
	}{
		{"maxActive 0", func(c *room.Config) { c.MaxActive = 0 }},
		{"maxActive -1", func(c *room.Config) { c.MaxActive = -1 }},
		{"maxActive 1e6+1", func(c *room.Config) { c.MaxActive = 1_000_001 }},
		{"admitPerMinute 0", func(c *room.Config) { c.AdmitPerMinute = 0 }},
		{"admitPerMinute -5", func(c *room.Config) { c.AdmitPerMinute = -5 }},
		{"admitPerMinute 1e6+1", func(c *room.Config) { c.AdmitPerMinute = 1_000_001 }},
		{"sessionTTL 9", func(c *room.Config) { c.SessionTTLSeconds = 9 }},
		{"sessionTTL 86401", func(c *room.Config) { c.SessionTTLSeconds = 86_401 }},
		{"claimTTL 4", func(c *room.Config) { c.ClaimTTLSeconds = 4 }},
		{"claimTTL 3601", func(c *room.Config) { c.ClaimTTLSeconds = 3601 }},
		{"heartbeatTTL 9", func(c *room.Config) { c.HeartbeatTTLSeconds = 9 }},
		{"heartbeatTTL 3601", func(c *room.Config) { c.HeartbeatTTLSeconds = 3601 }},
		{"mode empty", func(c *room.Config) { c.Mode = "" }},
		{"mode open", func(c *room.Config) { c.Mode = "open" }},
		{"mode QUEUE", func(c *room.Config) { c.Mode = "QUEUE" }},
		{"originUrl empty", func(c *room.Config) { c.OriginURL = "" }},
		{"originUrl relative", func(c *room.Config) { c.OriginURL = "/checkout" }},
		{"originUrl ftp", func(c *room.Config) { c.OriginURL = "ftp://shop.example.com/" }},
		{"originUrl javascript", func(c *room.Config) { c.OriginURL = "javascript:alert(1)" }},
		{"originUrl no host", func(c *room.Config) { c.OriginURL = "https://" }},
		{"originUrl junk", func(c *room.Config) { c.OriginURL = "not a url" }},
		{"originUrl 2049 chars", func(c *room.Config) {
			c.OriginURL = "https://shop.example.com/" + strings.Repeat("a", 2049-len("https://shop.example.com/"))
		}},
	}
	good := []struct {
		name string
		f    func(*room.Config)
	}{
		{"defaults", nil},
		{"lower bounds", func(c *room.Config) {
			c.MaxActive, c.AdmitPerMinute, c.SessionTTLSeconds, c.ClaimTTLSeconds, c.HeartbeatTTLSeconds = 1, 1, 10, 5, 10
		}},
		{"upper bounds", func(c *room.Config) {
			c.MaxActive, c.AdmitPerMinute, c.SessionTTLSeconds, c.ClaimTTLSeconds, c.HeartbeatTTLSeconds =
				1_000_000, 1_000_000, 86_400, 3600, 3600
		}},
		{"originUrl 2048 chars", func(c *room.Config) {
			c.OriginURL = "https://shop.example.com/" + strings.Repeat("a", 2048-len("https://shop.example.com/"))
		}},
		{"http localhost", func(c *room.Config) { c.OriginURL = "http://localhost:8080/" }},
		{"opensAt past", func(c *room.Config) { c.OpensAt = ptr(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) }},
		{"opensAt future", func(c *room.Config) { c.OpensAt = ptr(time.Now().Add(24 * time.Hour)) }},
	}
	for _, m := range []room.Mode{room.ModeQueue, room.ModeAuto, room.ModePassthrough, room.ModePaused, room.ModeClosed} {
		good = append(good, struct {
			name string
			f    func(*room.Config)
		}{"mode " + string(m), func(c *room.Config) { c.Mode = m }})
	}
	for _, tc := range bad {
		if err := cfgWith(tc.f).Validate(); !errors.Is(err, room.ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidConfig", tc.name, err)
		}
	}
	for _, tc := range good {
		if err := cfgWith(tc.f).Validate(); err != nil {
			t.Errorf("%s: Validate() = %v, want nil", tc.name, err)
		}
	}
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		fresh := newEnv(t, rdb, nil)
		existing := newEnv(t, rdb, cfgWith(nil))
		for _, tc := range bad {
			for _, e := range []*env{fresh, existing} {
				if _, err := e.eng.PutConfig(e.ctx, e.room, *cfgWith(tc.f)); !errors.Is(err, room.ErrInvalidConfig) {
					t.Errorf("%s: PutConfig = %v, want ErrInvalidConfig", tc.name, err)
				}
			}
		}
		if _, err := fresh.eng.GetConfig(fresh.ctx, fresh.room); !errors.Is(err, room.ErrUnknownRoom) {
			t.Errorf("bad configs created the room: GetConfig = %v", err)
		}
		if rooms, _ := fresh.eng.Rooms(fresh.ctx); slices.Contains(rooms, fresh.room) {
			t.Errorf("bad configs registered the room")
		}
		got, err := existing.eng.GetConfig(existing.ctx, existing.room)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(*cfgWith(nil), got); diff != "" {
			t.Errorf("bad configs changed an existing room (-want +got):\n%s", diff)
		}
	})
}

// Settings apply to the next operation, with no restart or cache.
func TestConfigIsLive(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive, c.HeartbeatTTLSeconds = 1, 3600 }))
		e.warm()
		e.enqueueN(20)
		if r := e.tick(); r.Admitted != 1 {
			t.Fatalf("maxActive 1: admitted %d", r.Admitted)
		}
		e.put(*cfgWith(func(c *room.Config) { c.MaxActive, c.HeartbeatTTLSeconds = 4, 3600 }))
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Admitted != 3 {
			t.Errorf("maxActive raised to 4: admitted %d, want 3", r.Admitted)
		}
		e.put(*cfgWith(func(c *room.Config) { c.MaxActive, c.HeartbeatTTLSeconds, c.Mode = 100, 3600, room.ModePaused }))
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Admitted != 0 {
			t.Errorf("paused: admitted %d", r.Admitted)
		}
		e.put(*cfgWith(func(c *room.Config) { c.MaxActive, c.HeartbeatTTLSeconds, c.AdmitPerMinute = 100, 3600, 60 }))
		e.clk.Advance(time.Second)
		e.tick()
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Admitted != 1 {
			t.Errorf("admitPerMinute 60, 1 s later: admitted %d, want 1", r.Admitted)
		}
		// Lowering maxActive below what is in use admits nothing until sessions end.
		e.put(*cfgWith(func(c *room.Config) { c.MaxActive, c.HeartbeatTTLSeconds = 2, 3600 }))
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Admitted != 0 {
			t.Errorf("maxActive lowered below use: admitted %d", r.Admitted)
		}
	})
}

func TestStats(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive, c.SessionTTLSeconds = 3, 3600 }))
		// The pace: the configured rate while a slot is free (TestPace).
		if diff := cmp.Diff(room.Stats{PacePerMinute: 600, RatePerMinute: 600}, e.stats()); diff != "" {
			t.Errorf("new room (-want +got):\n%s", diff)
		}
		e.warm()
		ts := e.enqueueN(8)
		e.tick() // 3 grants
		if diff := cmp.Diff(room.Stats{Waiting: 5, Admitted: 3, AdmittedLastMinute: 3, PacePerMinute: 600, RatePerMinute: 600}, e.stats()); diff != "" {
			t.Errorf("after admitting 3 (-want +got):\n%s", diff)
		}
		e.consume(ts[0].Seq)
		e.consume(ts[1].Seq)
		for i := 0; i < 3; i++ {
			if _, err := e.eng.Consume(e.ctx, e.room, ts[0].Seq, origin); !errors.Is(err, room.ErrAlreadyConsumed) {
				t.Fatalf("replay %d: %v", i, err)
			}
		}
		e.clk.Advance(pastNearTold) // everyone still waiting goes stale but ts[7]
		e.poll(ts[7])
		e.tick() // evicts ts[3..6]; the room is full, nobody admitted
		// The third grant (claimTTL 120 s) is still held at +69 s.
		want := room.Stats{Waiting: 1, Admitted: 1, Active: 2, AdmittedLastMinute: 0, Evicted: 4,
			Consumed: 2, ReplaysRefused: 3, PacePerMinute: 600, RatePerMinute: 600}
		if diff := cmp.Diff(want, e.stats()); diff != "" {
			t.Errorf("stats (-want +got):\n%s", diff)
		}
	})
}

// The rate a poll reports is what was admitted over the last minute, not the
// configured rate: here capacity, not rate, held admission back.
func TestRatePerMinuteIsObserved(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.MaxActive, c.ClaimTTLSeconds, c.HeartbeatTTLSeconds = 60, 15, 3600, 3600
		}))
		ts := e.enqueueN(40)
		start := e.clk.Now()
		admittedAt := map[int]int64{} // second since start -> admitted
		for sec := 0; sec <= 70; sec++ {
			admittedAt[sec] = e.tick().Admitted
			e.clk.Advance(time.Second)
		}
		e.clk.Set(start.Add(70 * time.Second))
		var inLastMinute, total int64
		for sec, n := range admittedAt {
			total += n
			if sec > 10 {
				inLastMinute += n
			}
		}
		if total != 15 || inLastMinute == 0 {
			t.Fatalf("admitted %d in all, %d in the last minute; the test needs 15 and some", total, inLastMinute)
		}
		if p := e.poll(ts[39]); p.RatePerMinute != float64(inLastMinute) {
			t.Errorf("RatePerMinute = %v, want %d admitted in the last minute (configured: 60)", p.RatePerMinute, inLastMinute)
		}
	})
}

func TestBadInput(t *testing.T) {
	invalid := []string{"", strings.Repeat("a", 65), "a b", "{x}", "a:b", "a/b", "ü", "room\n", "a*"}
	valid := []string{"a", strings.Repeat("Z", 64), "summer-sale_2031", "0"}
	for _, id := range invalid {
		if room.ValidRoomID(id) {
			t.Errorf("ValidRoomID(%q) = true", id)
		}
	}
	for _, id := range valid {
		if !room.ValidRoomID(id) {
			t.Errorf("ValidRoomID(%q) = false", id)
		}
	}
	type op struct {
		name string
		call func(e *env, id string) error
	}
	ops := []op{
		{"Enqueue", func(e *env, id string) error { _, err := e.eng.Enqueue(e.ctx, id, "v"); return err }},
		{"Poll", func(e *env, id string) error {
			_, err := e.eng.Poll(e.ctx, room.Ticket{Room: id, Visitor: "v", Seq: 1})
			return err
		}},
		{"Tick", func(e *env, id string) error { _, err := e.eng.Tick(e.ctx, id); return err }},
		{"Stats", func(e *env, id string) error { _, err := e.eng.Stats(e.ctx, id); return err }},
		{"GetConfig", func(e *env, id string) error { _, err := e.eng.GetConfig(e.ctx, id); return err }},
		{"Consume", func(e *env, id string) error { _, err := e.eng.Consume(e.ctx, id, 1, origin); return err }},
		{"Complete", func(e *env, id string) error { return e.eng.Complete(e.ctx, id, 1, origin) }},
		{"Leave", func(e *env, id string) error { return e.eng.Leave(e.ctx, room.Ticket{Room: id, Seq: 1}) }},
	}
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil)
		for _, id := range invalid {
			for _, o := range ops {
				if err := o.call(e, id); !errors.Is(err, room.ErrInvalidRoom) {
					t.Errorf("%s(%q) = %v, want ErrInvalidRoom", o.name, id, err)
				}
			}
			if _, err := e.eng.PutConfig(e.ctx, id, baseConfig()); !errors.Is(err, room.ErrInvalidRoom) {
				t.Errorf("PutConfig(%q) = %v, want ErrInvalidRoom", id, err)
			}
		}
		// A valid id that was never configured: no script may create it by accident.
		for _, o := range ops {
			if err := o.call(e, e.room); !errors.Is(err, room.ErrUnknownRoom) {
				t.Errorf("%s(unknown room) = %v, want ErrUnknownRoom", o.name, err)
			}
		}
		for _, k := range e.keys.List() {
			if n := rdb.Exists(e.ctx, k).Val(); n != 0 {
				t.Errorf("operations on an unknown room created %s", k)
			}
		}
	})
}

// Scripts run by SHA; after Redis forgets them (restart, failover, SCRIPT
// FLUSH) the engine loads them again instead of failing. On servers of its
// own: the flush empties the script cache of every test that shares one.
func TestScriptCacheLoss(t *testing.T) {
	redistest.OwnEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(nil))
		tk := e.enqueueN(1)[0]
		flush := func(ctx context.Context, c *redis.Client) error { return c.ScriptFlush(ctx).Err() }
		var err error
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			err = cc.ForEachMaster(e.ctx, flush)
		} else {
			err = flush(e.ctx, rdb.(*redis.Client))
		}
		if err != nil {
			t.Fatal(err)
		}
		if p := e.poll(tk); p.State != room.StateWaiting || p.Position != 1 {
			t.Errorf("poll after SCRIPT FLUSH: %+v", viewOf(p))
		}
	})
}

// Redis down is ErrUnavailable (the API answers 503), never a panic or a hang.
func TestRedisDownIsUnavailable(t *testing.T) {
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port),
		DialTimeout: 200 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	eng := roomdb.New(rdb)
	ctx := context.Background()
	calls := map[string]func() error{
		"Enqueue":   func() error { _, err := eng.Enqueue(ctx, "r", "v"); return err },
		"Poll":      func() error { _, err := eng.Poll(ctx, room.Ticket{Room: "r", Seq: 1}); return err },
		"Tick":      func() error { _, err := eng.Tick(ctx, "r"); return err },
		"Consume":   func() error { _, err := eng.Consume(ctx, "r", 1, origin); return err },
		"Complete":  func() error { return eng.Complete(ctx, "r", 1, origin) },
		"Leave":     func() error { return eng.Leave(ctx, room.Ticket{Room: "r", Seq: 1}) },
		"PutConfig": func() error { _, err := eng.PutConfig(ctx, "r", baseConfig()); return err },
		"GetConfig": func() error { _, err := eng.GetConfig(ctx, "r"); return err },
		"Rooms":     func() error { _, err := eng.Rooms(ctx); return err },
		"Stats":     func() error { _, err := eng.Stats(ctx, "r"); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, room.ErrUnavailable) {
			t.Errorf("%s with Redis down: %v, want ErrUnavailable", name, err)
		}
	}
}

// The per-client enqueue limit: clientEnqueuePerMinute per address, a burst of
// a tenth of it, 0 for none.
func TestAllowEnqueue(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.ClientEnqueuePerMinute = 60 }))
		allowed := 0
		var retry *room.RetryError
		for i := 0; i < 20; i++ {
			err := e.eng.AllowEnqueue(e.ctx, e.room, "203.0.113.7")
			if err == nil {
				allowed++
				continue
			}
			if !errors.As(err, &retry) || !errors.Is(err, room.ErrRateLimited) {
				t.Fatalf("refusal %v, want a *RetryError wrapping ErrRateLimited", err)
			}
			break
		}
		if allowed != 6 {
			t.Errorf("at 60/min (burst a tenth: 6) a client got %d enqueues at one instant", allowed)
		}
		if retry == nil || retry.After <= 0 || retry.After > time.Second {
			t.Errorf("retry after %v, want within one interval (1 s)", retry)
		}
		if err := e.eng.AllowEnqueue(e.ctx, e.room, "198.51.100.9"); err != nil {
			t.Errorf("another client is limited too: %v", err)
		}
		e.clk.Advance(retry.After)
		if err := e.eng.AllowEnqueue(e.ctx, e.room, "203.0.113.7"); err != nil {
			t.Errorf("after the wait: %v", err)
		}
		e.put(*cfgWith(func(c *room.Config) { c.ClientEnqueuePerMinute = 0 }))
		for i := 0; i < 50; i++ {
			if err := e.eng.AllowEnqueue(e.ctx, e.room, "203.0.113.7"); err != nil {
				t.Fatalf("limit 0 (off), call %d: %v", i, err)
			}
		}
		unknown := newEnv(t, rdb, nil)
		if err := e.eng.AllowEnqueue(e.ctx, unknown.room, "x"); !errors.Is(err, room.ErrUnknownRoom) {
			t.Errorf("unknown room: %v", err)
		}
		if err := e.eng.AllowEnqueue(e.ctx, "a b", "x"); !errors.Is(err, room.ErrInvalidRoom) {
			t.Errorf("invalid room: %v", err)
		}
	})
}

// A waiting visitor polling sooner than the min interval is told to wait.
func TestPollMinInterval(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(nil), roomdb.WithMinPollInterval(2*time.Second))
		tk := e.enqueueN(1)[0]
		e.clk.Advance(500 * time.Millisecond)
		_, err := e.eng.Poll(e.ctx, tk)
		var retry *room.RetryError
		if !errors.As(err, &retry) || retry.After != 1500*time.Millisecond {
			t.Fatalf("poll 0.5 s after enqueue: %v, want a retry after 1.5s", err)
		}
		e.clk.Advance(2 * time.Second)
		if p := e.poll(tk); p.State != room.StateWaiting {
			t.Errorf("poll after the interval: %s", p.State)
		}
		e.warm()
		e.tick()
		if p := e.poll(tk); p.State != room.StateAdmitted {
			t.Errorf("an admitted visitor polling at once: %s, want admitted (the limit is for waiting visitors)", p.State)
		}
	})
}

// The rate a poll reports is the front's speed: visitors ahead who left and
// are skipped at the front move a place toward it as an admission does, so the
// rate is the admissions over the share of the front that was admitted (at
// most double), and a visitor's ETA, next poll and the page's count follow the
// queue rather than lag it.
func TestRateCountsTheFrontsSkips(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		// The same room twice: with a batch of one the tick, which admits, leaves
		// the sweep nothing (it reads at most the batch beside its admissions),
		// so the front skips the stale visitors; a batch of a thousand sweeps
		// them all first.
		// The measured rate is the settings hash's rate (lib.lua pace reads it
		// as the front's speed once the room is full).
		run := func(batch int) (room.TickResult, float64) {
			e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.AdmitPerMinute, c.MaxActive = 600, 1000 }), roomdb.WithEvictBatch(batch))
			ts := e.enqueueN(20)
			e.clk.Advance(pastNearTold) // everyone's heartbeat is stale…
			for _, tk := range ts[10:] {
				e.poll(tk) // …but the back half's
			}
			r := e.tick()
			rate, err := e.rdb.HGet(e.ctx, e.keys.Config, "rate").Float64()
			if err != nil {
				t.Fatal(err)
			}
			return r, rate
		}
		skips, ps := run(1)
		swept, pw := run(1000)
		if skips.Admitted != 10 || swept.Admitted != 10 || skips.Evicted != 10 || swept.Evicted != 10 {
			t.Fatalf("ticks %+v and %+v; the test needs ten admitted and ten evicted in each", skips, swept)
		}
		// The ten skipped at the front: the share admitted is 10/20.
		if want := math.Floor(pw * 20 / 10); ps != want {
			t.Errorf("measured rate = %v with ten skipped at the front, %v when the sweep evicted them; want %v", ps, pw, want)
		}
	})
}

// A tick reads at most its batch of the queue beside what it admits: the
// sweep checks what the admissions leave (batch 10, four admitted: six).
func TestSweepSharesTheTicksBatch(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		// 120 a minute: the bucket holds 4 tokens.
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.AdmitPerMinute, c.MaxActive = 120, 1000 }), roomdb.WithEvictBatch(10))
		ts := e.enqueueN(30)
		e.clk.Advance(pastAnyTold) // everyone's heartbeat is stale…
		for _, tk := range ts[:4] {
			e.poll(tk) // …but the front four's
		}
		r := e.tick()
		// The sweep checks the first six (two stale evicted); the admissions
		// take the four fresh ones at the front.
		if r.Admitted != 4 || r.Evicted != 2 {
			t.Errorf("tick admitted %d and evicted %d, want 4 and 2 (a sweep of 10 - 4)", r.Admitted, r.Evicted)
		}
	})
}

// Renew moves an active session's end to min(now + sessionTTL, start + max):
// it extends, never shortens, stops at the maximum, and refuses a session
// that is over (completed, expired) or was never consumed.
func TestRenew(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.MaxActive, c.SessionTTLSeconds, c.MaxSessionSeconds = 3, 60, 300
		}))
		e.warm()
		ts := e.enqueueN(3)
		e.tick()
		t0 := e.clk.Now()
		start := t0.Add(-time.Second) // the cookie's start: whole seconds, at most the consume
		if s := e.consume(ts[0].Seq); !s.ExpiresAt.Equal(t0.Add(60 * time.Second)) {
			t.Fatalf("consumed: ends %v, want %v", s.ExpiresAt, t0.Add(60*time.Second))
		}
		// A completed session, a grant never consumed, another origin.
		e.consume(ts[1].Seq)
		if _, err := e.eng.Renew(e.ctx, e.room, ts[1].Seq, "https://evil.example/", start); !errors.Is(err, room.ErrWrongAudience) {
			t.Errorf("renew for another origin: %v, want ErrWrongAudience", err)
		}
		if err := e.eng.Complete(e.ctx, e.room, ts[1].Seq, origin); err != nil {
			t.Fatal(err)
		}
		for _, seq := range []int64{ts[1].Seq, ts[2].Seq, 999} {
			if _, err := e.eng.Renew(e.ctx, e.room, seq, origin, start); !errors.Is(err, room.ErrUnknownGrant) {
				t.Errorf("renew of %d: %v, want ErrUnknownGrant", seq, err)
			}
		}
		renew := func(seq int64, from time.Time, want time.Time) {
			t.Helper()
			s, err := e.eng.Renew(e.ctx, e.room, seq, origin, from)
			if err != nil || !s.ExpiresAt.Equal(want) {
				t.Fatalf("at +%v: Renew = %v %v, want the end %v", e.clk.Now().Sub(t0), s.ExpiresAt, err, want)
			}
		}
		e.clk.Advance(40 * time.Second)
		renew(ts[0].Seq, start, t0.Add(100*time.Second))
		renew(ts[0].Seq, start, t0.Add(100*time.Second)) // again: the same end

		// A lower maximum never shortens a session.
		cfg, err := e.eng.GetConfig(e.ctx, e.room)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxSessionSeconds = 60
		if _, err := e.eng.PutConfig(e.ctx, e.room, cfg); err != nil {
			t.Fatal(err)
		}
		renew(ts[0].Seq, start, t0.Add(100*time.Second))
		// Without a maximum nothing is renewed.
		cfg.MaxSessionSeconds = 0
		if _, err := e.eng.PutConfig(e.ctx, e.room, cfg); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(30 * time.Second)
		renew(ts[0].Seq, start, t0.Add(100*time.Second))
		cfg.MaxSessionSeconds = 300
		if _, err := e.eng.PutConfig(e.ctx, e.room, cfg); err != nil {
			t.Fatal(err)
		}

		// Capped at start + max.
		for e.clk.Now().Before(t0.Add(270 * time.Second)) { // an active visitor: less than the idle timeout apart
			e.clk.Advance(25 * time.Second)
			want := e.clk.Now().Add(60 * time.Second)
			if limit := start.Add(300 * time.Second); want.After(limit) {
				want = limit
			}
			renew(ts[0].Seq, start, want)
		}
		// A start in the future counts as now: the cap is then now + max.
		renew(ts[0].Seq, t0.Add(time.Hour), e.clk.Now().Add(60*time.Second))
		// Past its end the session is over: refused, and not brought back.
		e.clk.Advance(60 * time.Second)
		if _, err := e.eng.Renew(e.ctx, e.room, ts[0].Seq, origin, start); !errors.Is(err, room.ErrUnknownGrant) {
			t.Errorf("renew of an expired session: %v, want ErrUnknownGrant", err)
		}

		if _, err := e.eng.Renew(e.ctx, "nosuchroom", ts[0].Seq, origin, start); !errors.Is(err, room.ErrUnknownRoom) {
			t.Errorf("renew in an unknown room: %v, want ErrUnknownRoom", err)
		}
	})
}
