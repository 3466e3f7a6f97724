// Package cfnwrap lets one Lambda answer both a CloudFormation custom resource
// (at deploy) and a plain invocation (an operator's, after a rotation): the
// keysync and gatekeys functions.
package cfnwrap

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/cfn"
)

// Handler answers a custom resource event (it has a RequestType) with custom,
// through cfn.LambdaWrap (which reports to CloudFormation's response URL), and
// any other invocation with plain.
func Handler(custom cfn.CustomResourceFunction, plain func(context.Context) (any, error)) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var probe struct {
			RequestType string `json:"RequestType"`
		}
		if json.Unmarshal(raw, &probe) == nil && probe.RequestType != "" {
			var ev cfn.Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, err
			}
			_, err := cfn.LambdaWrap(custom)(ctx, ev)
			return nil, err
		}
		return plain(ctx)
	}
}
