package lua_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/lua"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// Each runs a script once per set of keys in one pipeline, on every node a
// cluster spreads them over, loading it where it is missing (NOSCRIPT), and
// a call that fails fails alone. On servers of its own: SCRIPT FLUSH empties
// the script cache of every test that shares a server.
func TestEachRunsEveryCallOnce(t *testing.T) {
	redistest.OwnEach(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := lua.NewScript("incr", "return redis.call('INCR', KEYS[1])")
		room := redistest.Room(t)
		var keys [][]string
		for i := range 6 {
			keys = append(keys, []string{fmt.Sprintf("{%s-%d}:n", room, i)})
		}
		bad := fmt.Sprintf("{%s-bad}:h", room)
		if err := c.HSet(ctx, bad, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, []string{bad})
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for round := int64(1); round <= 2; round++ {
			out, errs := s.Each(ctx, c, keys)
			for i := range 6 {
				if errs[i] != nil || out[i] != round {
					t.Errorf("round %d, call %d: %v %v, want %d", round, i, out[i], errs[i], round)
				}
			}
			if errs[6] == nil || !redis.HasErrorPrefix(errors.Unwrap(errs[6]), "WRONGTYPE") {
				t.Errorf("round %d: INCR of a hash: %v, want WRONGTYPE", round, errs[6])
			}
		}
		for i := range 6 {
			if n, err := c.Get(ctx, keys[i][0]).Int64(); err != nil || n != 2 {
				t.Errorf("%s: %d (%v) after two rounds, want 2", keys[i][0], n, err)
			}
		}
	})
}
