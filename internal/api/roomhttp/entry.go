package roomhttp

import (
	"errors"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// VerifyEntry checks an entry token's signature, typ, issuer, key and time.
// With allowExpired, a token past its claim window still passes (complete
// comes after the window, during the session): the rest is still checked at
// the token's own start time (token.Entries.VerifyPastExpiry), and the engine
// decides whether the session still runs. The engine also checks, in the same
// script as the grant, that the token's audience is the room's current origin
// (see RedeemError).
func VerifyEntry(entries *token.Entries, r *httpapi.Request, s string, allowExpired bool) (token.EntryClaims, error) {
	if allowExpired {
		c, err := entries.VerifyPastExpiry(s, r.Now)
		if err != nil {
			return c, httpapi.ErrInvalidToken
		}
		return c, nil
	}
	c, err := entries.Verify(s, r.Now)
	switch {
	case errors.Is(err, token.ErrExpired):
		return c, httpapi.ErrTokenExpired
	case err != nil:
		return c, httpapi.ErrInvalidToken
	}
	return c, nil
}

// RedeemError is a redeeming route's error from the engine (consume,
// complete, the gate's enter): a token for a room that no longer exists is an
// invalid token, not an unknown room.
func RedeemError(err error) error {
	if errors.Is(err, room.ErrUnknownRoom) {
		return httpapi.ErrInvalidToken
	}
	return err
}

// FromOrigin checks that the caller is the room's origin: it presents the
// room's origin credential (origins nil: nobody is).
func FromOrigin(origins *token.Origins, r *httpapi.Request, roomID string) error {
	s, ok := r.Bearer()
	if !ok || origins == nil || !origins.Check(roomID, s) {
		return httpapi.ErrNotOrigin
	}
	return nil
}
