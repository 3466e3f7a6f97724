package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Status is a room's public status (GET /api/rooms/{room}/status), what the
// waiting page reads: it needs no credentials.
type Status = room.PublicStatus

// Status reads a room's public status. It sends no credentials: the route
// is public, so it works without AWS credentials or an admin key.
func (c *Client) Status(ctx context.Context, id string) (Status, error) {
	if _, err := roomPath(id); err != nil {
		return Status{}, err
	}
	public := &Client{Endpoint: c.Endpoint, HTTP: c.HTTP}
	resp, b, err := public.Do(ctx, http.MethodGet, "/api/rooms/"+id+"/status", nil)
	if err != nil {
		return Status{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return Status{}, public.problem(resp.StatusCode, b, id)
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return Status{}, &Error{Status: resp.StatusCode, Message: fmt.Sprintf("%s answered the status of %s with something that is not its JSON (%v)", c.Endpoint, id, err),
			Hint: "is the endpoint the API's URL (the stack's ApiUrl output, or the local stack's URL)?"}
	}
	return st, nil
}
