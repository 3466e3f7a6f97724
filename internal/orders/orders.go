// Package orders takes the booking kit's order events downstream through
// package eventbus: a booking.Publisher that writes them as JSON lines (make
// dev shows them; in AWS they land in CloudWatch Logs, whose subscription
// hands them to the forwarder, eventbus.Bus.Forward), one that calls
// EventBridge's PutEvents directly (for a function that can reach it), and
// Sweep, the booking tick that expires overdue holds and publishes what the
// outbox still holds. docs/BOOKING.md says why the log path is the default.
package orders

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/vestibule-dev/vestibule/internal/awsenv"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/eventbus/putevents"
)

// Source is the EventBridge source of order events; the detail-type is the
// event's Type (booking.OrderConfirmed, booking.OrderCancelled).
const Source = eventbus.SourceBooking

// EntryOf is the entry of an order event: source Source, detail-type its
// Type, detail its JSON.
func EntryOf(o booking.OrderEvent) (eventbus.Entry, error) {
	return eventbus.NewEntry(Source, o.Type, o)
}

func entriesOf(evs []booking.OrderEvent) ([]eventbus.Entry, error) {
	out := make([]eventbus.Entry, len(evs))
	for i, o := range evs {
		e, err := EntryOf(o)
		if err != nil {
			return nil, fmt.Errorf("orders: %s %s: %w", o.Type, o.Order, err)
		}
		out[i] = e
	}
	return out, nil
}

// Publisher is a booking.Publisher over an eventbus.Publisher.
type Publisher struct{ p eventbus.Publisher }

// Publish hands the order events to the underlying publisher.
func (p Publisher) Publish(ctx context.Context, evs []booking.OrderEvent) error {
	entries, err := entriesOf(evs)
	if err != nil {
		return err
	}
	return p.p.Publish(ctx, entries)
}

// PublishInventory hands inventory events to the underlying publisher:
// source Source, detail-type the event's Type, detail its JSON.
func (p Publisher) PublishInventory(ctx context.Context, evs []booking.InventoryEvent) error {
	entries := make([]eventbus.Entry, len(evs))
	for i, iv := range evs {
		e, err := eventbus.NewEntry(Source, iv.Type, iv)
		if err != nil {
			return fmt.Errorf("orders: %s %s #%d: %w", iv.Type, iv.Event, iv.Sequence, err)
		}
		entries[i] = e
	}
	return p.p.Publish(ctx, entries)
}

var (
	_ booking.Publisher          = Publisher{}
	_ booking.InventoryPublisher = Publisher{}
)

// NewLog writes each order event as one JSON line (an eventbus.Entry) to w.
func NewLog(w io.Writer) Publisher { return Publisher{eventbus.NewLog(w)} }

// NewEventBridge puts order events on bus (a name or an ARN) with PutEvents,
// in batches; it fails if any entry was not put (the caller keeps them all
// for another try: the entries that did go may go twice, and consumers dedupe
// on event, order and type).
func NewEventBridge(api putevents.API, bus string, opts ...eventbus.BusOption) Publisher {
	return Publisher{eventbus.NewBus(putevents.Client(api), bus, opts...)}
}

// New is the publisher the configuration asks for: EventBridge PutEvents to
// config.Config.BookingEventBus, or JSON lines on w when it is empty.
func New(ctx context.Context, c config.Config, w io.Writer) (booking.Publisher, error) {
	if c.BookingEventBus == "" {
		return NewLog(w), nil
	}
	awsCfg, err := awsenv.Config()
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return NewEventBridge(eventbridge.NewFromConfig(awsCfg, func(o *eventbridge.Options) {
		o.BaseEndpoint = awsenv.Endpoint("EventBridge", o.BaseEndpoint)
	}), c.BookingEventBus), nil
}
