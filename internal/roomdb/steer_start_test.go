package roomdb_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A new steered room whose origin has said nothing yet runs at its setting:
// starting at admitPerMinuteMin would make its first visitors' ETAs (told at
// the floor) several times the wait that follows as the pace climbs. Only a
// room restored after a total loss starts at its floor (TestSteeringAfterTotalLoss).
func TestANewSteeredRoomStartsAtItsSetting(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) {
			c.AdmitPerMinute, c.AdmitPerMinuteMin, c.MaxActive = 600, 60, 100_000
		}))
		if st := e.stats(); st.PacePerMinute != 600 {
			t.Fatalf("a new room's pace %v, want its setting 600", st.PacePerMinute)
		}
		tk := e.enqueueN(30)
		if p := e.poll(tk[29]); p.RatePerMinute != 600 {
			t.Errorf("a waiting visitor's pace %v, want 600", p.RatePerMinute)
		}
		e.clk.Advance(time.Second)
		e.tick()
		if st := e.stats(); st.PacePerMinute != 600 || st.PaceWhy != "top" {
			t.Errorf("after a tick without a report: pace %v (%s), want 600 (top)", st.PacePerMinute, st.PaceWhy)
		}
	})
}

