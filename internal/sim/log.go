package sim

import (
	"strings"
	"sync/atomic"
	"time"
)

// Kind is what a request of the crowd was, for the per-second log.
type Kind int

// The kinds of requests the log counts.
const (
	KindEnqueue Kind = iota
	KindPoll
	KindLeave
	KindConsume
	KindComplete
	KindOther         // booking calls
	KindStatusCached  // a status read the edge's cache answered (no API request)
	KindStatusFetched // a status read the edge fetched from the API
	numKinds
)

func (k Kind) String() string {
	return [...]string{"enqueue", "poll", "leave", "consume", "complete", "other", "status-cached", "status-fetched"}[k]
}

// Kinds is a set of kinds (a bit per Kind).
type Kinds uint32

// KindSet makes the set of the given kinds.
func KindSet(ks ...Kind) Kinds {
	var s Kinds
	for _, k := range ks {
		s |= 1 << k
	}
	return s
}

// APIKinds are the requests that reach API Gateway and the function: every
// kind but the status reads the edge's cache answers.
var APIKinds = KindSet(KindEnqueue, KindPoll, KindLeave, KindConsume, KindComplete, KindOther, KindStatusFetched)

// RequestLog counts a run's requests by kind and by second since its start
// (of the driver's clock: virtual time with Virtual). It is safe for
// concurrent use: runBatch steps visitors in parallel, and each count is an
// atomic add into a table made for the run's whole length.
type RequestLog struct {
	start  time.Time
	counts [][numKinds]atomic.Int64
}

// NewRequestLog makes a log for a run starting at start and lasting at most span.
func NewRequestLog(start time.Time, span time.Duration) *RequestLog {
	return &RequestLog{start: start, counts: make([][numKinds]atomic.Int64, int(span/time.Second)+2)}
}

// Add counts one request of kind k at at (clamped into the log's span).
func (l *RequestLog) Add(k Kind, at time.Time) {
	if l == nil {
		return
	}
	l.counts[l.index(at)][k].Add(1)
}

func (l *RequestLog) index(at time.Time) int {
	i := int(at.Sub(l.start) / time.Second)
	return max(0, min(i, len(l.counts)-1))
}

// Seconds is the log's length in seconds.
func (l *RequestLog) Seconds() int { return len(l.counts) }

// Second is the number of requests of the kinds ks in second i of the run.
func (l *RequestLog) Second(i int, ks Kinds) int64 {
	if i < 0 || i >= len(l.counts) {
		return 0
	}
	var n int64
	for k := range numKinds {
		if ks&(1<<k) != 0 {
			n += l.counts[i][k].Load()
		}
	}
	return n
}

// Total is the number of requests of the kinds ks in the seconds [from, to).
func (l *RequestLog) Total(ks Kinds, from, to int) int64 {
	var n int64
	for i := max(from, 0); i < min(to, len(l.counts)); i++ {
		n += l.Second(i, ks)
	}
	return n
}

// Peak is the highest rate (requests a second) of the kinds ks over any
// window of `window` whole seconds within [from, to), and the mean rate over
// [from, to). A span shorter than the window is one window.
func (l *RequestLog) Peak(ks Kinds, window, from, to int) (peak, mean float64) {
	from, to = max(from, 0), min(to, len(l.counts))
	if to <= from || window <= 0 {
		return 0, 0
	}
	per := make([]int64, to-from)
	var total int64
	for i := range per {
		per[i] = l.Second(from+i, ks)
		total += per[i]
	}
	mean = float64(total) / float64(len(per))
	w := min(window, len(per))
	var sum int64
	for i, n := range per {
		sum += n
		if i >= w {
			sum -= per[i-w]
		}
		if i >= w-1 {
			peak = max(peak, float64(sum)/float64(w))
		}
	}
	return peak, mean
}

// SecondOf is the log's second of an instant.
func (l *RequestLog) SecondOf(at time.Time) int { return int(at.Sub(l.start) / time.Second) }

// kindOf names the kind of an API request by its route.
func kindOf(method, path string) Kind {
	switch {
	case strings.HasSuffix(path, "/enqueue"):
		return KindEnqueue
	case strings.HasSuffix(path, "/poll"):
		return KindPoll
	case strings.HasSuffix(path, "/leave") && strings.HasPrefix(path, "/api/rooms/"):
		return KindLeave
	case path == "/api/consume":
		return KindConsume
	case path == "/api/complete":
		return KindComplete
	case strings.HasSuffix(path, "/status") && method == "GET":
		return KindStatusFetched
	}
	return KindOther
}
