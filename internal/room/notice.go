package room

import (
	"errors"
	"time"
)

// Notices: a waiting visitor may ask to be told of their turn by a web push
// or an email (docs/ENGINE.md, "Notices"). The engine keeps the registration
// with the place, sealed (package notice seals it; the engine never reads
// it), gives the place the notified claim window (Config.NotifiedClaimTTLSeconds)
// at the grant, and hands the due notices to the notify function, which sends
// them and acks each.

// NotifiedClass is the heartbeat class of a place with a notice registration
// (lib.lua NOTIFIED): held NotifiedHold without a poll, since a visitor who
// looked away polls nothing; a poll keeps the class.
const NotifiedClass = 62

// NotifiedHold is how long a place with a notice is held without a poll: a
// day, the life of a ticket.
const NotifiedHold = 24 * time.Hour

// MaxNotifiedClaimTTL is the longest notifiedClaimTTLSeconds (2 hours).
const MaxNotifiedClaimTTL = 7_200

// The sign-up limits (notice.lua): a client network signs up at most
// NoticeNetworkBurst at once, then one every NoticeNetworkEvery; an address
// is signed up at most NoticeAddressBurst times at once (in any of the room's
// places), then once every NoticeAddressEvery, so nobody can have a room mail
// or push to someone else over and over.
const (
	NoticeNetworkEvery = 3 * time.Second
	NoticeNetworkBurst = 10
	NoticeAddressEvery = 20 * time.Minute
	NoticeAddressBurst = 3
)

// NoticeSignup is what the engine keeps of a visitor's request for a notice.
type NoticeSignup struct {
	// Sealed is the address (a push subscription or an email address, with
	// the visitor's language), sealed by package notice: opaque here.
	Sealed []byte
	// Network is the client's network (ClientNetwork) and Address a keyed
	// hash of the address: the keys of the two sign-up limits, never the
	// address itself.
	Network, Address string
	// Expires is when the registration is of no more use: the ticket's expiry.
	Expires time.Time
}

// DueNotice is a notice due to send: the place's sequence, its sealed
// address and its grant's claim deadline.
type DueNotice struct {
	Seq      int64     `json:"seq"`
	Sealed   []byte    `json:"sealed"` // base64 in JSON
	Deadline time.Time `json:"deadline"`
}

// NoticeOutcome is how a send went (Engine.AckNotice).
type NoticeOutcome string

// The outcomes of a send.
const (
	NoticeSent  NoticeOutcome = "sent"  // the push service or SES took it: the registration goes
	NoticeGone  NoticeOutcome = "gone"  // refused for good (an expired push subscription): the registration goes
	NoticeRetry NoticeOutcome = "retry" // failed for now: due again at the time given
)

// Errors of notices.
var (
	// ErrNoticesOff: the room offers no notices (notifiedClaimTTLSeconds 0).
	ErrNoticesOff = errors.New("room: the room offers no notices")
	// ErrNoPlace: the visitor holds no place in the queue to be told of
	// (admitted already, gone, or a join not merged into the queue yet).
	ErrNoPlace = errors.New("room: no place in the queue")
	// ErrNoNotice: AckNotice of a notice not due (sent, refused, or its place ended).
	ErrNoNotice = errors.New("room: no such notice due")
)
