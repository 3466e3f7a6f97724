package localstack_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/localstack"
)

// The gateway hands the handler enough of a body to see it is over any
// route's limit (an event's definition takes 1 MiB): a 2 MiB definition is
// a 413 from the handler, not a JSON cut short (400) or, padded with spaces, a 200.
func TestGatewayPassesLargeBodies(t *testing.T) {
	var got int
	gw := localstack.Gateway(func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		got = len(ev.Body)
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	})
	body := `{"seats":["A1"],"sessionLimit":1}` + strings.Repeat(" ", 2<<20)
	rec := httptest.NewRecorder()
	gw.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/api/admin/events/ev", strings.NewReader(body)))
	if got <= api.MaxEventBody*4/3+4 {
		t.Fatalf("the handler saw %d bytes of a %d-byte body: it cannot tell it is over %d", got, len(body), api.MaxEventBody)
	}
}
