package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
)

// maxDefinition is the API's limit for the body of PUT
// /api/admin/events/{event}: a larger file is refused before it is sent.
const maxDefinition = 1 << 20

// eventClient is the one event id of pos and a client of the deployment.
func (c *command) eventClient(ctx context.Context, pos []string, what string) (string, *operator.Client, error) {
	if len(pos) != 1 {
		return "", nil, usageError(what + " takes one event id")
	}
	if !booking.ValidEventID(pos[0]) {
		return "", nil, usageError(fmt.Sprintf("%q is not an event id (1 to 64 of A-Z a-z 0-9 _ -)", pos[0]))
	}
	cl, err := c.client(ctx)
	return pos[0], cl, err
}

// eventDefine is "vestibule events define EVENT --file DEF.json": PUT
// /api/admin/events/{event} with the file as its body.
func (c *command) eventDefine(ctx context.Context, pos []string) error {
	if c.file == "" {
		return usageError(`events define needs --file DEF.json (- for stdin), e.g. {"seats":["A1","A2"],"sessionLimit":2,"maxHoldExtensions":1}`)
	}
	id, cl, err := c.eventClient(ctx, pos, "events define")
	if err != nil {
		return err
	}
	def, err := readDefinition(c.file)
	if err != nil {
		return err
	}
	d, err := cl.DefineEvent(ctx, id, def)
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(d)
	}
	c.out.Printf("%s: defined for room %s: %d seats%s; a hold lasts %d s, extended up to %d times, at most %d s; %d items a session\n",
		d.Event, d.Room, d.Seats, stockText(d.Stock), d.HoldTTLSeconds, d.MaxHoldExtensions, d.MaxHoldSeconds, d.SessionLimit)
	return nil
}

// readDefinition reads an event's definition from a file (- for stdin) and
// checks that it is one JSON object; the API checks the fields.
func readDefinition(name string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("the event's definition: %w", err)
		}
		defer func() { _ = f.Close() }() // read only
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDefinition+1))
	if err != nil {
		return nil, fmt.Errorf("the event's definition %s: %w", name, err)
	}
	if len(b) > maxDefinition {
		return nil, &operator.Error{Message: fmt.Sprintf("the event's definition %s is larger than 1 MiB, the API's limit", name),
			Hint: "a venue's seats fit easily: leave out spaces and line breaks"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, &operator.Error{Message: fmt.Sprintf("the event's definition %s is not a JSON object: %v", name, err),
			Hint: `e.g. {"seats":["A1","A2"],"stock":{"parking":40},"sessionLimit":2,"maxHoldExtensions":1}; docs/API.md, PUT /api/admin/events/{event}, gives every field`}
	}
	return b, nil
}

// stockText is ", units: parking 40, vip 2" for a non-empty stock.
func stockText(stock map[string]int64) string {
	if len(stock) == 0 {
		return ""
	}
	var parts []string
	for _, sku := range slices.Sorted(maps.Keys(stock)) {
		parts = append(parts, fmt.Sprintf("%s %s", sku, num(stock[sku])))
	}
	return ", units: " + strings.Join(parts, ", ")
}

// eventGet is "vestibule events get EVENT": the event's admin view.
func (c *command) eventGet(ctx context.Context, pos []string) error {
	id, cl, err := c.eventClient(ctx, pos, "events get")
	if err != nil {
		return err
	}
	ev, err := cl.GetEvent(ctx, id)
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(ev)
	}
	tw := printer.NewTable(c.stdout, 0)
	tw.Printf("event\t%s\nroom\t%s\n\ndefinition\n", ev.Event, ev.Room)
	tw.Printf("  holdTTLSeconds\t%d\n", ev.HoldTTLSeconds)
	tw.Printf("  maxHoldExtensions\t%d\n", ev.MaxHoldExtensions)
	tw.Printf("  maxHoldSeconds\t%d\n", ev.MaxHoldSeconds)
	tw.Printf("  sessionLimit\t%d\n", ev.SessionLimit)
	by := map[booking.SeatState][]string{}
	for seat, st := range ev.Seats {
		by[st] = append(by[st], seat)
	}
	tw.Printf("\nseats\t%s\n", num(int64(len(ev.Seats))))
	for _, st := range []booking.SeatState{booking.SeatAvailable, booking.SeatHeld, booking.SeatSold} {
		seats := by[st]
		slices.Sort(seats)
		tw.Printf("  %s\t%s\t%s\n", st, num(int64(len(seats))), seatList(seats))
	}
	if len(ev.Stock) > 0 {
		tw.Printf("\nunits left\n")
		for _, sku := range slices.Sorted(maps.Keys(ev.Stock)) {
			tw.Printf("  %s\t%s\n", sku, num(ev.Stock[sku]))
		}
	}
	tw.Printf("\ncounters\n")
	for _, name := range slices.Sorted(maps.Keys(ev.Counters)) {
		tw.Printf("  %s\t%s\n", name, num(ev.Counters[name]))
	}
	tw.Printf("\nfence\t%s\t(the last fencing token issued)\n", ev.Fence)
	return tw.Flush()
}

// seatList names up to 12 seats, then how many more.
func seatList(seats []string) string {
	const most = 12
	if len(seats) <= most {
		return strings.Join(seats, " ")
	}
	return strings.Join(seats[:most], " ") + fmt.Sprintf(" … (%s more)", num(int64(len(seats)-most)))
}

// eventOrders is "vestibule events orders EVENT": every order of the event,
// confirmed and cancelled, each once.
func (c *command) eventOrders(ctx context.Context, pos []string) error {
	id, cl, err := c.eventClient(ctx, pos, "events orders")
	if err != nil {
		return err
	}
	orders, err := cl.EventOrders(ctx, id)
	if err != nil {
		return err
	}
	if c.g.json {
		if orders == nil {
			orders = []booking.OrderEvent{}
		}
		return c.printJSON(map[string]any{"event": id, "orders": orders})
	}
	if len(orders) == 0 {
		c.out.Printf("%s: no orders yet\n", id)
		return nil
	}
	tw := printer.NewTable(c.stdout, 0)
	tw.Println("ORDER\tSTATE\tCONFIRMED\tSESSION\tSEATS\tUNITS")
	for _, o := range orders {
		state := "confirmed"
		if o.Type == booking.OrderCancelled {
			state = "cancelled"
			if o.Reason != "" {
				state += " (" + o.Reason + ")"
			}
		}
		units := strings.TrimPrefix(stockText(o.Units), ", units: ")
		tw.Printf("%s\t%s\t%s\t%s\t%s\t%s\n", o.Order, state, o.ConfirmedAt.Local().Format("2006-01-02 15:04:05"),
			o.Session, strings.Join(o.Seats, " "), units)
	}
	return tw.Flush()
}
