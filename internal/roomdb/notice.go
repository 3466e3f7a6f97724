package roomdb

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/lua"
)

// The scripts of notices (docs/ENGINE.md, "Notices").
var (
	noticeCmd    = lua.NewScript("notice", lua.Notice)
	noticesCmd   = lua.NewScript("notices", lua.Notices)
	noticeackCmd = lua.NewScript("noticeack", lua.NoticeAck)
)

// noticeKeys are a room's notice keys (Keys.NoticeKeys), which the scripts
// that end a place take after the room's.
func noticeKeys(roomID string) []string { return KeysFor(roomID).NoticeKeys() }

// endKeys are the keys, after the room's, of the scripts that end a grant or
// a place (leave, consume, complete): the day's served set (Keys.Served), then
// the notice keys, as a served grant takes its notice with it.
func endKeys(roomID string, now int64) []string {
	k := KeysFor(roomID)
	return append([]string{k.Served(now)}, k.NoticeKeys()...)
}

// RegisterNotice keeps a waiting visitor's request for a notice of their
// turn with their place (one a place: another replaces it), under the
// room's sign-up limits (room.NoticeNetworkEvery, room.NoticeAddressEvery).
// From then on the place is held a day without a poll, and at the grant it
// gets the notified claim window. Errors: room.ErrUnknownRoom,
// room.ErrNoticesOff, room.ErrNoPlace, a *RetryError (ErrRateLimited),
// room.ErrUnavailable.
func (e *Engine) RegisterNotice(ctx context.Context, t room.Ticket, s room.NoticeSignup) error {
	if !room.ValidRoomID(t.Room) {
		return room.ErrInvalidRoom
	}
	k := KeysFor(t.Room)
	reply, err := e.runKeys(ctx, noticeCmd, t.Room,
		[]string{k.NoticeKeys()[0], k.NoticeNetwork(clientHash(s.Network)), k.NoticeAddress(s.Address)},
		e.nowMS(), "add", strconv.FormatInt(t.Seq, 10), strconv.FormatInt(s.Expires.UnixMilli(), 10), string(s.Sealed),
		room.NoticeNetworkEvery.Milliseconds(), room.NoticeNetworkBurst,
		room.NoticeAddressEvery.Milliseconds(), room.NoticeAddressBurst)
	if err != nil {
		return err
	}
	switch str(reply[0]) {
	case wordOK:
		return nil
	case wordNoRoom:
		return room.ErrUnknownRoom
	case wordOff:
		return room.ErrNoticesOff
	case wordNoPlace:
		return room.ErrNoPlace
	case wordLimited:
		if len(reply) == 2 {
			return &room.RetryError{After: time.Duration(num(reply[1])) * time.Millisecond}
		}
	}
	return unexpected(noticeCmd, reply)
}

// WithdrawNotice deletes the visitor's notice registration, if any: the place
// is held as any other again. Errors: room.ErrUnknownRoom, room.ErrUnavailable.
func (e *Engine) WithdrawNotice(ctx context.Context, t room.Ticket) error {
	if !room.ValidRoomID(t.Room) {
		return room.ErrInvalidRoom
	}
	reply, err := e.runKeys(ctx, noticeCmd, t.Room, noticeKeys(t.Room)[:1], e.nowMS(), "drop", strconv.FormatInt(t.Seq, 10))
	if err != nil {
		return err
	}
	switch word(reply) {
	case wordOK:
		return nil
	case wordNoRoom:
		return room.ErrUnknownRoom
	}
	return unexpected(noticeCmd, reply)
}

// TakeNotices takes up to most of the room's notices due to send, earliest
// first; each is due again after lease unless acked (AckNotice) before.
func (e *Engine) TakeNotices(ctx context.Context, roomID string, most int, lease time.Duration) ([]room.DueNotice, error) {
	reply, err := e.runKeys(ctx, noticesCmd, roomID, noticeKeys(roomID), e.nowMS(), max(most, 1), max(lease.Milliseconds(), 1))
	if err != nil {
		return nil, err
	}
	switch str(reply[0]) {
	case wordNoRoom:
		return nil, room.ErrUnknownRoom
	case wordOK:
	default:
		return nil, unexpected(noticesCmd, reply)
	}
	if (len(reply)-1)%3 != 0 {
		return nil, unexpected(noticesCmd, reply)
	}
	out := make([]room.DueNotice, 0, (len(reply)-1)/3)
	for i := 1; i < len(reply); i += 3 {
		d, err := strconv.ParseFloat(str(reply[i+2]), 64)
		if err != nil {
			return nil, unexpected(noticesCmd, reply)
		}
		out = append(out, room.DueNotice{Seq: num(reply[i]), Sealed: []byte(str(reply[i+1])), Deadline: time.UnixMilli(int64(d))})
	}
	return out, nil
}

// AckNotice records how a notice went: sent or gone, its registration is
// deleted; retry, it is due again at retryAt. Errors: room.ErrNoNotice (not
// due: acked already, or its place ended), room.ErrUnknownRoom,
// room.ErrUnavailable.
func (e *Engine) AckNotice(ctx context.Context, roomID string, seq int64, o room.NoticeOutcome, retryAt time.Time) error {
	switch o {
	case room.NoticeSent, room.NoticeGone, room.NoticeRetry:
	default:
		return fmt.Errorf("roomdb: no notice outcome %q", o)
	}
	reply, err := e.runKeys(ctx, noticeackCmd, roomID, noticeKeys(roomID)[:2], e.nowMS(), strconv.FormatInt(seq, 10),
		string(o), strconv.FormatInt(retryAt.UnixMilli(), 10))
	if err != nil {
		return err
	}
	switch word(reply) {
	case wordOK:
		return nil
	case wordNoRoom:
		return room.ErrUnknownRoom
	case wordNoNotice:
		return room.ErrNoNotice
	}
	return unexpected(noticeackCmd, reply)
}
