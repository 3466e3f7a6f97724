package durable

import (
	"context"
)

// loadReporter is an engine that records the origin's load (*roomdb.Engine,
// admission.Emitter).
type loadReporter interface {
	ReportLoad(ctx context.Context, room string, load float64) error
}

var (
	_ loadReporter = (*Queue)(nil)
)

// ReportLoad passes the origin's load on to the engine (nothing when it keeps
// none). The load is not durable: after a total loss the pace starts at the
// room's floor until the origin reports again (docs/ENGINE.md, "Steering").
func (q *Queue) ReportLoad(ctx context.Context, id string, load float64) error {
	lr, ok := q.eng.(loadReporter)
	if !ok {
		return nil
	}
	return lr.ReportLoad(ctx, id, load)
}
