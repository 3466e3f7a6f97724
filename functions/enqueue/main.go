// Command enqueue is the Lambda behind POST /api/rooms/{room}/enqueue. It
// serves that route alone (api.EnqueuePart, the routes internal/routes gives
// it; docs/API.md), and links no other route's handler.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main(api.EnqueuePart(), nil).Handle)
}
