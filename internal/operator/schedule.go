package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// Schedule reads a room's scheduled changes, by time.
func (c *Client) Schedule(ctx context.Context, id string) ([]room.ScheduledChange, error) {
	p, err := roomPath(id)
	if err != nil {
		return nil, err
	}
	var out struct {
		Changes []room.ScheduledChange `json:"changes"`
	}
	err = c.call(ctx, http.MethodGet, p+"/schedule", nil, id, &out)
	return out.Changes, err
}

// Plan schedules settings (as PutRoom takes them) for at.
func (c *Client) Plan(ctx context.Context, id string, at time.Time, settings map[string]any) (room.ScheduledChange, error) {
	p, err := roomPath(id)
	if err != nil {
		return room.ScheduledChange{}, err
	}
	body, err := json.Marshal(map[string]any{"at": at.UTC(), "settings": settings})
	if err != nil {
		return room.ScheduledChange{}, &Error{Message: "encoding the change: " + err.Error(), Err: err}
	}
	if limit := routes.AdminPlan.BodyLimit(); len(body) > limit {
		return room.ScheduledChange{}, &Error{Message: fmt.Sprintf("the change is %d bytes; the API takes at most %d", len(body), limit)}
	}
	var out struct {
		Change room.ScheduledChange `json:"change"`
	}
	err = c.call(ctx, http.MethodPost, p+"/schedule", body, id, &out)
	return out.Change, err
}

// Unplan cancels the scheduled change of the id.
func (c *Client) Unplan(ctx context.Context, id, change string) (room.ScheduledChange, error) {
	p, err := roomPath(id)
	if err != nil {
		return room.ScheduledChange{}, err
	}
	body, _ := json.Marshal(map[string]string{"id": change}) // a map of strings always marshals
	var out struct {
		Cancelled room.ScheduledChange `json:"cancelled"`
	}
	err = c.call(ctx, http.MethodPost, p+"/schedule/cancel", body, id, &out)
	return out.Cancelled, err
}

// Report is a sale's report as GET /api/admin/rooms/{room}/report answers it.
type Report struct {
	Room string `json:"room"`
	room.Report
	Now room.Stats `json:"now"`
}

// Report reads the room's sale report: a row a minute for its life, and the totals.
func (c *Client) Report(ctx context.Context, id string) (Report, error) {
	p, err := roomPath(id)
	if err != nil {
		return Report{}, err
	}
	var out Report
	err = c.call(ctx, http.MethodGet, p+"/report", nil, id, &out)
	return out, err
}
