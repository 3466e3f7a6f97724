package bookingdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// roomSession splits a room session id 'room:seq' (RoomSession.ID).
func roomSession(s string) (roomID, seq string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 1 || !booking.ValidEventID(s[:i]) {
		return "", "", false
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != s[i+1:] {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// sessionsMax is the most holding sessions the sweep checks per event and call.
const sessionsMax = 1000

// EndSession drops at once every live hold that the room session room:seq
// made with HoldSession, on every event of the room (counted "ended"; their
// seats and units return), and advances each event's fence past them, so a
// late confirm of one is refused (ErrStaleToken). The room engine's complete,
// a visitor's leave and the sweep (a session that timed out) call it; ending a
// session without holds, or twice, does nothing. It returns how many holds it dropped.
// The room's events are the set Define fills (RoomEventsKey): one read for a
// room that sells nothing; an event defined by an older version is not in it
// until defined again, and its holds go at the sweep (EndTimedOut).
func (e *Engine) EndSession(ctx context.Context, roomID string, seq int64) (int64, error) {
	if !booking.ValidEventID(roomID) || seq < 1 {
		return 0, nil
	}
	evs, err := e.rdb.SMembers(ctx, RoomEventsKey(roomID)).Result()
	if err != nil {
		return 0, fmt.Errorf("%w: the room's events: %w", booking.ErrUnavailable, err)
	}
	s := booking.RoomSession{Room: roomID, Seq: seq}.ID()
	var n int64
	for _, ev := range evs {
		k, err := e.endSessions(ctx, ev, s)
		if err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// endSessions runs booking_end.lua on one event.
func (e *Engine) endSessions(ctx context.Context, event string, sessions ...string) (int64, error) {
	args := make([]any, 0, 1+len(sessions))
	args = append(args, e.nowMS())
	for _, s := range sessions {
		args = append(args, s)
	}
	reply, err := e.run(ctx, endCmd, event, args...)
	if err != nil {
		return 0, err
	}
	switch str(reply[0]) {
	case "ok":
		if len(reply) >= 2 {
			return num(reply[1]), nil
		}
	case "noevent":
		return 0, nil
	}
	return 0, unexpected(endCmd, reply)
}

// EndTimedOut drops the holds of the event's room sessions that are no
// longer in their room's active set (timed out, reclaimed by a tick, or
// ended while a complete's EndSession failed): up to sessionsMax sessions a call.
func (e *Engine) EndTimedOut(ctx context.Context, event string) (int64, error) {
	reply, err := e.run(ctx, sessCmd, event, sessionsMax)
	if err != nil {
		return 0, err
	}
	if str(reply[0]) != "ok" || len(reply) < 2 {
		return 0, refusal(sessCmd, reply, "noevent")
	}
	if len(reply) == 2 {
		return 0, nil
	}
	roomID := str(reply[1])
	bySeq := map[string]string{}
	args := []any{e.nowMS()}
	var stray []string // sessions of another room (the event changed rooms): theirs to end
	for _, v := range reply[2:] {
		s := str(v)
		r, seq, ok := roomSession(s)
		if !ok || r != roomID {
			stray = append(stray, s)
			continue
		}
		bySeq[seq] = s
		args = append(args, seq)
	}
	var ended []string
	if len(args) > 1 {
		v, err := endedCmd.Run(ctx, e.rdb, []string{roomdb.KeysFor(roomID).Active}, args...).Result()
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %w", booking.ErrUnavailable, endedCmd.Name, err)
		}
		seqs, _ := v.([]any)
		for _, q := range seqs {
			ended = append(ended, bySeq[str(q)])
		}
	}
	ended = append(ended, stray...)
	if len(ended) == 0 {
		return 0, nil
	}
	return e.endSessions(ctx, event, ended...)
}

// sessionKeys are the KEYS of a confirm or an extend by session, and the
// session's sequence: a hold of a room session whose session ended is
// refused (ErrStaleToken) even before the sweep drops it — in the script when
// the event is named after the room (its active set is the eleventh key),
// after one read of the room's active set otherwise (the ended session's
// holds are dropped here, so the script finds none).
func (e *Engine) sessionKeys(ctx context.Context, event, session string) (keys []string, seq string, err error) {
	keys = KeysFor(event).List()
	r, q, ok := roomSession(session)
	if !ok {
		return keys, "", nil
	}
	if r == event {
		return append(keys, roomdb.KeysFor(r).Active), q, nil
	}
	v, err := endedCmd.Run(ctx, e.rdb, []string{roomdb.KeysFor(r).Active}, e.nowMS(), q).Result()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", booking.ErrUnavailable, endedCmd.Name, err)
	}
	if ended, _ := v.([]any); len(ended) > 0 {
		if _, err := e.endSessions(ctx, event, session); err != nil {
			return nil, "", err
		}
	}
	return keys, "", nil
}

// Extend gives the session's hold more time (a payment under way): the
// extension numbered n (1 for the hold's first) moves its end to now + the
// hold TTL, no later than its creation + the event's MaxHold. Idempotent: an
// extension already made (n at most the hold's count) changes nothing and is
// answered Replayed. The hold keeps its token, which Confirm checks as
// before. Errors: ErrExtensionLimit (n over the event's MaxHoldExtensions, or
// the hold at its longest life), ErrInvalidRequest (n skips one, n < 1),
// ErrHoldExpired (its time passed: dropped now), ErrStaleToken (no live hold:
// released, expired, ended with its session), ErrAlreadyConfirmed,
// ErrWrongSession, ErrUnknownEvent.
func (e *Engine) Extend(ctx context.Context, event, session string, token, n int64) (booking.Extension, error) {
	if !booking.ValidEventID(event) {
		return booking.Extension{}, booking.ErrInvalidEvent
	}
	if !booking.ValidSession(session) {
		return booking.Extension{}, fmt.Errorf("%w: session %q", booking.ErrInvalidRequest, session)
	}
	if n < 1 || n > booking.MaxExtensions {
		return booking.Extension{}, fmt.Errorf("%w: extension %d, want 1 to %d", booking.ErrInvalidRequest, n, booking.MaxExtensions)
	}
	if token <= 0 {
		return booking.Extension{}, booking.ErrStaleToken
	}
	keys, seq, err := e.sessionKeys(ctx, event, session)
	if err != nil {
		return booking.Extension{}, err
	}
	reply, err := e.runKeys(ctx, extendCmd, event, keys, e.nowMS(), session, strconv.FormatInt(token, 10), n, seq)
	if err != nil {
		return booking.Extension{}, err
	}
	switch w := str(reply[0]); w {
	case "ok", "replay":
		if len(reply) >= 3 {
			return booking.Extension{Token: token, ExpiresAt: time.UnixMilli(num(reply[1])), Extensions: num(reply[2]), Replayed: w == "replay"}, nil
		}
	case "extorder":
		if len(reply) >= 2 {
			return booking.Extension{}, fmt.Errorf("%w: extension %d, the hold has had %d", booking.ErrInvalidRequest, n, num(reply[1]))
		}
	case "extlimit":
		if len(reply) >= 2 {
			return booking.Extension{}, fmt.Errorf("%w: at most %d extensions, or the hold is at its longest", booking.ErrExtensionLimit, num(reply[1]))
		}
	}
	return booking.Extension{}, refusal(extendCmd, reply, "noevent", "confirmed", "stale", "session", "expired")
}
