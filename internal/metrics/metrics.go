// Package metrics names Vestibule's custom CloudWatch metrics and writes them
// as embedded metric format (EMF) attributes of a JSON log line, so CloudWatch
// turns log lines into metrics with no agent and no API call on the hot path.
// infra/ imports the names for its alarms.
package metrics

import (
	"log/slog"
	"time"
)

// Namespace and RedisErrors name the metric the stack's Redis alarm watches:
// one count on the log line of every request or tick that Redis failed, with
// no dimensions.
const (
	Namespace   = "Vestibule"
	RedisErrors = "RedisErrors"
)

// RedisErrorAttrs are the attributes that count one Redis error on a JSON log line.
func RedisErrorAttrs(now time.Time) []slog.Attr {
	return []slog.Attr{
		slog.Any("_aws", map[string]any{
			"Timestamp": now.UnixMilli(),
			"CloudWatchMetrics": []map[string]any{{
				"Namespace":  Namespace,
				"Dimensions": [][]string{{}},
				"Metrics":    []map[string]string{{"Name": RedisErrors, "Unit": "Count"}},
			}},
		}),
		slog.Int(RedisErrors, 1),
	}
}
