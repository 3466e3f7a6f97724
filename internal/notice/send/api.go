package send

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// APIQueue is the Queue of the notify function: the admin routes of the
// stack's API, each call authorised by Authorize (SigV4 for execute-api, or
// make dev's admin key).
type APIQueue struct {
	Base      string // the API's URL
	Authorize func(ctx context.Context, req *http.Request, body []byte) error
	HTTP      *http.Client // nil: a client with a 10 s timeout
}

// Take calls the take route.
func (q *APIQueue) Take(ctx context.Context, roomID string, most int, lease time.Duration) (Batch, error) {
	var b Batch
	err := q.call(ctx, roomID, "take", notice.TakeRequest{Most: most, LeaseMs: lease.Milliseconds()}, &b)
	return b, err
}

// Ack calls the ack route; a notice no longer due (404 unknown_notice) is
// room.ErrNoNotice.
func (q *APIQueue) Ack(ctx context.Context, roomID string, seq int64, o room.NoticeOutcome, retryAt time.Time) error {
	a := notice.AckRequest{Seq: seq, Outcome: o}
	if o == room.NoticeRetry {
		a.RetryAt = &retryAt
	}
	return q.call(ctx, roomID, "ack", a, nil)
}

func (q *APIQueue) call(ctx context.Context, roomID, verb string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	u := strings.TrimRight(q.Base, "/") + "/api/admin/rooms/" + url.PathEscape(roomID) + "/notices/" + verb
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if q.Authorize != nil {
		if err := q.Authorize(ctx, req, body); err != nil {
			return err
		}
	}
	c := q.HTTP
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	res, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("notice: %s: %w", verb, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("notice: %s: %w", verb, err)
	}
	if res.StatusCode == http.StatusNotFound && bytes.Contains(b, []byte(`"unknown_notice"`)) {
		return room.ErrNoNotice
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("notice: %s: %d %.200s", verb, res.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("notice: %s: %w", verb, err)
	}
	return nil
}
