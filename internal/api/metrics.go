package api

import (
	"log/slog"
	"time"
)

// MetricNamespace and RedisErrorsMetric name the custom metric the stack's
// Redis alarm watches (infra/stack): emitted as CloudWatch embedded metric
// format on the log line of every request or tick that Redis failed, with no
// dimensions, so CloudWatch turns log lines into the metric without an agent
// or an API call on the hot path.
const (
	MetricNamespace   = "Vestibule"
	RedisErrorsMetric = "RedisErrors"
)

// redisErrorAttrs are the embedded-metric-format attributes counting one
// Redis error on a JSON log line.
func redisErrorAttrs(now time.Time) []slog.Attr {
	return []slog.Attr{
		slog.Any("_aws", map[string]any{
			"Timestamp": now.UnixMilli(),
			"CloudWatchMetrics": []map[string]any{{
				"Namespace":  MetricNamespace,
				"Dimensions": [][]string{{}},
				"Metrics":    []map[string]string{{"Name": RedisErrorsMetric, "Unit": "Count"}},
			}},
		}),
		slog.Int(RedisErrorsMetric, 1),
	}
}
