package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// Origins makes and checks the per-room origin credential: the secret a
// room's booking origin presents (Authorization: Bearer) when it consumes or
// completes an entry token. Holding a token is not enough: only the room's
// origin can redeem it, so a token copied from a visitor's browser is useless
// to anyone else.
//
// The credential is derived, not stored: HMAC-SHA256 of the room id under the
// ticket secret with a label of its own, so it needs no Redis state, survives
// a data loss, and changes when the ticket secret rotates.
type Origins struct{ secret []byte }

// NewOrigins returns the credential maker over the ticket secret.
func NewOrigins(ticketSecret []byte) *Origins { return &Origins{secret: ticketSecret} }

// Credential is the room's origin credential (43 characters, base64url).
func (o *Origins) Credential(room string) string {
	m := hmac.New(sha256.New, o.secret)
	m.Write([]byte("vestibule-origin-credential\x00"))
	m.Write([]byte(room))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Check reports, in constant time, whether presented is the room's credential.
func (o *Origins) Check(room, presented string) bool {
	if len(o.secret) == 0 {
		return false
	}
	return hmac.Equal([]byte(o.Credential(room)), []byte(presented))
}
