package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/s3test"
)

// TestChaosTotalLossWithACorruptRecord: three rooms are served in part, their
// heads recorded in S3; one room's durable record is then corrupted (its head
// record NaN or text, or its settings not JSON or with a field that is no
// setting) and Redis loses everything. A fresh process, with visitors of all
// three rooms polling and consuming at once and the admit loop ticking, then
// serves the two sound rooms to the end in ticket order; the corrupted room
// stays closed (restored closed, or not restored at all) and admits nobody;
// and no grant is consumed twice (I2), in any room.
func TestChaosTotalLossWithACorruptRecord(t *testing.T) {
	skipShort(t)
	for _, c := range []struct {
		name, key, body string
		restored        bool // the room comes back closed (a bad head) rather than not at all
	}{
		{"head NaN", "heads/", "NaN", true},
		{"head text", "heads/", "{\"head\":", true},
		{"settings garbage", "rooms/.json", "\x00\x01garbage", false},
		{"settings unknown field", "rooms/.json", `{"maxActive":4,"originUrl":"` + chaosOrigin + `","colour":"red"}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServer(t)
			rdb := prodClient(t, s.Addr)
			ctx := context.Background()
			_, client := s3test.Start(t, "settings")
			store := durable.NewS3(client, "settings/chaos")
			eng := roomdb.New(rdb)
			before := durable.New(eng, durable.Options{Store: store, NoNudge: true})
			ledger := newLedger()

			const rooms, perRoom, front = 3, 12, 4
			ids := make([]string, rooms)
			tickets := map[string][]room.Ticket{}
			for i := range ids {
				ids[i] = newRoom(t)
				if _, err := before.PutConfig(ctx, ids[i], chaosConfig(front, 6000)); err != nil {
					t.Fatal(err)
				}
				for v := range perRoom {
					p, err := before.Join(ctx, ids[i], fmt.Sprintf("v%d", v), room.JoinProof{})
					if err != nil {
						t.Fatal(err)
					}
					tickets[ids[i]] = append(tickets[ids[i]], p.Ticket)
				}
			}
			time.Sleep(50 * time.Millisecond) // the buckets refill
			for _, id := range ids {
				if r, err := before.Tick(ctx, id); err != nil || r.Admitted != front {
					t.Fatalf("tick of %s: %+v %v, want %d admitted", id, r, err, front)
				}
				for _, tk := range tickets[id][:front] {
					if _, err := before.Consume(ctx, id, tk.Seq, chaosOrigin); err != nil {
						t.Fatal(err)
					}
					ledger.consumed(id, tk.Seq)
				}
			}

			bad := ids[1]
			key := "chaos/" + c.key + bad
			if c.key == "rooms/.json" {
				key = "chaos/rooms/" + bad + ".json"
			}
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("settings"), Key: aws.String(key),
				Body: bytes.NewReader([]byte(c.body))}); err != nil {
				t.Fatal(err)
			}
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			after := durable.New(eng, durable.Options{Store: store})

			// Visitors of every room poll and redeem what they are granted,
			// while the admit loop ticks every listed room.
			ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			var mu sync.Mutex
			consumedAfter := map[string]int{}
			for _, id := range ids {
				for _, tk := range tickets[id] {
					wg.Go(func() {
						for ctx.Err() == nil {
							p, err := after.Poll(ctx, tk)
							switch {
							case err == nil && p.State == room.StateAdmitted && !p.Active:
								if _, err := after.Consume(ctx, id, tk.Seq, chaosOrigin); err == nil {
									ledger.consumed(id, tk.Seq)
									mu.Lock()
									consumedAfter[id]++
									mu.Unlock()
									after.Complete(ctx, id, tk.Seq, chaosOrigin)
								}
								return
							case err == nil && p.State == room.StateExpired:
								return
							case err != nil && ctx.Err() == nil && !errors.Is(err, room.ErrRateLimited) && !errors.Is(err, room.ErrNotRestorable):
								t.Errorf("poll of %s: %v", id, err)
								return
							}
							time.Sleep(jitter(20 * time.Millisecond))
						}
					})
				}
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			served := func() bool {
				mu.Lock()
				defer mu.Unlock()
				return consumedAfter[ids[0]] == perRoom-front && consumedAfter[ids[2]] == perRoom-front
			}
			for !served() && ctx.Err() == nil {
				<-tick.C
				listed, err := after.Rooms(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range listed {
					after.Tick(ctx, id)
				}
			}
			if !served() {
				t.Errorf("the sound rooms were not served: %v of %d each", consumedAfter, perRoom-front)
			}
			cancel() // the corrupted room's visitors wait on
			<-done

			if n := consumedAfter[bad]; n != 0 {
				t.Errorf("the corrupted room admitted %d after the loss, want none", n)
			}
			cfg, err := after.GetConfig(context.Background(), bad)
			switch {
			case c.restored && (err != nil || cfg.Mode != room.ModeClosed):
				t.Errorf("the room with a corrupted head: %q %v, want restored closed", cfg.Mode, err)
			case !c.restored && !errors.Is(err, room.ErrNotRestorable):
				t.Errorf("the room with corrupted settings: %v, want ErrNotRestorable", err)
			}
			for _, id := range []string{ids[0], ids[2]} {
				if cfg, err := after.GetConfig(context.Background(), id); err != nil || cfg.Mode != room.ModeQueue {
					t.Errorf("sound room %s: %q %v", id, cfg.Mode, err)
				}
			}
			ledger.check(t)
		})
	}
}
