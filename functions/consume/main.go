// Command consume is the Lambda behind the routes that redeem an entry: POST
// /api/consume and POST /api/complete (the booking origin, server to server),
// the edge gate's /.vestibule/ routes and forward-auth check, and the OIDC
// provider's /oidc/{room}/ routes. It serves those routes alone
// (api.ConsumePart, the routes internal/routes gives it; docs/API.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main(api.ConsumePart(), nil).Handle)
}
