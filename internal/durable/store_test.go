package durable_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/s3test"
)

// fakeS3 is a real SDK client of an S3-protocol server on loopback with one bucket.
func fakeS3(t testing.TB, bucket string) *s3.Client {
	_, c := s3test.Start(t, bucket)
	return c
}

// exercise checks a Store's contract: settings and heads per room, not found
// before the first put, the rooms listed (every page), overwrites.
func exercise(t *testing.T, s durable.Store, rooms int) {
	ctx := context.Background()
	if _, err := s.Settings(ctx, "nope"); !errors.Is(err, durable.ErrNotFound) {
		t.Errorf("Settings of a room never put: %v, want ErrNotFound", err)
	}
	if _, err := s.Head(ctx, "nope"); !errors.Is(err, durable.ErrNotFound) {
		t.Errorf("Head of a room never recorded: %v, want ErrNotFound", err)
	}
	if ids, err := s.Rooms(ctx); err != nil || len(ids) != 0 {
		t.Errorf("Rooms of an empty store: %v %v", ids, err)
	}
	var want []string
	for i := range rooms {
		id := "room-" + strconv.Itoa(1000+i)
		want = append(want, id)
		if err := s.PutSettings(ctx, id, []byte(`{"maxActive":`+strconv.Itoa(i+1)+`}`)); err != nil {
			t.Fatalf("PutSettings: %v", err)
		}
	}
	if err := s.PutSettings(ctx, want[0], []byte(`{"maxActive":99}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Settings(ctx, want[0]); err != nil || string(b) != `{"maxActive":99}` {
		t.Errorf("Settings after an overwrite: %s %v", b, err)
	}
	// Plausible heads only (a sequence, a pre-queue draw, none yet): a store
	// refuses any other as ErrBadHead.
	for _, h := range []float64{1764123456789012, float64(0x6bf3a1c2d4e5f) / (1 << 52), 0, 1764123456789999} {
		if err := s.PutHead(ctx, want[1], h); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Head(ctx, want[1]); err != nil || got != h {
			t.Errorf("Head = %v %v, want %v (exactly)", got, err, h)
		}
	}
	ids, err := s.Rooms(ctx)
	if err != nil || !slices.Equal(ids, want) {
		t.Errorf("Rooms = %d rooms %v, want %d", len(ids), err, len(want))
	}
	if err := s.PutSettings(ctx, "../escape", nil); err == nil {
		t.Errorf("an invalid room id was stored")
	}
	// A store that deletes forgets a room's settings and head, and no other's.
	d, ok := s.(durable.StoreDeleter)
	if !ok {
		t.Fatalf("%T cannot delete", s)
	}
	if _, err := d.Tombstone(ctx, want[1]); !errors.Is(err, durable.ErrNotFound) {
		t.Errorf("Tombstone of a room never deleted: %v, want ErrNotFound", err)
	}
	if err := d.PutTombstone(ctx, want[1], 1764123456789999); err != nil {
		t.Fatalf("PutTombstone: %v", err)
	}
	if err := d.Delete(ctx, want[1]); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	// The tombstone outlives the settings, and is no room.
	if dead, err := d.Tombstone(ctx, want[1]); err != nil || dead != 1764123456789999 {
		t.Errorf("Tombstone after Delete = %d %v, want 1764123456789999", dead, err)
	}
	if err := d.Delete(ctx, "never-put"); err != nil {
		t.Errorf("Delete of a room never put: %v", err)
	}
	if _, err := s.Settings(ctx, want[1]); !errors.Is(err, durable.ErrNotFound) {
		t.Errorf("Settings after Delete: %v, want ErrNotFound", err)
	}
	if _, err := s.Head(ctx, want[1]); !errors.Is(err, durable.ErrNotFound) {
		t.Errorf("Head after Delete: %v, want ErrNotFound", err)
	}
	if ids, err := s.Rooms(ctx); err != nil || !slices.Equal(ids, slices.Delete(slices.Clone(want), 1, 2)) {
		t.Errorf("Rooms after Delete = %d rooms %v, want %d", len(ids), err, len(want)-1)
	}
	if _, err := s.Settings(ctx, want[0]); err != nil {
		t.Errorf("another room's settings after Delete: %v", err)
	}
}

func TestDiskStore(t *testing.T) {
	exercise(t, durable.Disk{Dir: t.TempDir() + "/rooms"}, 5)
}

// The S3 store against an S3-protocol server, through the real SDK client:
// more rooms than one list page holds.
func TestS3Store(t *testing.T) {
	c := fakeS3(t, "vestibule-settings")
	exercise(t, durable.NewS3(c, "vestibule-settings/stack-a"), 1005)
	// Another prefix in the same bucket sees none of them.
	if ids, err := durable.NewS3(c, "vestibule-settings/stack-b/").Rooms(context.Background()); err != nil || len(ids) != 0 {
		t.Errorf("another prefix lists %d rooms, %v", len(ids), err)
	}
}
