package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/jsonkey"
)

// The booking kit's event definitions are kept in the same store as the
// rooms' settings (beside them: <room>.json and <event>.event), so a total loss of Redis takes neither: the engine
// (bookingdb.WithDefinitions) writes a definition after each Define and, when a
// call finds its event missing, defines it again from here and retries once.
// docs/BOOKING.md, "Definitions survive a total loss".

// EventStore is a Store that also keeps event definitions (Disk and S3 do).
type EventStore interface {
	PutEvent(ctx context.Context, event string, def []byte) error
	// Event returns ErrNotFound for an event never put.
	Event(ctx context.Context, event string) ([]byte, error)
}

var (
	_ EventStore = Disk{}
	_ EventStore = (*S3)(nil)
)

// maxEvent bounds a stored definition (a PUT takes 1 MiB of JSON; the record
// is about as large).
const maxEvent = 4 << 20

// PutEvent writes <dir>/<event>.event.
func (d Disk) PutEvent(_ context.Context, event string, b []byte) error {
	return d.write(event, ".event", b)
}

// Event reads <dir>/<event>.event.
func (d Disk) Event(_ context.Context, event string) ([]byte, error) { return d.read(event, ".event") }

// eventKey is <prefix>rooms/<event>.event: under rooms/, the prefix the
// functions' grants and the S3 endpoint's policy already cover, and without
// the .json suffix that Rooms lists.
func (s *S3) eventKey(event string) string { return s.Prefix + "rooms/" + event + ".event" }

// PutEvent writes <prefix>rooms/<event>.event.
func (s *S3) PutEvent(ctx context.Context, event string, b []byte) error {
	if !booking.ValidEventID(event) {
		return booking.ErrInvalidEvent
	}
	return s.put(ctx, s.eventKey(event), b, "application/json")
}

// Event reads <prefix>rooms/<event>.event.
func (s *S3) Event(ctx context.Context, event string) ([]byte, error) {
	if !booking.ValidEventID(event) {
		return nil, booking.ErrInvalidEvent
	}
	key := s.eventKey(event)
	b, err := s.get(ctx, key)
	if err != nil || len(b) < 1<<20 {
		return b, err
	}
	// s.get reads 1 MiB: a venue's definition can be larger.
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("durable: get s3://%s/%s: %w", s.Bucket, key, err)
	}
	defer func() { _ = out.Body.Close() }() // a body read: closing it cannot lose anything
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(out.Body, maxEvent)); err != nil {
		return nil, fmt.Errorf("durable: read s3://%s/%s: %w", s.Bucket, key, err)
	}
	return buf.Bytes(), nil
}

// eventRecord is a definition as the store keeps it.
type eventRecord struct {
	Room              string           `json:"room,omitempty"`
	Seats             []string         `json:"seats,omitempty"`
	Stock             map[string]int64 `json:"stock,omitempty"`
	HoldTTLMillis     int64            `json:"holdTTLMillis,omitempty"`
	SessionLimit      int64            `json:"sessionLimit"`
	MaxHoldExtensions int64            `json:"maxHoldExtensions,omitempty"`
	MaxHoldMillis     int64            `json:"maxHoldMillis,omitempty"`
}

// EventDefinitions is where the booking engine keeps events' definitions
// (bookingdb.Definitions, which app's tests hold to it): declared here so that
// this package links no Redis client.
type EventDefinitions interface {
	PutDefinition(ctx context.Context, event string, inv booking.Inventory) error
	Definition(ctx context.Context, event string) (booking.Inventory, error)
}

// Definitions are EventDefinitions over an EventStore.
type Definitions struct{ Store EventStore }

var _ EventDefinitions = Definitions{}

// Events returns the definitions kept in s, or nil when s is nil or keeps none.
func Events(s Store) EventDefinitions {
	es, ok := s.(EventStore)
	if !ok || es == nil {
		return nil
	}
	return Definitions{Store: es}
}

// PutDefinition stores an event's definition.
func (d Definitions) PutDefinition(ctx context.Context, event string, inv booking.Inventory) error {
	b, err := json.Marshal(eventRecord{Room: inv.Room, Seats: inv.Seats, Stock: inv.Stock,
		HoldTTLMillis: inv.HoldTTL.Milliseconds(), SessionLimit: inv.SessionLimit,
		MaxHoldExtensions: inv.MaxHoldExtensions, MaxHoldMillis: inv.MaxHold.Milliseconds()})
	if err != nil {
		return err
	}
	return d.Store.PutEvent(ctx, event, b)
}

// Definition reads an event's definition: booking.ErrUnknownEvent when the
// store has none; an error wrapping booking.ErrNotRestorable when its record
// is no definition (not JSON, a field unknown or given twice, a value the
// engine refuses), which names the cause for the log only: it wraps nothing
// else, so no caller answers it as the client's mistake.
func (d Definitions) Definition(ctx context.Context, event string) (booking.Inventory, error) {
	b, err := d.Store.Event(ctx, event)
	if errors.Is(err, ErrNotFound) {
		return booking.Inventory{}, booking.ErrUnknownEvent
	}
	if err != nil {
		return booking.Inventory{}, err
	}
	unreadable := func(why string, err error) error {
		return fmt.Errorf("%w: durable: event %s: %s: %v", booking.ErrNotRestorable, event, why, err)
	}
	if k, dup := jsonkey.Duplicate(b); dup {
		// encoding/json would keep the last: which one was meant is not known.
		return booking.Inventory{}, unreadable("unreadable definition", fmt.Errorf("key %.64q twice", k))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r eventRecord
	if err := dec.Decode(&r); err != nil {
		return booking.Inventory{}, unreadable("unreadable definition", err)
	}
	if dec.More() {
		return booking.Inventory{}, unreadable("unreadable definition", errors.New("more than one JSON value"))
	}
	inv := booking.Inventory{Room: r.Room, Seats: r.Seats, Stock: r.Stock, HoldTTL: time.Duration(r.HoldTTLMillis) * time.Millisecond,
		SessionLimit: r.SessionLimit, MaxHoldExtensions: r.MaxHoldExtensions, MaxHold: time.Duration(r.MaxHoldMillis) * time.Millisecond}
	if err := inv.Validate(); err != nil {
		return booking.Inventory{}, unreadable("stored definition", err)
	}
	return inv, nil
}
