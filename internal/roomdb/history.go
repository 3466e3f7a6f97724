package roomdb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// waitFields are the state's fields of the current minute's waits
// (tick.lua): wm, the minute, then w0…w80, the buckets.
var waitFields = func() []string {
	f := []string{"wm"}
	for b := range room.WaitBuckets {
		f = append(f, "w"+strconv.Itoa(b))
	}
	return f
}()

// peakFields are the state's fields of the current minute's peak of the
// queue (tick.lua): qpm, the minute, and qp, the most waiting.
var peakFields = []string{"qpm", "qp"}

// history reads the history hash and the current minute's waits and peak
// from the state (one slot, one pipeline) and decodes them: a point field is
// 'minute:waiting:admitted:active:admitted in the last 60 s:evicted ever'
// and, since the report counts them, ':left ever:lapsed ever', then the
// notices' ':sent ever:failed ever:turns saved ever'; a waits
// field is 'w' + minute % 1440 with 'minute:bucket=count,…'; a peak field
// 'p' + minute % 1440 with 'minute:most waiting'.
func (e *Engine) history(ctx context.Context, roomID string) ([]room.HistoryPoint, error) {
	if !room.ValidRoomID(roomID) {
		return nil, room.ErrInvalidRoom
	}
	k := KeysFor(roomID)
	pl := e.rdb.Pipeline()
	all := pl.HGetAll(ctx, k.History())
	cur := pl.HMGet(ctx, k.State, waitFields...)
	peak := pl.HMGet(ctx, k.State, peakFields...)
	if _, err := pl.Exec(ctx); err != nil {
		return nil, fmt.Errorf("%w: read history: %w", room.ErrUnavailable, err)
	}
	now := e.nowMS() / 60000
	fresh := func(minute int64) bool { return minute > now-room.HistoryMinutes && minute <= now }
	by, waits, peaks := historyFields(all.Val(), fresh)
	point := func(minute int64) *room.HistoryPoint {
		p := by[minute]
		if p == nil {
			p = &room.HistoryPoint{Minute: time.UnixMilli(minute * 60000).UTC()}
			by[minute] = p
		}
		return p
	}
	if minute, h, ok := currentWaits(cur.Val()); ok && fresh(minute) {
		waits[minute] = h
	}
	for minute, h := range waits {
		point(minute).Waits = h
	}
	if minute, most, ok := currentPeak(peak.Val()); ok && fresh(minute) {
		peaks[minute] = max(peaks[minute], most)
	}
	for minute, most := range peaks {
		if p, ok := by[minute]; ok {
			p.PeakWaiting = most
		}
	}
	out := make([]room.HistoryPoint, 0, len(by))
	for _, p := range by {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b room.HistoryPoint) int { return a.Minute.Compare(b.Minute) })
	return out, nil
}

// historyFields sorts the history hash's fields of the minutes fresh keeps
// into points, waits and peaks, by minute (history).
func historyFields(all map[string]string, fresh func(int64) bool) (map[int64]*room.HistoryPoint, map[int64]room.WaitHistogram, map[int64]int64) {
	by := map[int64]*room.HistoryPoint{}
	waits := map[int64]room.WaitHistogram{}
	peaks := map[int64]int64{}
	for f, v := range all {
		switch {
		case strings.HasPrefix(f, "p"):
			if minute, most, ok := parsePeak(v); ok && fresh(minute) {
				peaks[minute] = most
			}
		case strings.HasPrefix(f, "w"):
			if minute, h, ok := parseWaits(v); ok && fresh(minute) {
				waits[minute] = h
			}
		default:
			if minute, p, ok := parsePoint(v); ok && fresh(minute) {
				by[minute] = &p
			}
		}
	}
	return by, waits, peaks
}

// currentPeak decodes the state's peak fields (peakFields): the current
// minute's peak so far.
func currentPeak(v []any) (int64, int64, bool) {
	if len(v) != 2 || v[0] == nil || v[1] == nil {
		return 0, 0, false
	}
	return parsePeak(fmt.Sprint(v[0]) + ":" + fmt.Sprint(v[1]))
}

// parsePoint decodes a point field's value (history): six, eight or eleven numbers.
func parsePoint(v string) (int64, room.HistoryPoint, bool) {
	parts := strings.Split(v, ":")
	if len(parts) != 6 && len(parts) != 8 && len(parts) != 11 {
		return 0, room.HistoryPoint{}, false
	}
	var f [11]int64
	for i, s := range parts {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, room.HistoryPoint{}, false
		}
		f[i] = n
	}
	return f[0], room.HistoryPoint{Minute: time.UnixMilli(f[0] * 60000).UTC(), Waiting: f[1],
		Admitted: f[2], Active: f[3], AdmittedLastMinute: f[4], Evicted: f[5], Left: f[6], Lapsed: f[7],
		NoticesSent: f[8], NoticesFailed: f[9], TurnsSaved: f[10]}, true
}

// parsePeak decodes a peak field's value (history): 'minute:most waiting'.
func parsePeak(v string) (int64, int64, bool) {
	m, n, ok := strings.Cut(v, ":")
	minute, err1 := strconv.ParseInt(m, 10, 64)
	most, err2 := strconv.ParseInt(n, 10, 64)
	return minute, most, ok && err1 == nil && err2 == nil && most >= 0
}

// parseWaits decodes a waits field's value (history).
func parseWaits(v string) (int64, room.WaitHistogram, bool) {
	m, rest, ok := strings.Cut(v, ":")
	minute, err := strconv.ParseInt(m, 10, 64)
	if !ok || err != nil {
		return 0, nil, false
	}
	h := room.WaitHistogram{}
	for _, kv := range strings.Split(rest, ",") {
		bs, ns, ok := strings.Cut(kv, "=")
		b, err1 := strconv.Atoi(bs)
		n, err2 := strconv.ParseInt(ns, 10, 64)
		if !ok || err1 != nil || err2 != nil || b < 0 || b >= room.WaitBuckets {
			return 0, nil, false
		}
		h[b] += n
	}
	return minute, h, true
}

// currentWaits decodes the state's fields of the current minute's waits
// (waitFields): the minute and its histogram, ok when it holds any.
func currentWaits(vals []any) (int64, room.WaitHistogram, bool) {
	if len(vals) != len(waitFields) || vals[0] == nil {
		return 0, nil, false
	}
	minute, err := strconv.ParseInt(fmt.Sprint(vals[0]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	h := room.WaitHistogram{}
	for b, v := range vals[1:] {
		if n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64); v != nil && err == nil && n > 0 {
			h[b] = n
		}
	}
	return minute, h, len(h) > 0
}
