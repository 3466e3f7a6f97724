package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// deleteRoom removes a room for good (room.Deleter): its settings, queue,
// grants, sessions and history. It refuses while visitors wait (409
// room_not_empty): close and drain the room first. Admitted visitors and
// sessions are removed with it (their entries stop working).
func (h *Handler) deleteRoom(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	d, ok := h.o.Queue.(room.Deleter)
	if !ok {
		return events.APIGatewayV2HTTPResponse{}, errCannotDelete
	}
	cfg, st, err := h.o.Queue.Status(ctx, r.room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if st.Waiting > 0 {
		return events.APIGatewayV2HTTPResponse{}, &apiError{status: http.StatusConflict, code: "room_not_empty",
			message: fmt.Sprintf("%d visitors are waiting: close the room and drain it first", st.Waiting)}
	}
	if err := d.Delete(ctx, r.room); err != nil {
		if errors.Is(err, room.ErrCannotDelete) {
			return events.APIGatewayV2HTTPResponse{}, errCannotDelete
		}
		return events.APIGatewayV2HTTPResponse{}, err
	}
	h.audited(ctx, r, &cfg, nil)
	return jsonResponse(http.StatusOK, struct {
		Room     string `json:"room"`
		Deleted  bool   `json:"deleted"`
		Admitted int64  `json:"admitted"` // grants removed
		Active   int64  `json:"active"`   // sessions removed
	}{r.room, true, st.Admitted, st.Active}), nil
}

var errCannotDelete = &apiError{status: http.StatusNotImplemented, code: "not_supported",
	message: "this deployment cannot delete rooms (its settings store keeps them): close the room instead"}
