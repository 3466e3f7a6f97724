// Command admit is the admission cron: EventBridge invokes it once a minute
// and it ticks every room every second until a few seconds before its deadline
// (api.AdmitHandler). Its reserved concurrency is 1, and the engine's token
// bucket makes an overlapping or retried invocation admit nothing extra.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/env"
)

func main() {
	d := env.MainEngine("admit")
	lambda.Start(api.AdmitHandler(d.Engine, time.Second, d.Logger))
}
