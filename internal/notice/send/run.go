package send

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Queue is where the notify function takes a room's due notices and acks
// them: the admin routes (APIQueue, in AWS) or the engine (make dev).
type Queue interface {
	Take(ctx context.Context, roomID string, most int, lease time.Duration) (Batch, error)
	Ack(ctx context.Context, roomID string, seq int64, o room.NoticeOutcome, retryAt time.Time) error
}

// Batch is the notices taken, with the room's page setting (nil for none):
// the brand of the messages.
type Batch struct {
	Notices []room.DueNotice `json:"notices"`
	Page    *room.Page       `json:"page,omitempty"`
}

// Lease is how long a notice taken is the sender's before it is due again
// (room.Engine.TakeNotices): well past a send's timeout, so only a sender
// that died (or could not ack) makes it go twice.
const Lease = 30 * time.Second

// Take is the most notices one take asks for; Parallel the sends at once.
const (
	Take     = 50
	Parallel = 16
)

// Notifier sends one notice: Sender, or make dev's outbox.
type Notifier interface {
	Send(ctx context.Context, roomID string, p *room.Page, n room.DueNotice, now time.Time) Sent
}

var _ Notifier = (*Sender)(nil)

// Engine is the part of the room engine EngineQueue takes notices from.
type Engine interface {
	TakeNotices(ctx context.Context, room string, most int, lease time.Duration) ([]room.DueNotice, error)
	AckNotice(ctx context.Context, room string, seq int64, o room.NoticeOutcome, retryAt time.Time) error
	GetConfig(ctx context.Context, room string) (room.Config, error)
}

// EngineQueue is the Queue of a process that holds the engine itself (make
// dev): the same calls as the admin routes make.
type EngineQueue struct{ Engine Engine }

// Take takes the room's due notices, with its page setting.
func (q EngineQueue) Take(ctx context.Context, roomID string, most int, lease time.Duration) (Batch, error) {
	cfg, err := q.Engine.GetConfig(ctx, roomID)
	if err != nil {
		return Batch{}, err
	}
	ns, err := q.Engine.TakeNotices(ctx, roomID, most, lease)
	return Batch{Notices: ns, Page: cfg.Page}, err
}

// Ack acks one notice.
func (q EngineQueue) Ack(ctx context.Context, roomID string, seq int64, o room.NoticeOutcome, retryAt time.Time) error {
	return q.Engine.AckNotice(ctx, roomID, seq, o, retryAt)
}

// Result counts what a Run sent.
type Result struct {
	Sent, Gone, Retry int
	Push, Email       int // sent by each channel
}

// Run sends the room's due notices: takes them (Take at a time, until fewer
// come or the context has less than a send's time left), sends each (Parallel
// at once), and acks each with its outcome; a retry is due again at RetryAt.
// A send's failure never stops the others; an ack that fails leaves the
// notice to its lease (sent again: at least once). log gets one line a
// notice: room, sequence, outcome, channel, status or code, never an address.
func Run(ctx context.Context, q Queue, s Notifier, roomID string, now func() time.Time, log *slog.Logger) (Result, error) {
	var r Result
	for {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < SendTimeout+2*time.Second {
			return r, nil
		}
		b, err := q.Take(ctx, roomID, Take, Lease)
		if err != nil {
			return r, err
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, Parallel)
		for _, n := range b.Notices {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				at := now()
				sent := s.Send(ctx, roomID, b.Page, n, at)
				var retryAt time.Time
				if sent.Outcome == room.NoticeRetry {
					retryAt = RetryAt(at, n.Deadline)
				}
				aerr := q.Ack(ctx, roomID, n.Seq, sent.Outcome, retryAt)
				mu.Lock()
				r.count(sent)
				mu.Unlock()
				level, attrs := slog.LevelInfo, []slog.Attr{slog.String("room", roomID), slog.Int64("seq", n.Seq),
					slog.String("outcome", string(sent.Outcome)), slog.String("channel", string(sent.Channel)),
					slog.Int("status", sent.Status), slog.String("code", sent.Code)}
				if aerr != nil {
					level, attrs = slog.LevelWarn, append(attrs, slog.String("ack", aerr.Error()))
				}
				log.LogAttrs(ctx, level, "notice", attrs...)
			}()
		}
		wg.Wait()
		if len(b.Notices) < Take {
			return r, nil
		}
	}
}

func (r *Result) count(s Sent) {
	switch s.Outcome {
	case room.NoticeSent:
		r.Sent++
		if s.Channel == ChannelPush {
			r.Push++
		} else {
			r.Email++
		}
	case room.NoticeGone:
		r.Gone++
	default:
		r.Retry++
	}
}
