package roomdb_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// The room id is the one piece of client input that reaches Redis key names,
// so it gets a fuzz target of its own (seeds in testdata/fuzz/FuzzRoomID/).
//
// Properties: room.ValidRoomID agrees with the documented rule, written here
// twice and apart from the package (a regexp and a byte loop); every key of a
// valid room carries exactly the hash tag {id}, so all of a room shares one
// cluster slot and no id can reach another room's keys (I6); two different ids
// never share a key; and an invalid id is refused by every engine method before
// anything is sent to Redis.

var documentedRoomID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// roomIDByHand is the rule again without a regexp: 1 to 64 bytes, each a
// letter, digit, '_' or '-' (ASCII only, so bytes and runes agree).
func roomIDByHand(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// hashTag is the part of a key Redis Cluster hashes: what lies between the
// first '{' and the first '}' after it, when that is not empty; else the whole key.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// roomKeys is every key of a room, the limiter's included.
func roomKeys(id string) []string {
	k := roomdb.KeysFor(id)
	return append(k.List(), k.Limiter("0123456789abcdef01234567"))
}

// unreachable is an engine whose Redis is never dialled: every dial fails at
// once and is counted, so a method that refuses an id before any I/O answers
// ErrInvalidRoom with the count unchanged.
func unreachable() (*roomdb.Engine, *atomic.Int64, func()) {
	var dials atomic.Int64
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("no Redis in this test")
		}})
	return roomdb.New(rdb), &dials, func() { rdb.Close() }
}

func FuzzRoomID(f *testing.F) {
	eng, dials, closeEng := unreachable()
	f.Cleanup(closeEng)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, id, other string) {
		valid := room.ValidRoomID(id)
		if want := documentedRoomID.MatchString(id); valid != want {
			t.Fatalf("ValidRoomID(%q) = %v, the documented rule says %v", id, valid, want)
		}
		if want := roomIDByHand(id); valid != want {
			t.Fatalf("ValidRoomID(%q) = %v, the byte rule says %v", id, valid, want)
		}

		if !valid {
			// Refused before Redis: every method names the id as the problem.
			tk := room.Ticket{Room: id, Visitor: "v", Seq: 1}
			calls := map[string]func() error{
				"Enqueue":      func() error { _, err := eng.Enqueue(ctx, id, "v"); return err },
				"Poll":         func() error { _, err := eng.Poll(ctx, tk); return err },
				"Leave":        func() error { return eng.Leave(ctx, tk) },
				"Consume":      func() error { _, err := eng.Consume(ctx, id, 1, origin); return err },
				"Complete":     func() error { return eng.Complete(ctx, id, 1, origin) },
				"Tick":         func() error { _, err := eng.Tick(ctx, id); return err },
				"PutConfig":    func() error { _, err := eng.PutConfig(ctx, id, baseConfig()); return err },
				"GetConfig":    func() error { _, err := eng.GetConfig(ctx, id); return err },
				"Stats":        func() error { _, err := eng.Stats(ctx, id); return err },
				"AllowEnqueue": func() error { return eng.AllowEnqueue(ctx, id, "192.0.2.1") },
			}
			for name, call := range calls {
				before := dials.Load()
				if err := call(); !errors.Is(err, room.ErrInvalidRoom) {
					t.Fatalf("%s(%q) = %v, want ErrInvalidRoom before any Redis call", name, id, err)
				}
				if n := dials.Load() - before; n != 0 {
					t.Fatalf("%s(%q) dialled Redis %d times before refusing the id", name, id, n)
				}
			}
			return
		}

		if strings.ContainsAny(id, "{}") {
			t.Fatalf("valid id %q contains a brace", id)
		}
		seen := map[string]bool{}
		for _, key := range roomKeys(id) {
			if got := hashTag(key); got != id {
				t.Fatalf("key %q of room %q hashes on %q, want exactly the room id", key, id, got)
			}
			if !strings.Contains(key, "{"+id+"}") || strings.Count(key, "{") != 1 || strings.Count(key, "}") != 1 {
				t.Fatalf("key %q of room %q does not carry exactly one tag {%s}", key, id, id)
			}
			if seen[key] {
				t.Fatalf("room %q names the key %q twice", id, key)
			}
			seen[key] = true
		}
		if room.ValidRoomID(other) && other != id {
			for _, key := range roomKeys(other) {
				if seen[key] {
					t.Fatalf("rooms %q and %q share the key %q", id, other, key)
				}
			}
		}
	})
}
