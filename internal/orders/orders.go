// Package orders takes the booking kit's order events downstream: a
// booking.Publisher that writes them as JSON lines (make dev shows them; in
// AWS they land in CloudWatch Logs, whose subscription forwards them to
// EventBridge: Forward), one that calls EventBridge's PutEvents directly (for
// a function that can reach it), and Sweep, the booking tick that expires
// overdue holds and publishes what the outbox still holds.
//
// Why the log path: the functions run in isolated subnets without a NAT, so
// PutEvents from them needs an EventBridge interface endpoint (about $15 a
// month for two zones, always on). A Lambda's stdout reaches CloudWatch Logs
// without any network of the function's, and a subscription filter hands the
// lines to a small function outside the VPC that calls PutEvents: no
// always-on cost, a few cents per million events. See docs/BOOKING.md.
package orders

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/config"
)

// Source is the EventBridge source of order events; the detail-type is the
// event's Type (booking.OrderConfirmed, booking.OrderCancelled).
const Source = "vestibule.booking"

// Entry is one order event as it is written and put on EventBridge: the
// fields of a PutEvents entry. The log publisher writes it as one JSON line,
// and a CloudWatch Logs subscription filter { $.source = "vestibule.booking" }
// finds the lines.
type Entry struct {
	Source     string             `json:"source"`
	DetailType string             `json:"detail-type"`
	Detail     booking.OrderEvent `json:"detail"`
}

// EntryOf is the entry of an order event.
func EntryOf(o booking.OrderEvent) Entry {
	return Entry{Source: Source, DetailType: o.Type, Detail: o}
}

// Log writes each order event as one JSON line (an Entry) to w. It is safe
// for concurrent use; a line is written by one Write call.
type Log struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLog returns the log publisher over w (os.Stdout in a function).
func NewLog(w io.Writer) *Log { return &Log{w: w} }

// Publish writes the events, one line each.
func (l *Log) Publish(_ context.Context, events []booking.OrderEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range events {
		b, err := json.Marshal(EntryOf(o))
		if err != nil {
			return fmt.Errorf("orders: encoding %s %s: %w", o.Type, o.Order, err)
		}
		if _, err := l.w.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("orders: writing %s %s: %w", o.Type, o.Order, err)
		}
	}
	return nil
}

var _ booking.Publisher = (*Log)(nil)

// New is the publisher the configuration asks for: EventBridge PutEvents to
// config.BookingEventBus, or JSON lines on w when it is empty.
func New(ctx context.Context, c config.Config, w io.Writer) (booking.Publisher, error) {
	if c.BookingEventBus == "" {
		return NewLog(w), nil
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return NewEventBridge(eventbridge.NewFromConfig(awsCfg), c.BookingEventBus), nil
}
