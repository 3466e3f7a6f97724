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
	src string
}

// NewScript names a script's source.
func NewScript(name, src string) Script { return Script{name, redis.NewScript(src), src} }

// InRegion is the script as the engine of region runs it (InRegion of its
// source): the same script when it does not use REGION or region is "".
func (s Script) InRegion(region string) Script {
	src := InRegion(s.src, region)
	if src == s.src {
		return s
	}
	return Script{s.Name, redis.NewScript(src), src}
}

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

// Each runs the script once for each set of keys, with the same args, in one
// pipeline: a cluster client sends each node its calls at once, so the calls
// cost about one round trip, the nodes' in parallel, and a node that does not
// answer holds up only its own. A call that finds the script missing from its
// node (NOSCRIPT) runs again alone, by EVAL. It returns each call's reply and
// error (named as Reply names them).
func (s Script) Each(ctx context.Context, c Pipeliner, keys [][]string, args ...any) ([]any, []error) {
	cmds := make([]*redis.Cmd, len(keys))
	p := c.Pipeline()
	for i, k := range keys {
		cmds[i] = s.EvalSha(ctx, p, k, args...)
	}
	_, _ = p.Exec(ctx) // each command's own error is read below
	out, errs := make([]any, len(keys)), make([]error, len(keys))
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			v, err = s.Run(ctx, c, keys[i], args...).Result()
		}
		if err != nil {
			errs[i] = fmt.Errorf("%s script: %w", s.Name, err)
			continue
		}
		out[i] = v
	}
	return out, errs
}

// Pipeliner is a client that runs scripts and pipelines (redis.Client,
// redis.ClusterClient).
type Pipeliner interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
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
