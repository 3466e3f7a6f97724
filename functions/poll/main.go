// Command poll is the Lambda behind GET /api/rooms/{room}/poll (the hot path),
// POST /api/rooms/{room}/leave and the notices' sign-up and withdrawal
// (POST and DELETE /api/rooms/{room}/notify). It serves those routes alone
// (api.PollPart, the routes internal/routes gives it; docs/API.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main(api.PollPart(), nil).Handle)
}
