package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
)

// originLine is one line of an origin's record (docs/BOOKING.md,
// "Reconciliation"): a seat, or units of a sku, sold in an order, and
// optionally the order's fencing token (which is the kit's order id).
type originLine struct {
	Event        string `json:"event"`
	Seat         string `json:"seat"`
	SKU          string `json:"sku"`
	Units        int64  `json:"units"`
	Order        string `json:"order"`
	FencingToken *int64 `json:"fencingToken"`
}

// Bounds of an origin's record: lines are short (about 100 bytes), a venue's
// record a few hundred thousand of them.
const (
	maxOriginLines    = 2_000_000
	maxOriginLine     = 4 << 10
	originFetchTimout = 60 * time.Second
)

// orderName is what an order id of the origin's record may be: the kit's
// are decimals; another's is printed, so no character of it may act on a terminal.
var orderName = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,128}$`)

// sold is what one side says was sold: seat -> order, and order -> sku -> units.
type sold struct {
	seats map[string]string
	units map[string]map[string]int64
}

func newSold() sold { return sold{seats: map[string]string{}, units: map[string]map[string]int64{}} }

func (s sold) addUnits(order, sku string, n int64) {
	if s.units[order] == nil {
		s.units[order] = map[string]int64{}
	}
	s.units[order][sku] += n
}

// orders groups what s says was sold by order, in order id order.
func (s sold) orders() []booking.SoldOrder {
	by := map[string]*booking.SoldOrder{}
	get := func(id string) *booking.SoldOrder {
		if by[id] == nil {
			by[id] = &booking.SoldOrder{Order: id}
		}
		return by[id]
	}
	for _, seat := range slices.Sorted(maps.Keys(s.seats)) {
		o := get(s.seats[seat])
		o.Seats = append(o.Seats, seat)
	}
	for id, u := range s.units {
		get(id).Units = maps.Clone(u)
	}
	out := make([]booking.SoldOrder, 0, len(by))
	for _, id := range slices.Sorted(maps.Keys(by)) {
		out = append(out, *by[id])
	}
	return out
}

// reconcile is "vestibule booking reconcile EVENT --origin FILE|URL": what the
// kit sold (its confirmed, uncancelled orders) against the origin's record,
// every difference printed; exit 1 when there is one. With --apply it first
// puts the record back into an event closed after a total loss and reopens it.
func (c *command) reconcile(ctx context.Context, pos []string) error {
	if len(pos) != 1 || !booking.ValidEventID(pos[0]) {
		return usageError("booking reconcile takes one event id")
	}
	if c.origin == "" {
		return usageError("booking reconcile needs --origin: a file of JSON lines, - for stdin, or an http(s) URL")
	}
	event := pos[0]
	origin, err := readOrigin(ctx, c.origin, event)
	if err != nil {
		return err
	}
	if c.apply {
		if err := c.rebuild(ctx, event, origin); err != nil {
			return err
		}
	}
	kit, cancelled, err := c.kitSold(ctx, event)
	if err != nil {
		return err
	}
	diffs := compareSold(kit, origin, cancelled)
	for _, d := range diffs {
		c.out.Println(d)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s: %d differences between the kit and the origin's record", event, len(diffs))
	}
	c.out.Printf("%s: no differences: %d seats and %d units sold in %d orders on both sides\n",
		event, len(kit.seats), unitsTotal(kit), len(orderIDs(kit)))
	return nil
}

// rebuildBody is what POST /api/admin/events/{event}/rebuild takes.
type rebuildBody struct {
	Orders []booking.SoldOrder `json:"orders"`
	Reopen bool                `json:"reopen"`
}

// rebuildBytes bounds one rebuild call's body (the route takes 1 MiB).
const rebuildBytes = 512 << 10

// rebuild puts the origin's orders back into the event (closed to holds after
// a total loss, or by a region failover) in calls of at most
// booking.MaxRebuildOrders orders and rebuildBytes, the last of which reopens it.
func (c *command) rebuild(ctx context.Context, event string, origin sold) error {
	orders := origin.orders()
	now := time.Now()
	for _, o := range orders {
		if err := o.Validate(now); err != nil {
			return fmt.Errorf("--apply: order %s: the kit's order ids are its fencing tokens, decimals: %w", o.Order, err)
		}
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	var added, kept, released, converted int64
	send := func(batch []booking.SoldOrder, reopen bool) error {
		b, err := json.Marshal(rebuildBody{Orders: batch, Reopen: reopen})
		if err != nil {
			return err
		}
		resp, body, err := cl.Do(ctx, http.MethodPost, "/api/admin/events/"+event+"/rebuild", b)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("--apply: rebuild of %s: %d %s", event, resp.StatusCode, printable(string(body), 300))
		}
		var r struct{ Added, Kept, HoldsReleased, HoldsConverted int64 }
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("--apply: rebuild of %s: %w", event, err)
		}
		added, kept = added+r.Added, kept+r.Kept
		released, converted = released+r.HoldsReleased, converted+r.HoldsConverted
		return nil
	}
	var batch []booking.SoldOrder
	size := 0
	for _, o := range orders {
		n := len(o.Order) + 40
		for _, s := range o.Seats {
			n += len(s) + 3
		}
		for k := range o.Units {
			n += len(k) + 24
		}
		if len(batch) > 0 && (len(batch) == booking.MaxRebuildOrders || size+n > rebuildBytes) {
			if err := send(batch, false); err != nil {
				return err
			}
			batch, size = nil, 0
		}
		batch, size = append(batch, o), size+n
	}
	if err := send(batch, true); err != nil {
		return err
	}
	c.out.Printf("%s: rebuilt from the origin's record: %d orders put back, %d there already; the event is open to holds\n",
		event, added, kept)
	if released+converted > 0 {
		c.out.Printf("%s: of the holds live when it closed: %d became the order the origin recorded for them, %d given up for a seat the origin sold\n",
			event, converted, released)
	}
	return nil
}

// kitSold reads the event's orders from the kit (every page, each order once).
func (c *command) kitSold(ctx context.Context, event string) (sold, map[string]bool, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return sold{}, nil, err
	}
	orders, err := cl.EventOrders(ctx, event)
	if err != nil {
		return sold{}, nil, err
	}
	s, cancelled := newSold(), map[string]bool{}
	for _, o := range orders {
		if o.Type == booking.OrderCancelled {
			cancelled[o.Order] = true
			continue
		}
		for _, seat := range o.Seats {
			s.seats[seat] = o.Order
		}
		if len(o.Units) > 0 {
			s.units[o.Order] = maps.Clone(o.Units)
		}
	}
	return s, cancelled, nil
}

// originClient fetches an origin's record: a bounded wait, and no redirect
// followed (the record is read from where the operator said, not from
// wherever that answer points).
var originClient = &http.Client{
	Timeout: originFetchTimout,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// printable is s with every character that is not printable (terminal
// escapes, newlines) written as an escape, cut to at most n bytes: text
// that came from an origin or a server, safe to print.
func printable(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// readOrigin reads the origin's record of event: JSON lines from a file, stdin or a URL.
func readOrigin(ctx context.Context, src, event string) (sold, error) {
	r, done, err := openOrigin(ctx, src)
	if err != nil {
		return sold{}, err
	}
	defer done()
	s := newSold()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, maxOriginLine), maxOriginLine)
	n := 0
	for sc.Scan() {
		if n++; n > maxOriginLines {
			return sold{}, fmt.Errorf("the origin's record: more than %d lines", maxOriginLines)
		}
		if err := s.addLine(strings.TrimSpace(sc.Text()), event); err != nil {
			return sold{}, fmt.Errorf("the origin's record, line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sold{}, fmt.Errorf("the origin's record, line %d: longer than %d bytes", n+1, maxOriginLine)
		}
		return sold{}, fmt.Errorf("the origin's record: %w", err)
	}
	return s, nil
}

// openOrigin opens the record: stdin ("-"), an http(s) URL, or a file; done
// closes it (a read: closing it cannot lose anything).
func openOrigin(ctx context.Context, src string) (r io.Reader, done func(), err error) {
	switch {
	case src == "-":
		return os.Stdin, func() {}, nil
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return nil, nil, err
		}
		resp, err := originClient.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("the origin's record: %w", err)
		}
		done = func() { _ = resp.Body.Close() }
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			done()
			return nil, nil, fmt.Errorf("the origin's record: %s answered %d, a redirect, which is not followed: give the final URL", src, resp.StatusCode)
		}
		if resp.StatusCode != http.StatusOK {
			done()
			return nil, nil, fmt.Errorf("the origin's record: %s answered %d", src, resp.StatusCode)
		}
		return resp.Body, done, nil
	default:
		f, err := os.Open(src)
		if err != nil {
			return nil, nil, fmt.Errorf("the origin's record: %w", err)
		}
		return f, func() { _ = f.Close() }, nil
	}
}

// addLine adds one line of the record of event to s (a blank line or one of
// another event adds nothing), or says what is wrong with it, escaped.
func (s sold) addLine(line, event string) error {
	if line == "" {
		return nil
	}
	var l originLine
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return errors.New(printable(err.Error(), 200))
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	if l.Event != "" && l.Event != event {
		return nil
	}
	switch {
	case l.Order == "" || (l.Seat == "") == (l.SKU == ""):
		return errors.New("want an order and either a seat or a sku with units")
	case !orderName.MatchString(l.Order):
		return fmt.Errorf("order %q: 1 to 128 of [A-Za-z0-9_.:@-]", printable(l.Order, 140))
	case l.FencingToken != nil && (*l.FencingToken <= 0 || strconv.FormatInt(*l.FencingToken, 10) != l.Order):
		return fmt.Errorf("fencingToken %d is not order %s's (the kit's order id is its fencing token)", *l.FencingToken, l.Order)
	case l.Seat != "":
		if !booking.ValidItemID(l.Seat) {
			return fmt.Errorf("seat %q: 1 to 64 of [A-Za-z0-9_.-]", printable(l.Seat, 80))
		}
		if prev, dup := s.seats[l.Seat]; dup && prev != l.Order {
			return fmt.Errorf("seat %s in orders %s and %s", l.Seat, prev, l.Order)
		}
		s.seats[l.Seat] = l.Order
	default:
		if !booking.ValidItemID(l.SKU) {
			return fmt.Errorf("sku %q: 1 to 64 of [A-Za-z0-9_.-]", printable(l.SKU, 80))
		}
		if l.Units < 1 || l.Units > booking.MaxUnits {
			return fmt.Errorf("sku %s: %d units, want 1 to %d", l.SKU, l.Units, int64(booking.MaxUnits))
		}
		s.addUnits(l.Order, l.SKU, l.Units)
	}
	return nil
}

// compareSold lists every difference, sorted: seats, then units per order.
func compareSold(kit, origin sold, cancelled map[string]bool) []string {
	var out []string
	seats := map[string]bool{}
	for s := range kit.seats {
		seats[s] = true
	}
	for s := range origin.seats {
		seats[s] = true
	}
	for _, s := range slices.Sorted(maps.Keys(seats)) {
		k, o := kit.seats[s], origin.seats[s]
		switch {
		case k == o:
		case o == "":
			out = append(out, fmt.Sprintf("seat %s: sold by the kit in order %s, not in the origin's record", s, k))
		case k == "":
			why := "not sold by the kit"
			if cancelled[o] {
				why = "cancelled in the kit"
			}
			out = append(out, fmt.Sprintf("seat %s: in the origin's record for order %s, %s", s, o, why))
		default:
			out = append(out, fmt.Sprintf("seat %s: sold by the kit in order %s, the origin recorded order %s", s, k, o))
		}
	}
	orders := map[string]bool{}
	for o := range kit.units {
		orders[o] = true
	}
	for o := range origin.units {
		orders[o] = true
	}
	for _, o := range slices.Sorted(maps.Keys(orders)) {
		skus := map[string]bool{}
		for k := range kit.units[o] {
			skus[k] = true
		}
		for k := range origin.units[o] {
			skus[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(skus)) {
			if a, b := kit.units[o][k], origin.units[o][k]; a != b {
				out = append(out, fmt.Sprintf("order %s sku %s: the kit sold %d units, the origin recorded %d", o, k, a, b))
			}
		}
	}
	return out
}

func unitsTotal(s sold) int64 {
	var n int64
	for _, u := range s.units {
		for _, q := range u {
			n += q
		}
	}
	return n
}

func orderIDs(s sold) map[string]bool {
	ids := map[string]bool{}
	for _, o := range s.seats {
		ids[o] = true
	}
	for o := range s.units {
		ids[o] = true
	}
	return ids
}
