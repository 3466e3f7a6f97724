package durable_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/durable"
)

// Event definitions round-trip through both stores, a large venue included;
// none is ErrUnknownEvent; an unreadable record is an error naming the
// event; a definition is not listed as a room.
func TestEventDefinitions(t *testing.T) {
	c := fakeS3(t, "settings")
	for name, s := range map[string]durable.Store{
		"disk": durable.Disk{Dir: t.TempDir()},
		"s3":   durable.NewS3(c, "settings/pre"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			d := durable.Events(s)
			if d == nil {
				t.Fatal("Events of a store that keeps events is nil")
			}
			if _, err := d.Definition(ctx, "concert"); !errors.Is(err, booking.ErrUnknownEvent) {
				t.Fatalf("Definition of none: %v", err)
			}
			seats := make([]string, 100_000)
			for i := range seats {
				seats[i] = "Seat-" + strings.Repeat("x", 4) + string(rune('A'+i%26)) + "-" + strconv.Itoa(i)
			}
			inv := booking.Inventory{Room: "hall", Seats: seats, Stock: map[string]int64{"ga": 40}, HoldTTL: 90 * time.Second,
				SessionLimit: 4, MaxHoldExtensions: 2, MaxHold: 10 * time.Minute}
			if err := d.PutDefinition(ctx, "concert", inv); err != nil {
				t.Fatal(err)
			}
			got, err := d.Definition(ctx, "concert")
			if err != nil || got.Room != "hall" || !slices.Equal(got.Seats, seats) || got.Stock["ga"] != 40 || got.HoldTTL != inv.HoldTTL ||
				got.SessionLimit != 4 || got.MaxHoldExtensions != 2 || got.MaxHold != inv.MaxHold {
				t.Fatalf("Definition = %d seats, %+v, %v", len(got.Seats), got.Stock, err)
			}
			// In S3 under rooms/, the prefix the functions' grants and the endpoint's policy cover.
			if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("settings"), Key: aws.String("pre/rooms/concert.event")}); name == "s3" && err != nil {
				t.Fatalf("the definition is not at pre/rooms/concert.event: %v", err)
			}
			if ids, err := s.Rooms(ctx); err != nil || len(ids) != 0 {
				t.Fatalf("Rooms lists %v, %v", ids, err)
			}
			if err := s.(durable.EventStore).PutEvent(ctx, "broken", []byte(`{"seats":["A1"],"sessionLimit":1,"extra":1}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Definition(ctx, "broken"); !errors.Is(err, booking.ErrNotRestorable) || !strings.Contains(err.Error(), "broken") {
				t.Fatalf("unreadable definition: %v", err)
			}
			// A key given twice (JSON would keep the last) and a value the
			// engine refuses are unrestorable too, and never the client's
			// mistake (ErrInvalidInventory would answer 400 with this text).
			for rec, body := range map[string]string{
				"twice":   `{"seats":["A1"],"sessionLimit":1,"sessionLimit":2}`,
				"invalid": `{"seats":["A1"],"sessionLimit":0}`,
				"trailer": `{"seats":["A1"],"sessionLimit":1} {}`,
			} {
				if err := s.(durable.EventStore).PutEvent(ctx, rec, []byte(body)); err != nil {
					t.Fatal(err)
				}
				_, err := d.Definition(ctx, rec)
				if !errors.Is(err, booking.ErrNotRestorable) || errors.Is(err, booking.ErrInvalidInventory) {
					t.Errorf("%s: %v, want ErrNotRestorable only", body, err)
				}
			}
		})
	}
	if durable.Events(nil) != nil {
		t.Fatal("Events(nil) is not nil")
	}
}
