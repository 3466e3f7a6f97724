// Command status is the Lambda behind the public, cacheable reads: GET
// /api/rooms/{room}/status and GET /api/jwks.json. It serves those routes
// alone (api.StatusPart, the routes internal/routes gives it; docs/API.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main(api.StatusPart(), nil).Handle)
}
