package bookingdb_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// memDefs is bookingdb.Definitions in memory, counting reads.
type memDefs struct {
	mu    sync.Mutex
	defs  map[string]booking.Inventory
	reads int
	fail  error
}

func (m *memDefs) PutDefinition(_ context.Context, event string, inv booking.Inventory) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.defs[event] = inv
	return nil
}

func (m *memDefs) Definition(_ context.Context, event string) (booking.Inventory, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.fail != nil {
		return booking.Inventory{}, m.fail
	}
	inv, ok := m.defs[event]
	if !ok {
		return booking.Inventory{}, booking.ErrUnknownEvent
	}
	return inv, nil
}

// A definition lost with Redis comes back on the first call that finds it
// missing (closed to holds until rebuilt; Define reads the store once, to
// know whether the event was defined before); an event the store lacks is asked for once per MissingFor; a store
// that fails is ErrUnavailable for Define and for the restore.
func TestDefinitionsRestore(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := t.Context()
		clk := testkit.EngineClock()
		defs := &memDefs{defs: map[string]booking.Inventory{}}
		eng := bookingdb.New(rdb, bookingdb.WithClock(clk.Now), bookingdb.WithDefinitions(defs))
		ev := redistest.Room(t)
		if err := eng.Define(ctx, ev, booking.Inventory{Seats: seats(2), SessionLimit: 1, HoldTTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		lose(t, rdb, ev)
		if _, err := eng.Hold(ctx, ev, "r:1", booking.Request{Seats: []string{"S1"}}); !errors.Is(err, booking.ErrRecovering) {
			t.Fatalf("Hold after a total loss: %v, want the event closed to holds", err)
		}
		if _, err := eng.Rebuild(ctx, ev, nil, true); err != nil { // the origin sold nothing
			t.Fatal(err)
		}
		h, err := eng.Hold(ctx, ev, "r:1", booking.Request{Seats: []string{"S1"}})
		if err != nil {
			t.Fatalf("Hold after the rebuild: %v", err)
		}
		if v, err := eng.View(ctx, ev); err != nil || v.Seats["S1"] != booking.SeatHeld || v.HoldTTL != time.Minute || defs.reads != 2 {
			t.Fatalf("View = %+v, %v; %d store reads", v, err, defs.reads)
		}
		if h.Token <= 0 {
			t.Fatal("no token")
		}
		none := redistest.Room(t)
		for range 3 {
			if _, err := eng.View(ctx, none); !errors.Is(err, booking.ErrUnknownEvent) {
				t.Fatalf("View of none: %v", err)
			}
		}
		if defs.reads != 3 {
			t.Fatalf("%d store reads for an event it lacks, asked 3 times: want 1", defs.reads-2)
		}
		clk.Advance(bookingdb.MissingFor)
		eng.View(ctx, none)
		if defs.reads != 4 {
			t.Fatalf("after MissingFor: %d reads, want 4", defs.reads)
		}
		defs.fail = errors.New("s3 down")
		if err := eng.Define(ctx, redistest.Room(t), booking.Inventory{Seats: seats(1), SessionLimit: 1}); !errors.Is(err, booking.ErrUnavailable) {
			t.Fatalf("Define with the store down: %v", err)
		}
		if _, err := eng.View(ctx, redistest.Room(t)); !errors.Is(err, booking.ErrUnavailable) {
			t.Fatalf("restore with the store down: %v", err)
		}
	})
}

// lose deletes every key of the events ids, as a total loss of Redis would,
// and only theirs: the Redis is shared with other tests (other packages' too,
// with REDIS_URL), and a FLUSHALL would take their keys.
func lose(t testing.TB, rdb redis.UniversalClient, ids ...string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		k := append(bookingdb.KeysFor(id).List(), bookingdb.RoomEventsKey(id))
		for _, key := range k {
			if err := rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.SRem(ctx, bookingdb.RegistryKey, id).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
