package durable_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// TestRevokedInvitationSurvivesTotalLoss: a revocation is kept in the store,
// so after a total loss of Redis a process that never saw it refuses the
// invitation and puts it back in Redis; the uses counted are forgotten (an
// invitation used up before the loss joins once more), as documented.
func TestRevokedInvitationSurvivesTotalLoss(t *testing.T) {
	for name, store := range map[string]durable.Store{
		"disk": durable.Disk{Dir: t.TempDir()},
		"s3":   durable.NewS3(fakeS3(t, "settings"), "settings/prefix"),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, store)
			cfg := testConfig()
			cfg.InviteOnly = true
			if _, err := f.q.PutConfig(f.ctx, f.room, cfg); err != nil {
				t.Fatal(err)
			}
			now := f.clk.Now()
			leaked := &room.Invitation{ID: "leaked", Room: f.room, Uses: 100, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
			once := &room.Invitation{ID: "once", Room: f.room, Uses: 1, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
			for _, inv := range []*room.Invitation{leaked, once} {
				if _, err := f.q.Join(f.ctx, f.room, "v-"+inv.ID, room.JoinProof{Invitation: inv}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.q.RevokeInvitation(f.ctx, f.room, "leaked"); err != nil {
				t.Fatal(err)
			}
			if err := redistest.FlushAll(f.ctx, f.rdb); err != nil {
				t.Fatal(err)
			}
			// Another process: nothing of the room cached, nothing in Redis.
			eng := roomdb.New(f.rdb, roomdb.WithClock(f.clk.Now))
			q := durable.New(eng, durable.Options{Store: store, Clock: f.clk.Now})
			if _, err := q.Join(f.ctx, f.room, "late", room.JoinProof{Invitation: leaked}); !errors.Is(err, room.ErrInvitationRevoked) {
				t.Fatalf("revoked invitation after the loss: %v, want ErrInvitationRevoked", err)
			}
			if revs, err := eng.Revocations(f.ctx, f.room); err != nil || len(revs) != 1 || revs[0].ID != "leaked" {
				t.Fatalf("revocations in Redis after the loss: %v %v", revs, err)
			}
			if _, err := q.Join(f.ctx, f.room, "again", room.JoinProof{Invitation: once}); err != nil {
				t.Fatalf("a used-up invitation after the loss (its uses are forgotten): %v", err)
			}
			if _, err := q.Join(f.ctx, f.room, "stranger", room.JoinProof{}); !errors.Is(err, room.ErrInvitationRequired) {
				t.Fatalf("uninvited join to the restored room: %v", err)
			}
		})
	}
}

func TestRevocationStores(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]durable.RevocationStore{
		"disk": durable.Disk{Dir: t.TempDir()},
		"s3":   durable.NewS3(fakeS3(t, "revoked"), "revoked"),
	} {
		if _, _, err := s.Revocations(ctx, "r1"); !errors.Is(err, durable.ErrNotFound) {
			t.Errorf("%s: revocations of a room without any: %v", name, err)
		}
		if err := s.PutRevocations(ctx, "r1", []byte(`[]`), ""); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, tag, err := s.Revocations(ctx, "r1")
		if err != nil || string(b) != `[]` || tag == "" {
			t.Errorf("%s: %s %q %v", name, b, tag, err)
		}
		// A write over a copy that is no longer the record's is refused:
		// over none when there is one, over a tag once another write came.
		if err := s.PutRevocations(ctx, "r1", []byte(`[1]`), ""); !errors.Is(err, durable.ErrStale) {
			t.Errorf("%s: a first write over an existing record: %v, want ErrStale", name, err)
		}
		if err := s.PutRevocations(ctx, "r1", []byte(`[2]`), tag); err != nil {
			t.Fatalf("%s: a write over the copy read: %v", name, err)
		}
		if err := s.PutRevocations(ctx, "r1", []byte(`[3]`), tag); !errors.Is(err, durable.ErrStale) {
			t.Errorf("%s: a write over a copy written since: %v, want ErrStale", name, err)
		}
		if b, _, err := s.Revocations(ctx, "r1"); err != nil || string(b) != `[2]` {
			t.Errorf("%s: after the refused writes: %s %v, want [2]", name, b, err)
		}
		if err := s.PutRevocations(ctx, "../x", nil, ""); err == nil {
			t.Errorf("%s: an invalid room id was stored", name)
		}
	}
}
