package durable_test

import (
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The per-minute history outlives Redis's day: the loop's look after an
// hour completes copies that hour to the store, and the room's life history
// is the archived hours and Redis's last day together. A second look merges
// (no minute archived is lost); an idle look costs no store write.
func TestHistoryArchivedForTheRoomsLife(t *testing.T) {
	store := durable.Disk{Dir: t.TempDir()}
	f := newFixture(t, store)
	start := time.Date(2026, 12, 1, 10, 58, 0, 0, time.UTC)
	f.clk.Set(start)
	if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
		t.Fatal(err)
	}
	tick := func() {
		t.Helper()
		if _, err := f.q.Tick(f.ctx, f.room); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // 10:58, 10:59, 11:00: a point each
		f.clk.Set(start.Add(time.Duration(i) * time.Minute))
		tick()
	}
	if err := f.q.ArchiveHistory(f.ctx, f.room); err != nil {
		t.Fatal(err)
	}
	hours, err := store.HistoryHours(f.ctx, f.room)
	if err != nil || len(hours) != 1 || hours[0] != "2026-12-01T10" {
		t.Fatalf("archived hours %v %v, want the completed hour 10 alone", hours, err)
	}
	// Two days on, Redis's day no longer holds those minutes.
	f.clk.Set(start.Add(48 * time.Hour))
	tick()
	recent, err := f.eng.History(f.ctx, f.room)
	if err != nil || len(recent) != 1 {
		t.Fatalf("Redis's day: %d points %v, want 1", len(recent), err)
	}
	life, err := f.q.LifeHistory(f.ctx, f.room)
	if err != nil {
		t.Fatal(err)
	}
	var minutes []string
	for _, p := range life {
		minutes = append(minutes, p.Minute.Format("02T15:04"))
	}
	if len(life) != 3 || minutes[0] != "01T10:58" || minutes[1] != "01T10:59" || minutes[2] != "03T10:58" {
		t.Fatalf("life history %v, want 10:58 and 10:59 of the 1st (archived) and 10:58 of the 3rd", minutes)
	}
	// The next look (a minute on) finds hour 11 of the 1st gone from Redis:
	// nothing to archive, and hour 10 keeps its minutes.
	f.clk.Advance(time.Minute)
	if err := f.q.ArchiveHistory(f.ctx, f.room); err != nil {
		t.Fatal(err)
	}
	b, err := store.HistoryHour(f.ctx, f.room, "2026-12-01T10")
	if err != nil || len(b) < 10 {
		t.Fatalf("hour 10 after a second look: %q %v", b, err)
	}
	rep := room.ReportOf(life, nil)
	if rep.Totals.Minutes != 3 {
		t.Fatalf("report of %d minutes, want 3", rep.Totals.Minutes)
	}
}
