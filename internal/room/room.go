// Package room is the waiting room's vocabulary, shared by every part of
// Vestibule: a room's settings (Config, and the settings table in config.go
// that gives each its name, range, default and stored form), the waiting
// page's presentation (page.go), tickets, places, states, the join proof, the
// errors callers branch on, and the pure functions over them (ValidRoomID,
// DrawOf, ToldClass…). It links no Redis client and no Lua script, so the
// token code, the configuration, the poll policy, the CDK app and the
// operator's command use these names without the engine.
//
// The engine that keeps rooms in Redis is package roomdb; room.Engine is the
// one interface of it that its wrappers (durable, the event emitter) pass on,
// every capability included.
package room

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Mode is how a room admits visitors.
type Mode string

// The room modes.
const (
	ModeQueue       Mode = "queue"       // everyone waits; admitted in order at the configured rate
	ModeAuto        Mode = "auto"        // admitted at once while there is room and rate; a queue forms otherwise
	ModePassthrough Mode = "passthrough" // everyone admitted at once; capacity and rate ignored
	ModePaused      Mode = "paused"      // the queue holds; nobody is admitted
	ModeClosed      Mode = "closed"      // new arrivals refused; nobody is admitted
)

// Config is a room's settings, stored in Redis and changed live through the
// admin API. Each field has one row in the settings table (config.go,
// Settings): its JSON key, which is also its Redis hash field, its range and
// its default; a new setting is a field here and a row there.
type Config struct {
	MaxActive      int64 `json:"maxActive"`
	AdmitPerMinute int64 `json:"admitPerMinute"`
	// AdmitPerMinuteMin is the floor of the pace that follows the origin's
	// load (docs/ENGINE.md, "Steering"); 0: the pace is AdmitPerMinute.
	AdmitPerMinuteMin int64 `json:"admitPerMinuteMin"`
	// QueueAbovePerMinute, QueueBelowPerMinute and CalmSeconds are the auto
	// mode's safety net: it queues once arrivals pass the first, and stops
	// once they stayed below the second for CalmSeconds with nobody waiting.
	QueueAbovePerMinute int64 `json:"queueAbovePerMinute"`
	QueueBelowPerMinute int64 `json:"queueBelowPerMinute"`
	CalmSeconds         int64 `json:"calmSeconds"`
	SessionTTLSeconds   int64 `json:"sessionTTLSeconds"`
	// MaxSessionSeconds is the longest a gated session can be renewed to
	// (from its start); 0: no renewal, a session lasts SessionTTLSeconds.
	MaxSessionSeconds int64 `json:"maxSessionSeconds"`
	// SessionIdleSeconds ends a gated session this long after its last
	// renewal (0: sessionTTLSeconds is the idle window, as without it).
	SessionIdleSeconds  int64      `json:"sessionIdleSeconds"`
	ClaimTTLSeconds     int64      `json:"claimTTLSeconds"`
	HeartbeatTTLSeconds int64      `json:"heartbeatTTLSeconds"`
	Mode                Mode       `json:"mode"`
	OpensAt             *time.Time `json:"opensAt,omitempty"`
	OriginURL           string     `json:"originUrl"`
	// Page is how the waiting page presents the room (page.go); nil: the
	// page's own texts and colours.
	Page *Page `json:"page,omitempty"`
	// ClientEnqueuePerMinute limits fresh joins per client, its network under the
	// two prefixes below (0: no limit).
	ClientEnqueuePerMinute int64 `json:"clientEnqueuePerMinute"`
	// ClientIPv4Prefix and ClientIPv6Prefix are the networks the per-client
	// limit counts as one client (ClientNetwork): an IPv4 /32 and an IPv6 /64
	// by default. 0 (a room stored before they existed) is the default.
	ClientIPv4Prefix int64 `json:"clientIPv4Prefix"`
	ClientIPv6Prefix int64 `json:"clientIPv6Prefix"`
	// JoinChallengeBits is the proof of work a fresh join must show (0: none).
	JoinChallengeBits int64 `json:"joinChallengeBits"`
	// JoinShards is how many arrival shards the joins of an open room spread
	// over (0: every join goes to the room's own shard). See roomdb.ArrivalKeys.
	JoinShards int64 `json:"joinShards"`
	// Gate says the room guards a site behind the edge gate (docs/GATE.md):
	// the waiting page posts the entry token to the site's /.vestibule/enter,
	// which redeems it for a session cookie. Off, the token goes to originUrl in
	// the URL fragment and the origin redeems it with its credential.
	Gate bool `json:"gate"`
	// InviteOnly says only holders of an invitation may join (invitation.go):
	// a join without one is refused with ErrInvitationRequired.
	InviteOnly bool `json:"inviteOnly"`
	// NotifiedClaimTTLSeconds is the claim window of a visitor who asked to be
	// told of their turn by a push or an email (notice.go), longer than
	// ClaimTTLSeconds, as they may have looked away; 0: the room offers no notices.
	NotifiedClaimTTLSeconds int64 `json:"notifiedClaimTTLSeconds"`
	// OIDCRedirectURIs are where the room, as an OpenID Connect provider
	// (oidc.go), may send a relying party's visitor back with a code: exact
	// URIs; none (the default) refuses every authorization request.
	OIDCRedirectURIs []string `json:"oidcRedirectUris,omitempty"`
}

// State is where a visitor stands.
type State string

// Visitor states as the API reports them.
const (
	StatePrequeue State = "prequeue" // before opensAt; order drawn at opening
	StateWaiting  State = "waiting"
	StateAdmitted State = "admitted" // holds a grant (or an active session)
	StatePaused   State = "paused"   // waiting in a paused room
	StateClosed   State = "closed"   // the room is closed
	StateExpired  State = "expired"  // the place is gone: served, evicted past the head, left, or the grant expired
)

// Ticket is what a signed ticket says about a visitor's place. A place is a pure
// function of the ticket: Score is the queue score (the sequence number, or in the
// pre-queue the lottery draw in [0,1)).
type Ticket struct {
	Room    string  `json:"room"`
	Visitor string  `json:"visitor"`
	Seq     int64   `json:"seq"`
	Draw    float64 `json:"draw,omitempty"` // pre-queue only
}

// Place is the answer to enqueue and poll.
type Place struct {
	Ticket   Ticket
	State    State
	Position int64 // 1-based; 0 when not waiting or in the pre-queue
	Waiting  int64 // visitors waiting (or in the pre-queue) in the room
	// OpeningRank (pre-queue, and closed): the place the visitor will have at
	// the opening (or when a closed room opens again) as the queue stands
	// (1-based; 0 unknown). It is not shown as a position (a pre-queue's order
	// is drawn at the opening); the poll policy spreads the opening's polls by
	// it and bounds the told poll by the claim window (internal/pollpolicy).
	OpeningRank int64
	// Set when State is StateAdmitted.
	GrantDeadline time.Time // the grant must be consumed before this
	Active        bool      // the grant was already consumed; a session is running
	// RatePerMinute is the pace: what the room admits a minute for whoever
	// waits now (docs/ENGINE.md, "The pace"): the configured admitPerMinute
	// while a slot is free; in a full room the pace slots free at, never above
	// it. Callers derive ETAs from it.
	RatePerMinute float64
	// PollWithin is how long the engine holds the place without a poll, beyond
	// the grace (heartbeatTTLSeconds): the told poll may not be later (the
	// poll policy stays within it). Waiting: the ETA plus PollSlack, at most
	// MaxPollAfter; in the pre-queue or a paused or closed room, MaxPollAfter;
	// 0 when the visitor is not in the queue.
	PollWithin time.Duration
	// Notice says whether the place holds a notice registration (notice.go),
	// as the room's shard saw it; nil when the answer came from an arrival
	// shard, which does not know.
	Notice *bool
	Config Config
}

// MaxPollAfter is the longest a waiting visitor is ever told to stay away
// (lib.lua's MAX_TOLD): a visitor who left is evicted at most this long plus
// the grace after the last poll, long before reaching the front of a long wait.
const MaxPollAfter = 5 * time.Minute

// PollSlack is what the engine allows beyond a waiting visitor's ETA (lib.lua's
// SLACK): room for a policy that aims a poll just after the admission tick.
const PollSlack = 5 * time.Second

// TickResult reports one admission tick of one room.
type TickResult struct {
	Admitted        int64
	Evicted         int64
	GrantsReclaimed int64
	SessionsEnded   int64
	// Set only by a tick that changed something (any count above not 0),
	// for its admission event: the lowest and highest sequence it admitted
	// (0 when it admitted nobody), and the room's counts after it.
	FirstSeq, LastSeq int64
	After             TickCounts
	// In a room whose joins are or were spread (joinShards): how many
	// arrivals the tick merged into the queue after admitting, and why it
	// could not (an arrival shard unreachable: they wait for a later tick;
	// the tick itself still counts).
	Merged   int64
	MergeErr error
	// Notices is how many notices were due to send at the end of the tick
	// (notice.go): the notify function takes them from the tick's event.
	Notices int64
	// Net and Pace are the tick's switch of the safety net and its step of
	// the pace worth a report (steer.go), nil for none.
	Net  *NetChange
	Pace *PaceChange
}

// TickCounts are a room's counts at the end of a tick.
type TickCounts struct {
	Waiting  int64 // waiting or in the pre-queue
	Admitted int64 // grants not yet consumed
	Active   int64 // sessions running
}

// Stats is a snapshot of a room.
type Stats struct {
	Waiting            int64 `json:"waiting"`
	Admitted           int64 `json:"admitted"`
	Active             int64 `json:"active"`
	AdmittedLastMinute int64 `json:"admittedLastMinute"`
	Evicted            int64 `json:"evicted"`
	Consumed           int64 `json:"consumed"`
	ReplaysRefused     int64 `json:"replaysRefused"`
	// PacePerMinute is the pace of Place.RatePerMinute for someone joining
	// now: the rate of the ETAs a status shows. While a steered pace climbs it
	// is the plan of the climb, above RatePerMinute (docs/ENGINE.md, "Steering").
	PacePerMinute float64 `json:"pacePerMinute"`
	// RatePerMinute is the admissions a minute the room runs at: admitPerMinute,
	// or the steered rate within admitPerMinuteMin..admitPerMinute.
	RatePerMinute float64 `json:"ratePerMinute"`
	// Net is an auto room's safety net, NetOn or NetOff ("" in other modes),
	// and NetWhy the reason of its last switch (NetChange.Why).
	Net    string `json:"net,omitempty"`
	NetWhy string `json:"netWhy,omitempty"`
	// PaceWhy is why the pace that follows the origin is where it is
	// (PaceChange.Why); "" when the pace is admitPerMinute.
	PaceWhy string `json:"paceWhy,omitempty"`
	// The notices (notice.go): sign-ups, notices sent, notices failed
	// (refused for good, or never sent before the notified grant ended) and
	// turns saved (notified grants redeemed after the claim window a visitor
	// without a notice would have had), ever; and the places that hold a
	// registration now.
	NoticeSignups int64 `json:"noticeSignups"`
	NoticesSent   int64 `json:"noticesSent"`
	NoticesFailed int64 `json:"noticesFailed"`
	TurnsSaved    int64 `json:"turnsSaved"`
	NoticesHeld   int64 `json:"noticesHeld"`
	// DrawSeed is the seed of the pre-queue lottery (a visitor's draw is
	// DrawOf(seed, visitor)). Secret until the room opens: the status route
	// publishes its commitment (DrawCommitment) before and the seed after.
	DrawSeed string `json:"-"`
}

// DrawCommitment is the public commitment to a lottery seed: the hex SHA-256
// of the seed's text.
func DrawCommitment(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(sum[:])
}

// DrawOf is a pre-queue visitor's draw in [0,1), as enqueue.lua computes it:
// the first 13 hex digits of SHA-1(seed + visitor) over 2^52.
func DrawOf(seed, visitor string) float64 {
	sum := sha1.Sum([]byte(seed + visitor))
	n, _ := strconv.ParseUint(hex.EncodeToString(sum[:])[:13], 16, 64)
	return float64(n) / (1 << 52)
}

// Session is the result of a successful consume.
type Session struct {
	Room      string
	ExpiresAt time.Time
}

// Errors callers branch on with errors.Is.
var (
	ErrInvalidRoom       = errors.New("room: invalid room id")
	ErrInvalidConfig     = errors.New("room: invalid config") // wrapped with the field and reason
	ErrUnknownRoom       = errors.New("room: unknown room")
	ErrClosed            = errors.New("room: room is closed")
	ErrAlreadyConsumed   = errors.New("room: grant already consumed")
	ErrGrantExpired      = errors.New("room: grant expired")
	ErrUnknownGrant      = errors.New("room: unknown grant")
	ErrWrongAudience     = errors.New("room: entry token is for another origin") // its audience is not the room's origin URL
	ErrUnavailable       = errors.New("room: redis unavailable")                 // wraps the Redis error; maps to 503
	ErrChallengeRequired = errors.New("room: join challenge required")           // a *ChallengeError carries the difficulty
	ErrChallengeSpent    = errors.New("room: join challenge already used")
	ErrRateLimited       = errors.New("room: too many requests")  // a *RetryError carries the wait; maps to 429
	ErrNotClosed         = errors.New("room: room is not closed") // drain: only a closed room's queue is emptied
	// ErrNotRestorable: the room is missing in Redis and its durable record
	// cannot be read (package durable); an operator must PUT it again. Not a
	// Redis outage: it maps to its own 503.
	ErrNotRestorable = errors.New("room: stored settings unreadable; PUT the room again")
)

// Clock gives the current time; tests replace it.
type Clock func() time.Time

// ErrTickBusy is roomdb.Engine.TickGuarded's answer when a tick of the room
// ran less than the guard ago: this one did nothing.
var ErrTickBusy = errors.New("room: ticked less than the guard ago")

// Unavailable reports whether err means Redis could not be reached or answered
// badly (the caller answers 503).
func Unavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// ErrMergeHeld is a tick's MergeErr while the room's merges are held back
// after a failed read of its arrival shards. It wraps ErrUnavailable.
var ErrMergeHeld = fmt.Errorf("%w: arrival shards unreachable at the last try: merge held back", ErrUnavailable)

// ToldMS is the silence (ms) a heartbeat class allows before the grace
// (lib.lua's told_ms): 0 for class 0, else 1 s × 2^((class−1)/4), rounded.
func ToldMS(class int) int64 {
	if class < 1 {
		return 0
	}
	if class == NotifiedClass {
		return NotifiedHold.Milliseconds()
	}
	return int64(math.Floor(1000*math.Pow(2, float64(class-1)/4) + 0.5))
}

// ToldClass is the smallest class whose ToldMS is at least budget (ms): what
// the engine stores for a poll budget (lib.lua's told).
func ToldClass(budgetMS int64) int {
	c := 1
	for c < 63 && (ToldMS(c) < budgetMS || c == NotifiedClass) {
		c++
	}
	return c
}
