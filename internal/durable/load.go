package durable

import (
	"context"
)

// ReportLoad passes the origin's load on to the engine. The load is not
// durable: after a total loss the pace starts at the room's floor until the
// origin reports again (docs/ENGINE.md, "Steering").
func (q *Queue) ReportLoad(ctx context.Context, id string, load float64) error {
	return q.eng.ReportLoad(ctx, id, load)
}
