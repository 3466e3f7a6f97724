// Command consume is the booking-consume Lambda: POST /api/consume and POST
// /api/complete, called by the booking origin server to server. It wires the
// whole API router (see docs/API.md); API Gateway sends it only its routes.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main("consume").Handle)
}
