package durable_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// The measured waits go to the store with their hour, so a total loss of
// Redis keeps every archived minute's waits: the report after the loss
// still has them.
func TestWaitsSurviveATotalLoss(t *testing.T) {
	store := durable.Disk{Dir: t.TempDir()}
	f := newFixture(t, store)
	if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
		t.Fatal(err)
	}
	// Hours ahead of Redis's clock, which gives the sequences (join µs):
	// the room's last sequence set below the clock makes the joins follow it.
	t0 := f.clk.Now().Add(3 * time.Hour).Truncate(time.Hour).Add(-2 * time.Minute) // hh:58
	f.clk.Set(t0)
	if err := f.rdb.HSet(f.ctx, roomdb.KeysFor(f.room).State, "seq", strconv.FormatInt(t0.UnixMicro(), 10)).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := f.q.Join(f.ctx, f.room, "v", room.JoinProof{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []time.Duration{30 * time.Second, 90 * time.Second, 150 * time.Second} { // hh:58:30 admits; the next hour
		f.clk.Set(t0.Add(d))
		if _, err := f.q.Tick(f.ctx, f.room); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.q.ArchiveHistory(f.ctx, f.room); err != nil {
		t.Fatal(err)
	}
	if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	life, err := f.q.LifeHistory(f.ctx, f.room)
	if err != nil {
		t.Fatal(err)
	}
	tot := room.ReportOf(life, nil).Totals
	if tot.WaitsMeasured != 3 || math.Abs(tot.WaitP50Seconds-30) > 0.19*30 {
		t.Fatalf("after the loss: %d waits, p50 %.1f s; want 3 of 30 s", tot.WaitsMeasured, tot.WaitP50Seconds)
	}
}
