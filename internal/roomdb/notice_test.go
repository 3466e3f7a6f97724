package roomdb_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// noticeConfig is a room that offers notices: one slot, the page's claim
// window of 2 minutes, a notified one of 10, sessions of a day.
func noticeConfig() *room.Config {
	return cfgWith(func(c *room.Config) {
		c.MaxActive, c.ClaimTTLSeconds, c.NotifiedClaimTTLSeconds, c.SessionTTLSeconds = 1, 120, 600, 86_400
	})
}

// signup is a registration whose sealed address is marker, from network
// and address (the limiters' keys), valid for a day.
func (e *env) signup(marker, network, address string) room.NoticeSignup {
	return room.NoticeSignup{Sealed: []byte(marker), Network: network, Address: address, Expires: e.clk.Now().Add(24 * time.Hour)}
}

func (e *env) register(t room.Ticket, marker string) {
	e.t.Helper()
	if err := e.eng.RegisterNotice(e.ctx, t, e.signup(marker, "net-"+marker, "addr-"+marker)); err != nil {
		e.t.Fatalf("RegisterNotice(%d): %v", t.Seq, err)
	}
}

// admitFirst ticks until the first visitor holds the room's one slot, and
// redeems it: a session that keeps the slot until completed.
func (e *env) admitFirst(t room.Ticket) {
	e.t.Helper()
	for range 5 {
		e.tick()
		if g := e.grants(); len(g) == 1 && g[0] == t.Seq {
			e.consume(t.Seq)
			return
		}
		e.clk.Advance(time.Second)
	}
	e.t.Fatalf("%d was not admitted", t.Seq)
}

// inQueue reports whether seq waits in the queue, read without polling (a
// poll is a heartbeat).
func (e *env) inQueue(seq int64) bool {
	e.t.Helper()
	_, err := e.rdb.ZScore(e.ctx, e.keys.Queue, formatSeq(seq)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		e.t.Fatal(err)
	}
	return err == nil
}

func formatSeq(seq int64) string { return itoa(seq) }

func itoa(n int64) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// noticeKeysHold reports which of the room's keys (every key of its hash tag)
// still hold marker anywhere in their values: the test that an address goes
// with its place.
func noticeKeysHold(t *testing.T, ctx context.Context, rdb redis.UniversalClient, roomID, marker string) []string {
	t.Helper()
	var (
		mu    sync.Mutex // ForEachMaster scans the primaries at once
		found []string
	)
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, "vst:{"+roomID+"}:*", 1000).Iterator()
		for it.Next(ctx) {
			k := it.Val()
			dump, err := c.Dump(ctx, k).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if strings.Contains(dump, marker) {
				mu.Lock()
				found = append(found, k)
				mu.Unlock()
			}
		}
		return it.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		t.Fatalf("client %T", rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// A visitor who asked for a notice keeps the place without polling (a
// suspended tab polls nothing), while one who did not is evicted; at the
// grant the notified visitor gets the longer claim window, counted against
// maxActive, and the notice is due: taken for a lease, taken again when the
// lease ran out (a sender that died), acked sent once. Claimed after the
// page's window, the turn counts as saved; nothing of the address is left.
func TestNoticeKeepsThePlaceAndTheTurn(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, noticeConfig())
		ts := e.enqueueN(3)
		e.admitFirst(ts[0])
		const marker = "SEALED-ADDRESS-of-v1"
		e.register(ts[1], marker)
		e.clk.Advance(pastAnyTold + 10*time.Minute) // nobody polls
		if r := e.tick(); r.Evicted != 1 {
			t.Fatalf("tick after the silence evicted %d, want 1 (v2)", r.Evicted)
		}
		if !e.inQueue(ts[1].Seq) || e.inQueue(ts[2].Seq) {
			t.Fatalf("after the silence: v1 waits %v (want true), v2 waits %v (want false)", e.inQueue(ts[1].Seq), e.inQueue(ts[2].Seq))
		}
		// The slot frees: v1 is granted the notified window, and the notice is due.
		if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
		granted := e.clk.Now()
		if r := e.tick(); r.Admitted != 1 || r.Notices != 1 {
			t.Fatalf("the grant's tick: admitted %d, notices due %d; want 1, 1", r.Admitted, r.Notices)
		}
		d, err := rdb.ZScore(e.ctx, e.keys.Grants, itoa(ts[1].Seq)).Result()
		if want := granted.Add(600 * time.Second).UnixMilli(); err != nil || int64(d) != want {
			t.Fatalf("v1's claim deadline %v (%v), want the notified window's %d", int64(d), err, want)
		}
		// I1: the notified grant holds the one slot; a newcomer waits.
		late := e.enqueue("v3").Ticket
		e.clk.Advance(time.Second)
		e.tick()
		if n := e.inUse(); n != 1 || !e.inQueue(late.Seq) {
			t.Fatalf("with a notified grant: %d in use (want 1), newcomer waiting %v", n, e.inQueue(late.Seq))
		}
		got, err := e.eng.TakeNotices(e.ctx, e.room, 10, 30*time.Second)
		if err != nil || len(got) != 1 || got[0].Seq != ts[1].Seq || string(got[0].Sealed) != marker ||
			got[0].Deadline.UnixMilli() != granted.Add(600*time.Second).UnixMilli() {
			t.Fatalf("TakeNotices: %+v, %v", got, err)
		}
		if again, err := e.eng.TakeNotices(e.ctx, e.room, 10, 30*time.Second); err != nil || len(again) != 0 {
			t.Fatalf("a leased notice was taken again: %+v, %v", again, err)
		}
		if r := e.tick(); r.Notices != 0 {
			t.Fatalf("a leased notice counted as due: %d", r.Notices)
		}
		e.clk.Advance(31 * time.Second)
		if again, err := e.eng.TakeNotices(e.ctx, e.room, 10, 30*time.Second); err != nil || len(again) != 1 {
			t.Fatalf("after its lease the notice is due again: %+v, %v", again, err)
		}
		if err := e.eng.AckNotice(e.ctx, e.room, ts[1].Seq, room.NoticeSent, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := e.eng.AckNotice(e.ctx, e.room, ts[1].Seq, room.NoticeSent, time.Time{}); !errors.Is(err, room.ErrNoNotice) {
			t.Fatalf("a second ack: %v, want ErrNoNotice", err)
		}
		if found := noticeKeysHold(t, e.ctx, rdb, e.room, marker); len(found) != 0 {
			t.Fatalf("the address is still in %v after the notice went", found)
		}
		// Back after the page's two minutes, within the notified ten: claimed.
		e.clk.Advance(3 * time.Minute)
		if p := e.poll(ts[1]); p.State != room.StateAdmitted || p.Active {
			t.Fatalf("v1 back after 3 minutes: %+v", p)
		}
		e.consume(ts[1].Seq)
		st := e.stats()
		if st.NoticeSignups != 1 || st.NoticesSent != 1 || st.NoticesFailed != 0 || st.TurnsSaved != 1 || st.NoticesHeld != 0 {
			t.Fatalf("stats: signups %d sent %d failed %d saved %d held %d; want 1 1 0 1 0",
				st.NoticeSignups, st.NoticesSent, st.NoticesFailed, st.TurnsSaved, st.NoticesHeld)
		}
		// The next minute's point carries them to the history, whence the report's.
		e.clk.Advance(time.Minute)
		e.tick()
		pts, err := e.eng.History(e.ctx, e.room)
		if err != nil || len(pts) == 0 {
			t.Fatalf("History: %d points, %v", len(pts), err)
		}
		if p := pts[len(pts)-1]; p.NoticesSent != 1 || p.NoticesFailed != 0 || p.TurnsSaved != 1 {
			t.Fatalf("the last point: sent %d failed %d saved %d; want 1 0 1", p.NoticesSent, p.NoticesFailed, p.TurnsSaved)
		}
	})
}

// A notified visitor who never comes back holds the slot to the end of the
// notified window, not a moment more: then the tick reclaims it, the
// registration goes, a notice never sent counts as failed, and the next
// visitor is admitted.
func TestNotifiedTurnLapsesAtItsWindow(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, noticeConfig())
		ts := e.enqueueN(3)
		e.admitFirst(ts[0])
		const marker = "SEALED-never-back"
		e.register(ts[1], marker)
		if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
			t.Fatal(err)
		}
		e.poll(ts[2]) // v2 stays
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Admitted != 1 || r.Notices != 1 {
			t.Fatalf("grant: %+v", r)
		}
		for _, step := range []time.Duration{9 * time.Minute, 59 * time.Second} {
			e.clk.Advance(step)
			e.poll(ts[2])
			if r := e.tick(); r.GrantsReclaimed != 0 || r.Admitted != 0 {
				t.Fatalf("within the notified window: %+v", r)
			}
		}
		e.clk.Advance(2 * time.Second)
		if r := e.tick(); r.GrantsReclaimed != 1 {
			t.Fatalf("at the window's end: %+v, want the grant reclaimed", r)
		}
		if found := noticeKeysHold(t, e.ctx, rdb, e.room, marker); len(found) != 0 {
			t.Fatalf("the address is still in %v after the grant ended", found)
		}
		e.poll(ts[2])
		e.clk.Advance(time.Second)
		e.tick()
		if g := e.grants(); len(g) != 1 || g[0] != ts[2].Seq {
			t.Fatalf("the next visitor: grants %v, want [%d]", g, ts[2].Seq)
		}
		if st := e.stats(); st.NoticesFailed != 1 || st.NoticesSent != 0 {
			t.Fatalf("stats: sent %d failed %d, want 0 1", st.NoticesSent, st.NoticesFailed)
		}
		if err := e.eng.AckNotice(e.ctx, e.room, ts[1].Seq, room.NoticeSent, time.Time{}); !errors.Is(err, room.ErrNoNotice) {
			t.Fatalf("an ack after the grant ended: %v, want ErrNoNotice", err)
		}
	})
}

// The address goes with the place however it ends: a leave, a withdrawal,
// an eviction a day after the last poll, a drain, a claim before the
// notice went, a grant given up, the room's delete. A Redis scan of the
// room's keys finds it nowhere.
func TestNoticeGoesWithThePlace(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		cases := []struct {
			name string
			end  func(t *testing.T, e *env, ts []room.Ticket)
		}{
			{"leave", func(t *testing.T, e *env, ts []room.Ticket) {
				if err := e.eng.Leave(e.ctx, ts[1]); err != nil {
					t.Fatal(err)
				}
			}},
			{"withdraw", func(t *testing.T, e *env, ts []room.Ticket) {
				if err := e.eng.WithdrawNotice(e.ctx, ts[1]); err != nil {
					t.Fatal(err)
				}
				// Held as any place again: evicted after the longest told poll.
				e.clk.Advance(pastAnyTold)
				if e.tick(); e.inQueue(ts[1].Seq) {
					t.Fatal("a withdrawn notice still holds the place")
				}
			}},
			{"evicted a day on", func(t *testing.T, e *env, ts []room.Ticket) {
				e.clk.Advance(room.NotifiedHold - time.Minute)
				if e.tick(); !e.inQueue(ts[1].Seq) {
					t.Fatal("evicted before a day")
				}
				e.clk.Advance(pastAnyTold)
				if e.tick(); e.inQueue(ts[1].Seq) {
					t.Fatal("still waiting a day after the last poll")
				}
			}},
			{"drain", func(t *testing.T, e *env, ts []room.Ticket) {
				c := *noticeConfig()
				c.Mode = room.ModeClosed
				e.put(c)
				if _, err := e.eng.Drain(e.ctx, e.room); err != nil {
					t.Fatal(err)
				}
			}},
			{"claimed before the notice went", func(t *testing.T, e *env, ts []room.Ticket) {
				if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
					t.Fatal(err)
				}
				e.clk.Advance(time.Second)
				e.tick()
				e.consume(ts[1].Seq)
				if got, _ := e.eng.TakeNotices(e.ctx, e.room, 10, time.Minute); len(got) != 0 {
					t.Fatalf("a notice of a claimed turn: %+v", got)
				}
			}},
			{"grant given up", func(t *testing.T, e *env, ts []room.Ticket) {
				if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
					t.Fatal(err)
				}
				e.clk.Advance(time.Second)
				e.tick()
				if err := e.eng.Complete(e.ctx, e.room, ts[1].Seq, origin); err != nil {
					t.Fatal(err)
				}
			}},
			{"room deleted", func(t *testing.T, e *env, ts []room.Ticket) {
				if err := e.eng.Delete(e.ctx, e.room); err != nil {
					t.Fatal(err)
				}
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e := newEnv(t, rdb, noticeConfig())
				ts := e.enqueueN(2)
				e.admitFirst(ts[0])
				marker := "SEALED-" + strings.ReplaceAll(c.name, " ", "-")
				e.register(ts[1], marker)
				if found := noticeKeysHold(t, e.ctx, rdb, e.room, marker); len(found) != 1 {
					t.Fatalf("registered: the address is in %v, want one key", found)
				}
				e.t = t
				c.end(t, e, ts)
				if found := noticeKeysHold(t, e.ctx, rdb, e.room, marker); len(found) != 0 {
					t.Fatalf("the address is still in %v", found)
				}
			})
		}
	})
}

// A poll keeps a notified place's class: a visitor who polled, then looked
// away, is held as long as one who never polled after signing up.
func TestPollKeepsTheNotice(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, noticeConfig())
		ts := e.enqueueN(3)
		e.admitFirst(ts[0])
		e.register(ts[1], "SEALED-poll")
		if p := e.poll(ts[2]); p.Notice == nil || *p.Notice {
			t.Fatalf("a place without a notice polls Notice %v", p.Notice)
		}
		e.clk.Advance(time.Minute)
		if p := e.poll(ts[1]); p.Notice == nil || !*p.Notice {
			t.Fatalf("a place with a notice polls Notice %v", p.Notice)
		}
		v, err := rdb.HGet(e.ctx, e.keys.Heartbeats, roomdb.HeartbeatField(ts[1].Seq)).Result()
		seen, class, ok := roomdb.ParseHeartbeat(v)
		if err != nil || !ok || class != room.NotifiedClass || seen != e.clk.Now().UnixMilli() {
			t.Fatalf("heartbeat after a poll: seen %d class %d (%v); want now, class %d", seen, class, err, room.NotifiedClass)
		}
		e.clk.Advance(pastAnyTold + time.Hour)
		if e.tick(); !e.inQueue(ts[1].Seq) {
			t.Fatal("a notified place was evicted after its poll")
		}
	})
}

// What a sign-up is refused for: a room without notices, a visitor not in
// the queue, a network or an address over its limit; and an ack's outcomes.
func TestNoticeSignupRefusals(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		off := newEnv(t, rdb, cfgWith(nil))
		tk := off.enqueue("a").Ticket
		if err := off.eng.RegisterNotice(off.ctx, tk, off.signup("x", "n", "a")); !errors.Is(err, room.ErrNoticesOff) {
			t.Fatalf("a room without notices: %v", err)
		}
		e := newEnv(t, rdb, noticeConfig())
		ts := e.enqueueN(room.NoticeNetworkBurst + 3)
		e.admitFirst(ts[0])
		if err := e.eng.RegisterNotice(e.ctx, ts[0], e.signup("x", "n0", "a0")); !errors.Is(err, room.ErrNoPlace) {
			t.Fatalf("an admitted visitor: %v, want ErrNoPlace", err)
		}
		if err := e.eng.RegisterNotice(e.ctx, room.Ticket{Room: "nosuchroom-notice", Seq: 1}, e.signup("x", "n", "a")); !errors.Is(err, room.ErrUnknownRoom) {
			t.Fatalf("an unknown room: %v", err)
		}
		// One network: its burst, then a wait.
		for i, tk := range ts[1 : 1+room.NoticeNetworkBurst] {
			if err := e.eng.RegisterNotice(e.ctx, tk, e.signup("x", "one-net", "addr"+itoa(int64(i)))); err != nil {
				t.Fatalf("sign-up %d of one network: %v", i, err)
			}
		}
		var re *room.RetryError
		err := e.eng.RegisterNotice(e.ctx, ts[room.NoticeNetworkBurst+1], e.signup("x", "one-net", "another"))
		if !errors.As(err, &re) || re.After <= 0 || re.After > room.NoticeNetworkEvery {
			t.Fatalf("one network over its burst: %v", err)
		}
		// One address: its burst from any networks, then a wait.
		for i := range room.NoticeAddressBurst {
			if err := e.eng.RegisterNotice(e.ctx, ts[1+i], e.signup("x", "net"+itoa(int64(i)), "victim")); err != nil {
				t.Fatalf("sign-up %d of one address: %v", i, err)
			}
		}
		err = e.eng.RegisterNotice(e.ctx, ts[room.NoticeNetworkBurst+2], e.signup("x", "yet-another-net", "victim"))
		if !errors.As(err, &re) || re.After <= 0 || re.After > room.NoticeAddressEvery {
			t.Fatalf("one address over its burst: %v", err)
		}
		if err := e.eng.AckNotice(e.ctx, e.room, ts[1].Seq, room.NoticeSent, time.Time{}); !errors.Is(err, room.ErrNoNotice) {
			t.Fatalf("an ack of a notice not due: %v", err)
		}
	})
}

// A failed send is due again when the sender says; one refused for good
// (an expired push subscription) goes, and counts as failed.
func TestNoticeRetryAndGone(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, noticeConfig())
		ts := e.enqueueN(2)
		e.admitFirst(ts[0])
		e.register(ts[1], "SEALED-retry")
		if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
		e.tick()
		if got, _ := e.eng.TakeNotices(e.ctx, e.room, 1, time.Minute); len(got) != 1 {
			t.Fatalf("take: %+v", got)
		}
		if err := e.eng.AckNotice(e.ctx, e.room, ts[1].Seq, room.NoticeRetry, e.clk.Now().Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(9 * time.Second)
		if r := e.tick(); r.Notices != 0 {
			t.Fatalf("due before the retry: %d", r.Notices)
		}
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Notices != 1 {
			t.Fatalf("due at the retry: %d", r.Notices)
		}
		if got, _ := e.eng.TakeNotices(e.ctx, e.room, 1, time.Minute); len(got) != 1 {
			t.Fatalf("take again: %+v", got)
		}
		if err := e.eng.AckNotice(e.ctx, e.room, ts[1].Seq, room.NoticeGone, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if found := noticeKeysHold(t, e.ctx, rdb, e.room, "SEALED-retry"); len(found) != 0 {
			t.Fatalf("a refused address is still in %v", found)
		}
		if st := e.stats(); st.NoticesFailed != 1 || st.NoticesSent != 0 {
			t.Fatalf("stats: sent %d failed %d", st.NoticesSent, st.NoticesFailed)
		}
		// The grant stands: the visitor may still come back.
		if p := e.poll(ts[1]); p.State != room.StateAdmitted {
			t.Fatalf("after a refused notice: %+v", p)
		}
	})
}

// A visitor of an arrival shard far from the front keeps the heartbeat on
// the shard; one who asked for a notice is held all the same when silent
// (the shard's sweep finds them stale, the room's shard holds the notice),
// waiting or, once the silent ones ahead are gone, admitted; a silent
// neighbour without one is evicted.
func TestNoticeHoldsAShardVisitor(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, spreadRoom(func(c *room.Config) { c.AdmitPerMinute, c.NotifiedClaimTTLSeconds = 6, 600 }))
		tickets := e.joinFar(200)
		told, silent := tickets[150], tickets[160]
		e.register(told, "SEALED-far")
		end := e.clk.Now().Add(room.FarPollAfter*6/5 + 2*time.Minute)
		for e.clk.Now().Before(end) {
			e.clk.Advance(2 * time.Second)
			e.tick()
		}
		if e.rank(silent) != 0 {
			t.Errorf("the silent visitor without a notice still waits at %d", e.rank(silent))
		}
		// Those ahead went silent too: the front may have reached it.
		_, err := rdb.ZScore(e.ctx, e.keys.Grants, itoa(told.Seq)).Result()
		if e.rank(told) == 0 && err != nil {
			t.Errorf("the silent visitor with a notice was evicted (%v)", err)
		}
	})
}
