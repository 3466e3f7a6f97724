package sim

import (
	"context"
	"encoding/json"
	"github.com/vestibule-dev/vestibule/internal/cadence"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The page's watch (docs/PAGE.md): between its API polls, the leading tab of a
// visitor who holds a ticket reads the room's public status, which CloudFront
// caches for a second, and shows a pause, a resume, a change of pace or the
// opening from it without waiting for its next poll. It reads as often as the
// visitor's remaining wait asks (internal/cadence): a change is shown within
// cadence.ShownWithin of it.
const (
	// OpeningRead: at the opening the page reads the status within this
	// after opensAt (uniformly), instead of its next regular read.
	OpeningRead = 6 * time.Second
	// EdgeMaxAge is how long the edge serves a status answer from its cache
	// (the route's Cache-Control: public, max-age=1).
	EdgeMaxAge = time.Second
)

// statusAnswer is GET /api/rooms/{room}/status as the page reads it: the
// claim window bounds the opening's poll planned from the draw
// (static/js/watch.js placeAtOpening), and each place's own pace on a climb
// is the climb's for it.
type statusAnswer struct {
	room.PublicStatus

	at    time.Time // when the edge fetched it
	bytes int       // the body's length
}

// open reports whether the answer shows the room open: admitting in order
// (queue or auto) and past its opening, if it has one.
func (s *statusAnswer) open() bool {
	if s.Mode != "queue" && s.Mode != "auto" {
		return false
	}
	return s.OpensAt == nil || s.DrawSeed != "" || !s.at.Before(*s.OpensAt)
}

// edgeCache is CloudFront's cache of one room's status: an answer younger
// than EdgeMaxAge is served from it, an older one is fetched again through
// the API (one fetch at a time; readers arriving meanwhile wait for it, as
// the edge collapses concurrent misses).
type edgeCache struct {
	cur atomic.Pointer[statusAnswer]
	mu  sync.Mutex

	fetches, fetchBytes atomic.Int64
}

func fresh(s *statusAnswer, now time.Time) bool {
	return s != nil && !now.Before(s.at) && now.Sub(s.at) < EdgeMaxAge
}

// read answers a status read at now, from the cache or through the API, and
// logs which. It returns nil when the fetch failed.
func (c *edgeCache) read(ctx context.Context, e *env, now time.Time) *statusAnswer {
	if s := c.cur.Load(); fresh(s, now) {
		e.log.Add(KindStatusCached, now)
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.cur.Load(); fresh(s, now) {
		e.log.Add(KindStatusCached, now)
		return s
	}
	e.log.Add(KindStatusFetched, now)
	status, body, _, err := e.tr.Do(ctx, "GET", "/api/rooms/"+e.room+"/status", "", nil)
	if err != nil || status != http.StatusOK {
		return nil
	}
	var s statusAnswer
	if json.Unmarshal(body, &s) != nil {
		return nil
	}
	s.at, s.bytes = now, len(body)
	c.fetches.Add(1)
	c.fetchBytes.Add(int64(len(body)))
	c.cur.Store(&s)
	return &s
}

// view is what the visitor's page shows, as far as the moments need it.
type view struct {
	state string // "" (not yet joined), prequeue, waiting, paused, closed, admitted, expired
	// pos is the place shown at `at`; while waiting the page counts it down
	// at pace from then (never below 1), or on climb (the pace's climb as it
	// was at `at`) while the pace climbs; while paused it holds.
	pos   float64
	at    time.Time
	pace  float64
	climb *room.Climb
	// Pre-queue: the opening, and when the last API answer came (its budget
	// bounds the poll planned at the opening).
	opensAt   time.Time
	repliedAt time.Time
	// readAt: the last status read (zero before the first).
	readAt time.Time
}

// estimate is the place the page shows at now.
func (w *view) estimate(now time.Time) float64 {
	if w.state != "waiting" || w.pace <= 0 {
		return w.pos
	}
	if w.climb != nil {
		return max(1, w.pos-w.climb.Passed(now.Sub(w.at).Minutes()))
	}
	return max(1, w.pos-w.pace*now.Sub(w.at).Minutes())
}

// climbSeenFresh is how old a climb the page read may be to count a poll
// answer's place on it (static/js/main.js CLIMB_FRESH_MS).
const climbSeenFresh = 2 * time.Minute

// onClimb is the climb a waiting answer at now from place pos told pace
// counts on (static/js/main.js): the one the page last read (seen), as it is
// now, when the pace is the climb's for the place; else nil.
func onClimb(seen *statusAnswer, now time.Time, pos, pace float64) *room.Climb {
	if seen == nil || seen.Climb == nil || now.Sub(seen.at) >= climbSeenFresh || pace <= 0 {
		return nil
	}
	c := seen.Climb.After(now.Sub(seen.at).Minutes())
	if !samePace(pace, c.PaceAt(pos)) {
		return nil
	}
	return &c
}

// Channel is how a visitor's page learned something.
type Channel int

// The channels.
const (
	ViaNone   Channel = iota
	ViaPoll           // an API answer (enqueue or poll)
	ViaStatus         // the watch's status read
)

func (c Channel) String() string { return [...]string{"none", "poll", "status"}[c] }

// Mark is what a visitor's page did after one of the run's marks (a change of
// the settings, the opening: Result.Marks), each the first after it.
type Mark struct {
	// ETAAt, ETA and ETAPos: the first ETA told (seconds), when and from what
	// place: a waiting API answer's etaSeconds, or the watch's position × 60
	// ÷ pace when it shows a new pace, a resume or the place at the opening.
	ETAAt  time.Time
	ETA    float64
	ETAPos float64
	// ShownAt: the first change of the view (its state, or the pace it
	// counts at), and through which channel.
	ShownAt  time.Time
	ShownVia Channel
	// PollAt: the first API answer (the next poll's).
	PollAt time.Time
}

// applied is the number of the run's marks whose instant has passed.
func (e *env) appliedMarks() int { return int(e.applied.Load()) }

func (v *Visitor) marks(e *env) []Mark {
	n := e.appliedMarks()
	if n == 0 {
		return nil
	}
	if len(v.Marks) < n {
		v.Marks = append(v.Marks, make([]Mark, n-len(v.Marks))...)
	}
	return v.Marks[:n]
}

// toldETA records an ETA told at now.
func (v *Visitor) toldETA(e *env, now time.Time, eta, pos float64) {
	if e.site != nil {
		e.site.told(v.ID, now, eta, pos)
	}
	ms := v.marks(e)
	for i := range ms {
		if ms[i].ETAAt.IsZero() {
			ms[i].ETAAt, ms[i].ETA, ms[i].ETAPos = now, eta, pos
		}
	}
}

// answered records an API answer at now.
func (v *Visitor) answered(e *env, now time.Time) {
	ms := v.marks(e)
	for i := range ms {
		if ms[i].PollAt.IsZero() {
			ms[i].PollAt = now
		}
	}
}

// show sets the view and records a change of it. As the page does, a read
// planned later than the new view's remaining wait allows is planned again
// (the first answer after the join, a poll that finds the place nearer).
func (v *Visitor) show(e *env, now time.Time, w view, via Channel) {
	changed := w.state != v.view.state || (w.state == "waiting" && w.pace != v.view.pace)
	first := v.view.state == ""
	v.view = w
	if first && e.watch && !v.watchAt.IsZero() {
		// The page's first read: a wait of its first view after the join,
		// which counts as the watch's last read until the first.
		v.view.readAt = now
		v.scheduleWatch(now)
	} else if e.watch && via == ViaPoll && !v.watchAt.IsZero() && w.state != "prequeue" && !w.readAt.IsZero() {
		rem := w.remaining(now)
		if v.watchAt.After(w.readAt.Add(cadence.ReadInterval(rem, 1))) {
			v.watchAt = maxTime(now, w.readAt.Add(cadence.ReadInterval(rem, v.rng.Float64())))
		}
	}
	if !changed {
		return
	}
	ms := v.marks(e)
	for i := range ms {
		if ms[i].ShownAt.IsZero() {
			ms[i].ShownAt, ms[i].ShownVia = now, via
		}
	}
}

// uniform is a duration uniformly in [lo, hi) from the visitor's own generator.
func (v *Visitor) uniform(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(v.rng.Float64()*float64(hi-lo))
}

// remaining is the visitor's remaining wait as its page knows it at now
// (static/js/watch.js remainingMs): the place shown at the pace counted at
// (paused or closed: the pace before), in the pre-queue the time to the
// opening; 0 when unknown.
func (w *view) remaining(now time.Time) time.Duration {
	switch w.state {
	case "prequeue":
		if w.opensAt.IsZero() {
			return 0
		}
		return max(0, w.opensAt.Sub(now))
	case "waiting", "paused", "closed":
		if w.pace <= 0 || w.pos <= 0 {
			return 0
		}
		if w.climb != nil && w.state == "waiting" {
			c := w.climb.After(now.Sub(w.at).Minutes())
			return time.Duration(c.Minutes(w.estimate(now)) * float64(time.Minute))
		}
		return time.Duration(w.estimate(now) * 60 / w.pace * float64(time.Second))
	}
	return 0
}

// scheduleWatch sets the next status read after one at now: ReadInterval of
// the remaining wait later, or, in the pre-queue, within OpeningRead after
// the opening when that comes first.
func (v *Visitor) scheduleWatch(now time.Time) {
	next := now.Add(cadence.ReadInterval(v.view.remaining(now), v.rng.Float64()))
	if v.view.state == "prequeue" && !v.view.opensAt.IsZero() && now.Before(v.view.opensAt) && !next.Before(v.view.opensAt) {
		next = v.view.opensAt.Add(v.uniform(0, OpeningRead))
	}
	v.watchAt = next
}

// pollSoon moves the next API poll to now + max(1 s, U(0.3, 0.6) × eta) when
// that is sooner than the one scheduled, from the instant at (now, or the
// opening).
func (v *Visitor) pollSoon(at time.Time, eta float64) {
	d := max(time.Second, time.Duration(eta*(0.3+0.3*v.rng.Float64())*float64(time.Second)))
	if t := at.Add(d); t.Before(v.pollAt) {
		v.pollAt = t
	}
}

// watch is one status read of the page at now, and what the page does with it.
func (v *Visitor) watch(ctx context.Context, e *env, now time.Time) {
	s := e.edge.read(ctx, e, now)
	v.StatusReads++
	v.view.readAt = now
	defer v.scheduleWatch(now)
	if s == nil {
		return
	}
	v.seen = s
	w := v.view
	switch {
	case s.Mode == "paused":
		if w.state != "paused" {
			w.pos, w.at, w.state = w.estimate(now), now, "paused"
			v.show(e, now, w, ViaStatus)
		}
	case s.Mode == "closed":
		if w.state != "closed" {
			w.pos, w.at, w.state = w.estimate(now), now, "closed"
			v.show(e, now, w, ViaStatus)
		}
	case !s.open():
		// Not open yet: an opening moved earlier brings the poll after it forward.
		if w.state == "prequeue" && s.OpensAt != nil && !w.opensAt.IsZero() && s.OpensAt.Before(w.opensAt) {
			w.opensAt = *s.OpensAt
			v.view = w
			if s.RatePerMinute > 0 && s.Waiting > 0 {
				// The draw is secret until the opening: a place drawn at random.
				place := float64(1 + v.rng.IntN(int(s.Waiting)))
				v.pollSoon(w.opensAt, place*60/s.RatePerMinute)
			}
		}
	case w.state == "prequeue":
		// The opening: the page computes its draw from the seed and its
		// visitor id, places itself by it and plans its poll from it
		// (static/js/watch.js placeAtOpening), or, when the draw cannot tell
		// the place (a small line, the front), polls soon.
		v.placeAtOpening(e, now, s)
	case w.state == "paused" || w.state == "waiting":
		v.watchPace(e, now, s)
	}
}

// watchPace is what a status read does to a waiting or paused view
// (static/js/watch.js decide): a resume, or a new pace for the place shown,
// counts on from it at the new pace and brings the poll forward. While the
// pace climbs the place's pace is its own on the climb (the status's
// ratePerMinute is the back of the line's); a climb that starts or ends
// under the pace told only changes how the place is counted.
func (v *Visitor) watchPace(e *env, now time.Time, s *statusAnswer) {
	w := v.view
	pos := w.estimate(now)
	own := s.RatePerMinute
	if s.Climb != nil && pos > 0 {
		own = s.Climb.PaceAt(pos)
	}
	same := w.state == "waiting" && samePace(own, w.pace)
	if same && (s.Climb == nil) == (w.climb == nil) {
		return
	}
	w.state, w.pos, w.at, w.pace, w.climb = "waiting", pos, now, own, s.Climb
	v.show(e, now, w, ViaStatus)
	if same || own <= 0 {
		return
	}
	eta := pos * 60 / own
	if s.Climb != nil {
		eta = s.Climb.Minutes(pos) * 60
	}
	v.toldETA(e, now, eta, pos)
	v.pollSoon(now, eta)
}

// The page's opening (static/js/watch.js): the share of the nearest place's
// wait its poll comes at, the share of a place within which 3 σ makes the
// estimate sure, the poll of a place not sure, the budget of a place and its
// margin.
const (
	openSpreadLo, openSpreadHi = 0.3, 0.5
	placeSure                  = 0.1
	soonSpread                 = 2 * time.Second
	maxPollAfter               = 5 * time.Minute
	budgetMargin               = 10 * time.Second
)

// estimatePlace is watch.js estimatePlace: the place the draw d gives in a
// line of n, its standard deviation, and whether it is sure enough to show.
func estimatePlace(d float64, n int64) (pos, sigma float64, sure bool) {
	pos = float64(min(n, int64(math.Floor(d*float64(n)))+1))
	sigma = math.Sqrt(float64(n) * d * (1 - d))
	return pos, sigma, 3*sigma <= placeSure*pos
}

// placeAtOpening is watch.js placeAtOpening at a status read at now that
// shows the room open: the place the visitor's draw gives, shown, and the
// next poll planned from it (replacing the server's when within the claim
// window), or, when the draw cannot tell, a poll within 1–3 s.
func (v *Visitor) placeAtOpening(e *env, now time.Time, s *statusAnswer) {
	tk, _ := token.PeekTicket(v.ticket)
	if s.DrawSeed == "" || tk.Visitor == "" {
		return
	}
	d := room.DrawOf(s.DrawSeed, tk.Visitor)
	pos, sigma, sure := estimatePlace(d, max(s.Waiting, 1))
	pace := s.RatePerMinute
	if pace <= 0 {
		pace = float64(s.AdmitPerMinute)
	}
	soonest := now.Add(time.Second)
	if !sure || pace <= 0 || s.Waiting <= 0 {
		if t := soonest.Add(v.uniform(0, soonSpread)); t.Before(v.pollAt) {
			v.pollAt = t
		}
		return
	}
	w := v.view
	w.state, w.pos, w.at, w.pace = "waiting", pos, now, s.RatePerMinute
	v.show(e, now, w, ViaStatus)
	v.toldETA(e, now, pos*60/pace, pos)
	opening := now
	if s.OpensAt != nil && s.OpensAt.Before(now) {
		opening = *s.OpensAt
	}
	nearest := max(1, pos-3*sigma)
	share := openSpreadLo + (openSpreadHi-openSpreadLo)*v.rng.Float64()
	at := opening.Add(time.Duration(share * nearest * 60 / pace * float64(time.Second)))
	if !w.repliedAt.IsZero() {
		if end := w.repliedAt.Add(maxPollAfter - budgetMargin); at.After(end) {
			at = end
		}
	}
	if at.Before(soonest) {
		at = soonest
	}
	if s.ClaimTTLSeconds <= 0 {
		return
	}
	rate := float64(s.AdmitPerMinute)
	if rate <= 0 {
		rate = pace
	}
	claim := time.Duration(s.ClaimTTLSeconds) * time.Second
	earliest := time.Duration(max(0, (nearest-rate/30)/(2*rate)) * float64(time.Minute))
	slack := min(claim/2, max(2*time.Second, min(10*time.Second, claim/10)))
	if !at.After(opening.Add(earliest + claim - slack)) {
		v.pollAt = at
	}
}

// paceTolerance is the page's (static/js/watch.js PACE_TOLERANCE): a pace
// within this share of the one counted at is the same pace, so a pace that
// moves a little from one second to the next moves no crowd's polls.
const paceTolerance = 0.1

// samePace is watch.js samePace: a and b within paceTolerance of the larger.
func samePace(a, b float64) bool { return math.Abs(a-b) <= paceTolerance*max(a, b) }
