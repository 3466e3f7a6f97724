package localstack

import (
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
)

// emitting is the engine with admission events written to o.Events as JSON
// lines, the same lines the functions write to CloudWatch Logs (make dev
// prints them beside the order events); the engine alone when o.Events is nil.
func emitting(eng room.Engine, o Options) room.Engine {
	if o.Events == nil {
		return eng
	}
	return roomevents.Emit(eng, eventbus.NewLog(o.Events), o.Clock, o.Logger)
}
