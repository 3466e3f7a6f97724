package roomdb_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
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
		ttl, err := rdb.PTTL(e.ctx, roomdb.KeysFor(e.room).Proof("n1")).Result()
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

// The per-client join limit runs in the join's script (one round trip): a
// client past clientEnqueuePerMinute (burst a tenth) gets a *RetryError and no
// place; other clients and joins without a client are not limited; a join
// refused for its challenge is not counted, and a limited join spends no proof.
func TestJoinLimit(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.ClientEnqueuePerMinute = 60 }))
		const client = "203.0.113.7"
		joined := 0
		var retry *room.RetryError
		for i := range 20 {
			_, err := e.eng.Join(e.ctx, e.room, "v"+string(rune('a'+i)), room.JoinProof{Client: client})
			if err == nil {
				joined++
				continue
			}
			if !errors.As(err, &retry) || !errors.Is(err, room.ErrRateLimited) {
				t.Fatalf("refusal %v, want a *RetryError wrapping ErrRateLimited", err)
			}
			break
		}
		if joined != 6 {
			t.Errorf("at 60/min (burst 6) a client joined %d times at one instant", joined)
		}
		if retry == nil || retry.After <= 0 || retry.After > time.Second {
			t.Fatalf("retry after %v, want within one interval (1 s)", retry)
		}
		if n := rdb.ZCard(e.ctx, e.keys.Queue).Val(); n != 6 {
			t.Errorf("queue holds %d, want the 6 allowed joins only", n)
		}
		// The same limiter as AllowEnqueue: one count per client.
		if err := e.eng.AllowEnqueue(e.ctx, e.room, client); !errors.Is(err, room.ErrRateLimited) {
			t.Errorf("AllowEnqueue after the joins: %v, want limited", err)
		}
		if _, err := e.eng.Join(e.ctx, e.room, "other", room.JoinProof{Client: "198.51.100.9"}); err != nil {
			t.Errorf("another client is limited too: %v", err)
		}
		if _, err := e.eng.Join(e.ctx, e.room, "server", room.JoinProof{}); err != nil {
			t.Errorf("a join without a client is limited: %v", err)
		}
		e.clk.Advance(retry.After)
		if _, err := e.eng.Join(e.ctx, e.room, "later", room.JoinProof{Client: client}); err != nil {
			t.Errorf("after the wait: %v", err)
		}

		// With a challenge: asking for the work does not count, a limited join spends no proof.
		e.put(*cfgWith(func(c *room.Config) { c.ClientEnqueuePerMinute, c.JoinChallengeBits = 60, 8 }))
		e.clk.Advance(time.Minute) // the limiter is idle again: a full burst
		until := e.clk.Now().Add(time.Minute)
		var ce *room.ChallengeError
		for range 10 {
			if _, err := e.eng.Join(e.ctx, e.room, "x", room.JoinProof{Client: client}); !errors.As(err, &ce) {
				t.Fatalf("join without work: %v, want a challenge", err)
			}
		}
		for i := range 6 {
			if _, err := e.eng.Join(e.ctx, e.room, "w", room.JoinProof{Client: client, Bits: 8, Nonce: "n" + string(rune('a'+i)), Until: until}); err != nil {
				t.Fatalf("join %d with work after 10 challenges: %v (challenges must not count)", i, err)
			}
		}
		if _, err := e.eng.Join(e.ctx, e.room, "w", room.JoinProof{Client: client, Bits: 8, Nonce: "last", Until: until}); !errors.Is(err, room.ErrRateLimited) {
			t.Fatalf("seventh join: %v, want limited", err)
		}
		if rdb.Exists(e.ctx, e.keys.Proof("last")).Val() != 0 {
			t.Errorf("a limited join spent its proof")
		}
	})
}

// A challenge refusal in a spread room says which nonces take a proof to the
// shard the client's joins go to: a proof with such a nonce is limited with
// the client's other joins. An engine that never read the room's settings
// reads them for it; a room whose joins are not spread accepts the nonces
// whose proofs are spent on its own shard (no NoncePrefix).
func TestChallengeFitsTheClientsShard(t *testing.T) {
	c := redistest.Single(t)
	e := newEnv(t, c, spreadRoom(func(c *room.Config) { c.JoinChallengeBits = 4; c.ClientEnqueuePerMinute = 10 }))
	fresh := roomdb.New(c, roomdb.WithClock(e.clk.Now)) // holds no settings
	_, err := fresh.Join(e.ctx, e.room, "v", room.JoinProof{Client: "192.0.2.7"})
	var ce *room.ChallengeError
	if !errors.As(err, &ce) {
		t.Fatalf("join without a proof: %v, want a challenge", err)
	}
	if ce.NoncePrefix() != "s3-" {
		t.Fatalf("a challenge of a room spread over 3 shards begins its nonce with %q, want s3-", ce.NoncePrefix())
	}
	var fit, other []string
	for i := range 200 {
		n := fmt.Sprintf("%snonce-%d", ce.NoncePrefix(), i)
		if ce.Accepts(n) {
			fit = append(fit, n)
		} else {
			other = append(other, n)
		}
	}
	if len(fit) < 2 || len(other) == 0 {
		t.Fatalf("of 200 nonces %d fit the client's shard and %d do not; want both, and 2 that fit", len(fit), len(other))
	}
	until := e.clk.Now().Add(time.Minute)
	proof := func(n string) room.JoinProof {
		return room.JoinProof{Bits: 4, Nonce: n, Until: until, Client: "192.0.2.7"}
	}
	// 10 a minute is a burst of 1: the second fitting proof is limited, a proof
	// of another shard is not (that shard counts the client apart).
	e.join(fresh, "a", proof(fit[0]))
	if _, err := fresh.Join(e.ctx, e.room, "b", proof(fit[1])); !errors.Is(err, room.ErrRateLimited) {
		t.Errorf("a second proof fitting the client's shard: %v, want limited", err)
	}
	if _, err := fresh.Join(e.ctx, e.room, "c", proof(other[0])); err != nil {
		t.Errorf("a proof of another shard: %v, want it joined", err)
	}

	plain := newEnv(t, c, cfgWith(func(c *room.Config) { c.JoinChallengeBits = 4 }))
	_, err = plain.eng.Join(plain.ctx, plain.room, "v", room.JoinProof{Client: "192.0.2.7"})
	if !errors.As(err, &ce) {
		t.Fatalf("join without a proof: %v, want a challenge", err)
	}
	if p := ce.NoncePrefix(); p != "" {
		t.Fatalf("a room whose joins are not spread begins its nonces with %q", p)
	}
	for i := range 50 {
		if n := fmt.Sprintf("nonce-%d", i); !ce.Accepts(n) {
			t.Fatalf("a room whose joins are not spread refused nonce %s", n)
		}
		if n := fmt.Sprintf("s3-nonce-%d", i); ce.Accepts(n) {
			t.Fatalf("a room whose joins are not spread accepted nonce %s, of a spread room's", n)
		}
	}
}
