package roomevents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/admission"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// lines reads the event lines written since the last call, as the forwarder would.
type lines struct {
	t    *testing.T
	buf  bytes.Buffer
	read int
}

func (l *lines) next() []eventbus.Entry {
	l.t.Helper()
	s := l.buf.String()[l.read:]
	l.read = l.buf.Len()
	var out []eventbus.Entry
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		e, err := eventbus.ParseLine(line)
		if err != nil {
			l.t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

func detail[T any](t *testing.T, e eventbus.Entry, typ string) T {
	t.Helper()
	var d T
	if e.Source != eventbus.SourceAdmission || e.DetailType != typ {
		t.Fatalf("entry %s %s, want %s", e.Source, e.DetailType, typ)
	}
	dec := json.NewDecoder(bytes.NewReader(e.Detail))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s detail %s: %v", typ, e.Detail, err)
	}
	return d
}

// Ticks that change something emit one summary per room; quiet ticks emit
// nothing; a consume and a complete emit their events; a refused consume
// emits nothing.
func TestAdmissionEvents(t *testing.T) {
	clk := testkit.FixedClock(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))
	srv, err := redistest.Start() // a server of its own: the loop ticks every room it holds
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	eng := roomdb.New(rdb, roomdb.WithClock(clk.Now))
	out := &lines{t: t}
	q := durable.New(roomevents.Emit(eng, eventbus.NewLog(&out.buf), clk.Now, nil), durable.Options{Clock: clk.Now, NoNudge: true})
	ctx := context.Background()
	cfg := room.DefaultConfig()
	cfg.OriginURL, cfg.MaxActive, cfg.AdmitPerMinute = "https://origin.example/", 2, 6000
	id, quiet := redistest.Room(t), redistest.Room(t)
	for _, r := range []string{id, quiet} {
		if _, err := q.PutConfig(ctx, r, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Tick(ctx, id); err != nil { // the bucket's first refill point
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	var seqs []int64
	for _, v := range []string{"a", "b", "c"} {
		p, err := eng.Enqueue(ctx, id, v)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, p.Ticket.Seq)
	}
	out.next()

	// The admit loop's tick over both rooms: one event, for the room that changed.
	once, stop := context.WithCancel(ctx) // the also task ends the run after its first tick
	sum := admission.For(q).Run(once, time.Second, nil, func(context.Context) { stop() })
	if sum.Ticks != 1 || sum.RoomTicks != 2 {
		t.Fatalf("run %+v", sum)
	}
	got := out.next()
	if len(got) != 1 {
		t.Fatalf("%d events, want 1: %+v", len(got), got)
	}
	tick := detail[roomevents.TickEvent](t, got[0], roomevents.TypeTick)
	want := roomevents.TickEvent{Room: id, At: clk.Now(), Admitted: 2, FirstSeq: seqs[0], LastSeq: seqs[1],
		After: roomevents.Counts{Waiting: 1, Admitted: 2}}
	if tick != want {
		t.Errorf("tick event %+v, want %+v", tick, want)
	}

	// Full: the next tick changes nothing and says nothing.
	clk.Advance(time.Second)
	if _, err := q.Tick(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := out.next(); len(got) != 0 {
		t.Fatalf("a quiet tick emitted %+v", got)
	}

	s, err := q.Consume(ctx, id, seqs[0], cfg.OriginURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Consume(ctx, id, seqs[0], cfg.OriginURL); !errors.Is(err, room.ErrAlreadyConsumed) {
		t.Fatalf("replay: %v", err)
	}
	if err := q.Complete(ctx, id, seqs[0], cfg.OriginURL); err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, id, seqs[0], cfg.OriginURL); err == nil {
		t.Fatal("a second complete succeeded")
	}
	got = out.next()
	if len(got) != 2 {
		t.Fatalf("%d events after consume, replay, complete, complete again; want 2: %+v", len(got), got)
	}
	c := detail[roomevents.ConsumedEvent](t, got[0], roomevents.TypeConsumed)
	if c != (roomevents.ConsumedEvent{Room: id, Seq: seqs[0], At: clk.Now(), SessionEndsAt: s.ExpiresAt.UTC()}) {
		t.Errorf("consumed %+v", c)
	}
	if d := detail[roomevents.CompletedEvent](t, got[1], roomevents.TypeCompleted); d != (roomevents.CompletedEvent{Room: id, Seq: seqs[0], At: clk.Now()}) {
		t.Errorf("completed %+v", d)
	}

	// The freed slot goes to the third visitor.
	clk.Advance(time.Second)
	if _, err := q.Tick(ctx, id); err != nil {
		t.Fatal(err)
	}
	got = out.next()
	if len(got) != 1 {
		t.Fatalf("%d events, want 1", len(got))
	}
	tick = detail[roomevents.TickEvent](t, got[0], roomevents.TypeTick)
	if tick.Admitted != 1 || tick.FirstSeq != seqs[2] || tick.LastSeq != seqs[2] || tick.After != (roomevents.Counts{Admitted: 2}) {
		t.Errorf("tick event %+v", tick)
	}
}
