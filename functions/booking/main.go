// Command booking is the booking kit's Lambda: GET /api/events/{event} and
// POST /api/events/{event}/holds (visitors with a booking session), the
// confirm, extend, release and cancel routes (the room's origin, server to
// server), and the admin routes of events (IAM). It serves those routes alone
// (api.BookingPart, the routes internal/routes gives it; docs/API.md). Order
// events go out through the publisher BOOKING_EVENT_BUS chooses
// (docs/BOOKING.md): of the API functions, only this one links EventBridge's
// client.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/orders"
)

func main() {
	lambda.Start(apiapp.Main(api.BookingPart(), func(ctx context.Context, c config.Config) (booking.Publisher, error) {
		return orders.New(ctx, c, os.Stdout)
	}).Handle)
}
