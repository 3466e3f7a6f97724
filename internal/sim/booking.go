package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/printer"
)

// Booking drives every visitor who consumes its entry through the booking
// kit (docs/BOOKING.md) over the same API and Redis: after consume, the
// visitor reads the event's seat map, holds one seat (or one or two units of
// stock) with the booking session consume answered, then pays — the origin
// confirms the hold with the room's origin credential and an idempotency key,
// and retries the confirm once, which must return the same order — or
// abandons: the origin releases the hold, or the visitor walks away and the
// hold runs out. The visitor then completes its room session as before.
// Two more behaviours show what happens while a hold is live: a visitor
// whose session ends mid-hold (the origin completes it at once; its seats
// must be free that instant, not when the hold's TTL runs out), and a slow
// payment, whose origin extends the hold once or twice and confirms after
// the hold's first TTL has run out.
//
// The event is named after the room (the recommended layout: the hold checks
// the session in the same script) and defined through the admin API before
// the crowd arrives. Timing follows the visitor's think time T: the seat map
// at consume + T/4, the hold T/8 later (what the visitor clicks may have gone
// meanwhile: a refusal sends it back to the map a second later), the confirm
// or release T/2 after the hold, the complete T/8 after that.
type Booking struct {
	Seats int   // seats S1 … Seats of the demo event (0: none)
	Stock int64 // units of the sku "ga", general admission (0: none)
	// Confirm is the share of holders who pay (the hold is confirmed); of the
	// others, Release have the origin release the hold, the rest walk away and
	// let it expire.
	Confirm, Release float64
	// EndMidHold is the share of holders whose session ends while they hold:
	// before paying, the origin completes the session (the visitor left);
	// the others pay, release or walk away as above.
	EndMidHold float64
	// Extend is the share of payers whose payment is slow: the origin
	// extends the hold once or twice (half each), TTL/2 apart, and confirms
	// 3/4 of a TTL after the last extension, past the end the hold had before
	// it. The event allows 2 extensions of a hold.
	Extend       float64
	HoldTTL      time.Duration // default 60 s
	SessionLimit int64         // items per session (default 4)
	Tries        int           // hold attempts, the first and those after a refusal (default 3)
}

func (b *Booking) defaults() {
	if b.HoldTTL <= 0 {
		b.HoldTTL = time.Minute
	}
	if b.SessionLimit <= 0 {
		b.SessionLimit = 4
	}
	if b.Tries <= 0 {
		b.Tries = 3
	}
}

// BookOutcome is how a visitor's booking ended.
type BookOutcome int

// The booking outcomes.
const (
	BookPending   BookOutcome = iota // still under way when the run ended
	BookConfirmed                    // held and bought
	BookReleased                     // held, abandoned, released by the origin
	BookWalked                       // held, abandoned, left to expire
	BookLate                         // held, but the confirm came after the hold ran out (410/409)
	BookNothing                      // the seat map showed nothing left of what it wanted
	BookGaveUp                       // refused Tries times (someone else was faster)
	BookFailed                       // an answer no booking visitor should get
	BookEnded                        // held, and the session ended mid-hold (the origin completed it)
)

func (o BookOutcome) String() string {
	return [...]string{"pending", "confirmed", "released", "walked-away", "late", "nothing-left", "gave-up", "failed", "ended-mid-hold"}[o]
}

// BookVisit is one visitor's booking and what the simulator saw of it.
type BookVisit struct {
	step    int            // bookMap, bookHold, bookPay, bookDone
	session string         // consume's bookingSession (bearer of the hold)
	want    map[string]any // the hold request the visitor picked on the map

	wantUnits int64 // > 0: units of "ga"; 0: one seat
	pay, drop bool  // confirms; (if not) the origin releases
	endMid    bool  // the session ends while it holds
	extends   int   // extensions before the confirm (a slow payment)

	Tries     int // hold calls
	Refused   int // 409 seat_taken or sold_out
	RefusedBy map[string]int
	NegStock  int // negative stock figures seen (in views and refusals)
	Errors    int // failed booking requests (5xx, 429, transport), retried
	SessionID string
	Token     string
	ExpiresAt time.Time // the hold's end, as the last extension moved it
	HeldAt    time.Time // when the hold was asked for
	Seats     []string
	Units     map[string]int64
	Order     string // the order confirm answered
	ReplayBad bool   // the retried confirm was not the same order, or not 200
	LastError string // the last unexpected answer
	Outcome   BookOutcome

	// A slow payment: the hold's first end, the extensions made, and those
	// answered wrongly (not 200 with a later end, or a retried extension not
	// answered the same end).
	FirstExpiresAt time.Time
	Extensions     int // extensions asked for
	ExtendBad      int
	extendedOK     int       // extensions answered 200 with a later end
	ConfirmAt      time.Time // when the confirm that made the order was sent

	// A session ended mid-hold: when, the states the seat map showed its
	// seats in right after (nil: not read), and whether a confirm after the
	// end (a payment that lands late) made an order.
	EndedAt      time.Time
	AfterEnd     map[string]string
	LateAccepted bool

	// lastFailure is the last failed request (5xx, 429, transport).
	lastFailure string
	completeAt  time.Time
}

// The steps of a booking.
const (
	bookMap  = iota // read the seat map, pick
	bookHold        // hold what was picked
	bookPay         // confirm, release or walk away
	bookDone        // complete the room session
)

// busy reports whether the booking has steps left before the complete.
func (bv *BookVisit) busy() bool { return bv.step < bookDone }

// bookEnv is the event every visitor books on.
type bookEnv struct {
	cfg   Booking
	event string
	seed  uint64
}

// setupBooking defines the demo event through the admin API; nil without
// c.Booking.
func setupBooking(ctx context.Context, d Driver, adminKey string, c Config) (*bookEnv, error) {
	if c.Booking == nil {
		return nil, nil
	}
	b := *c.Booking
	b.defaults()
	if b.Seats <= 0 && b.Stock <= 0 {
		return nil, fmt.Errorf("%w: booking without seats or stock", ErrSetup)
	}
	def := map[string]any{"seats": seatList(b.Seats), "holdTTLSeconds": int64(b.HoldTTL / time.Second),
		"sessionLimit": b.SessionLimit, "maxHoldExtensions": 2}
	// A slow payer holds for up to 1.75 TTL after T/4 + T/8: its room
	// session must outlive that, or the hold ends with it.
	if need := c.ThinkMax + 2*b.HoldTTL; b.Extend > 0 && time.Duration(c.RoomConfig.SessionTTLSeconds)*time.Second < need {
		return nil, fmt.Errorf("%w: booking: extending holds needs sessionTTLSeconds ≥ think-max + 2 × hold TTL (%s)", ErrSetup, need)
	}
	if b.Stock > 0 {
		def["stock"] = map[string]int64{"ga": b.Stock}
	}
	body, _ := json.Marshal(def)
	status, resp, _, err := d.Do(ctx, "PUT", "/api/admin/events/"+c.Room, adminKey, body)
	if err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("%w: PUT event: status %d: %s %v", ErrSetup, status, resp, err)
	}
	return &bookEnv{cfg: b, event: c.Room, seed: c.Seed}, nil
}

func seatList(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "S" + strconv.Itoa(i+1)
	}
	return out
}

// start opens a visitor's booking from consume's answer; nil without booking.
func (b *bookEnv) start(v *Visitor, consumed []byte) *BookVisit {
	if b == nil {
		return nil
	}
	var c struct {
		BookingSession string `json:"bookingSession"`
	}
	_ = json.Unmarshal(consumed, &c) // no session in the answer: the visit books nothing, and the counts show it
	bv := &BookVisit{session: c.BookingSession, RefusedBy: map[string]int{}}
	rng := rand.New(rand.NewPCG(b.seed^0xb00c, uint64(v.ID)))
	units := b.cfg.Stock > 0 && (b.cfg.Seats == 0 || rng.IntN(2) == 0)
	if units {
		bv.wantUnits = 1 + rng.Int64N(2)
	}
	bv.pay = rng.Float64() < b.cfg.Confirm
	bv.drop = rng.Float64() < b.cfg.Release
	bv.endMid = rng.Float64() < b.cfg.EndMidHold
	if slow, twice := rng.Float64() < b.cfg.Extend, rng.IntN(2) == 1; bv.pay && !bv.endMid && slow {
		bv.extends = 1
		if twice {
			bv.extends = 2
		}
	}
	return bv
}

// eventView is GET /api/events/{event}.
type eventView struct {
	Seats map[string]string `json:"seats"`
	Stock map[string]int64  `json:"stock"`
}

// apiErr is the error body of a refusal.
type apiErr struct {
	Error struct {
		Code      string `json:"code"`
		Available *int64 `json:"available"`
	} `json:"error"`
}

// frontSeats: a visitor picks among the first this many available seats (by
// number), as a crowd goes for the best seats, so holds race each other.
const frontSeats = 8

// book runs the visitor's next booking step; once the booking is over it
// returns when the visitor completes its session.
func (v *Visitor) book(ctx context.Context, e *env, now time.Time) (time.Time, bool) {
	bv, b := v.Book, e.book
	do := func(method, path, bearer string, headers map[string]string, body any) (int, []byte, time.Duration, bool) {
		before := v.Errors
		c := ctx
		if headers != nil {
			c = WithHeaders(ctx, headers)
		}
		status, resp, pause, err := v.do(c, e, now, method, path, bearer, body, false)
		if err != nil {
			bv.Errors += v.Errors - before
			bv.LastError, bv.lastFailure = v.LastError, v.LastError
			return 0, nil, pause, false
		}
		return status, resp, 0, true
	}
	end := func(o BookOutcome, after time.Duration) (time.Time, bool) {
		bv.Outcome, bv.step = o, bookDone
		bv.completeAt = now.Add(after)
		return bv.completeAt, true
	}
	think := v.Think
	rest := think * 5 / 8 // what is left of T when a booking ends before its hold
	evPath := "/api/events/" + b.event
	switch bv.step {
	case bookMap: // read the seat map and pick
		if bv.session == "" {
			bv.LastError = "consume answered no bookingSession"
			return end(BookFailed, rest)
		}
		status, body, pause, ok := do("GET", evPath, "", nil, nil)
		if !ok {
			return now.Add(pause), true
		}
		var view eventView
		if status != http.StatusOK || json.Unmarshal(body, &view) != nil {
			bv.LastError = fmt.Sprintf("GET %s: %d %s", evPath, status, body)
			return end(BookFailed, rest)
		}
		for _, n := range view.Stock {
			if n < 0 {
				bv.NegStock++
			}
		}
		if bv.wantUnits > 0 {
			if view.Stock["ga"] <= 0 {
				return end(BookNothing, rest)
			}
			bv.want = map[string]any{"units": map[string]int64{"ga": bv.wantUnits}}
		} else {
			free := availableSeats(view.Seats)
			if len(free) == 0 {
				return end(BookNothing, rest)
			}
			rng := rand.New(rand.NewPCG(b.seed^0x5ea7, uint64(v.ID)<<8|uint64(bv.Tries)))
			bv.want = map[string]any{"seats": []string{free[rng.IntN(min(len(free), frontSeats))]}}
		}
		bv.step = bookHold
		return now.Add(think / 8), true
	case bookHold:
		bv.Tries++
		status, body, pause, ok := do("POST", evPath+"/holds", bv.session, nil, bv.want)
		if !ok {
			bv.Tries--
			return now.Add(pause), true
		}
		switch status {
		case http.StatusCreated:
			var h struct {
				Session   string           `json:"session"`
				Token     string           `json:"token"`
				Seats     []string         `json:"seats"`
				Units     map[string]int64 `json:"units"`
				ExpiresAt time.Time        `json:"expiresAt"`
			}
			if json.Unmarshal(body, &h) != nil || h.Token == "" {
				bv.LastError = fmt.Sprintf("hold: %s", body)
				return end(BookFailed, rest)
			}
			bv.SessionID, bv.Token, bv.Seats, bv.Units, bv.ExpiresAt = h.Session, h.Token, h.Seats, h.Units, h.ExpiresAt
			bv.FirstExpiresAt, bv.HeldAt = h.ExpiresAt, now
			bv.step = bookPay
			switch ttl := b.cfg.HoldTTL; {
			case bv.endMid: // well before the hold's end
				return now.Add(min(think/8, ttl/4)), true
			case bv.extends > 0: // the first extension, halfway through the hold
				return now.Add(ttl / 2), true
			}
			return now.Add(think / 2), true
		case http.StatusConflict:
			var ae apiErr
			_ = json.Unmarshal(body, &ae) // not the API's error JSON: no stock figure to check
			if ae.Error.Available != nil && *ae.Error.Available < 0 {
				bv.NegStock++
			}
			if code := ae.Error.Code; code == "seat_taken" || code == "sold_out" {
				bv.Refused++
				bv.RefusedBy[code]++
				if bv.Tries >= b.cfg.Tries {
					return end(BookGaveUp, rest)
				}
				bv.step = bookMap
				return now.Add(time.Second), true // the page redraws the map; the visitor picks again
			}
		}
		bv.LastError = fmt.Sprintf("hold: %d %s", status, body)
		return end(BookFailed, rest)
	case bookPay: // pay, or abandon
		holdPath := evPath + "/holds/" + bv.Token
		sess := map[string]string{"session": bv.SessionID}
		if bv.endMid {
			return v.endMidHold(e, now, do)
		}
		if bv.pay && bv.Extensions < bv.extends {
			return v.extendHold(e, now, do)
		}
		if !bv.pay {
			if !bv.drop {
				return end(BookWalked, think/8)
			}
			status, body, pause, ok := do("POST", holdPath+"/release", e.origin, nil, sess)
			if !ok {
				return now.Add(pause), true
			}
			if status != http.StatusOK {
				bv.LastError = fmt.Sprintf("release: %d %s", status, body)
				return end(BookFailed, think/8)
			}
			return end(BookReleased, think/8)
		}
		key := map[string]string{"Idempotency-Key": "pay-" + bv.Token}
		bv.ConfirmAt = now
		status, body, pause, ok := do("POST", holdPath+"/confirm", e.origin, key, sess)
		if !ok {
			return now.Add(pause), true // a retry with the same key is safe: that is what the key is for
		}
		var o struct {
			Order string `json:"order"`
		}
		switch {
		case status == http.StatusCreated && json.Unmarshal(body, &o) == nil && o.Order != "":
		case status == http.StatusOK && json.Unmarshal(body, &o) == nil && o.Order != "":
			// A retry after a failed request found the order made: the same.
		case status == http.StatusGone || status == http.StatusConflict:
			bv.LastError = fmt.Sprintf("confirm: %d %s", status, body)
			return end(BookLate, think/8)
		default:
			bv.LastError = fmt.Sprintf("confirm: %d %s", status, body)
			return end(BookFailed, think/8)
		}
		bv.Order = o.Order
		// A double submit: the same confirm again must answer the same order, 200.
		for range maxErrors {
			status, body, _, ok = do("POST", holdPath+"/confirm", e.origin, key, sess)
			if ok {
				var again struct {
					Order string `json:"order"`
				}
				_ = json.Unmarshal(body, &again) // not JSON: no order, so the replay counts as bad
				bv.ReplayBad = status != http.StatusOK || again.Order != o.Order
				break
			}
		}
		return end(BookConfirmed, think/8)
	}
	return now, true
}

// doFunc sends a booking request and counts it (book's do): ok is false
// after a failure (5xx, 429, transport) to retry after the pause.
type doFunc func(method, path, bearer string, headers map[string]string, body any) (int, []byte, time.Duration, bool)

// extendHold makes the slow payer's next extension, then tries it once more
// as a retry after a lost answer would (the same end, nothing added), and
// schedules the next extension TTL/2 later or the confirm 3/4 of a TTL after
// the last one: past the end the hold had before it, before its new end.
func (v *Visitor) extendHold(e *env, now time.Time, do doFunc) (time.Time, bool) {
	bv, ttl := v.Book, e.book.cfg.HoldTTL
	n := bv.Extensions + 1
	path := "/api/events/" + e.book.event + "/holds/" + bv.Token + "/extend"
	req := map[string]any{"session": bv.SessionID, "extension": n}
	status, body, pause, ok := do("POST", path, e.origin, nil, req)
	if !ok {
		return now.Add(pause), true // the same number again: a replay if the first one extended
	}
	type answer struct {
		ExpiresAt  time.Time `json:"expiresAt"`
		Extensions int       `json:"extensions"`
	}
	var x answer
	if status != http.StatusOK || json.Unmarshal(body, &x) != nil || x.Extensions != n || !x.ExpiresAt.After(bv.ExpiresAt) {
		bv.ExtendBad++
		bv.LastError = fmt.Sprintf("extend %d: %d %s", n, status, body)
	} else {
		bv.ExpiresAt = x.ExpiresAt
		bv.extendedOK++
		for range maxErrors {
			status, body, _, ok := do("POST", path, e.origin, nil, req)
			if !ok {
				continue
			}
			var y answer
			if status != http.StatusOK || json.Unmarshal(body, &y) != nil || y.Extensions != n || !y.ExpiresAt.Equal(x.ExpiresAt) {
				bv.ExtendBad++
				bv.LastError = fmt.Sprintf("extend %d retried: %d %s, first answered %s", n, status, body, x.ExpiresAt)
			}
			break
		}
	}
	bv.Extensions = n
	if n < bv.extends {
		return now.Add(ttl / 2), true
	}
	return now.Add(ttl * 3 / 4), true
}

// endMidHold ends the holder's room session while it holds: the origin
// completes it (the visitor left), then at once the seat map is read (the
// seats must not be held by it any more) and the origin tries a confirm, as
// a payment landing after the end would: it must be refused. The visitor is
// then done.
func (v *Visitor) endMidHold(e *env, now time.Time, do doFunc) (time.Time, bool) {
	bv := v.Book
	status, body, pause, ok := do("POST", "/api/complete", e.origin, nil, map[string]string{"token": v.entryToken})
	if !ok {
		return now.Add(pause), true
	}
	if status != http.StatusOK {
		bv.LastError = fmt.Sprintf("complete mid-hold: %d %s", status, body)
		bv.Outcome, bv.step = BookFailed, bookDone
		return now, true
	}
	bv.EndedAt = now
	evPath := "/api/events/" + e.book.event
	for range maxErrors {
		status, body, _, ok := do("GET", evPath, "", nil, nil)
		if !ok {
			continue
		}
		var view eventView
		if status == http.StatusOK && json.Unmarshal(body, &view) == nil {
			bv.AfterEnd = map[string]string{}
			for _, s := range bv.Seats {
				bv.AfterEnd[s] = view.Seats[s]
			}
		}
		break
	}
	key := map[string]string{"Idempotency-Key": "late-" + bv.Token}
	for range maxErrors {
		status, body, _, ok := do("POST", evPath+"/holds/"+bv.Token+"/confirm", e.origin, key, map[string]string{"session": bv.SessionID})
		if !ok {
			continue
		}
		var o struct {
			Order string `json:"order"`
		}
		if (status == http.StatusCreated || status == http.StatusOK) && json.Unmarshal(body, &o) == nil && o.Order != "" {
			bv.LateAccepted, bv.Order = true, o.Order
			bv.LastError = fmt.Sprintf("confirm after the session ended: %d %s", status, body)
		}
		break
	}
	bv.Outcome, bv.step = BookEnded, bookDone
	return v.finish(now, Completed)
}

// availableSeats lists the available seats by number (S1, S2, …).
func availableSeats(seats map[string]string) []string {
	var free []string
	for s, st := range seats {
		if st == "available" {
			free = append(free, s)
		}
	}
	slices.SortFunc(free, func(a, b string) int {
		x, _ := strconv.Atoi(strings.TrimPrefix(a, "S"))
		y, _ := strconv.Atoi(strings.TrimPrefix(b, "S"))
		return x - y
	})
	return free
}

// headersKey carries extra request headers in a context.
type headersKey struct{}

// WithHeaders returns a context whose requests (Transport.Do of the drivers)
// also carry these headers, such as a confirm's Idempotency-Key.
func WithHeaders(ctx context.Context, h map[string]string) context.Context {
	return context.WithValue(ctx, headersKey{}, h)
}

// headersFrom returns the headers WithHeaders put in ctx.
func headersFrom(ctx context.Context) map[string]string {
	h, _ := ctx.Value(headersKey{}).(map[string]string)
	return h
}

// BookingResult is the event as the admin API shows it once every hold the
// crowd left has run out.
type BookingResult struct {
	Event    string
	Seats    map[string]string
	Stock    map[string]int64
	Counters map[string]int64
	Reads    int // admin reads it took (each expires up to 1,000 overdue holds)
}

// finishBooking waits (real time) or moves the clock (virtual) past the
// expiry of every hold the crowd did not settle, then reads the event until
// every hold is confirmed, released or expired.
func finishBooking(ctx context.Context, d Driver, adminKey string, b *bookEnv, vs []*Visitor) (*BookingResult, error) {
	if b == nil {
		return nil, nil
	}
	var last time.Time
	for _, v := range vs {
		bv := v.Book
		if bv == nil {
			continue
		}
		if bv.Token != "" && bv.Outcome != BookConfirmed && bv.Outcome != BookReleased && bv.ExpiresAt.After(last) {
			last = bv.ExpiresAt
		}
		if bv.Errors > 0 {
			// A failed request may have made a hold the visitor never heard of:
			// it runs out within a TTL from now.
			last = maxTime(last, d.Now().Add(b.cfg.HoldTTL))
		}
	}
	if err := d.AdvanceTo(ctx, last.Add(time.Millisecond)); err != nil {
		return nil, err
	}
	r := &BookingResult{Event: b.event}
	for r.Reads < 100 {
		r.Reads++
		status, body, _, err := d.Do(ctx, "GET", "/api/admin/events/"+b.event, adminKey, nil)
		var info struct {
			Seats    map[string]string `json:"seats"`
			Stock    map[string]int64  `json:"stock"`
			Counters map[string]int64  `json:"counters"`
		}
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &info) != nil {
			return nil, fmt.Errorf("sim: GET event: status %d: %.200s %v", status, body, err)
		}
		r.Seats, r.Stock, r.Counters = info.Seats, info.Stock, info.Counters
		c := r.Counters
		if c["holds"] == c["confirmed"]+c["released"]+c["expired"]+c["ended"] {
			break
		}
	}
	return r, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// BookingSummary is the booking part of the report.
type BookingSummary struct {
	Seats, Stock int64 // the inventory
	Outcomes     map[string]int

	HoldsTried, HoldsGranted, HoldsRefused int
	RefusedBy                              map[string]int
	Errors                                 int    // booking requests failed (5xx, 429, transport) and retried
	LastError                              string // one of those failures, for the report

	OrdersConfirmed int
	SeatsSold       int   // seats the event says sold
	SeatsLeft       int   // seats the event says available
	UnitsSold       int64 // units in the visitors' orders
	StockLeft       int64
	Counters        map[string]int64 // the engine's counters at the end

	// Invariants (all must be 0).
	DoubleSold      int   // seats in more than one of the visitors' orders
	SoldMismatch    int   // seats sold without one of the visitors' orders, or ordered but not sold
	NegativeStock   int   // negative stock figures seen during the run or at the end
	StockMismatch   int64 // initial stock − units ordered − stock left
	Unsettled       int64 // holds neither confirmed, released nor expired at the end (and seats still held)
	ReplaysBad      int   // retried confirms not answered 200 with the same order
	CounterMismatch int   // the engine's holds, confirmed and extended counters vs what the visitors were answered (checked when no request failed)

	// Sessions that ended mid-hold: how many, their seats as the map showed
	// them right after the end (available, or held again by another
	// visitor's hold made before the ended hold's end), the seats whose map
	// was not read (a request failed), and the holds the engine must count
	// "ended" (walkers who completed before their hold's end included),
	// give or take those whose complete came about their hold's end.
	// EndedSeatsTaken: of those seats, the ones another visitor held before
	// the ended hold would have run out (whatever the map showed).
	EndedMidHold, EndedSeats, EndedSeatsFree, EndedSeatsReheld, EndedSeatsUnread, EndedSeatsTaken int
	EndedExpected, EndedAmbiguous                                                                 int64
	// Slow payments: payers who extended, the extensions granted, and the
	// orders confirmed after the hold's first end.
	Extenders, ExtensionsGranted, ExtendedConfirmed int

	// Invariants of those (all must be 0).
	EndedSeatsHeld    int // seats of an ended session still held, by no later hold
	LateConfirms      int // confirms after the session ended that made an order
	EndedMismatch     int // the engine's ended counter outside [EndedExpected, EndedExpected + EndedAmbiguous] (checked when no request failed)
	ExtendsBad        int // extensions not answered 200 with a later end, or retried ones not the same end
	ExtendNotHonoured int // slow payers whose confirm past the first end was refused
}

// OK reports whether every booking invariant held.
func (s *BookingSummary) OK() bool {
	return s == nil || (s.DoubleSold == 0 && s.SoldMismatch == 0 && s.NegativeStock == 0 && s.StockMismatch == 0 &&
		s.Unsettled == 0 && s.ReplaysBad == 0 && s.CounterMismatch == 0 &&
		s.EndedSeatsHeld == 0 && s.LateConfirms == 0 && s.EndedMismatch == 0 && s.ExtendsBad == 0 && s.ExtendNotHonoured == 0)
}

// summarizeBooking checks the visitors' bookings against the event at the end.
func (r *Result) summarizeBooking() *BookingSummary {
	if r.Booking == nil || r.Config.Booking == nil {
		return nil
	}
	b := *r.Config.Booking
	s := &BookingSummary{Seats: int64(b.Seats), Stock: b.Stock, Outcomes: map[string]int{}, RefusedBy: map[string]int{},
		Counters: r.Booking.Counters}
	ordered := map[string]int{}
	for _, v := range r.Visitors {
		bv := v.Book
		if bv == nil {
			continue
		}
		s.Outcomes[bv.Outcome.String()]++
		s.HoldsTried += bv.Tries
		s.HoldsRefused += bv.Refused
		for k, n := range bv.RefusedBy {
			s.RefusedBy[k] += n
		}
		s.Errors += bv.Errors
		if bv.lastFailure != "" {
			s.LastError = bv.lastFailure
		}
		s.NegativeStock += bv.NegStock
		if bv.Token != "" {
			s.HoldsGranted++
		}
		if bv.ReplayBad {
			s.ReplaysBad++
		}
		if bv.Order != "" {
			s.OrdersConfirmed++
			for _, seat := range bv.Seats {
				ordered[seat]++
			}
			s.UnitsSold += bv.Units["ga"]
		}
	}
	for seat, n := range ordered {
		if n > 1 {
			s.DoubleSold++
		}
		if r.Booking.Seats[seat] != "sold" {
			s.SoldMismatch++
		}
	}
	for seat, st := range r.Booking.Seats {
		switch st {
		case "sold":
			s.SeatsSold++
			if ordered[seat] == 0 {
				s.SoldMismatch++
			}
		case "available":
			s.SeatsLeft++
		default:
			s.Unsettled++
		}
	}
	s.StockLeft = r.Booking.Stock["ga"]
	if s.StockLeft < 0 {
		s.NegativeStock++
	}
	s.StockMismatch = b.Stock - s.UnitsSold - s.StockLeft
	c := r.Booking.Counters
	s.Unsettled += c["holds"] - c["confirmed"] - c["released"] - c["expired"] - c["ended"]
	s.summarizeEndsAndExtensions(r.Visitors)
	if s.Errors == 0 && (c["holds"] != int64(s.HoldsGranted) || c["confirmed"] != int64(s.OrdersConfirmed) ||
		c["extended"] != int64(s.ExtensionsGranted)) {
		s.CounterMismatch++
	}
	if s.Errors == 0 && (c["ended"] < s.EndedExpected || c["ended"] > s.EndedExpected+s.EndedAmbiguous) {
		s.EndedMismatch++
	}
	return s
}

// endMargin: a hold whose session ended less than this before its end may
// have run out first (counted expired rather than ended).
const endMargin = time.Second

// summarizeEndsAndExtensions checks the sessions that ended mid-hold and the
// slow payments. A seat of an ended session must be free at once: available
// on the map read right after the end, or held again by another visitor
// (a later fencing token) before the ended hold's own end — which no one
// could do if the hold had stayed until its TTL ran out.
func (s *BookingSummary) summarizeEndsAndExtensions(vs []*Visitor) {
	type holdOf struct {
		token int64
		at    time.Time
	}
	bySeat := map[string][]holdOf{}
	for _, v := range vs {
		if bv := v.Book; bv != nil && bv.Token != "" {
			tok, _ := strconv.ParseInt(bv.Token, 10, 64)
			for _, seat := range bv.Seats {
				bySeat[seat] = append(bySeat[seat], holdOf{tok, bv.HeldAt})
			}
		}
	}
	for _, v := range vs {
		bv := v.Book
		if bv == nil || bv.Token == "" {
			continue
		}
		live := func(at time.Time) bool { return at.Add(endMargin).Before(bv.ExpiresAt) }
		switch bv.Outcome {
		case BookEnded:
			s.EndedMidHold++
			if bv.LateAccepted {
				s.LateConfirms++
			}
			if !bv.LateAccepted && live(bv.EndedAt) {
				s.EndedExpected++
			} else {
				s.EndedAmbiguous++
			}
			tok, _ := strconv.ParseInt(bv.Token, 10, 64)
			for _, seat := range bv.Seats {
				s.EndedSeats++
				taken := slices.ContainsFunc(bySeat[seat], func(h holdOf) bool {
					return h.token > tok && h.at.Add(endMargin).Before(bv.ExpiresAt)
				})
				if taken {
					s.EndedSeatsTaken++
				}
				st, read := bv.AfterEnd[seat]
				switch {
				case !read:
					s.EndedSeatsUnread++
				case st == "available":
					s.EndedSeatsFree++
				case taken:
					s.EndedSeatsReheld++
				default:
					s.EndedSeatsHeld++
				}
			}
		case BookWalked:
			if live(bv.completeAt) {
				s.EndedExpected++
			} else {
				s.EndedAmbiguous++
			}
		case BookFailed:
			s.EndedAmbiguous++
		}
		if bv.extends > 0 {
			s.Extenders++
			s.ExtensionsGranted += bv.extendedOK
			s.ExtendsBad += bv.ExtendBad
			switch {
			case bv.Order != "" && bv.ConfirmAt.After(bv.FirstExpiresAt):
				s.ExtendedConfirmed++
			case bv.Outcome == BookLate:
				s.ExtendNotHonoured++
			}
		}
	}
}

// writeTable prints the booking part of the report.
func (s *BookingSummary) writeTable(w io.Writer) error {
	if s == nil {
		return nil
	}
	tw := printer.NewTable(w, 0)
	tw.Printf("booking: inventory\t%d seats, %d units of stock\t\n", s.Seats, s.Stock)
	tw.Printf("booking: outcomes\t%v\t\n", s.Outcomes)
	tw.Printf("booking: holds tried / granted / refused\t%d / %d / %d %v\t\n", s.HoldsTried, s.HoldsGranted, s.HoldsRefused, s.RefusedBy)
	tw.Printf("booking: orders confirmed\t%d (seats sold %d, units sold %d)\t\n", s.OrdersConfirmed, s.SeatsSold, s.UnitsSold)
	tw.Printf("booking: left at the end\t%d seats, %d units\t\n", s.SeatsLeft, s.StockLeft)
	tw.Printf("booking: engine counters\t%v\t\n", s.Counters)
	tw.Printf("booking: request errors (5xx, 429, transport)\t%d\t\n", s.Errors)
	if s.LastError != "" {
		tw.Printf("  one of them\t%.200s\t\n", s.LastError)
	}
	tw.Printf("booking: seats sold more than once\t%d\t%s\n", s.DoubleSold, check(s.DoubleSold == 0))
	tw.Printf("booking: sold seats ≠ the visitors' orders\t%d\t%s\n", s.SoldMismatch, check(s.SoldMismatch == 0))
	tw.Printf("booking: negative stock seen\t%d\t%s\n", s.NegativeStock, check(s.NegativeStock == 0))
	tw.Printf("booking: stock − units sold − stock left\t%d\t%s\n", s.StockMismatch, check(s.StockMismatch == 0))
	tw.Printf("booking: holds unsettled after every expiry\t%d\t%s\n", s.Unsettled, check(s.Unsettled == 0))
	tw.Printf("booking: retried confirms not the same order\t%d\t%s\n", s.ReplaysBad, check(s.ReplaysBad == 0))
	counters := "ok"
	if s.Errors > 0 {
		counters = "not checked (requests failed)"
	} else if s.CounterMismatch > 0 {
		counters = "FAIL"
	}
	tw.Printf("booking: engine's holds, confirmed, extended = visitors'\t%d, %d, %d\t%s\n", s.HoldsGranted, s.OrdersConfirmed, s.ExtensionsGranted, counters)
	tw.Printf("booking: sessions ended mid-hold\t%d (seats %d: free on the map at once %d, held again already %d, map not read %d)\t\n",
		s.EndedMidHold, s.EndedSeats, s.EndedSeatsFree, s.EndedSeatsReheld, s.EndedSeatsUnread)
	tw.Printf("  held by the next visitor before the old hold's end\t%d of %d seats\t\n", s.EndedSeatsTaken, s.EndedSeats)
	tw.Printf("booking: seats of ended sessions still held\t%d\t%s\n", s.EndedSeatsHeld, check(s.EndedSeatsHeld == 0))
	tw.Printf("booking: confirms after the session ended accepted\t%d\t%s\n", s.LateConfirms, check(s.LateConfirms == 0))
	ended := "ok"
	if s.Errors > 0 {
		ended = "not checked (requests failed)"
	} else if s.EndedMismatch > 0 {
		ended = "FAIL"
	}
	tw.Printf("booking: engine's ended (want %d, up to %d more)\t%d\t%s\n", s.EndedExpected, s.EndedAmbiguous, s.Counters["ended"], ended)
	tw.Printf("booking: slow payments\t%d (extensions granted %d, confirmed after the first end %d)\t\n",
		s.Extenders, s.ExtensionsGranted, s.ExtendedConfirmed)
	tw.Printf("booking: extensions answered wrongly\t%d\t%s\n", s.ExtendsBad, check(s.ExtendsBad == 0))
	tw.Printf("booking: extended holds lost before their confirm\t%d\t%s\n", s.ExtendNotHonoured, check(s.ExtendNotHonoured == 0))
	return tw.Flush()
}
