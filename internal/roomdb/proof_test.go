package roomdb_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// nonce is a nonce named name as a challenge carries it: of a room that
// spreads its joins over spreadRoom's 3 shards (spent on one of them), or of
// one that does not (spent on the room's shard).
func nonce(name string, spreads bool) string {
	if spreads {
		return "s3-" + name
	}
	return name
}

// challenged is the first nonce a challenge issued for a join refused now
// may carry, as challenge.Challenges.IssueFor draws them: its NoncePrefix, then prefix0,
// prefix1…
func (e *env) challenged(client, prefix string) string {
	e.t.Helper()
	_, err := e.eng.Join(e.ctx, e.room, "ask-"+prefix, room.JoinProof{Client: client})
	var ce *room.ChallengeError
	if !errors.As(err, &ce) {
		e.t.Fatalf("join without a proof: %v, want a ChallengeError", err)
	}
	for i := range 10_000 {
		if n := fmt.Sprintf("%s%s%d", ce.NoncePrefix(), prefix, i); ce.Accepts(n) {
			return n
		}
	}
	e.t.Fatalf("no nonce %s… fits the challenge", prefix)
	return ""
}

// A proof joins once, across the opening: a challenge issued before it is
// spent on the room's shard, where the pre-queue's joins go, and the same
// proof after the opening, when joins spread over the arrival shards, still
// goes there, and is refused as spent. (It used to join a second time, on
// the shard its nonce picks.)
func TestProofJoinsOnceAcrossTheOpening(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil)
		opens := e.clk.Now().Add(2 * time.Second)
		e.put(*spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 4; c.OpensAt = &opens }))
		n := e.challenged("10.11.0.1", "pre")
		proof := room.JoinProof{Bits: 4, Nonce: n, Until: e.clk.Now().Add(time.Minute), Client: "10.11.0.1"}
		if p := e.join(e.eng, "a", proof); p.State != room.StatePrequeue {
			t.Fatalf("join before the opening: %s", p.State)
		}
		e.clk.Advance(3 * time.Second)
		if p, err := e.eng.Join(e.ctx, e.room, "b", proof); !errors.Is(err, room.ErrChallengeSpent) {
			t.Errorf("the same proof after the opening: %v (sequence %d), want ErrChallengeSpent", err, p.Ticket.Seq)
		}
		// A challenge issued now is for the shards: its proof joins there, once.
		n2 := e.challenged("10.11.0.2", "open")
		proof2 := room.JoinProof{Bits: 4, Nonce: n2, Until: e.clk.Now().Add(time.Minute), Client: "10.11.0.2"}
		if p := e.join(e.eng, "c", proof2); residue(p.Ticket.Seq) == 0 {
			t.Errorf("a proof issued after the opening joined on the room's shard")
		}
		if _, err := e.eng.Join(e.ctx, e.room, "d", proof2); !errors.Is(err, room.ErrChallengeSpent) {
			t.Errorf("its second join: %v, want ErrChallengeSpent", err)
		}
	})
}

// A proof joins once, across a pause: one issued while the room spread is
// spent on its arrival shard even when it joins on the room's shard (paused
// rooms queue on the room's shard), so it joins neither before nor after the
// pause a second time; one issued during the pause is spent on the room's
// shard, and keeps going there after it.
func TestProofJoinsOnceAcrossAPause(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		asks := func(mode room.Mode) room.Config {
			return *spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 4; c.Mode = mode })
		}
		e := newEnv(t, rdb, nil)
		e.put(asks(room.ModeQueue))
		until := e.clk.Now().Add(time.Minute)
		n1, n2 := e.challenged("10.12.0.1", "s"), e.challenged("10.12.0.1", "t")
		used := room.JoinProof{Bits: 4, Nonce: n1, Until: until, Client: "10.12.0.1"}
		if p := e.join(e.eng, "a", used); residue(p.Ticket.Seq) == 0 {
			t.Fatalf("a proof of the open room joined on the room's shard")
		}

		e.put(asks(room.ModePaused))
		if _, err := e.eng.Join(e.ctx, e.room, "b", used); !errors.Is(err, room.ErrChallengeSpent) {
			t.Errorf("a proof spent on its shard, again in the paused room: %v, want ErrChallengeSpent", err)
		}
		fresh := room.JoinProof{Bits: 4, Nonce: n2, Until: until, Client: "10.12.0.2"}
		if p := e.join(e.eng, "c", fresh); p.State != room.StatePaused || residue(p.Ticket.Seq) != 0 {
			t.Errorf("a proof issued before the pause, in the paused room: %s on source %d", p.State, residue(p.Ticket.Seq))
		}
		n3 := e.challenged("10.12.0.3", "u")
		paused := room.JoinProof{Bits: 4, Nonce: n3, Until: until, Client: "10.12.0.3"}
		e.join(e.eng, "d", paused)

		e.put(asks(room.ModeQueue))
		for _, p := range []room.JoinProof{used, fresh, paused} {
			if _, err := e.eng.Join(e.ctx, e.room, "again-"+p.Nonce, p); !errors.Is(err, room.ErrChallengeSpent) {
				t.Errorf("proof %s again after the pause: %v, want ErrChallengeSpent", p.Nonce, err)
			}
		}
	})
}

// A proof joins once across a change of joinShards: it is spent on the shard
// its nonce picks of the shards its challenge was issued for, and after the
// change it joins on the room's shard, spent there first.
func TestProofJoinsOnceAcrossAChangeOfShards(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		shards := func(k int64) room.Config {
			return *spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 4; c.JoinShards = k })
		}
		e := newEnv(t, rdb, nil)
		e.put(shards(3))
		until := e.clk.Now().Add(time.Minute)
		used := room.JoinProof{Bits: 4, Nonce: e.challenged("10.13.0.1", "a"), Until: until, Client: "10.13.0.1"}
		fresh := room.JoinProof{Bits: 4, Nonce: e.challenged("10.13.0.2", "b"), Until: until, Client: "10.13.0.2"}
		if p := e.join(e.eng, "a", used); residue(p.Ticket.Seq) == 0 {
			t.Fatalf("a proof of the spread room joined on the room's shard")
		}
		for _, k := range []int64{5, 2} {
			e.put(shards(k))
			if _, err := e.eng.Join(e.ctx, e.room, fmt.Sprintf("again%d", k), used); !errors.Is(err, room.ErrChallengeSpent) {
				t.Errorf("a spent proof after joinShards went from 3 to %d: %v, want ErrChallengeSpent", k, err)
			}
		}
		if p := e.join(e.eng, "b", fresh); residue(p.Ticket.Seq) != 0 {
			t.Errorf("a proof of 3 shards in a room of 2 joined on shard %d, want the room's", residue(p.Ticket.Seq)-1)
		}
		e.put(shards(3))
		if _, err := e.eng.Join(e.ctx, e.room, "b2", fresh); !errors.Is(err, room.ErrChallengeSpent) {
			t.Errorf("that proof again, back at 3 shards: %v, want ErrChallengeSpent", err)
		}

		// A join the room's shard refuses spends nothing: the proof spent on
		// its shard first is given back.
		late := room.JoinProof{Bits: 4, Nonce: e.challenged("10.13.0.3", "c"), Until: until, Client: "10.13.0.3"}
		closed := shards(3)
		closed.Mode = room.ModeClosed
		e.put(closed)
		if _, err := e.eng.Join(e.ctx, e.room, "c", late); !errors.Is(err, room.ErrClosed) {
			t.Fatalf("a proof in the closed room: %v, want ErrClosed", err)
		}
		e.put(shards(3))
		if _, err := e.eng.Join(e.ctx, e.room, "c2", late); err != nil {
			t.Errorf("the proof refused in the closed room, after the reopening: %v, want it joined", err)
		}
	})
}
