// Command admit is the admission cron: EventBridge invokes it once a minute
// and it ticks every room every second until a few seconds before its deadline
// (admission.Loop.Handler), or returns at once when nobody waits anywhere. It ticks
// through durable.Queue: rooms lost with Redis come back from the settings
// bucket, and their heads are recorded there. It reserves no concurrency by default: the engine's token
// bucket makes an overlapping or retried invocation admit nothing extra. It
// needs Redis and nothing else: no tokens, no secrets. Every 5 s of its loop
// it also sweeps the booking kit's events (orders.Task): expires overdue
// holds and publishes order events left in the outbox.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/admission"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/orders"
)

func main() {
	core := app.Main("admit")
	pub, err := orders.New(context.Background(), core.Config, os.Stdout)
	if err != nil {
		app.Fail("admit", err)
	}
	sweep := orders.Task(core.Booking, pub, 5*time.Second, nil, core.Logger)
	lambda.Start(admission.For(core.Queue).Handler(time.Second, core.Logger, sweep))
}
