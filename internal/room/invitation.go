package room

import (
	"errors"
	"regexp"
	"time"
)

// Invitation is what a signed invitation says (package token makes and
// checks the signature): who may join Room, how often, until when, and
// whether its holder skips the line. It is the same whether an operator had
// Vestibule sign it or a booking site minted its own under the room's origin
// credential; the engine counts its uses and keeps its revocation by ID.
type Invitation struct {
	ID   string `json:"id"`
	Room string `json:"room"`
	// Uses is how many joins it admits to the line (1 to MaxInvitationUses).
	Uses int64 `json:"uses"`
	// Bypass puts its holder ahead of the line: admitted at the next free
	// slot, within maxActive like anyone else (I1).
	Bypass    bool      `json:"bypass"`
	IssuedAt  time.Time `json:"issuedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// MaxInvitationUses bounds an invitation's uses.
const MaxInvitationUses = 1_000_000

// MaxInvitationLife is the longest an invitation may be valid from its issue.
const MaxInvitationLife = 366 * 24 * time.Hour

var invitationID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidInvitationID reports whether s is an invitation id: 1 to 64 of
// [A-Za-z0-9_-], like a room id, so it is safe in keys, URLs and logs.
func ValidInvitationID(s string) bool { return invitationID.MatchString(s) }

// Errors of a join with or without an invitation.
var (
	// ErrInvitationRequired: an invite-only room refused a join without one.
	ErrInvitationRequired = errors.New("room: this room admits invited visitors only")
	// ErrInvitationInvalid: the invitation's signature, room, shape or times are wrong.
	ErrInvitationInvalid = errors.New("room: invitation invalid or expired")
	// ErrInvitationRevoked: an operator revoked it.
	ErrInvitationRevoked = errors.New("room: invitation revoked")
	// ErrInvitationUsedUp: every use was taken.
	ErrInvitationUsedUp = errors.New("room: invitation used up")
	// ErrUnknownVisitor: a support lookup found no visitor by that reference.
	ErrUnknownVisitor = errors.New("room: no visitor by that reference")
	// ErrPlaceStands: a restore found the visitor's place (or grant, or
	// session) still there, or served: nothing to restore.
	ErrPlaceStands = errors.New("room: the visitor's place is not lost")
)

// InvitationUse is one use of an invitation, as its log keeps it.
type InvitationUse struct {
	At      time.Time `json:"at"`
	Visitor string    `json:"visitor"`
	// Use is the count after it (1 for the first); Returned marks a use
	// given back because the join it was taken for was refused.
	Use      int64 `json:"use"`
	Returned bool  `json:"returned,omitempty"`
}

// InvitationState is what the engine holds of one invitation: its uses
// counted, its revocation, and its log (oldest first).
type InvitationState struct {
	ID        string          `json:"id"`
	Used      int64           `json:"used"`
	RevokedAt *time.Time      `json:"revokedAt,omitempty"`
	Log       []InvitationUse `json:"log"`
}

// Revocation is one revoked invitation, as the durable store keeps it.
type Revocation struct {
	ID        string    `json:"id"`
	RevokedAt time.Time `json:"revokedAt"`
}
