package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// site is one region's engines: the rooms' and the booking kit's, over the
// region's cache.
type site struct {
	name  string
	rooms *roomdb.Engine
	kit   *bookingdb.Engine
}

// originStore is the origin's own record of what it sold, with the guard
// docs/BOOKING.md ("Fencing tokens") asks of it, as the demo origin's SQLite
// store keeps it (localstack's orderDB.Record): a seat's order is written
// only when the seat has none, or its order was cancelled and the new token
// is larger. Unguarded (CHAOS_GUARD=off) it writes every order it is given,
// as an origin without the guard would: to see what the kit does alone.
type originStore struct {
	guarded bool
	mu      sync.Mutex
	seats   map[string]originSeat
	sales   []originSale // every order it took: a visitor told "booked"
}

type originSeat struct {
	order     string
	token     int64
	cancelled bool
}

type originSale struct {
	seat, order, region string
	cancelled           bool
}

func newOriginStore() *originStore {
	return &originStore{guarded: os.Getenv("CHAOS_GUARD") != "off", seats: map[string]originSeat{}}
}

// record writes the order's seats, all or none, and reports whether it took
// them. The same order written again (a retried confirm) is taken once.
func (o *originStore) record(ord booking.OrderEvent, region string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	fresh := false
	for _, s := range ord.Seats {
		cur, ok := o.seats[s]
		switch {
		case ok && cur.order == ord.Order && !cur.cancelled:
		case !o.guarded, !ok, cur.cancelled && cur.token < ord.FencingToken:
			fresh = true
		default:
			return false
		}
	}
	if !fresh {
		return true
	}
	for _, s := range ord.Seats {
		o.seats[s] = originSeat{order: ord.Order, token: ord.FencingToken}
		o.sales = append(o.sales, originSale{seat: s, order: ord.Order, region: region})
	}
	return true
}

// soldTwice returns the seats the origin sold to two orders, neither
// cancelled: two visitors told "booked" for one seat.
func (o *originStore) soldTwice() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	orders := map[string]map[string]bool{}
	for _, s := range o.sales {
		if s.cancelled {
			continue
		}
		if orders[s.seat] == nil {
			orders[s.seat] = map[string]bool{}
		}
		orders[s.seat][s.order] = true
	}
	var twice []string
	for seat, ids := range orders {
		if len(ids) > 1 {
			twice = append(twice, seat)
		}
	}
	slices.Sort(twice)
	return twice
}

// salesIn returns the sales the origin took from region's kit.
func (o *originStore) salesIn(region string) []originSale {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []originSale
	for _, s := range o.sales {
		if s.region == region {
			out = append(out, s)
		}
	}
	return out
}

// owner returns the order the origin holds a seat for now ("" for none).
func (o *originStore) owner(seat string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.seats[seat]; ok && !s.cancelled {
		return s.order
	}
	return ""
}

// seatSale is a seat sale behind the room: each served visitor of the
// event's room holds a seat the kit shows available with the room session
// (HoldSession), confirms it, and the origin records the order under its
// guard; an order the guard refuses is cancelled in the kit (the
// compensation the demo origin runs) and the visitor tries another seat.
// Every call goes to the region the write name gives, as the crowd's do.
type seatSale struct {
	event  string
	seats  []string
	active func() *site
	origin *originStore

	cut       atomic.Int64 // when the link between the regions was cut (Unix ns); 0 before
	afterCut  atomic.Int64 // sales confirmed in the old region by confirms begun after the cut
	firstSale sync.Map     // region → when its first sale was recorded (time.Time)

	refused       atomic.Int64 // orders the origin's guard refused (cancelled in the kit)
	sessionsEnded atomic.Int64 // holds refused: the room session unknown to the region (consumed in the lost second)
	staleHolds    atomic.Int64 // confirms refused: the hold gone (lost with the old region, or expired)
	closedHolds   atomic.Int64 // holds refused while the event was closed to holds (asked again)

	mu           sync.Mutex
	errs         []string
	held         map[string][]string // region → the seats its kit granted holds on, once per hold
	refusedSeats map[string]int      // seat → orders of it the origin's guard refused
}

func newSeatSale(event string, seats int, active func() *site) *seatSale {
	s := &seatSale{event: event, active: active, origin: newOriginStore(), held: map[string][]string{}, refusedSeats: map[string]int{}}
	for i := range seats {
		s.seats = append(s.seats, fmt.Sprintf("S%03d", i+1))
	}
	return s
}

func (s *seatSale) inventory() booking.Inventory {
	return booking.Inventory{Seats: s.seats, HoldTTL: 2 * time.Second, SessionLimit: 1}
}

func (s *seatSale) fail(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 10 {
		s.errs = append(s.errs, fmt.Sprintf(format, a...))
	}
}

// call runs f on the active region under the call budget, again while the
// kit answers ErrUnavailable (the region down, its cache not yet promoted)
// or ErrRecovering (a hold while the event is closed until its rebuild: the
// page asks again after Retry-After), and returns the region that answered.
func (s *seatSale) call(ctx context.Context, f func(ctx context.Context, st *site) error) (*site, error) {
	for {
		st := s.active()
		cctx, cancel := context.WithTimeout(ctx, callBudget)
		err := f(cctx, st)
		cancel()
		if errors.Is(err, booking.ErrRecovering) {
			s.closedHolds.Add(1)
		}
		if !(errors.Is(err, booking.ErrUnavailable) || errors.Is(err, booking.ErrRecovering)) || ctx.Err() != nil {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(jitter(50 * time.Millisecond)):
		}
	}
}

// buy is the served visitor's booking: up to five seats tried.
func (s *seatSale) buy(ctx context.Context, t room.Ticket, sess room.Session) {
	if t.Room != s.event {
		return
	}
	rs := booking.RoomSession{Room: t.Room, Seq: t.Seq, Ends: sess.ExpiresAt}
	for range 5 {
		seat := s.pick(ctx)
		if seat == "" {
			return
		}
		if r := s.try(ctx, rs.ID(), &rs, seat); r == booked || r == ended {
			return
		}
	}
}

// outcome is how one try of a seat went.
type outcome string

const (
	booked  outcome = "booked"  // the origin recorded the order
	refused outcome = "refused" // the origin's guard refused it; cancelled in the kit
	taken   outcome = "taken"   // the kit refused the hold: someone holds or bought the seat
	ended   outcome = "ended"   // the kit refused the hold: the room session is unknown to the region
	stale   outcome = "stale"   // the kit refused the confirm: the hold is gone
	failed  outcome = "failed"  // anything else, or the visitor gave up
)

// pick returns a seat the kit shows available, at random, or "" when none is.
func (s *seatSale) pick(ctx context.Context) string {
	var v booking.View
	_, err := s.call(ctx, func(ctx context.Context, st *site) (err error) {
		v, err = st.kit.View(ctx, s.event)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			s.fail("view: %v", err)
		}
		return ""
	}
	var free []string
	for seat, state := range v.Seats {
		if state == booking.SeatAvailable {
			free = append(free, seat)
		}
	}
	if len(free) == 0 {
		return ""
	}
	return free[mrand.IntN(len(free))]
}

// try holds seat for the session (a room session with rs, else one the
// caller vouches for), confirms it and has the origin record it.
func (s *seatSale) try(ctx context.Context, session string, rs *booking.RoomSession, seat string) outcome {
	req := booking.Request{Seats: []string{seat}}
	var h booking.Hold
	hst, err := s.call(ctx, func(ctx context.Context, st *site) (err error) {
		if rs != nil {
			h, err = st.kit.HoldSession(ctx, s.event, *rs, req)
		} else {
			h, err = st.kit.Hold(ctx, s.event, session, req)
		}
		return err
	})
	if err == nil {
		s.mu.Lock()
		s.held[hst.name] = append(s.held[hst.name], seat)
		s.mu.Unlock()
	}
	switch {
	case ctx.Err() != nil:
		return failed
	case errors.Is(err, booking.ErrSeatTaken):
		return taken
	case errors.Is(err, booking.ErrSessionEnded):
		s.sessionsEnded.Add(1)
		return ended
	case err != nil:
		s.fail("hold %s: %v", seat, err)
		return failed
	}
	began := time.Now()
	var o booking.OrderEvent
	st, err := s.call(ctx, func(ctx context.Context, st *site) (err error) {
		o, err = st.kit.Confirm(ctx, s.event, session, h.Token, "pay-"+strconv.FormatInt(h.Token, 10))
		return err
	})
	switch {
	case errors.Is(err, booking.ErrStaleToken), errors.Is(err, booking.ErrHoldExpired):
		s.staleHolds.Add(1)
		return stale
	case ctx.Err() != nil:
		return failed
	case err != nil:
		s.fail("confirm %s: %v", seat, err)
		return failed
	}
	if !s.origin.record(o, st.name) {
		s.refused.Add(1)
		s.mu.Lock()
		s.refusedSeats[seat]++
		s.mu.Unlock()
		_, err := s.call(context.WithoutCancel(ctx), func(ctx context.Context, st *site) error {
			_, err := st.kit.Cancel(ctx, s.event, o.Order, "seat_sold_before")
			return err
		})
		if err != nil {
			s.fail("cancel of refused order %s: %v", o.Order, err)
		}
		return refused
	}
	if cut := s.cut.Load(); cut != 0 && began.UnixNano() > cut && st.name == regionA {
		s.afterCut.Add(1)
	}
	s.firstSale.LoadOrStore(st.name, time.Now())
	return booked
}

// lastBuyers try every seat the active region's kit shows available, one
// buyer each, once the crowd's holds are settled: a seat the old region sold
// in its lost second is offered again there, whatever the crowd's random
// picks came to. It returns how each seat tried went.
func (s *seatSale) lastBuyers(ctx context.Context) (map[string]outcome, error) {
	var v booking.View
	settled := testkit.WaitFor(10*time.Second, func() bool {
		_, err := s.call(ctx, func(ctx context.Context, st *site) (err error) {
			v, err = st.kit.View(ctx, s.event)
			return err
		})
		return err == nil && !slices.Contains(slices.Collect(maps.Values(v.Seats)), booking.SeatHeld)
	})
	if !settled {
		return nil, fmt.Errorf("seats still held 10 s after the crowd left: %v", v.Seats)
	}
	tried := map[string]outcome{}
	for _, seat := range s.seats {
		if v.Seats[seat] == booking.SeatAvailable {
			tried[seat] = s.try(ctx, "late-"+seat, nil, seat)
		}
	}
	return tried, nil
}

// kitOrders returns the kit's orders on st, confirmed or cancelled, by order
// id, and the seats it sold to more than one live (not cancelled) order.
func (s *seatSale) kitOrders(ctx context.Context, st *site) (all map[string]booking.OrderEvent, twice []string, err error) {
	all = map[string]booking.OrderEvent{}
	cursor := "0"
	for {
		page, next, err := st.kit.Orders(ctx, s.event, cursor)
		if err != nil {
			return nil, nil, err
		}
		for _, o := range page {
			all[o.Order] = o
		}
		if next == "0" {
			break
		}
		cursor = next
	}
	bySeat := map[string]int{}
	for _, o := range all {
		if o.Type != booking.OrderConfirmed {
			continue
		}
		for _, seat := range o.Seats {
			if bySeat[seat]++; bySeat[seat] == 2 {
				twice = append(twice, seat)
			}
		}
	}
	slices.Sort(twice)
	return all, twice, nil
}

// export is the origin's record as its export gives it (docs/BOOKING.md,
// "Reconciliation"): each order not cancelled, with its seats.
func (o *originStore) export() []booking.SoldOrder {
	o.mu.Lock()
	defer o.mu.Unlock()
	byOrder := map[string][]string{}
	for seat, s := range o.seats {
		if !s.cancelled {
			byOrder[s.order] = append(byOrder[s.order], seat)
		}
	}
	out := make([]booking.SoldOrder, 0, len(byOrder))
	for _, id := range slices.Sorted(maps.Keys(byOrder)) {
		seats := byOrder[id]
		slices.Sort(seats)
		out = append(out, booking.SoldOrder{Order: id, Seats: seats})
	}
	return out
}

// rebuild is what `vestibule booking reconcile EVENT --origin F --apply` does
// after a failover closed the event in st: the origin's record sent to the
// kit, which reopens the event. A seat the kit sold to an order the origin's
// guard refused refuses the call until the sale's compensation cancels that
// order: it is sent again then, as the runbook says.
func (s *seatSale) rebuild(ctx context.Context, st *site) (booking.Rebuilt, error) {
	var r booking.Rebuilt
	var err error
	testkit.WaitFor(10*time.Second, func() bool {
		r, err = st.kit.Rebuild(ctx, s.event, s.origin.export(), true)
		return !errors.Is(err, booking.ErrSeatTaken)
	})
	return r, err
}
