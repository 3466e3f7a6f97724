package localstack

import (
	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
)

// emitting is the engine with admission events written to o.Events as JSON
// lines, the same lines the functions write to CloudWatch Logs (make dev
// prints them beside the order events), and handed to the notices' runner,
// which sends the notices a tick's event counts (notices.go).
func emitting(eng room.Engine, o Options, notices eventbus.Publisher) room.Engine {
	pub := publishers{notices}
	if o.Events != nil {
		pub = append(pub, eventbus.NewLog(o.Events))
	}
	return roomevents.Emit(eng, pub, o.Clock, o.Logger)
}
