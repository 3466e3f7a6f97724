package admission

import (
	"context"
	"log/slog"
	"time"
)

// Archiver copies rooms' completed hours of history to the durable store
// (durable.Queue.ArchiveHistory, throttled there to a look a minute a room),
// so that a sale's report covers the room's whole life.
type Archiver interface {
	Rooms(ctx context.Context) ([]string, error)
	ArchiveHistory(ctx context.Context, room string) error
}

// ArchiveHistories archives every room's completed hours; failures are
// logged and tried again at the next look.
func ArchiveHistories(ctx context.Context, a Archiver, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ids, err := a.Rooms(ctx)
	if err != nil {
		return
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if err := a.ArchiveHistory(ctx, id); err != nil && ctx.Err() == nil {
			log.LogAttrs(ctx, slog.LevelError, "archive history", slog.String("room", id), slog.String("error", err.Error()),
				slog.Time("at", time.Now()))
		}
	}
}
