package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/booking"
)

// Defined is what PUT /api/admin/events/{event} answers: the definition as
// stored, with its defaults filled in and the seats counted.
type Defined struct {
	Event             string           `json:"event"`
	Room              string           `json:"room"`
	Seats             int64            `json:"seats"`
	Stock             map[string]int64 `json:"stock,omitempty"`
	HoldTTLSeconds    int64            `json:"holdTTLSeconds"`
	SessionLimit      int64            `json:"sessionLimit"`
	MaxHoldExtensions int64            `json:"maxHoldExtensions"`
	MaxHoldSeconds    int64            `json:"maxHoldSeconds"`
}

// EventInfo is GET /api/admin/events/{event}, the booking API's admin view.
type EventInfo = booking.EventView

func eventPath(id string) (string, error) {
	if !booking.ValidEventID(id) {
		return "", &Error{Code: "invalid_event", Message: fmt.Sprintf("%q is not an event id", id),
			Hint: "an event id is 1 to 64 of A-Z a-z 0-9 _ -"}
	}
	return "/api/admin/events/" + id, nil
}

// eventCall is call for the event routes: their own errors (unknown_event,
// invalid_inventory, event_in_use…) said with event advice, the others as
// for any admin route.
func (c *Client) eventCall(ctx context.Context, method, path string, body []byte, id string, out any) error {
	resp, b, err := c.Do(ctx, method, path, body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return &Error{Status: resp.StatusCode, Message: fmt.Sprintf("%s answered with something that is not the admin API's JSON (%v)", c.Endpoint, err),
				Hint: "is the endpoint the API's URL (the stack's ApiUrl output, or the local stack's URL)?"}
		}
		return nil
	}
	var p apiProblem
	_ = json.Unmarshal(b, &p) // not the API's JSON: p stays empty and the general advice below speaks
	e := &Error{Status: resp.StatusCode, Code: p.Error.Code, Message: p.Error.Message}
	switch {
	case e.Code == "unknown_event":
		e.Message = fmt.Sprintf("there is no event %q here", id)
		e.Hint = "`vestibule events define " + id + " --file DEF.json` defines it"
	case e.Code == "event_in_use":
		e.Message = fmt.Sprintf("event %s is in use: %s", id, e.Message)
		e.Hint = "an event with live holds or uncancelled orders keeps its definition: let the holds end or release them, " +
			"cancel the orders (`vestibule events orders " + id + "` lists them), then define it again"
	case resp.StatusCode == http.StatusBadRequest && e.Code != "":
		e.Message = "the deployment refused the definition: " + strings.TrimPrefix(e.Message, "booking: ")
		e.Hint = "docs/API.md, PUT /api/admin/events/{event}, gives every field with its range"
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		e.Message = "the definition is too large (413): " + e.Message
		e.Hint = "the API takes at most 1 MiB for an event's definition"
	default:
		return c.problem(resp.StatusCode, b, "")
	}
	return e
}

// DefineEvent defines or replaces an event's inventory with def, the JSON
// body of PUT /api/admin/events/{event} (docs/API.md). The deployment
// refuses (409 event_in_use) while the event has live holds or uncancelled
// orders.
func (c *Client) DefineEvent(ctx context.Context, id string, def []byte) (Defined, error) {
	p, err := eventPath(id)
	if err != nil {
		return Defined{}, err
	}
	var out Defined
	err = c.eventCall(ctx, http.MethodPut, p, def, id, &out)
	return out, err
}

// GetEvent returns an event's admin view.
func (c *Client) GetEvent(ctx context.Context, id string) (EventInfo, error) {
	p, err := eventPath(id)
	if err != nil {
		return EventInfo{}, err
	}
	var out EventInfo
	err = c.eventCall(ctx, http.MethodGet, p, nil, id, &out)
	return out, err
}

// maxOrderPages bounds EventOrders' paging, against a deployment whose
// cursor never comes back to "0".
const maxOrderPages = 100_000

// EventOrders returns every order of an event, confirmed and cancelled,
// each once (the API may give an order on two pages), in the order the
// pages give them. A cancelled order comes as its cancellation.
func (c *Client) EventOrders(ctx context.Context, id string) ([]booking.OrderEvent, error) {
	p, err := eventPath(id)
	if err != nil {
		return nil, err
	}
	var all []booking.OrderEvent
	seen := map[string]int{} // order → index in all
	cursor := "0"
	for range maxOrderPages {
		var page struct {
			Orders []booking.OrderEvent `json:"orders"`
			Next   string               `json:"next"`
		}
		if err := c.eventCall(ctx, http.MethodGet, p+"/orders?cursor="+url.QueryEscape(cursor), nil, id, &page); err != nil {
			return nil, err
		}
		for _, o := range page.Orders {
			i, ok := seen[o.Order]
			switch {
			case !ok:
				seen[o.Order] = len(all)
				all = append(all, o)
			case o.Type == booking.OrderCancelled:
				all[i] = o // a cancellation is final: it wins over the confirmation
			}
		}
		if cursor = page.Next; cursor == "0" || cursor == "" {
			return all, nil
		}
	}
	return nil, &Error{Message: fmt.Sprintf("the orders of %s: more than %d pages", id, maxOrderPages)}
}
