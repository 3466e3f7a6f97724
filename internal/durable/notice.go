package durable

import (
	"context"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// The notices of a visitor's turn live with the place, in Redis only: a total
// loss takes the registrations with the places, and a restored place holds
// none (docs/ENGINE.md, "Notices"). These pass the engine's calls on,
// restoring a lost room first.

// RegisterNotice is the engine's, restoring a lost room (the place is then
// restored by the visitor's next poll, and the page registers again).
func (q *Queue) RegisterNotice(ctx context.Context, t room.Ticket, s room.NoticeSignup) error {
	_, err := retry(ctx, q, t.Room, func() (struct{}, error) { return struct{}{}, q.eng.RegisterNotice(ctx, t, s) })
	return err
}

// WithdrawNotice is the engine's, restoring a lost room.
func (q *Queue) WithdrawNotice(ctx context.Context, t room.Ticket) error {
	_, err := retry(ctx, q, t.Room, func() (struct{}, error) { return struct{}{}, q.eng.WithdrawNotice(ctx, t) })
	return err
}

// TakeNotices is the engine's: a lost room has no notice to take.
func (q *Queue) TakeNotices(ctx context.Context, id string, most int, lease time.Duration) ([]room.DueNotice, error) {
	return q.eng.TakeNotices(ctx, id, most, lease)
}

// AckNotice is the engine's.
func (q *Queue) AckNotice(ctx context.Context, id string, seq int64, o room.NoticeOutcome, retryAt time.Time) error {
	return q.eng.AckNotice(ctx, id, seq, o, retryAt)
}
