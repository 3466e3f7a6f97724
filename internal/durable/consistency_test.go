package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// racingStore is a store on disk whose writes of a room's revocations and
// schedule can be made to race or fail. With hold set, the first write of a
// kind waits until a second write of that kind has returned: two writers
// that each read the record before the other wrote. fail, when set, fails
// the writes it says, as a store that is down would.
type racingStore struct {
	durable.Disk
	mu     sync.Mutex
	hold   bool
	second map[string]chan struct{} // per kind: closed once its second write returned
	writes map[string]int
	fail   func(kind string) bool
}

func newRacingStore(t *testing.T) *racingStore {
	return &racingStore{Disk: durable.Disk{Dir: t.TempDir()}, second: map[string]chan struct{}{}, writes: map[string]int{}}
}

var errStoreDown = errors.New("racingStore: the store is down")

// write runs put as the store's write of kind, racing or failing as set.
func (s *racingStore) write(kind string, put func() error) error {
	s.mu.Lock()
	if s.fail != nil && s.fail(kind) {
		s.mu.Unlock()
		return errStoreDown
	}
	s.writes[kind]++
	n, hold := s.writes[kind], s.hold
	if _, ok := s.second[kind]; !ok {
		s.second[kind] = make(chan struct{})
	}
	done := s.second[kind]
	s.mu.Unlock()
	if hold && n == 1 {
		select {
		case <-done:
		case <-time.After(10 * time.Second): // no second write came: the test fails on what was lost
		}
	}
	err := put()
	if hold && n == 2 {
		close(done)
	}
	return err
}

func (s *racingStore) PutRevocations(ctx context.Context, id string, b []byte, tag string) error {
	return s.write("revoked", func() error { return s.Disk.PutRevocations(ctx, id, b, tag) })
}

func (s *racingStore) PutSchedule(ctx context.Context, id string, b []byte, tag string) error {
	return s.write("schedule", func() error { return s.Disk.PutSchedule(ctx, id, b, tag) })
}

// race runs first and, once first's write of kind is held, second; it
// returns both errors.
func (s *racingStore) race(t *testing.T, kind string, first, second func() error) (error, error) {
	t.Helper()
	s.mu.Lock()
	s.hold = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.hold = false
		s.mu.Unlock()
	}()
	errs := make(chan error, 1)
	go func() { errs <- first() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := s.writes[kind]
		s.mu.Unlock()
		if n >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write of %s came", kind)
		}
	}
	err2 := second()
	return <-errs, err2
}

// storedIDs reads the ids of what the store holds of kind for the room.
func storedIDs(t *testing.T, s *racingStore, kind, roomID string) []string {
	t.Helper()
	var b []byte
	var err error
	if kind == "revoked" {
		b, _, err = s.Revocations(context.Background(), roomID)
	} else {
		b, _, err = s.Schedule(context.Background(), roomID)
	}
	var items []struct{ ID string }
	if err == nil {
		err = json.Unmarshal(b, &items)
	}
	if err != nil {
		t.Fatalf("the store's %s: %v", kind, err)
	}
	var out []string
	for _, it := range items {
		out = append(out, it.ID)
	}
	slices.Sort(out)
	return out
}

// refused lists which of the invitations q refuses a join with.
func refused(t *testing.T, q *durable.Queue, roomID string, invs []*room.Invitation) []string {
	t.Helper()
	var out []string
	for _, inv := range invs {
		_, err := q.Join(context.Background(), roomID, "v-"+inv.ID, room.JoinProof{Invitation: inv})
		switch {
		case errors.Is(err, room.ErrInvitationRevoked):
			out = append(out, inv.ID)
		case err != nil:
			t.Fatalf("join with %s: %v", inv.ID, err)
		}
	}
	return out
}

// TestRevocationsStayDurableUnderConcurrentWritesAndALoss: two revocations at
// once, and one the store cannot take; after a total loss of Redis, the
// invitations refused are those refused before it. Before, each revocation
// rewrote the store's copy whole: the second writer's older copy dropped the
// first's revocation, which worked again after the loss; and a revocation
// the store failed on held in Redis (while the admin was answered 503) and
// was gone after the loss.
func TestRevocationsStayDurableUnderConcurrentWritesAndALoss(t *testing.T) {
	store := newRacingStore(t)
	f := newFixture(t, store)
	cfg := testConfig()
	cfg.InviteOnly = true
	if _, err := f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
		t.Fatal(err)
	}
	now := f.clk.Now()
	var invs []*room.Invitation
	for _, id := range []string{"first", "second", "failed", "kept"} {
		invs = append(invs, &room.Invitation{ID: id, Room: f.room, Uses: 100, IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	}
	revoke := func(id string) func() error {
		return func() error { _, err := f.q.RevokeInvitation(f.ctx, f.room, id); return err }
	}
	if e1, e2 := store.race(t, "revoked", revoke("first"), revoke("second")); e1 != nil || e2 != nil {
		t.Fatalf("revocations at once: %v, %v", e1, e2)
	}
	if got := storedIDs(t, store, "revoked", f.room); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("the store holds the revocations %v after two at once, want both", got)
	}
	store.fail = func(string) bool { return true }
	if _, err := f.q.RevokeInvitation(f.ctx, f.room, "failed"); !errors.Is(err, room.ErrUnavailable) {
		t.Fatalf("a revocation the store cannot take: %v, want a 503", err)
	}
	store.fail = nil
	before := refused(t, f.q, f.room, invs)
	if !slices.Equal(before, []string{"first", "second"}) {
		t.Fatalf("refused before the loss: %v, want the two revoked (not the one answered 503)", before)
	}

	if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	// Another process: nothing of the room cached, nothing in Redis.
	q := durable.New(roomdb.New(f.rdb, roomdb.WithClock(f.clk.Now)), durable.Options{Store: store, Clock: f.clk.Now})
	if after := refused(t, q, f.room, invs); !slices.Equal(after, before) {
		t.Fatalf("refused after a total loss: %v, before it: %v", after, before)
	}
}

// TestScheduleStaysDurableUnderConcurrentWritesAndALoss: two changes planned
// at once, one planned while the store is down (the admin is answered 503;
// it stands in Redis), one applied while the store is down; after the
// admission loop's next round, a total loss of Redis gives back the schedule
// Redis held. Before, each change rewrote the store's copy whole (the second
// writer's older copy dropped the first's change), and a failed write left
// the copy behind for good: a planned change missing, an applied one
// applied a second time after the loss.
func TestScheduleStaysDurableUnderConcurrentWritesAndALoss(t *testing.T) {
	store := newRacingStore(t)
	f := newFixture(t, store)
	if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
		t.Fatal(err)
	}
	at := f.clk.Now().Add(time.Hour)
	plan := func(id string) func() error {
		return func() error {
			return f.q.PutScheduled(f.ctx, f.room, room.ScheduledChange{ID: id, At: at,
				Settings: []byte(`{"admitPerMinute": 120}`), CreatedBy: "admin key", CreatedAt: f.clk.Now()})
		}
	}
	if e1, e2 := store.race(t, "schedule", plan("first"), plan("second")); e1 != nil || e2 != nil {
		t.Fatalf("plans at once: %v, %v", e1, e2)
	}
	if got := storedIDs(t, store, "schedule", f.room); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("the store holds the changes %v after two planned at once, want both", got)
	}
	if err := plan("applied")(); err != nil {
		t.Fatal(err)
	}
	store.fail = func(string) bool { return true }
	if err := plan("planned-while-down")(); !errors.Is(err, durable.ErrNotDurable) {
		t.Fatalf("a change planned while the store is down: %v, want ErrNotDurable", err)
	}
	// A change leaves the schedule while the store is down.
	_, token, err := f.q.LeaseScheduled(f.ctx, f.room, "applied")
	if err != nil || token == "" {
		t.Fatalf("lease: %q %v", token, err)
	}
	if err := f.q.RemoveScheduled(f.ctx, f.room, "applied", token); !errors.Is(err, durable.ErrNotDurable) {
		t.Fatalf("a change removed while the store is down: %v, want ErrNotDurable", err)
	}
	store.fail = nil
	if err := f.q.SyncSchedule(f.ctx, f.room); err != nil { // the loop's next round
		t.Fatal(err)
	}
	ids := func(cs []room.ScheduledChange) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		slices.Sort(out)
		return out
	}
	cs, err := f.q.Schedule(f.ctx, f.room)
	if err != nil {
		t.Fatal(err)
	}
	before := ids(cs)
	if !slices.Equal(before, []string{"first", "planned-while-down", "second"}) {
		t.Fatalf("schedule before the loss: %v", before)
	}

	if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	q := durable.New(roomdb.New(f.rdb, roomdb.WithClock(f.clk.Now)), durable.Options{Store: store, Clock: f.clk.Now})
	cs, err = q.Schedule(f.ctx, f.room)
	if err != nil {
		t.Fatal(err)
	}
	if after := ids(cs); !slices.Equal(after, before) {
		t.Fatalf("schedule after a total loss: %v, before it: %v", after, before)
	}
}

// TestARefusalKeepsTheStoresCopyInStep: a change refused under its lease is
// refused in the store's copy too, a refusal made while the store is down
// reaches the copy at the loop's next round, and a refusal whose lease ran
// out writes nothing, in Redis or the store.
func TestARefusalKeepsTheStoresCopyInStep(t *testing.T) {
	store := newRacingStore(t)
	f := newFixture(t, store)
	if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
		t.Fatal(err)
	}
	at := f.clk.Now()
	for _, id := range []string{"held", "late", "down"} {
		if err := f.q.PutScheduled(f.ctx, f.room, room.ScheduledChange{ID: id, At: at,
			Settings: []byte(`{"maxActive": -5}`), CreatedBy: "admin key", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	refuse := func(id string, lost bool) error {
		t.Helper()
		c, token, err := f.q.LeaseScheduled(f.ctx, f.room, id)
		if err != nil || token == "" {
			t.Fatalf("lease of %s: %q %v", id, token, err)
		}
		if lost {
			if err := f.rdb.Del(f.ctx, roomdb.KeysFor(f.room).ScheduleLease(id)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		c.Refused, c.RefusedAt = "not valid", &at
		return f.q.RefuseScheduled(f.ctx, f.room, c, token)
	}
	storedRefused := func() map[string]bool {
		t.Helper()
		b, _, err := store.Schedule(f.ctx, f.room)
		var cs []room.ScheduledChange
		if err == nil {
			err = json.Unmarshal(b, &cs)
		}
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, c := range cs {
			out[c.ID] = c.Refused != ""
		}
		return out
	}

	if err := refuse("held", false); err != nil {
		t.Fatalf("refused under its lease: %v", err)
	}
	if err := refuse("late", true); !errors.Is(err, room.ErrLeaseLost) {
		t.Fatalf("refused after its lease ran out: %v, want ErrLeaseLost", err)
	}
	if got := storedRefused(); !got["held"] || got["late"] || got["down"] {
		t.Fatalf("the store's copy says refused: %v, want held alone", got)
	}
	store.fail = func(string) bool { return true }
	if err := refuse("down", false); !errors.Is(err, durable.ErrNotDurable) {
		t.Fatalf("refused while the store is down: %v, want ErrNotDurable", err)
	}
	store.fail = nil
	if err := f.q.SyncSchedule(f.ctx, f.room); err != nil { // the loop's next round
		t.Fatal(err)
	}
	if got := storedRefused(); !got["held"] || got["late"] || !got["down"] {
		t.Fatalf("the store's copy after the next round says refused: %v, want held and down", got)
	}
}
