package roomdb_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// TestLookupKeepsTheDrawSecret: before the opening a pre-queue's order is
// its draw, secret from everyone, support included: a lookup says prequeue
// with no place (nor one in its JSON). From the opening each is waiting at
// its place in the draw's order.
func TestLookupKeepsTheDrawSecret(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, nil)
		opens := e.clk.Now().Add(10 * time.Minute)
		e.put(*cfgWith(func(c *room.Config) { c.OpensAt = &opens; c.Mode = room.ModePaused }))
		refs := []string{"draw-a", "draw-b", "draw-c", "draw-d"}
		for _, r := range refs {
			e.enqueue(r)
		}
		for _, r := range refs {
			v := e.visitor(r)
			b, _ := json.Marshal(v)
			if v.State != "prequeue" || v.Position != 0 || strings.Contains(string(b), `"position"`) {
				t.Fatalf("%s before the opening: %s", r, b)
			}
		}
		e.clk.Set(opens.Add(time.Second))
		var places []int64
		for _, r := range refs {
			v := e.visitor(r)
			if v.State != "waiting" || v.Position < 1 {
				t.Fatalf("%s after the opening: %+v", r, v)
			}
			places = append(places, v.Position)
		}
		slices.Sort(places)
		if !slices.Equal(places, []int64{1, 2, 3, 4}) {
			t.Fatalf("places after the opening %v, want each of 1–4 once", places)
		}
	})
}
