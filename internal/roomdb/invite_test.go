package roomdb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// invitation is a checked invitation to e's room.
func (e *env) invitation(id string, uses int64, bypass bool) *room.Invitation {
	now := e.clk.Now()
	return &room.Invitation{ID: id, Room: e.room, Uses: uses, Bypass: bypass, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
}

func (e *env) joinWith(visitor string, inv *room.Invitation) (room.Place, error) {
	return e.eng.Join(e.ctx, e.room, visitor, room.JoinProof{Invitation: inv})
}

func TestInvitationsInAnInviteOnlyRoom(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.InviteOnly = true }))
		if _, err := e.joinWith("stranger", nil); !errors.Is(err, room.ErrInvitationRequired) {
			t.Fatalf("uninvited join: %v, want ErrInvitationRequired", err)
		}
		// An engine that holds no settings of the room: the enqueue script refuses.
		cold := roomdb.New(rdb, roomdb.WithClock(e.clk.Now))
		if _, err := cold.Join(e.ctx, e.room, "stranger2", room.JoinProof{}); !errors.Is(err, room.ErrInvitationRequired) {
			t.Fatalf("uninvited join through a cold engine: %v, want ErrInvitationRequired", err)
		}
		inv := e.invitation("two-uses", 2, false)
		for _, v := range []string{"guest1", "guest2"} {
			if p, err := e.joinWith(v, inv); err != nil || p.State != room.StateWaiting {
				t.Fatalf("invited join %s: %+v, %v", v, viewOf(p), err)
			}
		}
		if _, err := e.joinWith("guest3", inv); !errors.Is(err, room.ErrInvitationUsedUp) {
			t.Fatalf("third use of two: %v, want ErrInvitationUsedUp", err)
		}
		st, err := e.eng.Invitation(e.ctx, e.room, "two-uses")
		if err != nil {
			t.Fatal(err)
		}
		if st.Used != 2 || len(st.Log) != 2 || st.Log[0].Visitor != "guest1" || st.Log[1].Visitor != "guest2" || st.Log[1].Use != 2 {
			t.Fatalf("invitation state %+v; want 2 uses by guest1, guest2", st)
		}
		other := e.invitation("x", 1, false)
		other.Room = "another"
		if _, err := e.joinWith("guest4", other); !errors.Is(err, room.ErrInvitationInvalid) {
			t.Fatalf("another room's invitation: %v, want ErrInvitationInvalid", err)
		}
	})
}

func TestInvitationRevoked(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.InviteOnly = true }))
		inv := e.invitation("leaked", 100, false)
		if _, err := e.joinWith("early", inv); err != nil {
			t.Fatal(err)
		}
		at, err := e.eng.RevokeInvitation(e.ctx, e.room, "leaked")
		if err != nil || !at.Equal(e.clk.Now()) {
			t.Fatalf("revoke: %v at %v", err, at)
		}
		e.clk.Advance(time.Minute)
		if again, err := e.eng.RevokeInvitation(e.ctx, e.room, "leaked"); err != nil || !again.Equal(at) {
			t.Fatalf("revoked twice: %v at %v, want the first time %v", err, again, at)
		}
		if _, err := e.joinWith("late", inv); !errors.Is(err, room.ErrInvitationRevoked) {
			t.Fatalf("join with a revoked invitation: %v, want ErrInvitationRevoked", err)
		}
		revs, err := e.eng.Revocations(e.ctx, e.room)
		if err != nil || len(revs) != 1 || revs[0].ID != "leaked" {
			t.Fatalf("revocations %v, %v", revs, err)
		}
	})
}

// TestInvitationUseGivenBackOnRefusal: a join refused after its use was
// taken (a closed room) does not spend the invitation.
func TestInvitationUseGivenBackOnRefusal(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.InviteOnly, c.Mode = true, room.ModeClosed }))
		inv := e.invitation("once", 1, false)
		if _, err := e.joinWith("v", inv); !errors.Is(err, room.ErrClosed) {
			t.Fatalf("join to a closed room: %v", err)
		}
		st, err := e.eng.Invitation(e.ctx, e.room, "once")
		if err != nil || st.Used != 0 || len(st.Log) != 2 || !st.Log[1].Returned {
			t.Fatalf("after a refused join: %+v, %v; want 0 used, a use and its return logged", st, err)
		}
		c := baseConfig()
		c.InviteOnly = true
		e.put(c)
		if _, err := e.joinWith("v2", inv); err != nil {
			t.Fatalf("the use given back joins: %v", err)
		}
	})
}

// TestBypassInvitationSkipsTheLineWithinMaxActive: a bypass holder is
// admitted at the next free slot, ahead of everyone waiting, and never above
// maxActive (I1).
func TestBypassInvitationSkipsTheLineWithinMaxActive(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1 }))
		e.warm()
		ts := e.enqueueN(3)
		e.tick()
		e.consume(ts[0].Seq)
		vip, err := e.joinWith("vip", e.invitation("staff", 1, true))
		if err != nil {
			t.Fatal(err)
		}
		if vip.State != room.StateWaiting || vip.Position != 1 {
			t.Fatalf("bypass join: %+v, want waiting at 1", viewOf(vip))
		}
		if p := e.poll(ts[1]); p.Position != 2 {
			t.Fatalf("first in line behind the bypass: position %d, want 2", p.Position)
		}
		e.clk.Advance(time.Second)
		if r := e.tick(); r.Admitted != 0 || e.inUse() != 1 {
			t.Fatalf("full room admitted %d (in use %d): the bypass went above maxActive", r.Admitted, e.inUse())
		}
		if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, origin); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
		e.tick()
		if g := e.grants(); len(g) != 1 || g[0] != vip.Ticket.Seq {
			t.Fatalf("grants %v; want the bypass holder %d alone", g, vip.Ticket.Seq)
		}
		if p := e.poll(vip.Ticket); p.State != room.StateAdmitted {
			t.Fatalf("bypass holder polls %s", p.State)
		}
		if p := e.poll(ts[1]); p.State != room.StateWaiting || p.Position != 1 {
			t.Fatalf("the line after the bypass: %+v", viewOf(p))
		}
	})
}
