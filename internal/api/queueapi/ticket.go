package queueapi

import (
	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// requestTicket verifies the request's ticket (Authorization: Bearer) for its
// room. It returns the ticket to hand back in the answer: the one sent, or,
// for a Stale one (a JWT ticket issued before format 2, or one signed under a
// previous secret), the same place with the same lifetime in the current
// form, which the page keeps from then on. A Stale ticket whose place cannot
// be written in the current form (only a hand-made one could) is handed back
// as it came.
func (h *API) requestTicket(r *httpapi.Request) (room.Ticket, string, error) {
	s, ok := r.Bearer()
	if !ok {
		return room.Ticket{}, "", errMissingTicket
	}
	v, err := h.o.Tickets.Check(s, r.Room, r.Now)
	if err != nil {
		return room.Ticket{}, "", errInvalidTicket
	}
	if v.Stale {
		if again, err := h.o.Tickets.Reissue(v); err == nil {
			s = again
		}
	}
	return v.Ticket, s, nil
}
