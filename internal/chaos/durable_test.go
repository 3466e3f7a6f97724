package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/s3test"
)

// s3Store is the durable store production uses (S3 through the SDK), against
// an S3-protocol server (gofakes3) on loopback.
func s3Store(t *testing.T) durable.Store {
	t.Helper()
	_, c := s3test.Start(t, "settings")
	return durable.NewS3(c, "settings/chaos")
}

// TestChaosTotalLoss: rooms with settings of their own are filled, the admit
// loop admits the front of each queue (recording the heads in S3), some
// grants are consumed, and Redis loses everything (FLUSHALL). Then, without
// any admin call and through a fresh process (a new durable.Queue: no memory
// of before): every room answers with its settings; every waiting visitor has
// the place back, in ticket order; no grant admitted before the loss is
// granted again; and the admit loop's pass, which lists the rooms from the
// store, admits the rest in order.
func TestChaosTotalLoss(t *testing.T) {
	skipShort(t)
	s := startServer(t)
	rdb := prodClient(t, s.Addr)
	ctx := context.Background()
	store := s3Store(t)
	eng := roomdb.New(rdb)
	before := durable.New(eng, durable.Options{Store: store, NoNudge: true})

	const rooms, perRoom, front = 3, 12, 4
	ids := make([]string, rooms)
	want := map[string]room.Config{}
	tickets := map[string][]room.Ticket{}
	for i := range ids {
		ids[i] = newRoom(t)
		cfg := chaosConfig(front, 6000) // the bucket holds 200: one tick fills maxActive
		cfg.HeartbeatTTLSeconds = 120 + int64(i)
		cfg.Mode = []room.Mode{room.ModeQueue, room.ModeAuto, room.ModeQueue}[i]
		stored, err := before.PutConfig(ctx, ids[i], cfg)
		if err != nil {
			t.Fatal(err)
		}
		want[ids[i]] = stored
		if cfg.Mode == room.ModeAuto {
			// An auto room admits at once while it has room: fill it first.
			cfg.Mode = room.ModeQueue
			if _, err := before.PutConfig(ctx, ids[i], cfg); err != nil {
				t.Fatal(err)
			}
		}
		for v := range perRoom {
			p, err := before.Join(ctx, ids[i], fmt.Sprintf("v%d", v), room.JoinProof{})
			if err != nil {
				t.Fatal(err)
			}
			tickets[ids[i]] = append(tickets[ids[i]], p.Ticket)
		}
		if cfg.Mode != want[ids[i]].Mode {
			if _, err := before.PutConfig(ctx, ids[i], want[ids[i]]); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(50 * time.Millisecond) // the buckets refill
	for _, id := range ids {
		if r, err := before.Tick(ctx, id); err != nil || r.Admitted != front {
			t.Fatalf("tick of %s: %+v %v, want %d admitted", id, r, err, front)
		}
		// Half the front consumes its grant; the other half holds it unused.
		for _, tk := range tickets[id][:front/2] {
			if _, err := before.Consume(ctx, id, tk.Seq, chaosOrigin); err != nil {
				t.Fatal(err)
			}
		}
	}

	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	after := durable.New(eng, durable.Options{Store: store, NoNudge: true})

	for _, id := range ids {
		got, err := after.GetConfig(ctx, id)
		if err != nil {
			t.Fatalf("room %s after the loss: %v", id, err)
		}
		if diff := cmp.Diff(want[id], got); diff != "" {
			t.Errorf("room %s settings after the loss (-want +got):\n%s", id, diff)
		}
	}
	for _, id := range ids {
		ts := tickets[id]
		// Visitors come back latest first: order comes from the tickets, not from arrival.
		for i := len(ts) - 1; i >= front; i-- {
			p, err := after.Poll(ctx, ts[i])
			if err != nil || p.State != room.StateWaiting {
				t.Errorf("I4: waiting visitor %d of %s after the loss: %v %v", i, id, p.State, err)
			}
		}
		for i := front; i < len(ts); i++ {
			p, err := after.Poll(ctx, ts[i])
			if err != nil || p.Position != int64(i-front+1) {
				t.Errorf("visitor %d of %s: position %d %v, want %d", i, id, p.Position, err, i-front+1)
			}
		}
		// The front was admitted before the loss: never again (the consumed half
		// is I2; the unused grants are the price, docs/ENGINE.md).
		for i := range front {
			if p, err := after.Poll(ctx, ts[i]); err != nil || p.State != room.StateExpired {
				t.Errorf("I2: visitor %d of %s, admitted before the loss: %v %v, want expired", i, id, p.State, err)
			}
		}
	}

	// The admit loop's pass (admission.Loop.Run's), with nothing but the store to
	// list rooms from: Redis's registry went with the loss.
	listed, err := after.Rooms(ctx)
	if err != nil || len(listed) != rooms {
		t.Fatalf("rooms listed after the loss: %v %v, want the %d stored", listed, err, rooms)
	}
	for range 3 {
		time.Sleep(50 * time.Millisecond)
		for _, id := range listed {
			if _, err := after.Tick(ctx, id); err != nil {
				t.Errorf("tick %s after the loss: %v", id, err)
			}
		}
	}
	for _, id := range ids {
		ts := tickets[id]
		for i, tk := range ts {
			_, err := after.Consume(ctx, id, tk.Seq, chaosOrigin)
			switch {
			case i < front && err == nil:
				t.Errorf("I2: visitor %d of %s, admitted before the loss, consumed a grant again", i, id)
			case i >= front && i < 2*front && err != nil:
				t.Errorf("visitor %d of %s, next in order after the loss: %v", i, id, err)
			case i >= 2*front && err == nil:
				t.Errorf("visitor %d of %s admitted out of order (maxActive %d)", i, id, front)
			}
		}
	}
}
