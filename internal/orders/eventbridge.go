package orders

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/vestibule-dev/vestibule/internal/booking"
)

// PutEventsAPI is the part of the EventBridge client the publisher uses.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// maxEntries is the most entries one PutEvents call takes.
const maxEntries = 10

// EventBridge puts order events on a bus with PutEvents.
type EventBridge struct {
	api PutEventsAPI
	bus string
}

// NewEventBridge returns the publisher putting events on bus (a name or an ARN).
func NewEventBridge(api PutEventsAPI, bus string) *EventBridge {
	return &EventBridge{api: api, bus: bus}
}

// Publish puts the events, ten per call. It fails if any entry failed; the
// caller then keeps them all for another try (the entries that did go may go
// twice: consumers dedupe on event, order and type).
func (e *EventBridge) Publish(ctx context.Context, evs []booking.OrderEvent) error {
	entries := make([]Entry, len(evs))
	for i, o := range evs {
		entries[i] = EntryOf(o)
	}
	return e.put(ctx, entries)
}

func (e *EventBridge) put(ctx context.Context, entries []Entry) error {
	for len(entries) > 0 {
		n := min(len(entries), maxEntries)
		in := &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, n)}
		for i, en := range entries[:n] {
			b, err := json.Marshal(en.Detail)
			if err != nil {
				return fmt.Errorf("orders: encoding %s %s: %w", en.DetailType, en.Detail.Order, err)
			}
			in.Entries[i] = types.PutEventsRequestEntry{
				EventBusName: aws.String(e.bus), Source: aws.String(en.Source),
				DetailType: aws.String(en.DetailType), Detail: aws.String(string(b)),
			}
		}
		out, err := e.api.PutEvents(ctx, in)
		if err != nil {
			return fmt.Errorf("orders: PutEvents: %w", err)
		}
		if out.FailedEntryCount > 0 {
			for _, r := range out.Entries {
				if r.ErrorCode != nil {
					return fmt.Errorf("orders: PutEvents: %d of %d entries failed: %s", out.FailedEntryCount, n, aws.ToString(r.ErrorCode))
				}
			}
			return fmt.Errorf("orders: PutEvents: %d of %d entries failed", out.FailedEntryCount, n)
		}
		entries = entries[n:]
	}
	return nil
}

var _ booking.Publisher = (*EventBridge)(nil)

// Forward is the handler of the forwarder function: a CloudWatch Logs
// subscription (filter { $.source = "vestibule.booking" } on the log groups
// of the booking and admit functions) delivers the Log publisher's lines, and
// it puts them on the bus. It runs outside the VPC (it needs no Redis), so it
// reaches EventBridge without an endpoint. An error makes Lambda retry the
// batch (asynchronous invocation: twice, then its failure destination).
func (e *EventBridge) Forward(ctx context.Context, ev events.CloudwatchLogsEvent) error {
	data, err := ev.AWSLogs.Parse()
	if err != nil {
		return fmt.Errorf("orders: subscription payload: %w", err)
	}
	var entries []Entry
	for _, l := range data.LogEvents {
		var en Entry
		if json.Unmarshal([]byte(l.Message), &en) != nil || en.Source != Source || en.Detail.Order == "" {
			continue // not an order event (the filter should not have sent it)
		}
		entries = append(entries, en)
	}
	return e.put(ctx, entries)
}
