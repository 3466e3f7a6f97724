// Package putevents is EventBridge's PutEvents call for eventbus.Bus: the
// one part of the events' path that needs the AWS SDK's EventBridge client.
// The forwarder (outside the VPC) and a booking kit configured with
// BOOKING_EVENT_BUS use it; every other function writes its events to its
// log (eventbus.Log) and, importing only eventbus, links no EventBridge
// client (about 0.4 MB of a bootstrap).
package putevents

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
)

// API is the part of the EventBridge client Client uses.
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Client makes eventbus.Bus's calls with api (an *eventbridge.Client).
func Client(api API) eventbus.Putter { return client{api} }

type client struct{ api API }

func (c client) PutEvents(ctx context.Context, bus string, batch []eventbus.Entry) (int, []eventbus.Result, error) {
	in := &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, len(batch))}
	for i, e := range batch {
		in.Entries[i] = types.PutEventsRequestEntry{
			EventBusName: aws.String(bus), Source: aws.String(e.Source),
			DetailType: aws.String(e.DetailType), Detail: aws.String(string(e.Detail)),
		}
	}
	out, err := c.api.PutEvents(ctx, in)
	if err != nil {
		return 0, nil, err
	}
	results := make([]eventbus.Result, len(out.Entries))
	for i, r := range out.Entries {
		results[i] = eventbus.Result{Failed: r.ErrorCode != nil, Code: aws.ToString(r.ErrorCode), Message: aws.ToString(r.ErrorMessage)}
	}
	return int(out.FailedEntryCount), results, nil
}
