package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Status is a room's public status (GET /api/rooms/{room}/status), what the
// waiting page reads: it needs no credentials.
type Status struct {
	Room           string  `json:"room"`
	Mode           string  `json:"mode"`
	Waiting        int64   `json:"waiting"`
	Active         int64   `json:"active"`
	Admitted       int64   `json:"admitted"`
	MaxActive      int64   `json:"maxActive"`
	AdmitPerMinute int64   `json:"admitPerMinute"`
	RatePerMinute  float64 `json:"ratePerMinute"`
	// EtaSeconds is the wait of someone joining now; nil when unknown.
	EtaSeconds *int64     `json:"etaSeconds"`
	OpensAt    *time.Time `json:"opensAt,omitempty"`
	// DrawCommitment is the SHA-256 of the pre-queue lottery's seed,
	// published before the opening; DrawSeed is the seed, published from
	// the opening on.
	DrawCommitment string `json:"drawCommitment,omitempty"`
	DrawSeed       string `json:"drawSeed,omitempty"`
	// Net, NetWhy and PaceWhy are how the room steers itself (room.Stats).
	Net     string `json:"net,omitempty"`
	NetWhy  string `json:"netWhy,omitempty"`
	PaceWhy string `json:"paceWhy,omitempty"`
}

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
