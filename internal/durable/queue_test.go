package durable_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

const origin = "https://shop.example.com/checkout"

func testConfig() room.Config {
	c := room.DefaultConfig()
	c.OriginURL = origin
	c.MaxActive, c.AdmitPerMinute, c.HeartbeatTTLSeconds = 3, 6000, 60
	return c
}

type fixture struct {
	ctx   context.Context
	rdb   *redis.Client
	clk   *testkit.Clock
	eng   *roomdb.Engine
	store durable.Store
	q     *durable.Queue
	room  string
}

// newFixture is a room on a server of the test's own: the package's tests
// lose everything (FLUSHALL) and count the rooms the admit loop lists.
func newFixture(t *testing.T, store durable.Store) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), rdb: redistest.Own(t), store: store, room: redistest.Room(t),
		clk: testkit.FixedClock(time.Now().UTC().Truncate(time.Second))}
	f.eng = roomdb.New(f.rdb, roomdb.WithClock(f.clk.Now))
	f.q = durable.New(f.eng, durable.Options{Store: store, Clock: f.clk.Now})
	return f
}

// A total loss (FLUSHALL) without any admin call: the room answers with its
// settings, the waiting visitors have their places back in order, and the
// consumed grant (and the admitted ones, below the recorded head) is not
// granted again; the admit loop's room list still has the room.
func TestRestoreAfterTotalLoss(t *testing.T) {
	f := newFixture(t, durable.Disk{Dir: t.TempDir()})
	cfg := testConfig()
	if _, err := f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
		t.Fatal(err)
	}
	var ts []room.Ticket
	for range 8 {
		p, err := f.q.Join(f.ctx, f.room, "v", room.JoinProof{})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, p.Ticket)
	}
	f.clk.Advance(time.Second)
	if r, err := f.q.Tick(f.ctx, f.room); err != nil || r.Admitted != 3 {
		t.Fatalf("tick: %+v %v, want 3 admitted", r, err)
	}
	if _, err := f.q.Consume(f.ctx, f.room, ts[0].Seq, origin); err != nil {
		t.Fatal(err)
	}
	if h, err := f.store.Head(f.ctx, f.room); err != nil || h != float64(ts[2].Seq) {
		t.Fatalf("recorded head %v %v, want %d", h, err, ts[2].Seq)
	}

	if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	ids, err := f.q.Rooms(f.ctx)
	if err != nil || len(ids) != 1 || ids[0] != f.room {
		t.Errorf("Rooms after the loss = %v %v, want the stored room", ids, err)
	}
	got, err := f.q.GetConfig(f.ctx, f.room)
	if err != nil || got.MaxActive != cfg.MaxActive || got.OriginURL != cfg.OriginURL {
		t.Fatalf("GetConfig after the loss: %+v %v", got, err)
	}
	for i, tk := range ts {
		p, err := f.q.Poll(f.ctx, tk)
		if err != nil {
			t.Fatal(err)
		}
		if i < 3 && p.State != room.StateExpired {
			t.Errorf("admitted ticket %d after the loss: %s, want expired", i, p.State)
		}
		if i >= 3 && p.State == room.StateExpired {
			t.Errorf("waiting ticket %d lost its place", i)
		}
	}
	for range 5 {
		f.clk.Advance(time.Second)
		if _, err := f.q.Tick(f.ctx, f.room); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.q.Consume(f.ctx, f.room, ts[0].Seq, origin); err == nil {
		t.Errorf("the consumed grant was granted and consumed again")
	}
	for _, tk := range ts[3:6] { // the next three in order
		if _, err := f.q.Consume(f.ctx, f.room, tk.Seq, origin); err != nil {
			t.Errorf("visitor %d, next in order after the loss: %v", tk.Seq, err)
		}
	}
}

// A visitor of a quiet room is admitted by the visitors' own requests, with
// no scheduled tick: the poll runs a guarded tick first.
func TestQuietRoomAdmittedByRequests(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Second) // the new room's bucket fills
	p, err := f.q.Join(f.ctx, f.room, "first", room.JoinProof{})
	if err != nil || p.State != room.StateWaiting {
		t.Fatalf("join: %v %v", p.State, err)
	}
	f.clk.Advance(time.Second) // the page's first poll
	p, err = f.q.Poll(f.ctx, p.Ticket)
	if err != nil || p.State != room.StateAdmitted {
		t.Fatalf("first poll in a quiet room: %v %v, want admitted", p.State, err)
	}

	// The cost a request pays: a guarded tick that finds the guard (busy),
	// and one that ticks a quiet room.
	busy := measure(200, func() { f.eng.TickGuarded(f.ctx, f.room, time.Second) })
	ticked := measure(200, func() { f.clk.Advance(time.Second); f.eng.TickGuarded(f.ctx, f.room, time.Second) })
	t.Logf("request-driven tick on loopback Redis: %s when busy, %s when it ticks a quiet room", busy, ticked)
}

func measure(n int, f func()) time.Duration {
	start := time.Now()
	for range n {
		f()
	}
	return time.Since(start) / time.Duration(n)
}

// Concurrent requests in one second (separate processes: separate Queues) run
// the tick script once and admit no more than the bucket holds.
func TestConcurrentRequestTicks(t *testing.T) {
	f := newFixture(t, nil)
	cfg := testConfig()
	cfg.AdmitPerMinute, cfg.MaxActive = 60, 100 // one a second, two in the bucket
	if _, err := f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
		t.Fatal(err)
	}
	var ts []room.Ticket
	for range 10 {
		p, err := f.eng.Join(f.ctx, f.room, "v", room.JoinProof{})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, p.Ticket)
	}
	f.clk.Advance(10 * time.Second)
	var wg sync.WaitGroup
	for i := range 10 {
		q := durable.New(f.eng, durable.Options{Clock: f.clk.Now})
		wg.Go(func() {
			if _, err := q.Poll(f.ctx, ts[i]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st, err := f.eng.Stats(f.ctx, f.room)
	if err != nil {
		t.Fatal(err)
	}
	if st.Admitted != 2 {
		t.Errorf("10 concurrent polls in one second admitted %d, want 2 (the bucket's cap)", st.Admitted)
	}
}

type failingStore struct{ durable.Store }

func (failingStore) PutSettings(context.Context, string, []byte) error {
	return errors.New("s3 down")
}

// When the store cannot take the settings, Redis keeps them (they are live)
// and the admin learns it: the error is ErrNotDurable and ErrUnavailable (503).
func TestPutConfigStoreFailure(t *testing.T) {
	f := newFixture(t, failingStore{durable.Disk{Dir: t.TempDir()}})
	_, err := f.q.PutConfig(f.ctx, f.room, testConfig())
	if !errors.Is(err, durable.ErrNotDurable) || !errors.Is(err, room.ErrUnavailable) {
		t.Fatalf("PutConfig with the store down: %v, want ErrNotDurable and ErrUnavailable", err)
	}
	if _, err := f.eng.GetConfig(f.ctx, f.room); err != nil {
		t.Errorf("Redis did not keep the settings: %v", err)
	}
}

// A room the store does not have stays unknown.
func TestUnknownRoomStaysUnknown(t *testing.T) {
	f := newFixture(t, durable.Disk{Dir: t.TempDir()})
	if _, err := f.q.GetConfig(f.ctx, f.room); !errors.Is(err, room.ErrUnknownRoom) {
		t.Errorf("GetConfig of a room nobody put: %v, want ErrUnknownRoom", err)
	}
}

// countingStore counts the settings reads.
type countingStore struct {
	durable.Store
	mu    sync.Mutex
	reads int
}

func (c *countingStore) Settings(ctx context.Context, id string) ([]byte, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.Store.Settings(ctx, id)
}

// After a loss, a crowd's concurrent calls restore a room once per process
// (one store read), and calls for rooms nobody created cost one store read
// per room per MissingFor, not one each.
func TestRestoreOncePerProcess(t *testing.T) {
	cs := &countingStore{Store: durable.Disk{Dir: t.TempDir()}}
	f := newFixture(t, cs)
	if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
		t.Fatal(err)
	}
	if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := f.q.GetConfig(f.ctx, f.room); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if cs.reads > 3 { // one restore, and a call or two that found the room missing just before it ended
		t.Errorf("20 concurrent calls after the loss read the store %d times", cs.reads)
	}
	cs.reads = 0
	for range 50 {
		if _, err := f.q.GetConfig(f.ctx, "made-up-room"); !errors.Is(err, room.ErrUnknownRoom) {
			t.Fatalf("made-up room: %v", err)
		}
	}
	if cs.reads != 1 {
		t.Errorf("50 calls for a made-up room read the store %d times, want 1", cs.reads)
	}
}

// served is a room with 8 visitors of whom 3 were admitted (the first
// consumed), its head recorded, then a total loss: what the restore tests
// start from. corrupt runs between the record and the loss.
func served(t *testing.T, f *fixture, corrupt func()) []room.Ticket {
	t.Helper()
	if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
		t.Fatal(err)
	}
	var ts []room.Ticket
	for range 8 {
		p, err := f.q.Join(f.ctx, f.room, "v", room.JoinProof{})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, p.Ticket)
	}
	f.clk.Advance(time.Second)
	if r, err := f.q.Tick(f.ctx, f.room); err != nil || r.Admitted != 3 {
		t.Fatalf("tick: %+v %v, want 3 admitted", r, err)
	}
	if _, err := f.q.Consume(f.ctx, f.room, ts[0].Seq, origin); err != nil {
		t.Fatal(err)
	}
	corrupt()
	if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	return ts
}

// A head record that is missing, not a finite score, or unreadable, then a
// total loss: the room comes back closed (stored so, so a second loss keeps
// it closed), nobody is admitted, and when an operator opens it again none of
// the tickets from before the loss is admitted a second time: the restore
// set the floor at the instant it ran.
func TestRestoreWithoutHeadStaysClosed(t *testing.T) {
	for name, head := range map[string]string{"missing": "", "NaN": "NaN", "-Inf": "-Inf", "+Inf": "+Inf",
		"negative": "-3", "garbage": "{]", "empty": " ",
		// Implausible: no code of ours writes hex, and neither a draw (below 1)
		// nor a sequence (microseconds since 2020, below 2^53, not ahead of the clock).
		"hex": "0x1p-2", "one": "1", "not a draw's grain": "0.3", "not whole": "1764150000123456.5",
		"2^53": "9.007199254740992e+15", "a year ahead": formatSeq(time.Now().Add(365 * 24 * time.Hour)),
		"spelled otherwise": "1.76415e15"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			f := newFixture(t, durable.Disk{Dir: dir})
			ts := served(t, f, func() {
				p := filepath.Join(dir, f.room+".head")
				if head == "" {
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					return
				}
				if err := os.WriteFile(p, []byte(head), 0o600); err != nil {
					t.Fatal(err)
				}
			})
			cfg, err := f.q.GetConfig(f.ctx, f.room)
			if err != nil || cfg.Mode != room.ModeClosed {
				t.Fatalf("after the loss: mode %q %v, want closed", cfg.Mode, err)
			}
			b, err := f.store.Settings(f.ctx, f.room)
			if err != nil || !strings.Contains(string(b), `"mode":"closed"`) {
				t.Errorf("stored settings after the restore: %s %v, want closed", b, err)
			}
			for i, tk := range ts {
				if p, err := f.q.Poll(f.ctx, tk); err != nil || p.State == room.StateAdmitted {
					t.Errorf("ticket %d in the closed room: %v %v", i, p.State, err)
				}
			}
			for range 3 {
				f.clk.Advance(time.Second)
				if r, err := f.q.Tick(f.ctx, f.room); err != nil || r.Admitted != 0 {
					t.Fatalf("tick of the closed room: %+v %v", r, err)
				}
			}
			if h, err := f.store.Head(f.ctx, f.room); err != nil || h < float64(ts[len(ts)-1].Seq) {
				t.Errorf("head record after the restore's ticks: %v %v, want the restore's floor", h, err)
			}
			// The operator opens the room again.
			cfg.Mode = room.ModeQueue
			if _, err := f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
				t.Fatal(err)
			}
			for _, tk := range ts {
				f.q.Poll(f.ctx, tk)
			}
			for range 5 {
				f.clk.Advance(time.Second)
				if _, err := f.q.Tick(f.ctx, f.room); err != nil {
					t.Fatal(err)
				}
			}
			for i, tk := range ts {
				if _, err := f.q.Consume(f.ctx, f.room, tk.Seq, origin); err == nil {
					t.Errorf("ticket %d from before the loss admitted and consumed after it", i)
				}
			}
		})
	}
}

// Stored settings that cannot be read (not JSON, an unknown field, a value
// out of range): the room is not restored, and the error says so
// (room.ErrNotRestorable), not a Redis outage (room.ErrUnavailable).
func TestUnreadableSettings(t *testing.T) {
	for name, body := range map[string]string{"garbage": "\x00{nope", "unknown field": `{"maxActive":3,"colour":"red"}`,
		"invalid": `{"maxActive":-4,"originUrl":"https://a.example"}`, "empty": ""} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			f := newFixture(t, durable.Disk{Dir: dir})
			served(t, f, func() {
				if err := os.WriteFile(filepath.Join(dir, f.room+".json"), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			})
			_, _, err := f.q.Status(f.ctx, f.room)
			if !errors.Is(err, room.ErrNotRestorable) || errors.Is(err, room.ErrUnavailable) {
				t.Fatalf("Status of a room whose settings are unreadable: %v, want ErrNotRestorable only", err)
			}
			if _, err := f.q.Join(f.ctx, f.room, "v", room.JoinProof{}); !errors.Is(err, room.ErrNotRestorable) {
				t.Errorf("Join: %v", err)
			}
			if ids, err := f.q.Rooms(f.ctx); err != nil || !slices.Contains(ids, f.room) {
				t.Errorf("Rooms: %v %v, want the room listed", ids, err)
			}
			// A crowd polling it costs no store read each (MissingFor), and
			// a PUT brings it back at once.
			cs := &countingStore{Store: f.store}
			q := durable.New(f.eng, durable.Options{Store: cs, Clock: f.clk.Now})
			for range 20 {
				if _, err := q.GetConfig(f.ctx, f.room); !errors.Is(err, room.ErrNotRestorable) {
					t.Fatalf("GetConfig: %v", err)
				}
			}
			if cs.reads != 1 {
				t.Errorf("20 calls read the unreadable settings %d times, want 1", cs.reads)
			}
			if _, err := q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
				t.Fatal(err)
			}
			if _, err := q.GetConfig(f.ctx, f.room); err != nil {
				t.Errorf("GetConfig after a PUT: %v", err)
			}
		})
	}
}

// The window a total loss can grant again is the head-record interval (the
// deployment's HEAD_RECORD_SECONDS): with 1 s, a tick that admitted records
// the head at once, and a loss right after it grants none of its admissions
// again; and a quiet room admitted by its visitors' requests alone records it
// too, rather than wait for the admit function.
func TestHeadRecordInterval(t *testing.T) {
	for _, byRequests := range []bool{false, true} {
		name := map[bool]string{false: "admit loop", true: "requests"}[byRequests]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, durable.Disk{Dir: t.TempDir()})
			f.q = durable.New(f.eng, durable.Options{Store: f.store, Clock: f.clk.Now, HeadEvery: time.Second})
			if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
				t.Fatal(err)
			}
			var ts []room.Ticket
			for range 5 {
				p, err := f.eng.Join(f.ctx, f.room, "v", room.JoinProof{})
				if err != nil {
					t.Fatal(err)
				}
				ts = append(ts, p.Ticket)
			}
			admitted := 0
			for range 4 { // maxActive 3: admit, serve, admit again
				f.clk.Advance(time.Second)
				if byRequests {
					for _, tk := range ts {
						if p, err := f.q.Poll(f.ctx, tk); err == nil && p.State == room.StateAdmitted && !p.Active {
							admitted++
						}
					}
				} else {
					r, err := f.q.Tick(f.ctx, f.room)
					if err != nil {
						t.Fatal(err)
					}
					admitted += int(r.Admitted)
				}
				for _, tk := range ts {
					if _, err := f.q.Consume(f.ctx, f.room, tk.Seq, origin); err == nil {
						f.q.Complete(f.ctx, f.room, tk.Seq, origin)
					}
				}
			}
			if admitted < 5 {
				t.Fatalf("admitted %d of 5", admitted)
			}
			if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Second)
			for range 3 {
				for _, tk := range ts {
					f.q.Poll(f.ctx, tk)
				}
				f.clk.Advance(time.Second)
				if _, err := f.q.Tick(f.ctx, f.room); err != nil {
					t.Fatal(err)
				}
			}
			for i, tk := range ts {
				if _, err := f.q.Consume(f.ctx, f.room, tk.Seq, origin); err == nil {
					t.Errorf("visitor %d, served before the loss, admitted and consumed again", i)
				}
			}
		})
	}
}

// headCounter counts the head records written.
type headCounter struct {
	durable.Store
	mu   sync.Mutex
	puts int
}

func (c *headCounter) PutHead(ctx context.Context, id string, h float64) error {
	c.mu.Lock()
	c.puts++
	c.mu.Unlock()
	return c.Store.PutHead(ctx, id, h)
}

// The cost of the head-record interval, measured: a room admitting one
// visitor a second for two minutes of ticks writes one head record per
// interval (S3 PUTs: 86,400 a day at 1 s, 8,640 at 10 s, per admitting room).
func TestHeadRecordCost(t *testing.T) {
	for _, every := range []time.Duration{time.Second, 10 * time.Second} {
		f := newFixture(t, durable.Disk{Dir: t.TempDir()})
		hc := &headCounter{Store: f.store}
		q := durable.New(f.eng, durable.Options{Store: hc, Clock: f.clk.Now, HeadEvery: every})
		cfg := testConfig()
		cfg.MaxActive, cfg.AdmitPerMinute = 1000, 60
		if _, err := q.PutConfig(f.ctx, f.room, cfg); err != nil {
			t.Fatal(err)
		}
		for range 150 { // all still waiting, and polling in time, after two minutes
			if _, err := f.eng.Join(f.ctx, f.room, "v", room.JoinProof{}); err != nil {
				t.Fatal(err)
			}
		}
		hc.puts = 0
		const seconds = 120
		for range seconds {
			f.clk.Advance(time.Second)
			if _, err := q.Tick(f.ctx, f.room); err != nil {
				t.Fatal(err)
			}
		}
		want := int(seconds * time.Second / every)
		t.Logf("head records in %d s of admitting at an interval of %s: %d (%.0f a day)", seconds, every, hc.puts, float64(hc.puts)*86400/seconds)
		if hc.puts < want-1 || hc.puts > want+1 {
			t.Errorf("interval %s: %d head records in %d s, want about %d", every, hc.puts, seconds, want)
		}
	}
}

// formatSeq is the sequence the engine would issue at t, as a head record.
func formatSeq(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMicro()), 'g', -1, 64) }

// A room deleted, created again under its id, then a total loss of Redis:
// the tombstone the store kept keeps every ticket of the deleted room dead
// (the served one is not admitted again, the waiting ones do not come back
// ahead of the new room's visitors), while the new room's own visitors get
// their places back. Redis alone forgot the tombstone with everything else.
func TestDeletedRoomStaysDeadAfterTotalLoss(t *testing.T) {
	for name, store := range map[string]func(t *testing.T) durable.Store{
		"disk": func(t *testing.T) durable.Store { return durable.Disk{Dir: t.TempDir()} },
		"s3":   func(t *testing.T) durable.Store { return durable.NewS3(fakeS3(t, "rooms"), "rooms/vst") },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, store(t))
			ts := served(t, f, func() {})
			// The loss above restores the room (served's first poll below).
			if _, err := f.q.Poll(f.ctx, ts[7]); err != nil {
				t.Fatal(err)
			}
			if err := f.q.Delete(f.ctx, f.room); err != nil {
				t.Fatalf("delete: %v", err)
			}
			f.clk.Advance(time.Second)
			if _, err := f.q.PutConfig(f.ctx, f.room, testConfig()); err != nil {
				t.Fatal(err)
			}
			fresh, err := f.q.Join(f.ctx, f.room, "fresh", room.JoinProof{})
			if err != nil {
				t.Fatal(err)
			}
			if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
				t.Fatal(err)
			}
			// The new room comes back from the store on the first call.
			if p, err := f.q.Poll(f.ctx, fresh.Ticket); err != nil || p.State != room.StateWaiting || p.Position != 1 {
				t.Fatalf("the new room's visitor after the loss: %+v %v, want waiting first", p, err)
			}
			for i, tk := range ts {
				if p, err := f.q.Poll(f.ctx, tk); err != nil || p.State != room.StateExpired {
					t.Errorf("ticket %d of the deleted room after the loss: %s %v, want expired", i, p.State, err)
				}
			}
			for range 3 {
				f.clk.Advance(time.Second)
				if _, err := f.q.Tick(f.ctx, f.room); err != nil {
					t.Fatal(err)
				}
			}
			for i, tk := range ts {
				if _, err := f.q.Consume(f.ctx, f.room, tk.Seq, origin); err == nil {
					t.Errorf("ticket %d of the deleted room consumed in the new one", i)
				}
			}
			if _, err := f.q.Consume(f.ctx, f.room, fresh.Ticket.Seq, origin); err != nil {
				t.Errorf("the new room's visitor: %v, want admitted and consumed", err)
			}
		})
	}
}

// TestSupportRestoreAfterALossServesNobodyTwice: a loss of Redis takes the
// served records with the room. After a total loss the references are gone
// too, so support finds nobody to restore. After a loss of the room's own
// slot alone (its node, in a cluster), the references of the joins its
// arrival shards took survive: the lookup finds those visitors, and the
// restore must not give a place back to one admitted before the loss (at or
// below the recorded head, the floor), who may have been served.
func TestSupportRestoreAfterALossServesNobodyTwice(t *testing.T) {
	f := newFixture(t, durable.Disk{Dir: t.TempDir()})
	cfg := testConfig()
	cfg.JoinShards = 2
	if _, err := f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.Join(f.ctx, f.room, "warm-up", room.JoinProof{}); err != nil { // confirms the settings
		t.Fatal(err)
	}
	served, err := f.q.Join(f.ctx, f.room, "served", room.JoinProof{})
	if err != nil {
		t.Fatal(err)
	}
	if served.Ticket.Seq%room.SeqResidues == 0 {
		t.Fatalf("the join went to the room's shard (sequence %d): the test needs an arrival shard's", served.Ticket.Seq)
	}
	for i := 0; ; i++ {
		f.clk.Advance(time.Second)
		if _, err := f.q.Tick(f.ctx, f.room); err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Consume(f.ctx, f.room, served.Ticket.Seq, origin); err == nil {
			break
		} else if i == 5 {
			t.Fatalf("never admitted: %v", err)
		}
	}
	if err := f.q.Complete(f.ctx, f.room, served.Ticket.Seq, origin); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(durable.DefaultHeadEvery)
	if _, err := f.q.Tick(f.ctx, f.room); err != nil { // records the head
		t.Fatal(err)
	}
	if h, err := f.store.Head(f.ctx, f.room); err != nil || h < float64(served.Ticket.Seq) {
		t.Fatalf("recorded head %v %v, want at least %d", h, err, served.Ticket.Seq)
	}

	// The room's slot is lost; its arrival shards' keys are not.
	keys, err := f.rdb.Keys(f.ctx, "vst:{"+f.room+"}:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("the room's keys: %v %v", keys, err)
	}
	if err := f.rdb.Del(f.ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := f.q.Visitor(f.ctx, f.room, "served"); err != nil || v.State != "served" {
		t.Errorf("lookup after the loss of the room's slot: %+v, %v; want served", v, err)
	}
	if v, err := f.q.RestorePlace(f.ctx, f.room, "served"); !errors.Is(err, room.ErrPlaceStands) {
		t.Errorf("restore after the loss of the room's slot: %+v, %v; want ErrPlaceStands", v, err)
	}

	if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	if v, err := f.q.RestorePlace(f.ctx, f.room, "served"); !errors.Is(err, room.ErrUnknownVisitor) {
		t.Errorf("restore after a total loss: %+v, %v; want ErrUnknownVisitor (the references went with Redis)", v, err)
	}
}
