package roomdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/lua"
)

// claimCmd gives a room to the engine's region (lua/claim.lua).
var claimCmd = lua.NewScript("claim", lua.Claim)

// ErrFenced is a call refused because a failover gave the room to another
// region than the engine's (docs/ENGINE.md, "Regions"): the old region's late
// writes change nothing. It wraps room.ErrUnavailable, so the old region
// answers 503 with Retry-After and the client, once the write name has moved,
// reaches the new one.
var ErrFenced = fmt.Errorf("%w: room belongs to another region", room.ErrUnavailable)

// WithRegion makes the engine write for region (an AWS region's name): its
// scripts carry the name, and refuse a room a failover gave to another
// region (ErrFenced). An engine of no region ("", the default) writes every
// room no failover claimed. It panics on a name that is no region's; config
// checks it first.
func WithRegion(region string) Option {
	if region != "" && !lua.ValidRegion(region) {
		panic("roomdb: not a region name: " + region)
	}
	return func(e *Engine) { e.region = region }
}

// inRegion is s as the engine's region runs it.
func (e *Engine) inRegion(s script) script {
	if e.region == "" {
		return s
	}
	if b, ok := e.bound.Load(s.Name); ok {
		return b.(script)
	}
	b := s.InRegion(e.region)
	e.bound.Store(s.Name, b)
	return b
}

// unavailable is the error of a script call that failed: ErrFenced when the
// room belongs to another region, else room.ErrUnavailable wrapping the cause
// (a context error stays visible to errors.Is).
func unavailable(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) && isFenced(rerr.Error()) {
		return fmt.Errorf("%w: %s", ErrFenced, rerr.Error())
	}
	return fmt.Errorf("%w: %w", room.ErrUnavailable, err)
}

// isFenced reports whether a script's error is lib.lua fence_region's, which
// Redis may put after the script's name.
func isFenced(msg string) bool { return strings.Contains(msg, "FENCED ") }

// ClaimRegion gives a room to the engine's region at a failover: from then on
// the scripts of another region's engine refuse it (ErrFenced). A claim that
// moves the room raises its epoch and opens a recovery window over the floor
// of the head the store holds (lua/claim.lua); a claim of the room's own
// region changes nothing. It returns the claim now stored. An engine of no region
// cannot claim (room.ErrNoRegion).
func (e *Engine) ClaimRegion(ctx context.Context, roomID string) (room.RegionClaim, error) {
	if e.region == "" {
		return room.RegionClaim{}, room.ErrNoRegion
	}
	reply, err := e.run(ctx, claimCmd, roomID, e.nowMS())
	if err != nil {
		return room.RegionClaim{}, err
	}
	if word(reply) == "noroom" {
		return room.RegionClaim{}, room.ErrUnknownRoom
	}
	if len(reply) != 3 || str(reply[0]) != "ok" {
		return room.RegionClaim{}, unexpected(claimCmd, reply)
	}
	return room.RegionClaim{Region: e.region, Epoch: num(reply[1]), Previous: str(reply[2])}, nil
}

// RegionOf reads which region a room belongs to (plain reads: no fence).
func (e *Engine) RegionOf(ctx context.Context, roomID string) (room.RegionClaim, error) {
	if !room.ValidRoomID(roomID) {
		return room.RegionClaim{}, room.ErrInvalidRoom
	}
	m, err := e.rdb.HGetAll(ctx, KeysFor(roomID).Config).Result()
	if err != nil {
		return room.RegionClaim{}, fmt.Errorf("%w: read region: %w", room.ErrUnavailable, err)
	}
	if len(m) == 0 {
		return room.RegionClaim{}, room.ErrUnknownRoom
	}
	n, _ := strconv.ParseInt(m["regionEpoch"], 10, 64)
	return room.RegionClaim{Region: m["region"], Epoch: n}, nil
}
