package token

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Invitation markers, as for the other kinds: the header typ tells them
// apart before any claim is read, and the typ claim is signed.
const (
	invitationHeaderType = "vst-invite+jwt"
	invitationClaimType  = "vestibule-invitation"
)

var (
	invitationClaimsRequired = []string{"typ", "room", "jti", "uses", "iat", "exp"}
	invitationClaimsAllowed  = append([]string{"bypass"}, invitationClaimsRequired...)
	invitationShape          = newShape(jwt.SigningMethodHS256.Alg(), invitationHeaderType, invitationClaimType, false,
		invitationClaimsRequired, invitationClaimsAllowed)
)

// invitationClaims is an invitation's payload.
type invitationClaims struct {
	claimsBase
	Type      string           `json:"typ"`
	Room      string           `json:"room"`
	ID        string           `json:"jti"`
	Uses      int64            `json:"uses"`
	Bypass    bool             `json:"bypass,omitempty"`
	IssuedAt  *jwt.NumericDate `json:"iat"`
	ExpiresAt *jwt.NumericDate `json:"exp"`
}

// Invitations makes and checks invitations: HS256 JWTs (header typ
// vst-invite+jwt) whose key is the room's origin credential, its 43
// characters as bytes. A booking site holds that credential already, so it
// mints its own invitations with any JWT library and no call to Vestibule
// (docs/API.md, "Invitations"); an operator has Vestibule sign them (the
// admin route). A ticket, an entry token or a booking session never verifies
// as one: their keys and typ differ. Uses and revocations are kept by the
// engine, by the invitation's jti. Safe for concurrent use.
type Invitations struct{ origins *Origins }

// NewInvitations returns the invitation service over the rooms' origin
// credentials (nil or a short secret: Issue fails and Verify refuses all).
func NewInvitations(origins *Origins) *Invitations { return &Invitations{origins: origins} }

// key is the room's invitation key, nil when there is none.
func (v *Invitations) key(roomID string) []byte {
	if v == nil || v.origins == nil || len(v.origins.secret) < MinSecretLen {
		return nil
	}
	return []byte(v.origins.Credential(roomID))
}

// checkInvitation refuses an invitation the rules never allow.
func checkInvitation(in room.Invitation) error {
	switch {
	case !room.ValidRoomID(in.Room):
		return fmt.Errorf("%w: room", ErrInvalid)
	case !room.ValidInvitationID(in.ID):
		return fmt.Errorf("%w: jti must be 1 to 64 of [A-Za-z0-9_-]", ErrInvalid)
	case in.Uses < 1 || in.Uses > room.MaxInvitationUses:
		return fmt.Errorf("%w: uses outside 1..%d", ErrInvalid, room.MaxInvitationUses)
	case !in.ExpiresAt.After(in.IssuedAt):
		return fmt.Errorf("%w: exp not after iat", ErrInvalid)
	case in.ExpiresAt.Sub(in.IssuedAt) > room.MaxInvitationLife:
		return fmt.Errorf("%w: valid for longer than %s", ErrInvalid, room.MaxInvitationLife)
	case in.IssuedAt.Before(minTime) || in.ExpiresAt.After(maxTime):
		return fmt.Errorf("%w: time out of range", ErrInvalid)
	}
	return nil
}

// Issue signs in (its times in whole seconds).
func (v *Invitations) Issue(in room.Invitation) (string, error) {
	key := v.key(in.Room)
	if key == nil {
		return "", fmt.Errorf("%w: no ticket secret of %d bytes", ErrKeyMaterial, MinSecretLen)
	}
	in.IssuedAt, in.ExpiresAt = in.IssuedAt.UTC().Truncate(time.Second), in.ExpiresAt.UTC().Truncate(time.Second)
	if err := checkInvitation(in); err != nil {
		return "", err
	}
	c := invitationClaims{Type: invitationClaimType, Room: in.Room, ID: in.ID, Uses: in.Uses, Bypass: in.Bypass,
		IssuedAt: jwt.NewNumericDate(in.IssuedAt), ExpiresAt: jwt.NewNumericDate(in.ExpiresAt)}
	header := map[string]any{"alg": jwt.SigningMethodHS256.Alg(), "typ": invitationHeaderType}
	return sign(jwt.SigningMethodHS256, header, c, key)
}

// Verify checks s as an invitation to roomID at now: shape, the HS256
// signature under the room's key, the claims (ErrInvalid; another room's:
// ErrWrongRoom), then time (ErrExpired, ErrNotYetValid, with Leeway).
func (v *Invitations) Verify(s, roomID string, now time.Time) (room.Invitation, error) {
	key := v.key(roomID)
	if key == nil {
		return room.Invitation{}, fmt.Errorf("%w: no invitation key", ErrInvalid)
	}
	if _, err := invitationShape.inspect(s); err != nil {
		return room.Invitation{}, err
	}
	var c invitationClaims
	if _, err := invitationShape.parser.ParseWithClaims(s, &c, func(*jwt.Token) (any, error) {
		return key, nil
	}); err != nil {
		return room.Invitation{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.Room != roomID {
		// Signed under roomID's key, so only a site of this room could say
		// another: refused all the same.
		return room.Invitation{}, ErrWrongRoom
	}
	iat, err := claimTime(c.IssuedAt, "iat")
	if err != nil {
		return room.Invitation{}, err
	}
	exp, err := claimTime(c.ExpiresAt, "exp")
	if err != nil {
		return room.Invitation{}, err
	}
	in := room.Invitation{ID: c.ID, Room: c.Room, Uses: c.Uses, Bypass: c.Bypass, IssuedAt: iat, ExpiresAt: exp}
	if err := checkInvitation(in); err != nil {
		return room.Invitation{}, err
	}
	if err := checkTimes(now, iat, iat, exp); err != nil {
		return room.Invitation{}, err
	}
	return in, nil
}
