package roomdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// The trail keeps for support what a place's keys forget once it leaves the
// queue (docs/OPERATING.md, "Support lookup"): its heartbeat goes when the
// ticks admit or evict it, its grant when it is consumed. Each admission
// (by a tick, or of a join admitted at once) and each eviction by a tick
// records the place's last poll and the admission's time in the trail of
// the day (lib.lua trail_put); a lookup reads the days a visitor it can find
// may have one in.

// trailDays are the days a lookup at nowMS reads the trail of: today's and
// the refDays - 1 before it, where every visitor it can find was admitted or
// evicted, and tomorrow's, for a function whose clock is a little ahead.
func trailDays(nowMS int64) []int64 {
	days := []int64{nowMS + 86_400_000}
	for d := range int64(refDays) {
		days = append(days, nowMS-d*86_400_000)
	}
	return days
}

// trailOf reads the trail of the place seq: its last poll and its admission
// as the latest records hold them (nil for none). A place admitted, lost and
// admitted again has a record of each day it was.
func (e *Engine) trailOf(ctx context.Context, roomID string, seq int64) (lastPoll, admitted *time.Time, err error) {
	k := KeysFor(roomID)
	p := e.rdb.Pipeline()
	var cmds []*redis.StringCmd
	for _, at := range trailDays(e.nowMS()) {
		cmds = append(cmds, p.HGet(ctx, k.Trail(at), HeartbeatField(seq)))
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("%w: look up %s: %w", room.ErrUnavailable, roomID, err)
	}
	var seen, adm int64
	for _, c := range cmds {
		s, a, ok := parseTrail(c.Val())
		if ok {
			seen, adm = max(seen, s), max(adm, a)
		}
	}
	return msPtr(seen), msPtr(adm), nil
}

// parseTrail reads a trail value: the last poll and the admission (ms).
func parseTrail(v string) (seen, admitted int64, ok bool) {
	if len(v) != 12 {
		return 0, 0, false
	}
	var b [16]byte
	copy(b[2:8], v[:6])
	copy(b[10:], v[6:])
	return int64(binary.BigEndian.Uint64(b[:8])), int64(binary.BigEndian.Uint64(b[8:])), true
}

// msPtr is a time in ms, nil for 0.
func msPtr(ms int64) *time.Time {
	if ms <= 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// dropTrail deletes the room's trail (Delete), with its references.
func (e *Engine) dropTrail(ctx context.Context, roomID string) error {
	k := KeysFor(roomID)
	var keys []string
	for _, at := range trailDays(e.nowMS()) {
		keys = append(keys, k.Trail(at))
	}
	if err := e.rdb.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("%w: delete %s: %w", room.ErrUnavailable, roomID, err)
	}
	return nil
}
