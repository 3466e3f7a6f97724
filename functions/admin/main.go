// Command admin is the Lambda behind the admin routes (/api/admin/rooms...),
// which API Gateway protects with IAM authorization (ADMIN_AUTH=iam). It wires
// the whole API router (see docs/API.md); API Gateway sends it only its routes.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main("admin").Handle)
}
