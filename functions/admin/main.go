// Command admin is the Lambda behind the admin routes of rooms
// (/api/admin/rooms...) and the notify function's take and ack, which API
// Gateway protects with IAM authorization (ADMIN_AUTH=iam). It serves those
// routes alone (api.AdminPart, the routes internal/routes gives it;
// docs/API.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
)

func main() {
	lambda.Start(apiapp.Main(api.AdminPart(), nil).Handle)
}
