// Command status is the Lambda behind the public, cacheable reads: GET
// /api/rooms/{room}/status and GET /api/jwks.json. It wires the whole API
// router (see docs/API.md); API Gateway sends it only its routes.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main("status").Handle)
}
