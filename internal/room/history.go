package room

import (
	"math"
	"time"
)

// HistoryPoint is one minute of a room's history: the counts at the first
// tick of that minute.
type HistoryPoint struct {
	Minute             time.Time `json:"minute"`
	Waiting            int64     `json:"waiting"`
	Admitted           int64     `json:"admitted"`
	Active             int64     `json:"active"`
	AdmittedLastMinute int64     `json:"admittedLastMinute"`
	Evicted            int64     `json:"evicted"` // evicted ever (a counter)
}

// HistoryMinutes is how much history the ticks keep: a day, a point a
// minute (tick.lua's ring has as many fields).
const HistoryMinutes = 1440

// ToldMS is the silence (ms) a heartbeat class allows before the grace
// (lib.lua's told_ms): 0 for class 0, else 1 s × 2^((class−1)/4), rounded.
func ToldMS(class int) int64 {
	if class < 1 {
		return 0
	}
	return int64(math.Floor(1000*math.Pow(2, float64(class-1)/4) + 0.5))
}

// ToldClass is the smallest class whose ToldMS is at least budget (ms): what
// the engine stores for a poll budget (lib.lua's told).
func ToldClass(budgetMS int64) int {
	c := 1
	for c < 63 && ToldMS(c) < budgetMS {
		c++
	}
	return c
}
