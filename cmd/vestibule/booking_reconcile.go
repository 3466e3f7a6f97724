package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/booking"
)

// originLine is one line of an origin's record (docs/BOOKING.md,
// "Reconciliation"): a seat, or units of a sku, sold in an order.
type originLine struct {
	Event string `json:"event"`
	Seat  string `json:"seat"`
	SKU   string `json:"sku"`
	Units int64  `json:"units"`
	Order string `json:"order"`
}

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

// reconcile is "vestibule booking reconcile EVENT --origin FILE|URL": what the
// kit sold (its confirmed, uncancelled orders) against the origin's record,
// every difference printed; exit 1 when there is one.
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

// readOrigin reads the origin's record of event: JSON lines from a file, stdin or a URL.
func readOrigin(ctx context.Context, src, event string) (sold, error) {
	var r io.Reader
	switch {
	case src == "-":
		r = os.Stdin
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return sold{}, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return sold{}, fmt.Errorf("the origin's record: %w", err)
		}
		defer func() { _ = resp.Body.Close() }() // a body read: closing it cannot lose anything
		if resp.StatusCode != http.StatusOK {
			return sold{}, fmt.Errorf("the origin's record: %s answered %d", src, resp.StatusCode)
		}
		r = resp.Body
	default:
		f, err := os.Open(src)
		if err != nil {
			return sold{}, fmt.Errorf("the origin's record: %w", err)
		}
		defer func() { _ = f.Close() }() // a file read: closing it cannot lose anything
		r = f
	}
	s := newSold()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l originLine
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return sold{}, fmt.Errorf("the origin's record, line %d: %v", n, err)
		}
		if l.Event != "" && l.Event != event {
			continue
		}
		switch {
		case l.Order == "" || (l.Seat == "") == (l.SKU == ""):
			return sold{}, fmt.Errorf("the origin's record, line %d: want an order and either a seat or a sku with units", n)
		case l.Seat != "":
			if prev, dup := s.seats[l.Seat]; dup && prev != l.Order {
				return sold{}, fmt.Errorf("the origin's record, line %d: seat %s in orders %s and %s", n, l.Seat, prev, l.Order)
			}
			s.seats[l.Seat] = l.Order
		default:
			s.addUnits(l.Order, l.SKU, l.Units)
		}
	}
	if err := sc.Err(); err != nil {
		return sold{}, fmt.Errorf("the origin's record: %w", err)
	}
	return s, nil
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
