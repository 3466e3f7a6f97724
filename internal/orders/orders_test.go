package orders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/orders"
)

func order(n int) booking.OrderEvent {
	return booking.OrderEvent{Type: booking.OrderConfirmed, Event: "concert", Order: "179566041500000" + string(rune('0'+n%10)),
		Session: "concert:42", FencingToken: 1795660415000000 + int64(n), IdempotencyKey: "pi_1", Seats: []string{"A12"},
		ConfirmedAt: time.Date(2026, 11, 26, 9, 26, 7, 0, time.UTC)}
}

// The log publisher writes one PutEvents-shaped JSON line per event, which
// the forwarder reads back as an entry of the booking source.
func TestLogLines(t *testing.T) {
	var buf bytes.Buffer
	if err := orders.NewLog(&buf).Publish(context.Background(), []booking.OrderEvent{order(1), order(2)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	en, err := eventbus.ParseLine(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	var d booking.OrderEvent
	if en.Source != "vestibule.booking" || en.DetailType != booking.OrderConfirmed || json.Unmarshal(en.Detail, &d) != nil ||
		d.Order != order(1).Order || d.Seats[0] != "A12" {
		t.Fatalf("line %s", lines[0])
	}
}

// fakeBus answers PutEvents: every entry put, or every entry failed. The
// batching and partial failures are tested against an HTTP server in
// internal/eventbus; this checks what orders hands it.
type fakeBus struct {
	calls   [][]types.PutEventsRequestEntry
	failAll bool
	err     error
}

func (f *fakeBus) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.calls = append(f.calls, in.Entries)
	out := &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}
	if f.failAll {
		out.FailedEntryCount = int32(len(in.Entries))
		for i := range out.Entries {
			out.Entries[i].ErrorCode = aws.String("InternalFailure")
		}
	}
	return out, nil
}

func TestEventBridgeBatchesAndFails(t *testing.T) {
	bus := &fakeBus{}
	p := orders.NewEventBridge(bus, "orders-bus", eventbus.WithAttempts(1))
	var evs []booking.OrderEvent
	for i := 0; i < 23; i++ {
		evs = append(evs, order(i))
	}
	if err := p.Publish(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	if len(bus.calls) != 3 || len(bus.calls[0]) != 10 || len(bus.calls[2]) != 3 {
		t.Fatalf("calls of %d", len(bus.calls))
	}
	e := bus.calls[0][0]
	var d booking.OrderEvent
	if aws.ToString(e.EventBusName) != "orders-bus" || aws.ToString(e.Source) != orders.Source ||
		aws.ToString(e.DetailType) != booking.OrderConfirmed || json.Unmarshal([]byte(aws.ToString(e.Detail)), &d) != nil || d.Order != evs[0].Order {
		t.Fatalf("entry %+v", e)
	}
	bus.failAll = true
	if err := p.Publish(context.Background(), evs[:1]); err == nil || !strings.Contains(err.Error(), "InternalFailure") {
		t.Fatalf("failed entries: %v", err)
	}
	bus.err = errors.New("no route to host")
	if err := p.Publish(context.Background(), evs[:1]); err == nil {
		t.Fatal("a failed call is no error")
	}
}
