package roomdb

import (
	"context"
	"strconv"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/lua"
)

// loadCmd records the origin's load (lua/load.lua).
var loadCmd = lua.NewScript("load", lua.Load)

// ReportLoad records the origin's load, 0 (idle) to 1 (at capacity), which
// the tick's pace follows in a room with admitPerMinuteMin (docs/ENGINE.md,
// "Steering"); a value outside 0..1 is held to it. Errors: ErrInvalidRoom,
// ErrUnknownRoom, ErrUnavailable.
func (e *Engine) ReportLoad(ctx context.Context, roomID string, load float64) error {
	load = min(1, max(0, load))
	reply, err := e.run(ctx, loadCmd, roomID, e.nowMS(), strconv.FormatFloat(load, 'f', 3, 64))
	if err != nil {
		return err
	}
	switch word(reply) {
	case wordNoRoom:
		return room.ErrUnknownRoom
	case wordOK:
		return nil
	}
	return unexpected(loadCmd, reply)
}

// steered reads the steering a tick reports (tick.lua, pace.lua steer).
func steered(reply []any) (*room.NetChange, *room.PaceChange) {
	var n *room.NetChange
	var p *room.PaceChange
	if on := str(reply[tickNet]); on != "" {
		n = &room.NetChange{On: on == "1", Why: str(reply[tickNetWhy])}
	}
	if why := str(reply[tickPaceWhy]); why != "" {
		p = &room.PaceChange{From: float64(num(reply[tickPaceFrom])) / 1000, To: float64(num(reply[tickPaceTo])) / 1000, Why: why}
	}
	return n, p
}

// netState is Stats.Net of a room in mode cfg.Mode whose net field is net.
func netState(cfg room.Config, net string) string {
	switch {
	case cfg.Mode != room.ModeAuto:
		return ""
	case net == "1":
		return room.NetOn
	}
	return room.NetOff
}

// paceWhy is Stats.PaceWhy: "" unless the pace follows the origin.
func paceWhy(cfg room.Config, why string) string {
	if cfg.AdmitPerMinuteMin <= 0 {
		return ""
	}
	if why == "" {
		return "quiet"
	}
	return why
}
