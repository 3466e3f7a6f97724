package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
)

// DemoEventID is the demo event the hand-integration origin sells seats of:
// named after its room (demo-api), so a hold checks the visitor's entry
// session in the same script.
const DemoEventID = DemoAPIRoomID

// DemoSeats are the demo event's seats.
var DemoSeats = []string{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8"}

// Demo event settings: a hold lasts two minutes and may be extended twice
// (each time to two minutes from then, six at most from its creation); a
// session holds or buys at most two seats.
const (
	DemoHoldTTL           = 120 * time.Second
	DemoMaxHoldExtensions = 2
	DemoSessionLimit      = 2
)

// defineDemoEvent defines the demo event. An event with live holds or orders
// (a real Redis kept from a previous run) is left as it is; when its hold
// rules are not the demo's (a run before holds could be extended), a warning
// says so and what to do.
func defineDemoEvent(ctx context.Context, bk *bookingdb.Engine, log *slog.Logger) error {
	err := bk.Define(ctx, DemoEventID, booking.Inventory{Seats: DemoSeats, HoldTTL: DemoHoldTTL,
		MaxHoldExtensions: DemoMaxHoldExtensions, SessionLimit: DemoSessionLimit})
	if err == nil {
		return nil
	}
	if !errors.Is(err, booking.ErrInUse) {
		return fmt.Errorf("demo event %s: %w", DemoEventID, err)
	}
	v, err := bk.View(ctx, DemoEventID)
	if err != nil {
		return fmt.Errorf("demo event %s: %w", DemoEventID, err)
	}
	if v.HoldTTL != DemoHoldTTL || v.MaxHoldExtensions != DemoMaxHoldExtensions || v.SessionLimit != DemoSessionLimit {
		log.Warn("the demo event keeps an earlier definition: it has holds or orders in this Redis; "+
			"cancel its orders (vestibule events orders "+DemoEventID+" lists them) and restart to redefine it",
			"event", DemoEventID, "holdTTLSeconds", int64(v.HoldTTL/time.Second), "maxHoldExtensions", v.MaxHoldExtensions,
			"sessionLimit", v.SessionLimit)
	}
	return nil
}

// rebuildDemoEvent puts back the seats the demo origin sold when the demo
// event came back from a total loss closed to holds (the embedded Redis
// starts empty at every run of make dev): the origin's own record is what the
// kit rebuilds from, as `vestibule booking reconcile --apply` does for any
// origin (docs/BOOKING.md, "After a total loss"). An open event is left alone.
func rebuildDemoEvent(ctx context.Context, bk *bookingdb.Engine, db *orderDB, log *slog.Logger) error {
	v, err := bk.View(ctx, DemoEventID)
	if err != nil || !v.Restore.Recovering {
		return err
	}
	sold, err := db.Sold(ctx, DemoEventID)
	if err != nil {
		return err
	}
	r, err := bk.Rebuild(ctx, DemoEventID, sold, true)
	if err != nil {
		return fmt.Errorf("demo event %s: rebuild from the origin's record: %w", DemoEventID, err)
	}
	log.Info("demo origin: its event rebuilt from its order store", "event", DemoEventID, "orders", r.Added+r.Kept)
	return nil
}

// seatPicker is the demo origin's backend for the seat map. The page holds
// the visitor's booking session (consume's bookingSession) in memory and
// sends it with each call; the backend calls the waiting room server to
// server: the public view, the hold with the booking session as bearer (a
// page of another origin would need CORS on the API and a CSP connect-src
// naming it; a backend needs neither), and the confirm with the room's origin
// credential and an Idempotency-Key. Confirmed seats are written to the
// origin's own SQLite store (orderDB), which refuses a stale fencing token.
type seatPicker struct {
	waitingRoom string
	credential  func(room string) string
	db          *orderDB
	client      *http.Client
	log         *slog.Logger

	mu    sync.Mutex
	holds map[string]pickerHold // hold token → who made it
}

// pickerHold is a hold the backend made: only the booking session that made
// it may confirm it.
type pickerHold struct {
	bookingSession, session string
	expires                 time.Time
}

func newSeatPicker(waitingRoom string, credential func(room string) string, db *orderDB, log *slog.Logger) *seatPicker {
	return &seatPicker{waitingRoom: waitingRoom, credential: credential, db: db, log: log,
		client: &http.Client{Timeout: 5 * time.Second}, holds: map[string]pickerHold{}}
}

// routes adds GET /seats, POST /hold, POST /extend and POST /confirm to mux.
func (p *seatPicker) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /seats", p.seats)
	mux.HandleFunc("POST /hold", p.hold)
	mux.HandleFunc("POST /extend", p.extend)
	mux.HandleFunc("POST /confirm", p.confirm)
	mux.HandleFunc("GET /orders.jsonl", p.export)
}

// export is GET /orders.jsonl?event=E: the origin's record of the seats it
// sold, as the JSON lines vestibule booking reconcile reads.
func (p *seatPicker) export(w http.ResponseWriter, r *http.Request) {
	ev := r.URL.Query().Get("event")
	if ev == "" {
		ev = DemoEventID
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	if err := p.db.Export(r.Context(), w, ev); err != nil {
		p.log.LogAttrs(r.Context(), slog.LevelError, "orders export", slog.String("error", err.Error()))
	}
}

// call sends one request to the waiting room's API and decodes the answer.
func (p *seatPicker) call(ctx context.Context, method, path, bearer string, header map[string]string, in any) (int, json.RawMessage, error) {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.waitingRoom+path, body)
	if err != nil {
		return 0, nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		p.log.Error("demo origin: waiting room unreachable", "path", path, "error", err.Error())
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, raw, err
}

// relay writes the waiting room's answer to the page as it is.
func relay(w http.ResponseWriter, status int, raw json.RawMessage, err error) {
	if err != nil {
		writeJSON(w, http.StatusBadGateway, apiErr("unavailable", "waiting room unreachable"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}

func apiErr(code, message string) map[string]any {
	return map[string]any{"error": map[string]string{"code": code, "message": message}}
}

// seats is GET /seats: the event's public view (seat states).
func (p *seatPicker) seats(w http.ResponseWriter, r *http.Request) {
	status, raw, err := p.call(r.Context(), http.MethodGet, "/api/events/"+DemoEventID, "", nil, nil)
	relay(w, status, raw, err)
}

// pickerRequest is what the page sends: its booking session, and the seat
// to hold or the hold to confirm.
type pickerRequest struct {
	BookingSession string `json:"bookingSession"`
	Seat           string `json:"seat"`
	Hold           string `json:"hold"`
	// Extension numbers the hold's extensions (extend): 1 for its first.
	Extension int64 `json:"extension"`
}

func decodePicker(w http.ResponseWriter, r *http.Request) (pickerRequest, bool) {
	var in pickerRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<10)).Decode(&in); err != nil || in.BookingSession == "" {
		writeJSON(w, http.StatusBadRequest, apiErr("bad_json", `send {"bookingSession": "...", ...}`))
		return in, false
	}
	return in, true
}

// hold is POST /hold {bookingSession, seat}: holds one seat for the visitor.
// The waiting room's answer (201 with the hold's token and expiry, or 409
// seat_taken, 409 session_limit, 401 session_ended …) goes back as it is.
func (p *seatPicker) hold(w http.ResponseWriter, r *http.Request) {
	in, ok := decodePicker(w, r)
	if !ok {
		return
	}
	status, raw, err := p.call(r.Context(), http.MethodPost, "/api/events/"+DemoEventID+"/holds", in.BookingSession, nil,
		booking.Request{Seats: []string{in.Seat}})
	if err == nil && status == http.StatusCreated {
		var h struct {
			Token, Session string
			ExpiresAt      time.Time
		}
		if json.Unmarshal(raw, &h) == nil && h.Token != "" {
			p.mu.Lock()
			// Forget the holds that ran out, so the map stays as small as the live holds.
			for tok, old := range p.holds {
				if time.Now().After(old.expires) {
					delete(p.holds, tok)
				}
			}
			p.holds[h.Token] = pickerHold{bookingSession: in.BookingSession, session: h.Session, expires: h.ExpiresAt}
			p.mu.Unlock()
		}
	}
	relay(w, status, raw, err)
}

// extend is POST /extend {bookingSession, hold, extension}: more time for
// the visitor's hold (a payment that takes a while), with the room's origin
// credential. The page numbers the extension, so a retry never extends
// twice; the waiting room's answer (200 with the new expiresAt, or 409
// extension_limit, 410 hold_expired …) goes back as it is.
func (p *seatPicker) extend(w http.ResponseWriter, r *http.Request) {
	in, h, ok := p.ownHold(w, r)
	if !ok {
		return
	}
	status, raw, err := p.call(r.Context(), http.MethodPost, "/api/events/"+DemoEventID+"/holds/"+in.Hold+"/extend",
		p.credential(DemoAPIRoomID), nil, map[string]any{"session": h.session, "extension": in.Extension})
	if err == nil && status == http.StatusOK {
		var x struct{ ExpiresAt time.Time }
		if json.Unmarshal(raw, &x) == nil && !x.ExpiresAt.IsZero() {
			p.mu.Lock()
			if cur, ok := p.holds[in.Hold]; ok {
				cur.expires = x.ExpiresAt
				p.holds[in.Hold] = cur
			}
			p.mu.Unlock()
		}
	}
	relay(w, status, raw, err)
}

// ownHold decodes a request about one hold and finds that hold, made by
// the same booking session; otherwise it has answered (400, or 404
// unknown_hold) and says false.
func (p *seatPicker) ownHold(w http.ResponseWriter, r *http.Request) (pickerRequest, pickerHold, bool) {
	in, ok := decodePicker(w, r)
	if !ok {
		return in, pickerHold{}, false
	}
	p.mu.Lock()
	h, ok := p.holds[in.Hold]
	p.mu.Unlock()
	if !ok || h.bookingSession != in.BookingSession {
		writeJSON(w, http.StatusNotFound, apiErr("unknown_hold", "no such hold of yours"))
		return in, pickerHold{}, false
	}
	return in, h, true
}

// confirm is POST /confirm {bookingSession, hold}: (the demo takes no
// payment) confirms the hold with the room's origin credential, the
// Idempotency-Key derived from the hold (so a retry returns the same order),
// then writes the order's seats to the origin's store under the order's
// fencing token. A write the store refuses (a newer order has the seat) is
// compensated: the order is cancelled and the page told 409 stale_order.
func (p *seatPicker) confirm(w http.ResponseWriter, r *http.Request) {
	in, h, ok := p.ownHold(w, r)
	if !ok {
		return
	}
	status, raw, err := p.call(r.Context(), http.MethodPost, "/api/events/"+DemoEventID+"/holds/"+in.Hold+"/confirm",
		p.credential(DemoAPIRoomID), map[string]string{"Idempotency-Key": "demo-" + in.Hold}, map[string]string{"session": h.session})
	if err != nil || (status != http.StatusCreated && status != http.StatusOK) {
		relay(w, status, raw, err)
		return
	}
	var o booking.OrderEvent
	if err := json.Unmarshal(raw, &o); err != nil {
		writeJSON(w, http.StatusBadGateway, apiErr("bad_order", "the waiting room's order did not decode"))
		return
	}
	for _, seat := range o.Seats {
		err := p.db.Record(r.Context(), o.Event, seat, o.FencingToken, o.Order)
		if errors.Is(err, ErrStaleWrite) {
			if cur, _, _ := p.db.Seat(r.Context(), o.Event, seat); cur == o.Order {
				continue // this very order, written by a retry before
			}
		}
		if errors.Is(err, ErrStaleWrite) || errors.Is(err, ErrSeatSold) {
			code, reason := "stale_order", "stale_fencing_token"
			if errors.Is(err, ErrSeatSold) {
				code, reason = "seat_sold", "seat_sold_before"
			}
			p.log.Warn("demo origin: order refused by the store; cancelling it", "order", o.Order, "seat", seat, "error", err.Error())
			if err := p.cancelOrder(r.Context(), o.Order, reason); err != nil {
				p.log.Error("demo origin: the refused order is not cancelled", "order", o.Order, "error", err.Error())
			}
			writeJSON(w, http.StatusConflict, apiErr(code, "seat "+seat+" belongs to another order"))
			return
		}
		if err != nil {
			p.log.Error("demo origin: order store", "error", err.Error())
			writeJSON(w, http.StatusInternalServerError, apiErr("store", "could not record the order"))
			return
		}
	}
	p.mu.Lock()
	delete(p.holds, in.Hold)
	p.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"order": o.Order, "seats": o.Seats,
		"fencingToken": strconv.FormatInt(o.FencingToken, 10), "confirmedAt": o.ConfirmedAt, "stored": true})
}

// cancelOrder is the origin's compensation: the order is cancelled in the kit
// (its seats return there) and then in the origin's own record, so its seats
// may be sold again here too (to a later token). A cancel the kit refused is
// not recorded: the seats stay the order's on both sides.
func (p *seatPicker) cancelOrder(ctx context.Context, order, reason string) error {
	status, raw, err := p.call(ctx, http.MethodPost, "/api/events/"+DemoEventID+"/orders/"+order+"/cancel",
		p.credential(DemoAPIRoomID), nil, map[string]string{"reason": reason})
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("cancel of order %s: %d %.200s", order, status, raw)
	}
	_, err = p.db.Cancel(ctx, DemoEventID, order)
	return err
}
