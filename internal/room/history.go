package room

import (
	"math"
	"time"
)

// HistoryPoint is one minute of a room's history: the counts at the first
// tick of that minute, and the waits of the visitors the ticks admitted
// during it.
type HistoryPoint struct {
	Minute  time.Time `json:"minute"`
	Waiting int64     `json:"waiting"`
	// PeakWaiting is the most visitors waiting at any tick of the minute,
	// before or after its admissions (0 for a minute recorded before it was
	// kept): a burst admitted within the minute shows here, not in Waiting.
	PeakWaiting        int64 `json:"peakWaiting,omitempty"`
	Admitted           int64 `json:"admitted"`
	Active             int64 `json:"active"`
	AdmittedLastMinute int64 `json:"admittedLastMinute"`
	Evicted            int64 `json:"evicted"` // evicted ever (a counter)
	// Left is the waiting visitors who left by the leave route, ever;
	// Lapsed the grants that ended unused (reclaimed at their claim
	// deadline, or given up by leave or complete), ever. Both counters.
	Left   int64 `json:"left,omitempty"`
	Lapsed int64 `json:"lapsed,omitempty"`
	// NoticesSent, NoticesFailed and TurnsSaved are the notices' counters
	// (Stats' fields of the same names), ever.
	NoticesSent   int64 `json:"noticesSent,omitempty"`
	NoticesFailed int64 `json:"noticesFailed,omitempty"`
	TurnsSaved    int64 `json:"turnsSaved,omitempty"`
	// Waits is the measured waits of the visitors the ticks admitted from
	// the queue during the minute (nil when none, or for a minute recorded
	// before waits were measured).
	Waits WaitHistogram `json:"waits,omitempty"`
}

// HistoryMinutes is how much history the ticks keep: a day, a point a
// minute (tick.lua's ring has as many fields).
const HistoryMinutes = 1440

// WaitHistogram counts waits by bucket (WaitBucket): bucket → visitors.
type WaitHistogram map[int]int64

// WaitBuckets is the number of wait buckets; the last holds every wait of
// at least WaitBucketLow(WaitBuckets-1) (about 9.6 days). tick.lua's
// WAIT_BUCKETS is the same number.
const WaitBuckets = 81

// waitPerDoubling is how many buckets a doubling of the wait spans: a
// bucket is about 19 % wide.
const waitPerDoubling = 4

// WaitBucket is the bucket of a wait: 0 below 1 s, then b for waits in
// [2^((b-1)/4), 2^(b/4)) seconds, at most WaitBuckets-1 (tick.lua computes
// the same).
func WaitBucket(d time.Duration) int {
	s := d.Seconds()
	if s < 1 {
		return 0
	}
	return min(WaitBuckets-1, int(math.Floor(math.Log2(s)*waitPerDoubling))+1)
}

// WaitBucketLow and WaitBucketHigh are the bounds of bucket b in seconds
// (bucket 0: 0 to 1).
func WaitBucketLow(b int) float64 {
	if b <= 0 {
		return 0
	}
	return math.Exp2(float64(b-1) / waitPerDoubling)
}

// WaitBucketHigh is bucket b's upper bound in seconds (see WaitBucketLow).
func WaitBucketHigh(b int) float64 { return math.Exp2(float64(b) / waitPerDoubling) }

// Add adds o's counts to h (h must not be nil).
func (h WaitHistogram) Add(o WaitHistogram) {
	for b, n := range o {
		h[b] += n
	}
}

// Count is the number of waits h holds.
func (h WaitHistogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile is the wait in seconds below which a share q (0 to 1) of h's
// waits fall: the bucket it falls in, interpolated linearly between the
// bucket's bounds by the rank within it; 0 for an empty histogram. It is
// exact to the bucket's width.
func (h WaitHistogram) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen int64
	for b := range WaitBuckets {
		n := h[b]
		if n == 0 {
			continue
		}
		if float64(seen+n) >= rank {
			lo, hi := WaitBucketLow(b), WaitBucketHigh(b)
			f := max(0, (rank-float64(seen))/float64(n))
			return lo + (hi-lo)*f
		}
		seen += n
	}
	return WaitBucketHigh(WaitBuckets - 1)
}
