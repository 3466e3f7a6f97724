package roomdb_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// change is a scheduled change of the rate, due at at.
func change(id string, at time.Time) room.ScheduledChange {
	return room.ScheduledChange{ID: id, At: at, Settings: json.RawMessage(`{"admitPerMinute": 600}`), CreatedAt: at}
}

// leaseTakenOver leases the change id for one process, lets that lease run
// out (as its TTL would) and leases the change for another: the change as
// the first read it, the first's token, lost, and the second's.
func leaseTakenOver(t *testing.T, e *env, id string) (c room.ScheduledChange, late, token string) {
	t.Helper()
	c, late, err := roomdb.New(e.rdb).LeaseScheduled(e.ctx, e.room, id)
	if err != nil || late == "" {
		t.Fatalf("first lease: %q %v", late, err)
	}
	if err := e.rdb.Del(e.ctx, e.keys.ScheduleLease(id)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, token, err = roomdb.New(e.rdb).LeaseScheduled(e.ctx, e.room, id); err != nil || token == "" {
		t.Fatalf("second lease: %q %v", token, err)
	}
	return c, late, token
}

// A lease is given back only by its holder: a process whose lease ran out
// and was taken by another releases nothing, so a third cannot take the
// change while the second applies it.
func TestAReleaseFreesOnlyItsOwnLease(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, ptr(baseConfig()))
		if err := e.eng.PutScheduled(e.ctx, e.room, change("c1", e.clk.Now())); err != nil {
			t.Fatal(err)
		}
		a, c := roomdb.New(rdb), roomdb.New(rdb)
		_, first, _ := leaseTakenOver(t, e, "c1")
		if err := a.ReleaseScheduled(e.ctx, e.room, "c1", first); !errors.Is(err, room.ErrLeaseLost) {
			t.Fatalf("release by the first holder after its lease ran out: %v, want ErrLeaseLost", err)
		}
		if err := a.RemoveScheduled(e.ctx, e.room, "c1", first); !errors.Is(err, room.ErrLeaseLost) {
			t.Fatalf("cancel by the first holder after its lease ran out: %v, want ErrLeaseLost", err)
		}
		if _, third, err := c.LeaseScheduled(e.ctx, e.room, "c1"); err != nil || third != "" {
			t.Fatalf("a third process took the change the second holds (after the first's release): %q %v", third, err)
		}
	})
}

// A scheduled change's settings are stored only under its lease, and the
// change leaves the schedule with them: an applier whose lease ran out
// stores nothing, and the applier that holds the lease stores its settings
// once, after which the change is gone and its lease free.
func TestAScheduledChangeAppliesOnlyUnderItsLease(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, ptr(baseConfig()))
		if err := e.eng.PutScheduled(e.ctx, e.room, change("c1", e.clk.Now())); err != nil {
			t.Fatal(err)
		}
		a, b := roomdb.New(rdb), roomdb.New(rdb)
		_, late, token := leaseTakenOver(t, e, "c1")
		cfg := baseConfig()
		cfg.AdmitPerMinute = 600
		if _, err := a.ApplyScheduled(e.ctx, e.room, "c1", late, cfg); !errors.Is(err, room.ErrLeaseLost) {
			t.Fatalf("applied by the holder whose lease ran out: %v, want ErrLeaseLost", err)
		}
		if got, _ := e.eng.GetConfig(e.ctx, e.room); got.AdmitPerMinute != baseConfig().AdmitPerMinute {
			t.Fatalf("admitPerMinute %d after a lost lease's apply, want %d: nothing stored", got.AdmitPerMinute, baseConfig().AdmitPerMinute)
		}
		if _, err := b.ApplyScheduled(e.ctx, e.room, "c1", token, cfg); err != nil {
			t.Fatalf("applied by the lease's holder: %v", err)
		}
		if got, _ := e.eng.GetConfig(e.ctx, e.room); got.AdmitPerMinute != 600 {
			t.Fatalf("admitPerMinute %d after the holder's apply, want 600", got.AdmitPerMinute)
		}
		if cs, err := e.eng.Schedule(e.ctx, e.room); err != nil || len(cs) != 0 {
			t.Fatalf("schedule after the apply: %v %v, want the change gone", cs, err)
		}
		if _, _, err := a.LeaseScheduled(e.ctx, e.room, "c1"); !errors.Is(err, room.ErrUnknownChange) {
			t.Fatalf("lease after the apply: %v, want ErrUnknownChange (the lease free, the change gone)", err)
		}
	})
}

// refused is c marked refused at at, as the admission loop keeps it.
func refused(c room.ScheduledChange, why string, at time.Time) room.ScheduledChange {
	c.Refused, c.RefusedAt = why, &at
	return c
}

// A refused change is kept only under its lease, and the lease is given
// back with it: a process whose lease ran out while it validated the change
// writes nothing over what the lease's next holder did, here apply it, and
// the holder's refusal is kept, once, with the lease free.
func TestARefusalIsKeptOnlyUnderItsLease(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, ptr(baseConfig()))
		now := e.clk.Now()
		for _, id := range []string{"c1", "c2"} {
			if err := e.eng.PutScheduled(e.ctx, e.room, change(id, now)); err != nil {
				t.Fatal(err)
			}
		}
		a, b := roomdb.New(rdb), roomdb.New(rdb)
		c1, late, token := leaseTakenOver(t, e, "c1")
		cfg := baseConfig()
		cfg.AdmitPerMinute = 600
		if _, err := b.ApplyScheduled(e.ctx, e.room, "c1", token, cfg); err != nil {
			t.Fatalf("applied by the lease's holder: %v", err)
		}
		if err := a.RefuseScheduled(e.ctx, e.room, refused(c1, "too late", now), late); !errors.Is(err, room.ErrLeaseLost) {
			t.Fatalf("refused by the holder whose lease ran out: %v, want ErrLeaseLost", err)
		}
		if cs, err := e.eng.Schedule(e.ctx, e.room); err != nil || len(cs) != 1 || cs[0].ID != "c2" {
			t.Fatalf("schedule after a lost lease's refusal: %+v %v, want c2 alone: c1 applied, not back refused", cs, err)
		}

		c2, token, err := a.LeaseScheduled(e.ctx, e.room, "c2")
		if err != nil || token == "" {
			t.Fatalf("lease of c2: %q %v", token, err)
		}
		_, v0, _, _ := e.eng.ScheduleCopy(e.ctx, e.room)
		if err := a.RefuseScheduled(e.ctx, e.room, refused(c2, "not valid", now), token); err != nil {
			t.Fatalf("refused by the lease's holder: %v", err)
		}
		cs, v1, _, err := e.eng.ScheduleCopy(e.ctx, e.room)
		if err != nil || len(cs) != 1 || cs[0].Refused != "not valid" || cs[0].RefusedAt == nil || v1 <= v0 {
			t.Fatalf("schedule after the holder's refusal: %+v, version %d from %d, %v; want c2 refused, a new version", cs, v1, v0, err)
		}
		if err := a.RefuseScheduled(e.ctx, e.room, refused(c2, "again", now), token); !errors.Is(err, room.ErrLeaseLost) {
			t.Fatalf("a second refusal with the same token: %v, want ErrLeaseLost (the lease was given back)", err)
		}
		if _, again, err := b.LeaseScheduled(e.ctx, e.room, "c2"); err != nil || again == "" {
			t.Fatalf("lease after the refusal: %q %v, want it free", again, err)
		}
	})
}

// A refusal of a change that left the schedule with its room stores
// nothing: the deleted room's schedule does not come back with it.
func TestARefusalOfAChangeGoneWithItsRoomStoresNothing(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, ptr(baseConfig()))
		if err := e.eng.PutScheduled(e.ctx, e.room, change("c1", e.clk.Now())); err != nil {
			t.Fatal(err)
		}
		c, token, err := e.eng.LeaseScheduled(e.ctx, e.room, "c1")
		if err != nil || token == "" {
			t.Fatalf("lease: %q %v", token, err)
		}
		if err := e.eng.DropSchedule(e.ctx, e.room); err != nil {
			t.Fatal(err)
		}
		if err := e.eng.RefuseScheduled(e.ctx, e.room, refused(c, "unknown room", e.clk.Now()), token); !errors.Is(err, room.ErrUnknownChange) {
			t.Fatalf("refusal of a dropped change: %v, want ErrUnknownChange", err)
		}
		if n, err := rdb.Exists(e.ctx, e.keys.Schedule(), e.keys.ScheduleLease("c1")).Result(); err != nil || n != 0 {
			t.Fatalf("%d of the schedule and the lease stand after the refusal (%v), want neither", n, err)
		}
	})
}

// The schedule's cap holds against planners at once: with room for one
// change more, one of many new changes planned together is kept.
func TestTheScheduleCapHoldsAgainstPlannersAtOnce(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, ptr(baseConfig()))
		at := e.clk.Now().Add(time.Hour)
		for i := range room.ScheduleKeep - 1 {
			if err := e.eng.PutScheduled(e.ctx, e.room, change("k"+strconv.Itoa(i), at)); err != nil {
				t.Fatal(err)
			}
		}
		const planners = 16
		var wg sync.WaitGroup
		errs := make([]error, planners)
		for i := range planners {
			wg.Go(func() { errs[i] = roomdb.New(rdb).PutScheduled(e.ctx, e.room, change("n"+strconv.Itoa(i), at)) })
		}
		wg.Wait()
		kept := 0
		for _, err := range errs {
			switch {
			case err == nil:
				kept++
			case !errors.Is(err, room.ErrScheduleFull):
				t.Fatal(err)
			}
		}
		cs, err := e.eng.Schedule(e.ctx, e.room)
		if err != nil || kept != 1 || len(cs) != room.ScheduleKeep {
			t.Fatalf("%d of %d planners kept, the schedule holds %d (%v); want 1, %d", kept, planners, len(cs), err, room.ScheduleKeep)
		}
	})
}
