// Package sim is Vestibule's flash-crowd simulator: it plays visitors against
// the HTTP API the way the waiting page does (enqueue, poll when pollAfterMs
// says, consume as the origin would when admitted, complete after a think
// time; some abandon) and reports what the crowd cost and saw.
//
// One visitor model serves two drivers: HTTP, against a running local stack in
// real time, and Virtual, which calls the API's Lambda handler in-process with a
// clock the simulator controls, against a real Redis, so a crowd of 100,000 and
// its half hour of queueing run in a couple of minutes. Both are bounded: a run
// stops when every visitor is done or MaxDuration has passed.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/vestibule-dev/vestibule/internal/token"
)

// Transport sends one API request: path is absolute ("/api/..."), bearer may be
// empty. It returns the status, the body and the Retry-After header (seconds, 0
// when absent). A non-nil error means the request did not complete.
type Transport interface {
	Do(ctx context.Context, method, path, bearer string, body []byte) (status int, respBody []byte, retryAfter int, err error)
}

// Behavior is what a visitor does beyond waiting.
type Behavior int

// The behaviours of the crowd.
const (
	Completer Behavior = iota // waits, consumes, completes after a think time
	CloseTab                  // stops polling at GiveUpAt (never returns); the heartbeat lapses
	NoConsume                 // waits, is admitted, never goes to the origin; the grant expires
	Leave                     // leaves the queue explicitly at GiveUpAt
)

func (b Behavior) String() string {
	return [...]string{"complete", "close-tab", "no-consume", "leave"}[b]
}

// Abandons reports whether the visitor may walk away before being admitted;
// such visitors are excluded from the FIFO order check.
func (b Behavior) Abandons() bool { return b == CloseTab || b == Leave }

// Outcome is how a visitor's run ended.
type Outcome int

// The outcomes.
const (
	Pending   Outcome = iota // still running when the run stopped
	Completed                // consumed and completed
	Admitted                 // saw the grant and did not consume it (NoConsume)
	Abandoned                // closed the tab or left before the grant
	Expired                  // the API said the place or grant was gone
	Failed                   // errors, refused ticket or consume
)

func (o Outcome) String() string {
	return [...]string{"pending", "completed", "admitted", "abandoned", "expired", "failed"}[o]
}

type phase int

const (
	arriving phase = iota
	waiting
	active
	done
)

// maxErrors bounds the retries of one visitor: after that many failed requests
// it gives up, so a dead stack cannot keep a run alive.
const maxErrors = 30

// Visitor is one simulated person and what the simulator measured of it.
type Visitor struct {
	ID       int
	Behavior Behavior
	Arrive   time.Time     // when the page first calls enqueue
	GiveUpAt time.Time     // CloseTab and Leave: when they walk away (if still waiting)
	Think    time.Duration // Completer: time on the origin between consume and complete

	phase      phase
	givingUp   bool // the next step walks away (scheduled at GiveUpAt)
	ticket     string
	entryToken string

	rng     *rand.Rand    // the visitor's own draws (the watch's timing), so parallel steps stay reproducible
	pollAt  time.Time     // the next API poll
	watchAt time.Time     // the next status read (the page's watch)
	view    view          // what the page shows
	seen    *statusAnswer // the last status the page read (its climb counts a poll's place)

	Seq          int64     // the ticket's sequence
	Score        float64   // the queue's order: the pre-queue's draw, or else the sequence
	EnqueuedAt   time.Time // when enqueue answered
	GrantAt      time.Time // the tick that admitted the visitor (grant deadline − claimTTL)
	SeenAt       time.Time // when the visitor first saw state "admitted"
	EndWaitAt    time.Time // end of waiting: seen, abandoned or expired
	WaitRequests int       // enqueue + polls + leave while waiting
	WaitPolls    int       // the polls among them
	Requests     int       // every request, origin calls included
	Consumes     int       // consume calls that succeeded (must be ≤ 1)
	ReplayStatus int       // status of a deliberate second consume (want 409)
	Errors       int       // 5xx, 429 and transport failures
	LastError    string    // the last unexpected answer, for the report
	Outcome      Outcome

	// What the moments read (docs/BENCHMARKS.md, "Moments").
	JoinETA     float64 // etaSeconds of the enqueue answer (−1: none, e.g. the pre-queue)
	JoinPos     int64   // the position of the enqueue answer
	StatusReads int     // the page's status reads (the watch), cached or fetched
	// Lost: an API answer said "expired" to a poll made when told, while the
	// visitor was waiting: the grant (or the place) ran out before it was seen.
	Lost  bool
	Marks []Mark // per mark of the run (Result.Marks), what the page did first after it

	// The eviction of a visitor who closed the tab while waiting (evict.go):
	// the last answer to a join or poll, the first probe that found the place
	// gone; silent is how long after the last answer the engine holds it
	// before a sweep may evict it (0 until an answer placed the visitor),
	// bound that and a pass of the sweep as the last probe that found it
	// held reckoned it, evictLate that a probe found it held past its bound.
	LastAnswer time.Time
	EvictedAt  time.Time
	silent     time.Duration
	bound      time.Duration
	evictLate  bool
	heldAt     time.Time // the last probe that found the place held

	Book *BookVisit // the visitor's booking, nil unless the crowd books (Config.Booking; booking.go)
}

// place is the JSON of enqueue and poll answers.
type place struct {
	Ticket         string     `json:"ticket"`
	State          string     `json:"state"`
	Position       int64      `json:"position"`
	Waiting        int64      `json:"waiting"`
	EtaSeconds     *int64     `json:"etaSeconds"`
	RatePerMinute  *float64   `json:"ratePerMinute"`
	Draw           *float64   `json:"draw"` // from the opening: the pre-queue draw the room orders the visitor by
	OpensAt        *time.Time `json:"opensAt"`
	PollAfterMs    int64      `json:"pollAfterMs"`
	EntryToken     string     `json:"entryToken"`
	GrantExpiresAt *time.Time `json:"grantExpiresAt"`
	Active         bool       `json:"active"`
}

// env is what a step needs besides the visitor.
type env struct {
	tr        Transport
	room      string
	claimTTL  time.Duration
	grace     time.Duration // heartbeatTTLSeconds: a silent place is held this long past its budget
	fixedPoll time.Duration // > 0: ignore pollAfterMs (the fixed-interval baseline page)
	origin    string        // the room's origin credential: consume and complete present it
	book      *bookEnv      // nil unless the crowd books (booking.go)
	site      *Origin       // nil unless the run has an origin (origin.go)

	watch   bool         // the page watches the status between polls
	edge    *edgeCache   // the room's status as the edge caches it
	log     *RequestLog  // every request by kind and second
	applied atomic.Int32 // the run's marks whose instant has passed (Result.Marks)
}

// errRetry marks a failed request the visitor retries after a pause.
var errRetry = errors.New("sim: retry")

// do sends a request and counts it.
func (v *Visitor) do(ctx context.Context, e *env, now time.Time, method, path, bearer string, body any, waitingReq bool) (int, []byte, time.Duration, error) {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	v.Requests++
	kind := kindOf(method, path)
	if waitingReq {
		v.WaitRequests++
		if kind == KindPoll {
			v.WaitPolls++
		}
	}
	e.log.Add(kind, now)
	status, resp, ra, err := e.tr.Do(ctx, method, path, bearer, b)
	if err != nil || status >= 500 || status == http.StatusTooManyRequests {
		v.Errors++
		v.LastError = fmt.Sprintf("%s %s: %d %s %v", method, path, status, resp, err)
		pause := time.Second
		if ra > 0 {
			pause = time.Duration(ra) * time.Second
		}
		return status, resp, pause, errRetry
	}
	if status >= 300 {
		v.LastError = fmt.Sprintf("%s %s: %d %s", method, path, status, resp)
	}
	return status, resp, 0, nil
}

// step runs the visitor's next action at now and returns when it wants to act
// again; ok is false when the visitor is done.
func (v *Visitor) step(ctx context.Context, e *env, now time.Time) (next time.Time, ok bool) {
	if v.Errors >= maxErrors {
		return v.finish(now, Failed)
	}
	roomPath := "/api/rooms/" + e.room
	switch v.phase {
	case arriving:
		status, body, pause, err := v.do(ctx, e, now, "POST", roomPath+"/enqueue", "", nil, true)
		if err != nil {
			return now.Add(pause), true
		}
		var p place
		if status != http.StatusOK || json.Unmarshal(body, &p) != nil || p.Ticket == "" {
			return v.finish(now, Failed)
		}
		v.ticket, v.EnqueuedAt, v.phase = p.Ticket, now, waiting
		v.Seq, v.Score = ticketOrder(p.Ticket)
		v.JoinETA, v.JoinPos = -1, p.Position
		if p.EtaSeconds != nil && p.State == "waiting" {
			v.JoinETA = float64(*p.EtaSeconds)
		}
		if e.watch {
			v.scheduleWatch(now)
		}
		return v.onPlace(ctx, e, now, p)
	case waiting:
		// A batch runs events due within the driver's granularity, so the
		// step scheduled for GiveUpAt may run a little before it: it walks
		// away all the same (polling instead would poll too soon: 429).
		if v.Behavior.Abandons() && (v.givingUp || !now.Before(v.GiveUpAt)) {
			if v.Behavior == Leave {
				if _, _, pause, err := v.do(ctx, e, now, "POST", roomPath+"/leave", v.ticket, nil, true); err != nil {
					return now.Add(pause), true
				}
			}
			v.EndWaitAt = now
			return v.finish(now, Abandoned)
		}
		if e.watch && v.watchAt.Before(v.pollAt) {
			v.watch(ctx, e, now)
			return v.next(now)
		}
		status, body, pause, err := v.do(ctx, e, now, "GET", roomPath+"/poll", v.ticket, nil, true)
		if err != nil {
			v.pollAt = now.Add(pause)
			return v.next(now)
		}
		var p place
		if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
			return v.finish(now, Failed)
		}
		if p.State == "expired" {
			v.Lost = true // polled when told (a walk-away never polls past GiveUpAt)
		}
		return v.onPlace(ctx, e, now, p)
	case active:
		if v.Book != nil && v.Book.busy() {
			return v.book(ctx, e, now)
		}
		_, _, pause, err := v.do(e.originCtx(ctx, now, false), e, now, "POST", "/api/complete", e.origin, map[string]string{"token": v.entryToken}, false)
		if err != nil {
			return now.Add(pause), true
		}
		return v.finish(now, Completed)
	}
	return now, false
}

// onPlace acts on an enqueue or poll answer.
func (v *Visitor) onPlace(ctx context.Context, e *env, now time.Time, p place) (time.Time, bool) {
	v.answered(e, now)
	if p.State == "waiting" || p.State == "paused" || p.State == "prequeue" {
		pace := 0.0
		if p.RatePerMinute != nil {
			pace = *p.RatePerMinute
		}
		v.LastAnswer, v.silent = now, silentFor(p.State, p.Position, pace, e.grace)
	}
	v.showPlace(e, now, p)
	switch p.State {
	case "admitted":
		v.SeenAt, v.EndWaitAt = now, now
		if p.GrantExpiresAt != nil {
			v.GrantAt = p.GrantExpiresAt.Add(-e.claimTTL)
		}
		if v.Behavior == NoConsume || p.EntryToken == "" {
			return v.finish(now, Admitted)
		}
		v.entryToken = p.EntryToken
		// The origin consumes the token, then (as an attacker or a double
		// submit would) presents it once more: the replay must be refused.
		tok := map[string]string{"token": p.EntryToken}
		landed := e.originCtx(ctx, now, true)
		for {
			status, body, _, err := v.do(landed, e, now, "POST", "/api/consume", e.origin, tok, false)
			if err != nil {
				if v.Errors >= maxErrors {
					return v.finish(now, Failed)
				}
				continue // the origin retries at once; the token is valid for claimTTL
			}
			if status != http.StatusOK {
				return v.finish(now, Failed)
			}
			v.Consumes++
			v.Book = e.book.start(v, body)
			break
		}
		status, _, _, err := v.do(ctx, e, now, "POST", "/api/consume", e.origin, tok, false)
		if err == nil {
			v.ReplayStatus = status
			if status == http.StatusOK {
				v.Consumes++
			}
		}
		v.phase = active
		if v.Book != nil {
			return now.Add(v.Think / 4), true // the hold (booking.go)
		}
		return now.Add(v.Think), true
	case "expired", "closed":
		v.EndWaitAt = now
		return v.finish(now, Expired)
	}
	d := time.Duration(p.PollAfterMs) * time.Millisecond
	if e.fixedPoll > 0 {
		d = e.fixedPoll
	}
	v.pollAt = now.Add(max(d, 100*time.Millisecond))
	return v.next(now)
}

// next is when a waiting visitor acts again: the next poll, or the next
// status read when the page watches and it comes first; an abandoner whose
// next action would come after GiveUpAt walks away then instead.
func (v *Visitor) next(now time.Time) (time.Time, bool) {
	t := v.pollAt
	if !v.watchAt.IsZero() && v.watchAt.Before(t) {
		t = v.watchAt
	}
	if v.Behavior.Abandons() && t.After(v.GiveUpAt) {
		v.givingUp = true
		return v.GiveUpAt, true
	}
	return t, true
}

// showPlace is the page's view after an API answer (enqueue or poll), and
// the ETA it tells.
func (v *Visitor) showPlace(e *env, now time.Time, p place) {
	w := v.view
	w.state, w.at, w.repliedAt = p.State, now, now
	if p.Draw != nil {
		v.Score = *p.Draw // the ticket hides it; the room says it from the opening
	}
	switch p.State {
	case "waiting":
		w.pos, w.pace = float64(p.Position), 0
		if p.RatePerMinute != nil {
			w.pace = *p.RatePerMinute
		}
		w.climb = onClimb(v.seen, now, w.pos, w.pace)
		if p.EtaSeconds != nil {
			v.toldETA(e, now, float64(*p.EtaSeconds), w.pos)
		}
	case "paused", "closed":
		if p.Position > 0 {
			w.pos = float64(p.Position)
		}
	case "prequeue":
		if p.OpensAt != nil {
			w.opensAt = *p.OpensAt
		}
	}
	v.show(e, now, w, ViaPoll)
}

func (v *Visitor) finish(now time.Time, o Outcome) (time.Time, bool) {
	v.phase, v.Outcome = done, o
	// A visitor done holds no ticket nor token any more: a crowd of
	// millions keeps only what the report reads.
	v.ticket, v.entryToken, v.rng = "", "", nil
	if v.EndWaitAt.IsZero() && !v.EnqueuedAt.IsZero() {
		v.EndWaitAt = now
	}
	return now, false
}

// ticketOrder reads the sequence and the queue's score of a ticket (the
// draw of a pre-queue ticket, or else the sequence) without verifying it:
// the simulator is a client and only wants its own place in the order. A
// ticket hides its draw (format 3): the room's answers say it from the
// opening (showPlace).
func ticketOrder(tok string) (int64, float64) {
	tk, _ := token.PeekTicket(tok)
	if tk.Draw > 0 {
		return tk.Seq, tk.Draw
	}
	return tk.Seq, float64(tk.Seq)
}
