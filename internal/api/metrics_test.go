package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"log/slog"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/metrics"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// A request that Redis failed logs one line in CloudWatch embedded metric
// format, counting RedisErrors in the namespace the stack's alarm watches,
// with no dimensions; other requests carry no metric.
func TestRedisErrorsMetric(t *testing.T) {
	k := apitest.Keys(t)
	for _, c := range []struct {
		err    error
		metric bool
	}{{room.ErrUnavailable, true}, {room.ErrUnknownRoom, false}, {fmt.Errorf("%w: restore demo", room.ErrNotRestorable), false}} {
		var buf bytes.Buffer
		h := api.New(api.Options{Queue: failing{c.err}, Tickets: token.NewTickets(k.TicketSecret, "vestibule"),
			Entries: token.NewEntries(k.Entry, "vestibule"), AdminAuth: api.AdminKey, AdminKey: apitest.AdminKey,
			Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
		resp, err := h.Handle(context.Background(), apitest.Event("GET", "/api/rooms/demo/status", "", nil))
		if err != nil {
			t.Fatal(err)
		}
		var line struct {
			AWS *struct {
				Timestamp         int64
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
			RedisErrors int
		}
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("log line is not one JSON object: %v: %s", err, buf.Bytes())
		}
		if !c.metric {
			if line.AWS != nil || line.RedisErrors != 0 {
				t.Errorf("status %d logged a Redis error metric: %s", resp.StatusCode, buf.Bytes())
			}
			continue
		}
		if resp.StatusCode != 503 || line.AWS == nil || line.RedisErrors != 1 || line.AWS.Timestamp == 0 ||
			len(line.AWS.CloudWatchMetrics) != 1 {
			t.Fatalf("503 without the metric: %d %s", resp.StatusCode, buf.Bytes())
		}
		m := line.AWS.CloudWatchMetrics[0]
		if m.Namespace != metrics.Namespace || len(m.Dimensions) != 1 || len(m.Dimensions[0]) != 0 ||
			len(m.Metrics) != 1 || m.Metrics[0].Name != metrics.RedisErrors || m.Metrics[0].Unit != "Count" {
			t.Fatalf("metric directive: %+v", m)
		}
	}
}
