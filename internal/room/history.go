package room

import "time"

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
