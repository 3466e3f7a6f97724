package queueapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// deleteRoom removes a room for good (Engine.Delete): its settings, queue,
// grants, sessions and history. It refuses while visitors wait (409
// room_not_empty): close and drain the room first. Admitted visitors and
// sessions are removed with it (their entries stop working).
func (h *API) deleteRoom(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	cfg, st, err := h.o.Queue.Status(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if st.Waiting > 0 {
		return events.APIGatewayV2HTTPResponse{}, &httpapi.Error{Status: http.StatusConflict, Code: "room_not_empty",
			Message: fmt.Sprintf("%d visitors are waiting: close the room and drain it first", st.Waiting)}
	}
	if err := h.o.Queue.Delete(ctx, r.Room); err != nil {
		if errors.Is(err, room.ErrCannotDelete) {
			return events.APIGatewayV2HTTPResponse{}, errCannotDelete
		}
		return events.APIGatewayV2HTTPResponse{}, err
	}
	h.audited(ctx, r, &cfg, nil)
	return httpapi.JSON(http.StatusOK, struct {
		Room     string `json:"room"`
		Deleted  bool   `json:"deleted"`
		Admitted int64  `json:"admitted"` // grants removed
		Active   int64  `json:"active"`   // sessions removed
	}{r.Room, true, st.Admitted, st.Active}), nil
}

var errCannotDelete = &httpapi.Error{Status: http.StatusNotImplemented, Code: "not_supported",
	Message: "this deployment cannot delete rooms (its settings store keeps them): close the room instead"}
