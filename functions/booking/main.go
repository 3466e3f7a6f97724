// Command booking is the booking kit's Lambda: GET /api/events/{event} and
// POST /api/events/{event}/holds (visitors with a booking session), the
// confirm, release and cancel routes (the room's origin, server to server),
// and PUT/GET /api/admin/events/{event} (IAM). It wires the whole API router
// (see docs/API.md); API Gateway sends it only its routes. Order events go
// out through the publisher BOOKING_EVENT_BUS chooses (docs/BOOKING.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main("booking").Handle)
}
