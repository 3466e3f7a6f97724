package room_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A room with a join challenge refuses a join without enough proven work,
// takes one with it, and lets each proof join once (in the same script, so
// concurrent joins with one proof cannot both get in).
func TestJoinChallenge(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.JoinChallengeBits = 12 }))
		until := e.clk.Now().Add(time.Minute)
		_, err := e.eng.Enqueue(e.ctx, e.room, "a")
		var ce *room.ChallengeError
		if !errors.As(err, &ce) || ce.Bits != 12 || !errors.Is(err, room.ErrChallengeRequired) {
			t.Fatalf("join without a proof: %v, want a challenge of 12 bits", err)
		}
		if _, err := e.eng.Join(e.ctx, e.room, "a", room.JoinProof{Bits: 11, Nonce: "n1", Until: until}); !errors.As(err, &ce) {
			t.Fatalf("join with 11 bits: %v, want a challenge", err)
		}
		if p, err := e.eng.Join(e.ctx, e.room, "a", room.JoinProof{Bits: 12, Nonce: "n1", Until: until}); err != nil || p.State != room.StateWaiting {
			t.Fatalf("join with 12 bits: %+v %v", p, err)
		}
		if _, err := e.eng.Join(e.ctx, e.room, "b", room.JoinProof{Bits: 12, Nonce: "n1", Until: until}); !errors.Is(err, room.ErrChallengeSpent) {
			t.Fatalf("a second join with the same proof: %v, want ErrChallengeSpent", err)
		}
		if p, err := e.eng.Join(e.ctx, e.room, "b", room.JoinProof{Bits: 16, Nonce: "n2", Until: until}); err != nil || p.Position != 2 {
			t.Fatalf("join with another proof: %+v %v", p, err)
		}
		// The spent nonce expires with its challenge.
		ttl, err := rdb.PTTL(e.ctx, room.KeysFor(e.room).Proof("n1")).Result()
		if err != nil || ttl <= 0 || ttl > time.Minute {
			t.Fatalf("spent nonce TTL %v %v, want up to a minute", ttl, err)
		}
		// A room without a challenge ignores proofs and spends nothing.
		e.put(*cfgWith(nil))
		if _, err := e.eng.Join(e.ctx, e.room, "c", room.JoinProof{Bits: 12, Nonce: "n1", Until: until}); err != nil {
			t.Fatalf("join a room without a challenge: %v", err)
		}
	})
}
