package admission_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/admission"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// schedFixture is a room behind durable.Queue (a store on disk) on a
// virtual clock, as the admit function sees it.
type schedFixture struct {
	ctx   context.Context
	rdb   redis.UniversalClient
	clk   *testkit.Clock
	store durable.Disk
	q     *durable.Queue
	room  string
	cfg   room.Config
}

// The admit loop's rounds apply the due changes of every room the server
// holds, so the tests that run them take a server of their own: on a shared
// one they would apply other tests' changes, and count them.
func newSchedFixture(t *testing.T, rdb redis.UniversalClient) *schedFixture {
	t.Helper()
	f := &schedFixture{ctx: context.Background(), rdb: rdb, clk: testkit.EngineClock(),
		store: durable.Disk{Dir: t.TempDir()}, room: redistest.Room(t)}
	eng := roomdb.New(rdb, roomdb.WithClock(f.clk.Now))
	f.q = durable.New(eng, durable.Options{Store: f.store, Clock: f.clk.Now, NoNudge: true})
	cfg := room.DefaultConfig()
	cfg.OriginURL, cfg.AdmitPerMinute, cfg.MaxActive = "https://shop.example.com/", 60, 10
	var err error
	if f.cfg, err = f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// plan schedules settings (JSON) at at, as the admin route does.
func (f *schedFixture) plan(t *testing.T, id string, at time.Time, settings string) {
	t.Helper()
	c := room.ScheduledChange{ID: id, At: at, Settings: json.RawMessage(settings), CreatedBy: "admin key", CreatedAt: f.clk.Now()}
	if err := f.q.PutScheduled(f.ctx, f.room, c); err != nil {
		t.Fatal(err)
	}
}

func (f *schedFixture) config(t *testing.T) room.Config {
	t.Helper()
	c, err := f.q.GetConfig(f.ctx, f.room)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *schedFixture) audit(t *testing.T) []room.AuditEntry {
	t.Helper()
	a, err := f.q.Audit(f.ctx, f.room)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// storedSchedule is the store's copy of the room's schedule.
func (f *schedFixture) storedSchedule(t *testing.T) []room.ScheduledChange {
	t.Helper()
	b, _, err := f.store.Schedule(f.ctx, f.room)
	if err != nil {
		t.Fatal(err)
	}
	var cs []room.ScheduledChange
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// A change planned for T applies at the first round at or after T (the
// loop's rounds are a second apart: within a second of its time), never
// before, through the PUT path, audited as made by the schedule, and leaves
// the schedule, in Redis and in the store.
func TestScheduledChangeAppliesAtItsTime(t *testing.T) {
	redistest.OwnEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := newSchedFixture(t, rdb)
		at := f.clk.Now().Add(5 * time.Minute)
		f.plan(t, "a1", at, `{"admitPerMinute": 600, "mode": "paused"}`)
		f.clk.Set(at.Add(-time.Millisecond))
		if n := admission.ApplySchedules(f.ctx, f.q, nil); n != 0 || f.config(t).AdmitPerMinute != 60 {
			t.Fatalf("before its time: %d applied, admitPerMinute %d; want none, 60", n, f.config(t).AdmitPerMinute)
		}
		f.clk.Set(at)
		if n := admission.ApplySchedules(f.ctx, f.q, nil); n != 1 {
			t.Fatalf("at its time: %d applied, want 1", n)
		}
		if c := f.config(t); c.AdmitPerMinute != 600 || c.Mode != room.ModePaused || c.MaxActive != 10 {
			t.Fatalf("config after: %+v, want admitPerMinute 600, paused, maxActive kept at 10", c)
		}
		a := f.audit(t)
		last := a[len(a)-1]
		if last.Action != admission.ActionScheduled || !strings.HasPrefix(last.Who, admission.ScheduleWho) || last.Schedule != "a1" || len(last.Changes) != 2 {
			t.Fatalf("audit entry %+v, want a scheduled change of two settings by the schedule", last)
		}
		if cs, _ := f.q.Schedule(f.ctx, f.room); len(cs) != 0 {
			t.Fatalf("schedule after: %+v, want empty", cs)
		}
		if cs := f.storedSchedule(t); len(cs) != 0 {
			t.Fatalf("stored schedule after: %+v, want empty", cs)
		}
		var stored room.Config
		b, _ := f.store.Settings(f.ctx, f.room)
		if err := json.Unmarshal(b, &stored); err != nil || stored.AdmitPerMinute != 600 {
			t.Fatalf("stored settings %s (%v), want admitPerMinute 600: the durable write of a PUT", b, err)
		}
		if n := admission.ApplySchedules(f.ctx, f.q, nil); n != 0 || len(f.audit(t)) != len(a) {
			t.Fatalf("a second round applied %d more", n)
		}
	})
}

// A change that is not valid at its time is refused: the settings stay,
// the change stays in the schedule with the reason, the audit log says so,
// and later rounds do not try it again.
func TestScheduledChangeRefusedWhenInvalid(t *testing.T) {
	f := newSchedFixture(t, redistest.Own(t))
	at := f.clk.Now().Add(time.Minute)
	f.plan(t, "bad", at, `{"maxActive": -5}`)
	f.clk.Set(at.Add(300 * time.Millisecond))
	if n := admission.ApplySchedules(f.ctx, f.q, nil); n != 0 {
		t.Fatalf("%d applied, want 0", n)
	}
	if c := f.config(t); c.MaxActive != 10 {
		t.Fatalf("maxActive %d, want 10 kept", c.MaxActive)
	}
	cs, err := f.q.Schedule(f.ctx, f.room)
	if err != nil || len(cs) != 1 || cs[0].Refused == "" || !strings.Contains(cs[0].Refused, "maxActive") || cs[0].RefusedAt == nil {
		t.Fatalf("schedule %+v %v, want the change kept, refused for maxActive", cs, err)
	}
	if s := f.storedSchedule(t); len(s) != 1 || s[0].Refused == "" {
		t.Fatalf("stored schedule %+v, want the refused change", s)
	}
	a := f.audit(t)
	if last := a[len(a)-1]; last.Action != admission.ActionRefused || last.Refused == "" || last.Schedule != "bad" {
		t.Fatalf("audit entry %+v, want the refusal", last)
	}
	f.clk.Advance(time.Second)
	admission.ApplySchedules(f.ctx, f.q, nil)
	if n := len(f.audit(t)); n != len(a) {
		t.Fatalf("audit grew to %d from %d: a refused change was tried again", n, len(a))
	}
}

// Rounds running at once (a duplicate admit invocation) apply a change
// once: one audit entry.
func TestScheduledChangeAppliesOnceUnderConcurrentRounds(t *testing.T) {
	f := newSchedFixture(t, redistest.Own(t))
	at := f.clk.Now().Add(time.Minute)
	f.plan(t, "once", at, `{"admitPerMinute": 120}`)
	f.clk.Set(at)
	before := len(f.audit(t))
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := admission.ApplySchedules(f.ctx, f.q, nil)
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 1 || len(f.audit(t)) != before+1 {
		t.Fatalf("applied %d times, %d audit entries added; want 1, 1", total, len(f.audit(t))-before)
	}
}

// loseRoom drops every key of the room and its registry entry: the room's
// total loss of Redis.
func loseRoom(t *testing.T, ctx context.Context, rdb redis.UniversalClient, id string) {
	t.Helper()
	k := roomdb.KeysFor(id)
	keys := []string{k.Config, k.State, k.Queue, k.Heartbeats, k.Grants, k.Active, k.Used, k.Left, k.History(), k.Audit(), k.Schedule(), k.Fence()}
	for _, key := range keys {
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.SRem(ctx, roomdb.RegistryKey, id).Err(); err != nil {
		t.Fatal(err)
	}
}

// A schedule survives a total loss of Redis like the settings: the admit
// loop's round finds the room in the store, restores it with its schedule,
// and applies the change at its time.
func TestScheduledChangeSurvivesTotalLoss(t *testing.T) {
	f := newSchedFixture(t, redistest.Own(t))
	at := f.clk.Now().Add(10 * time.Minute)
	f.plan(t, "later", at, `{"admitPerMinute": 900}`)
	f.plan(t, "sooner", at.Add(-time.Minute), `{"maxActive": 20}`)
	loseRoom(t, f.ctx, f.rdb, f.room)
	if n, _ := f.rdb.HLen(f.ctx, roomdb.KeysFor(f.room).Schedule()).Result(); n != 0 {
		t.Fatal("the loss left the schedule")
	}
	f.clk.Set(at)
	if n := admission.ApplySchedules(f.ctx, f.q, nil); n != 2 {
		t.Fatalf("%d applied after the loss, want 2", n)
	}
	if c := f.config(t); c.AdmitPerMinute != 900 || c.MaxActive != 20 {
		t.Fatalf("config %+v, want admitPerMinute 900, maxActive 20", c)
	}
}

// A deployment where nobody waits is not idle while a change is planned
// within the lookahead, so the admit function ticks for its minute and
// applies it on time.
func TestScheduledChangeKeepsTheAdmitFunctionAwake(t *testing.T) {
	f := newSchedFixture(t, redistest.Own(t))
	only := onlyRoom{f.q, f.room}
	if !admission.For(only).Idle(f.ctx) {
		t.Fatal("an empty room with no schedule is not idle")
	}
	f.plan(t, "far", f.clk.Now().Add(admission.ScheduleLookahead+time.Second), `{"mode": "closed"}`)
	if !admission.For(only).Idle(f.ctx) {
		t.Fatal("a change beyond the lookahead wakes the deployment")
	}
	f.plan(t, "near", f.clk.Now().Add(admission.ScheduleLookahead-time.Second), `{"mode": "closed"}`)
	if admission.For(only).Idle(f.ctx) {
		t.Fatal("idle with a change due within the lookahead")
	}
}

// onlyRoom is the queue with one room listed: the test owns what Idle counts.
type onlyRoom struct {
	*durable.Queue
	id string
}

func (o onlyRoom) Rooms(context.Context) ([]string, error) { return []string{o.id}, nil }

// The admission loop applies due changes in its rounds, before it ticks.
func TestScheduledChangeAppliedByTheLoop(t *testing.T) {
	f := newSchedFixture(t, redistest.Own(t))
	at := f.clk.Now().Add(time.Hour)
	f.plan(t, "loop", at, `{"admitPerMinute": 240}`)
	f.clk.Set(at)
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute) // stops a broken loop only
	defer cancel()
	admission.For(onlyRoom{f.q, f.room}).Run(ctx, 10*time.Millisecond, nil, func(context.Context) {
		if c, err := f.q.GetConfig(f.ctx, f.room); err == nil && c.AdmitPerMinute == 240 {
			cancel()
		}
	})
	if c := f.config(t); c.AdmitPerMinute != 240 {
		t.Fatalf("admitPerMinute %d after the loop, want 240", c.AdmitPerMinute)
	}
}

// planTogether plans three changes of admitPerMinute (100, 200, 300) for
// at, a second apart, the first planned with the largest id and the second
// with the smallest.
func (f *schedFixture) planTogether(t *testing.T, at time.Time) []string {
	ids := []string{"ffffffffffffff01", "0000000000000002", "8000000000000003"}
	for i, id := range ids {
		f.plan(t, id, at, `{"admitPerMinute": `+strconv.Itoa(100*(i+1))+`}`)
		f.clk.Advance(time.Second)
	}
	return ids
}

// applied is the room's scheduled changes applied so far, in the audit
// log's order. (ApplySchedules counts those of every room of the registry,
// which other tests share.)
func (f *schedFixture) applied(t *testing.T) []string {
	var out []string
	for _, a := range f.audit(t) {
		if a.Action == admission.ActionScheduled {
			out = append(out, a.Schedule)
		}
	}
	return out
}

// TestChangesDueTogetherApplyAsPlanned: changes planned for the same instant
// apply in the order they were planned, so the last one planned has the last
// word, whatever their random ids. Before, they applied in the order of
// their ids: here 200, 300, then 100.
func TestChangesDueTogetherApplyAsPlanned(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := newSchedFixture(t, rdb)
		at := f.clk.Now().Add(5 * time.Minute)
		ids := f.planTogether(t, at)
		f.clk.Set(at)
		admission.ApplySchedules(f.ctx, f.q, nil)
		if got := f.applied(t); !slices.Equal(got, ids) {
			t.Fatalf("applied in the order %v, want %v (as planned)", got, ids)
		}
		if c := f.config(t); c.AdmitPerMinute != 300 {
			t.Fatalf("admitPerMinute %d after the round, want 300, the change planned last", c.AdmitPerMinute)
		}
	})
}

// TestAChangeBeingAppliedHoldsBackTheNext: a due change another process is
// applying holds back the changes after it until a later round, so none of
// them applies first and is then undone by it. Before, the round skipped the
// leased change and applied the others.
func TestAChangeBeingAppliedHoldsBackTheNext(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := newSchedFixture(t, rdb)
		at := f.clk.Now().Add(5 * time.Minute)
		ids := f.planTogether(t, at)
		f.clk.Set(at)
		_, token, err := f.q.LeaseScheduled(f.ctx, f.room, ids[0])
		if err != nil || token == "" {
			t.Fatalf("lease: %q %v", token, err)
		}
		admission.ApplySchedules(f.ctx, f.q, nil)
		if got := f.applied(t); len(got) != 0 || f.config(t).AdmitPerMinute != 60 {
			t.Fatalf("with the first change leased elsewhere: applied %v, admitPerMinute %d; want none, 60", got, f.config(t).AdmitPerMinute)
		}
		if err := f.q.ReleaseScheduled(f.ctx, f.room, ids[0], token); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Second)
		admission.ApplySchedules(f.ctx, f.q, nil)
		if got := f.applied(t); !slices.Equal(got, ids) || f.config(t).AdmitPerMinute != 300 {
			t.Fatalf("next round: applied %v, admitPerMinute %d; want %v, 300", got, f.config(t).AdmitPerMinute, ids)
		}
	})
}

// downStore is a store on disk whose schedule writes fail while down is set.
type downStore struct {
	durable.Disk
	down atomic.Bool
}

func (s *downStore) PutSchedule(ctx context.Context, id string, b []byte, tag string) error {
	if s.down.Load() {
		return errors.New("downStore: the store is down")
	}
	return s.Disk.PutSchedule(ctx, id, b, tag)
}

// TestARoundBringsAStaleScheduleCopyUpToDate: a change planned while the
// store is down stands in Redis (the admin is answered 503, not durable);
// the next round of the admission loop, the store back, writes the store's
// copy, so a total loss then does not lose the change.
func TestARoundBringsAStaleScheduleCopyUpToDate(t *testing.T) {
	rdb := redistest.Single(t)
	store := &downStore{Disk: durable.Disk{Dir: t.TempDir()}}
	clk, id := testkit.EngineClock(), redistest.Room(t)
	q := durable.New(roomdb.New(rdb, roomdb.WithClock(clk.Now)), durable.Options{Store: store, Clock: clk.Now, NoNudge: true})
	cfg := room.DefaultConfig()
	cfg.OriginURL = "https://shop.example.com/"
	if _, err := q.PutConfig(t.Context(), id, cfg); err != nil {
		t.Fatal(err)
	}
	store.down.Store(true)
	c := room.ScheduledChange{ID: "planned", At: clk.Now().Add(time.Hour), Settings: json.RawMessage(`{"admitPerMinute": 60}`), CreatedAt: clk.Now()}
	if err := q.PutScheduled(t.Context(), id, c); !errors.Is(err, durable.ErrNotDurable) {
		t.Fatalf("planned while the store is down: %v, want ErrNotDurable", err)
	}
	admission.ApplySchedules(t.Context(), q, nil) // still down: nothing to do but try
	store.down.Store(false)
	admission.ApplySchedules(t.Context(), q, nil)
	b, _, err := store.Schedule(t.Context(), id)
	var cs []room.ScheduledChange
	if err == nil {
		err = json.Unmarshal(b, &cs)
	}
	if err != nil || len(cs) != 1 || cs[0].ID != "planned" {
		t.Fatalf("the store's copy after a round: %s %v, want the change planned while it was down", b, err)
	}
}

// slowStore is a store on disk whose settings writes wait, once armed, until
// the test lets them go: an S3 write slower than the schedule's lease.
type slowStore struct {
	durable.Disk
	armed   atomic.Bool
	entered chan struct{} // a write is waiting
	release chan struct{} // closed: the write goes on
}

func (s *slowStore) PutSettings(ctx context.Context, id string, b []byte) error {
	if s.armed.CompareAndSwap(true, false) {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.Disk.PutSettings(ctx, id, b)
}

// await receives from c, failing the test after a deadline.
func await[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30 s", what)
		panic("unreachable")
	}
}

// TestAChangeAppliesOnceWhenItsStoreWriteOutlastsTheLease: an applier whose
// store write outlasts the change's lease has applied the change already;
// a second applier, which takes the lease it lost, finds nothing left to
// apply, so an operator's change made in between stands and the log shows
// one application.
func TestAChangeAppliesOnceWhenItsStoreWriteOutlastsTheLease(t *testing.T) {
	f := newSchedFixture(t, redistest.Own(t))
	at := f.clk.Now().Add(5 * time.Minute)
	f.plan(t, "c1", at, `{"admitPerMinute": 600}`)
	f.clk.Set(at)

	slow := &slowStore{Disk: f.store, entered: make(chan struct{}), release: make(chan struct{})}
	slow.armed.Store(true)
	a := durable.New(roomdb.New(f.rdb, roomdb.WithClock(f.clk.Now)), durable.Options{Store: slow, Clock: f.clk.Now, NoNudge: true})
	done := make(chan int, 1)
	go func() { done <- admission.ApplySchedules(f.ctx, a, nil) }()
	await(t, slow.entered, "settings write by the first applier")

	// The lease runs out while the store write waits (as its TTL would).
	if err := f.rdb.Del(f.ctx, roomdb.KeysFor(f.room).ScheduleLease("c1")).Err(); err != nil {
		t.Fatal(err)
	}
	// An operator changes the rate meanwhile.
	cfg := f.config(t)
	cfg.AdmitPerMinute = 120
	if _, err := f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
		t.Fatal(err)
	}
	// The second applier's round.
	b := admission.ApplySchedules(f.ctx, f.q, nil)
	close(slow.release)
	first := await(t, done, "end of the first applier's round")

	if first+b != 1 {
		t.Errorf("applied %d times (first applier %d, second %d), want once", first+b, first, b)
	}
	if got := f.config(t).AdmitPerMinute; got != 120 {
		t.Errorf("admitPerMinute %d after both rounds, want 120: the operator's change, made after the schedule's", got)
	}
	if got := f.applied(t); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("the log shows %v applied, want [c1] once", got)
	}
	if cs, err := f.q.Schedule(f.ctx, f.room); err != nil || len(cs) != 0 {
		t.Errorf("schedule after: %v %v, want empty", cs, err)
	}
}

// slowReader is a queue whose read of the settings, once armed, waits after
// reading until the test lets it go: an applier whose validation of a change
// outlasts the change's lease, on the settings it read before.
type slowReader struct {
	*durable.Queue
	armed   atomic.Bool
	entered chan struct{} // a read is waiting
	release chan struct{} // closed: the read returns
}

func (s *slowReader) GetConfig(ctx context.Context, id string) (room.Config, error) {
	c, err := s.Queue.GetConfig(ctx, id)
	if s.armed.CompareAndSwap(true, false) {
		s.entered <- struct{}{}
		<-s.release
	}
	return c, err
}

// TestALateRefusalLeavesAnAppliedChangeApplied: an applier whose lease runs
// out while it validates a change, against the settings it read before, has
// no say over the change any more. A second applier takes the lease and
// applies the change, valid by then; the first applier's late refusal then
// writes nothing: the change stays applied, out of the schedule, and the log
// shows no refusal. Before, its refusal put the change back in the schedule,
// refused, after it was applied.
func TestALateRefusalLeavesAnAppliedChangeApplied(t *testing.T) {
	redistest.OwnEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := newSchedFixture(t, rdb)
		at := f.clk.Now().Add(5 * time.Minute)
		// Not valid with sessionTTLSeconds at 600 (maxSessionSeconds is 0 or at least it).
		f.plan(t, "c1", at, `{"maxSessionSeconds": 300}`)
		f.clk.Set(at)

		slow := &slowReader{Queue: durable.New(roomdb.New(f.rdb, roomdb.WithClock(f.clk.Now)), durable.Options{Store: f.store, Clock: f.clk.Now, NoNudge: true}),
			entered: make(chan struct{}), release: make(chan struct{})}
		slow.armed.Store(true)
		done := make(chan int, 1)
		go func() { done <- admission.ApplySchedules(f.ctx, slow, nil) }()
		await(t, slow.entered, "the first applier's read of the settings")

		// An operator lowers sessionTTLSeconds meanwhile: the change is valid now.
		cfg := f.config(t)
		cfg.SessionTTLSeconds = 120
		if _, err := f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
			t.Fatal(err)
		}
		// The first lease runs out (as its TTL would); the second applier's round applies the change.
		if err := f.rdb.Del(f.ctx, roomdb.KeysFor(f.room).ScheduleLease("c1")).Err(); err != nil {
			t.Fatal(err)
		}
		if n := admission.ApplySchedules(f.ctx, f.q, nil); n != 1 {
			t.Fatalf("the second applier applied %d changes, want 1", n)
		}
		close(slow.release)
		if n := await(t, done, "end of the first applier's round"); n != 0 {
			t.Errorf("the first applier applied %d changes, want 0", n)
		}

		if got := f.config(t).MaxSessionSeconds; got != 300 {
			t.Errorf("maxSessionSeconds %d after both rounds, want 300: the change applied", got)
		}
		if cs, err := f.q.Schedule(f.ctx, f.room); err != nil || len(cs) != 0 {
			t.Errorf("schedule after both rounds: %+v %v, want empty: the change was applied", cs, err)
		}
		if cs := f.storedSchedule(t); len(cs) != 0 {
			t.Errorf("stored schedule after both rounds: %+v, want empty", cs)
		}
		for _, a := range f.audit(t) {
			if a.Action == admission.ActionRefused {
				t.Errorf("the log shows a refusal of %s (%s) of a change applied", a.Schedule, a.Refused)
			}
		}
		if got := f.applied(t); !slices.Equal(got, []string{"c1"}) {
			t.Errorf("the log shows %v applied, want [c1] once", got)
		}
	})
}
