package metrics_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/metrics"
)

// emf is the part of an EMF log line CloudWatch reads.
type emf struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	RedisErrors int
	Stack       *string
}

func line(t *testing.T) emf {
	t.Helper()
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).LogAttrs(t.Context(), slog.LevelError, "x", metrics.RedisErrorAttrs(time.UnixMilli(1234))...)
	var e emf
	if err := json.Unmarshal(buf.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// With a stack name the metric carries it as the Stack dimension (a member of
// the line, as EMF requires), so two stacks in one account and region count
// apart; without one (local programs) there is no dimension.
func TestRedisErrorsCarryTheStack(t *testing.T) {
	defer metrics.SetStack("")

	metrics.SetStack("Vestibule-staging")
	e := line(t)
	m := e.AWS.CloudWatchMetrics
	if len(m) != 1 || m[0].Namespace != metrics.Namespace || !reflect.DeepEqual(m[0].Dimensions, [][]string{{metrics.StackDimension}}) ||
		e.Stack == nil || *e.Stack != "Vestibule-staging" || e.RedisErrors != 1 || e.AWS.Timestamp != 1234 {
		t.Fatalf("with a stack: %+v", e)
	}

	metrics.SetStack("")
	e = line(t)
	if !reflect.DeepEqual(e.AWS.CloudWatchMetrics[0].Dimensions, [][]string{{}}) || e.Stack != nil {
		t.Fatalf("without a stack: %+v", e)
	}
}
