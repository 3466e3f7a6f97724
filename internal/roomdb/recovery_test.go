package roomdb_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// I4 after a data loss, when ticks run before every visitor came back: the
// room is re-created, a few visitors poll at once and are admitted, new
// arrivals are admitted after them, and only then do the rest poll (still
// within the recovery window of two heartbeat windows). None loses the place:
// they come back ahead of everyone still waiting, in their original order.
// A ticket served during the window does not come back, and a ticket that
// stays away past the window is passed for good.
func TestRecoveryLetsLatePollersBackPastTheHead(t *testing.T) {
	redistest.OwnEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		cfg := cfgWith(func(c *room.Config) {
			c.MaxActive, c.AdmitPerMinute, c.HeartbeatTTLSeconds, c.ClaimTTLSeconds = 3, 6000, 60, 5
		})
		e := newEnv(t, rdb, cfg)
		ts := e.enqueueN(10)
		e.clk.Advance(5 * time.Second)

		e.loseEverything()
		e.put(*cfg)
		for _, tk := range ts[5:] {
			if p := e.poll(tk); p.State != room.StateWaiting {
				t.Fatalf("visitor %d polls at once: %s, want waiting", tk.Seq, p.State)
			}
		}
		late := e.enqueue("late").Ticket
		e.warm()
		e.tick() // admits ts[5..7]
		if diff := cmp.Diff(seqs(ts[5:8]), e.grants()); diff != "" {
			t.Fatalf("first grants (-want +got):\n%s", diff)
		}
		e.clk.Advance(6 * time.Second) // the grants lapse unclaimed
		e.tick()                       // reclaims them, admits ts[8], ts[9], late: the head passes ts[0..4]
		if diff := cmp.Diff(append(seqs(ts[8:]), late.Seq), e.grants()); diff != "" {
			t.Fatalf("second grants (-want +got):\n%s", diff)
		}

		// 7 s after the re-creation, well within the window: the late pollers are back.
		for i, tk := range ts[:4] {
			p := e.poll(tk)
			if p.State != room.StateWaiting {
				t.Fatalf("late visitor %d: %s, want waiting (I4)", i, p.State)
			}
		}
		var got []int64
		for _, tk := range ts[:4] {
			got = append(got, e.poll(tk).Position)
		}
		if diff := cmp.Diff([]int64{1, 2, 3, 4}, got); diff != "" {
			t.Errorf("positions of the late visitors (-want +got):\n%s", diff)
		}
		// Served during the window (the grant lapsed): not restored a second time.
		if p := e.poll(ts[6]); p.State != room.StateExpired {
			t.Errorf("visitor whose grant lapsed polls %s, want expired", p.State)
		}

		e.clk.Advance(6 * time.Second) // the second grants lapse too
		e.tick()
		if diff := cmp.Diff(seqs(ts[:3]), e.grants()); diff != "" {
			t.Errorf("grants after the late visitors came back (-want +got):\n%s", diff)
		}

		// ts[4] stays away past the window (the longest told poll and 2 x 60 s
		// after the re-creation): passed for good.
		e.clk.Advance(room.MaxPollAfter + 2*time.Minute)
		if p := e.poll(ts[4]); p.State != room.StateExpired {
			t.Errorf("visitor back after the recovery window: %s, want expired", p.State)
		}
	})
}

// A brand-new room admits from its first ticks: recovery holds nothing back.
func TestNewRoomAdmitsAtOnce(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 2 }))
		e.warm()
		ts := e.enqueueN(3)
		e.tick()
		if diff := cmp.Diff(seqs(ts[:2]), e.grants()); diff != "" {
			t.Errorf("grants of a new room's first tick (-want +got):\n%s", diff)
		}
	})
}

// The heartbeat layout the engine writes is the one HeartbeatField and
// HeartbeatValueTold describe (tools that fill a queue directly rely on it).
func TestHeartbeatLayout(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(nil))
		p := e.enqueue("v")
		got, err := e.rdb.HGet(e.ctx, e.keys.Heartbeats, roomdb.HeartbeatField(p.Ticket.Seq)).Result()
		if err != nil {
			t.Fatalf("HGET heartbeat: %v", err)
		}
		if want := roomdb.HeartbeatValueTold(e.clk.Now().UnixMilli(), room.ToldClass(p.PollWithin.Milliseconds())); got != want {
			t.Errorf("heartbeat value %x, want %x", got, want)
		}
	})
}
