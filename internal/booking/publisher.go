package booking

import "context"

// Publisher sends order events downstream (EventBridge, or JSON lines in a
// log that a subscription forwards; see internal/orders). Publish returns nil
// only when every event was accepted; the caller then acknowledges them
// (Engine.Ack) and otherwise leaves them in the outbox for the next try, so
// an event may go out more than once but is never lost: consumers dedupe on
// (event, order, type).
type Publisher interface {
	Publish(ctx context.Context, events []OrderEvent) error
}
