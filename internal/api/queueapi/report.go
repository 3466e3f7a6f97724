package queueapi

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// LifeHistorian is an Engine that keeps a room's history for its whole life
// (durable.Queue, with a settings store); without it a report covers the
// last day that Redis keeps.
type LifeHistorian interface {
	LifeHistory(ctx context.Context, room string) ([]room.HistoryPoint, error)
}

// OrderCounter counts the orders of a room's booking events a minute
// (bookingdb.Engine.OrdersByMinute): the booking kit's engine when the API
// runs it.
type OrderCounter interface {
	OrdersByMinute(ctx context.Context, room string) ([]room.OrderMinute, error)
}

// roomReport answers the sale's report (room.ReportOf): a row a minute for
// the room's life and the totals, with the room's counters now, and the
// orders of its booking events when the API runs the booking kit.
func (h *API) roomReport(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	_, st, err := h.o.Queue.Status(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var pts []room.HistoryPoint
	if lh, ok := h.o.Queue.(LifeHistorian); ok {
		pts, err = lh.LifeHistory(ctx, r.Room)
	} else {
		pts, err = h.o.Queue.History(ctx, r.Room)
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var orders []room.OrderMinute
	if h.o.Orders != nil {
		if orders, err = h.o.Orders.OrdersByMinute(ctx, r.Room); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
	}
	rep := room.ReportOf(pts, orders)
	return httpapi.JSON(http.StatusOK, struct {
		Room string `json:"room"`
		room.Report
		Now room.Stats `json:"now"`
	}{r.Room, rep, st}), nil
}
