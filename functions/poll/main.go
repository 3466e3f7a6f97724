// Command poll is the Lambda behind GET /api/rooms/{room}/poll (the hot path)
// and POST /api/rooms/{room}/leave. It wires the whole API router (see
// docs/API.md); API Gateway sends it only its routes.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main("poll").Handle)
}
