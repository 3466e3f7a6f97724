package lua

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Script is one script, named for errors and logs. It runs by SHA (EVALSHA)
// and falls back to EVAL when Redis lost it.
type Script struct {
	Name string
	*redis.Script
}

// NewScript names a script's source.
func NewScript(name, src string) Script { return Script{name, redis.NewScript(src)} }

// Reply runs the script and returns its reply, which every script of ours
// makes a non-empty table. An error names the script and wraps the cause, so
// errors.Is finds context.DeadlineExceeded and the log says which script failed;
// callers wrap it in their own unavailability error.
func (s Script) Reply(ctx context.Context, c redis.Scripter, keys []string, args ...any) ([]any, error) {
	v, err := s.Run(ctx, c, keys, args...).Result()
	if err != nil {
		return nil, fmt.Errorf("%s script: %w", s.Name, err)
	}
	reply, ok := v.([]any)
	if !ok || len(reply) == 0 {
		return nil, fmt.Errorf("%s script: unexpected reply %T", s.Name, v)
	}
	return reply, nil
}

// Str reads a reply value as text: Redis turns a Lua string into a string
// and a Lua number into an integer.
func Str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// Num reads a reply value as an integer: an integer, or a number the script
// formatted as text (decimal, or a float it rounds down).
func Num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err == nil {
			return n
		}
		f, _ := strconv.ParseFloat(x, 64)
		return int64(f)
	}
	return 0
}
