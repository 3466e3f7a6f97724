// Package metrics names Vestibule's custom CloudWatch metrics and writes them
// as embedded metric format (EMF) attributes of a JSON log line, so CloudWatch
// turns log lines into metrics with no agent and no API call on the hot path.
// infra/ imports the names for its alarms.
package metrics

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// Namespace and RedisErrors name the metric the stack's Redis alarm watches:
// one count on the log line of every request or tick that Redis failed.
const (
	Namespace   = "Vestibule"
	RedisErrors = "RedisErrors"
	// StackDimension is the dimension that tells two stacks in one account and
	// region apart (two stages, say); its value is the stack name the functions
	// get in VESTIBULE_STACK.
	StackDimension = "Stack"
)

var stack atomic.Value // string

// SetStack sets the value of the Stack dimension of every metric written
// after it; the composition root (internal/app) calls it once at start-up
// with the configuration's stack name. Empty (local programs): no dimension.
func SetStack(name string) { stack.Store(name) }

// Stack is the value SetStack set.
func Stack() string {
	s, _ := stack.Load().(string)
	return s
}

// RedisErrorAttrs are the attributes that count one Redis error on a JSON log
// line, with the Stack dimension when one is set.
func RedisErrorAttrs(now time.Time) []slog.Attr {
	name := Stack()
	dims := []string{}
	if name != "" {
		dims = []string{StackDimension}
	}
	attrs := []slog.Attr{
		slog.Any("_aws", map[string]any{
			"Timestamp": now.UnixMilli(),
			"CloudWatchMetrics": []map[string]any{{
				"Namespace":  Namespace,
				"Dimensions": [][]string{dims},
				"Metrics":    []map[string]string{{"Name": RedisErrors, "Unit": "Count"}},
			}},
		}),
		slog.Int(RedisErrors, 1),
	}
	if name != "" {
		attrs = append(attrs, slog.String(StackDimension, name))
	}
	return attrs
}
