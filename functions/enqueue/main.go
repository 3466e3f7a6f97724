// Command enqueue is the Lambda behind POST /api/rooms/{room}/enqueue. It
// wires the whole API router (see docs/API.md); API Gateway sends it only its
// route.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main("enqueue").Handle)
}
