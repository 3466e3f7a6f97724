package operator

import (
	"context"
	"net/http"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Deleted is what DELETE /api/admin/rooms/{room} answers: the grants and
// sessions removed with the room.
type Deleted struct {
	Room     string `json:"room"`
	Admitted int64  `json:"admitted"`
	Active   int64  `json:"active"`
}

// DeleteRoom removes a room for good. The deployment refuses (409
// room_not_empty) while visitors wait.
func (c *Client) DeleteRoom(ctx context.Context, id string) (Deleted, error) {
	p, err := roomPath(id)
	if err != nil {
		return Deleted{}, err
	}
	var out Deleted
	err = c.call(ctx, http.MethodDelete, p, nil, id, &out)
	return out, err
}

// RoomLog reads a room's audit log, oldest first.
func (c *Client) RoomLog(ctx context.Context, id string) ([]room.AuditEntry, error) {
	p, err := roomPath(id)
	if err != nil {
		return nil, err
	}
	var out struct {
		Entries []room.AuditEntry `json:"entries"`
	}
	err = c.call(ctx, http.MethodGet, p+"/log", nil, id, &out)
	return out.Entries, err
}
