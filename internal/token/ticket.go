package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A ticket (format 2, or 3 with a draw) is a fixed binary layout and its
// HMAC-SHA256, in base64url without padding (strict: one spelling per ticket):
//
//	offset   size  field
//	0        1     format: 2 (no draw), 3 (a pre-queue draw, masked)
//	1        8     seq: int64, big-endian, ≥ 1
//	9        8     draw: format 2: 0; format 3: the draw's IEEE 754 bits, in
//	               (0, 1), XOR the pad, big-endian
//	17       8     iat: Unix seconds, int64, big-endian
//	25       8     exp: Unix seconds, int64, big-endian, after iat
//	33       1     n: length of room, 1–64
//	34       n     room
//	34+n     1     m: length of visitor, 1–128
//	35+n     m     visitor
//	35+n+m   32    tag: HMAC-SHA256(K, bytes 0 to 35+n+m−1)
//
// The pad hides the draw from whoever holds the ticket (the draw is the
// visitor's place in the pre-queue's lottery, secret until the opening: a bot
// that could read it would join until it held a good one):
// pad = the first 8 bytes of HMAC-SHA256(P, bytes 1–8 ‖ bytes 33 to the tag),
// the sequence, room and visitor, under P = HMAC-SHA256(K, "draw-pad"); one
// visitor id is one join, so no pad is used twice. A format 2 ticket with a
// draw in plain (issued before format 3) is still accepted, Stale.
//
// K = HMAC-SHA256(ticket secret, "vestibule-ticket-v2\x00" || issuer): a key
// of tickets alone (origin credentials, booking sessions and format 1
// tickets use the secret under other labels or none, so nothing they sign is
// ever a ticket's tag), bound to the issuer as format 1's iss claim was.
//
// Verification decodes into a pooled buffer, checks the tag over every byte
// before it reads any field (in constant time, under the current secret and
// then the previous ones), then the fields: no JSON, no reflection, one
// allocation (the visitor id's string). A ticket with a '.' is format 1, a
// JWT (ticket_jwt.go), still verified during the transition.
const (
	ticketFormat     = 2
	ticketFormatDraw = 3 // format 2 with a draw, masked
	ticketKeyLabel   = "vestibule-ticket-v2\x00"
	ticketPadLabel   = "draw-pad"
	ticketFixedLen   = 34 // format, seq, draw, iat, exp, room length
	ticketTagLen     = sha256.Size
	maxTicketRoom    = 64  // room.ValidRoomID's limit
	maxTicketVisitor = 128 // the engine's ids are 22 characters
	minTicketRaw     = ticketFixedLen + 1 + 1 + 1 + ticketTagLen
	maxTicketRaw     = ticketFixedLen + maxTicketRoom + 1 + maxTicketVisitor + ticketTagLen
	// maxTicketLen is the longest format 2 ticket, in characters.
	maxTicketLen = (maxTicketRaw*8 + 5) / 6
)

// Tickets issues and verifies tickets under a secret only our functions hold.
// A Tickets is safe for concurrent use.
type Tickets struct {
	issuer string
	// keys[0] signs and verifies; the rest (previous secrets) only verify.
	// Keys of secrets shorter than MinSecretLen are left out; without a
	// current one, Issue fails and Verify refuses everything.
	keys    []ticketKey
	current bool
	scratch sync.Pool // *ticketScratch
}

// ticketKey is one secret: raw for format 1, derived (K) for format 2, and
// the key of format 3's draw pad (P).
type ticketKey struct {
	secret  []byte
	derived []byte
	pad     []byte
}

// ticketScratch is what one verification needs, pooled so that a poll
// allocates nothing for it: the decoded bytes and an HMAC per key.
type ticketScratch struct {
	raw  [maxTicketRaw + 3]byte // a base64 quantum more than the longest ticket
	macs []hash.Hash
	pads []hash.Hash
	sum  [ticketTagLen]byte
}

// NewTickets returns Tickets signing with secret (at least MinSecretLen bytes,
// or Issue fails and Verify refuses everything) and bound to issuer. Tickets
// signed under any of previous (at least MinSecretLen bytes each; shorter ones
// are ignored) still verify, as Stale, so the ticket secret can rotate without
// ending the places of a room mid-on-sale.
func NewTickets(secret []byte, issuer string, previous ...[]byte) *Tickets {
	t := &Tickets{issuer: issuer}
	add := func(s []byte) {
		s = append([]byte(nil), s...)
		m := hmac.New(sha256.New, s)
		m.Write([]byte(ticketKeyLabel))
		m.Write([]byte(issuer))
		k := ticketKey{secret: s, derived: m.Sum(nil)}
		m = hmac.New(sha256.New, k.derived)
		m.Write([]byte(ticketPadLabel))
		k.pad = m.Sum(nil)
		t.keys = append(t.keys, k)
	}
	if len(secret) >= MinSecretLen {
		t.current = true
		add(secret)
	}
	for _, p := range previous {
		if len(p) >= MinSecretLen && (len(t.keys) == 0 || !hmac.Equal(p, t.keys[0].secret)) {
			add(p)
		}
	}
	t.scratch.New = func() any {
		sc := &ticketScratch{macs: make([]hash.Hash, len(t.keys)), pads: make([]hash.Hash, len(t.keys))}
		for i, k := range t.keys {
			sc.macs[i] = hmac.New(sha256.New, k.derived)
			sc.pads[i] = hmac.New(sha256.New, k.pad)
		}
		return sc
	}
	return t
}

// Verified is a verified ticket and what else its signature covers.
type Verified struct {
	room.Ticket
	IssuedAt, Expiry time.Time
	// Stale is true for a ticket not in the form Issue writes now: format 1
	// (a JWT) or signed under a previous secret. Reissue gives the same place
	// and lifetime in the current form.
	Stale bool
}

// checkTicket refuses tickets the engine never makes; Issue shares it with
// both formats' verification (Verify adds the format's own limits).
func checkTicket(tk room.Ticket) error {
	if err := checkHolder(tk.Room, tk.Visitor, tk.Seq); err != nil {
		return err
	}
	return checkDraw(tk.Draw)
}

func checkDraw(d float64) error {
	if math.IsNaN(d) || d < 0 || d >= 1 {
		return fmt.Errorf("%w: draw outside [0,1)", ErrInvalid)
	}
	return nil
}

// Issue signs tk, valid from now for ttl (times are whole seconds, so ttl must
// be at least one). Invalid tickets are refused with ErrInvalid: a room that
// is not a room id, a visitor id over 128 bytes or outside [A-Za-z0-9_-].
func (t *Tickets) Issue(tk room.Ticket, now time.Time, ttl time.Duration) (string, error) {
	iat := now.UTC().Truncate(time.Second)
	return t.issue(tk, iat, now.Add(ttl).UTC().Truncate(time.Second))
}

// Reissue signs v's place with its own iat and exp, in the current format
// under the current secret: what the API hands back for a Stale ticket.
func (t *Tickets) Reissue(v Verified) (string, error) {
	return t.issue(v.Ticket, v.IssuedAt, v.Expiry)
}

func (t *Tickets) issue(tk room.Ticket, iat, exp time.Time) (string, error) {
	if !t.current {
		return "", fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrKeyMaterial, MinSecretLen)
	}
	if t.issuer == "" {
		return "", fmt.Errorf("%w: empty issuer", ErrInvalid)
	}
	if err := checkTicket(tk); err != nil {
		return "", err
	}
	switch {
	case !room.ValidRoomID(tk.Room):
		return "", fmt.Errorf("%w: room is not a room id", ErrInvalid)
	case len(tk.Visitor) > maxTicketVisitor || !idChars(tk.Visitor):
		return "", fmt.Errorf("%w: visitor id over %d bytes or not [A-Za-z0-9_-]", ErrInvalid, maxTicketVisitor)
	case iat.Before(minTime) || exp.After(maxTime):
		return "", fmt.Errorf("%w: times out of range", ErrInvalid)
	case !exp.After(iat):
		return "", fmt.Errorf("%w: ttl under a second", ErrInvalid)
	}
	b := make([]byte, 0, ticketFixedLen+len(tk.Room)+1+len(tk.Visitor)+ticketTagLen)
	b = append(b, ticketFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(tk.Seq))
	b = binary.BigEndian.AppendUint64(b, 0) // the draw, below
	b = binary.BigEndian.AppendUint64(b, uint64(iat.Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(exp.Unix()))
	b = append(b, byte(len(tk.Room)))
	b = append(b, tk.Room...)
	b = append(b, byte(len(tk.Visitor)))
	b = append(b, tk.Visitor...)
	if tk.Draw != 0 { // -0 is 0: one spelling of no draw
		b[0] = ticketFormatDraw
		pad := drawPad(hmac.New(sha256.New, t.keys[0].pad), b, nil)
		binary.BigEndian.PutUint64(b[9:17], math.Float64bits(tk.Draw)^pad)
	}
	m := hmac.New(sha256.New, t.keys[0].derived)
	m.Write(b)
	b = m.Sum(b)
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Verify checks s as a ticket for roomID at now and returns what it says.
// Checks, in order: size and encoding, the tag under each secret, the fields
// (ErrInvalid), room (ErrWrongRoom), time (ErrExpired, ErrNotYetValid).
func (t *Tickets) Verify(s string, roomID string, now time.Time) (room.Ticket, error) {
	v, err := t.Check(s, roomID, now)
	return v.Ticket, err
}

// Check is Verify that also returns the ticket's times and whether it is
// Stale (format 1, or a previous secret's).
func (t *Tickets) Check(s string, roomID string, now time.Time) (Verified, error) {
	switch {
	case len(t.keys) == 0:
		return Verified{}, fmt.Errorf("%w: ticket secret shorter than %d bytes", ErrInvalid, MinSecretLen)
	case t.issuer == "":
		return Verified{}, fmt.Errorf("%w: empty issuer", ErrInvalid)
	}
	if len(s) > MaxTokenLen {
		return Verified{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalid, MaxTokenLen)
	}
	if strings.IndexByte(s, '.') >= 0 {
		return t.verifyJWT(s, roomID, now)
	}
	if len(s) > maxTicketLen {
		return Verified{}, fmt.Errorf("%w: longer than a ticket", ErrInvalid)
	}
	sc := t.scratch.Get().(*ticketScratch)
	defer t.scratch.Put(sc)
	body, signer, err := sc.authentic(s)
	if err != nil {
		return Verified{}, err
	}
	// Authentic: only our Issue wrote these bytes, but they are still read
	// strictly, so that one ticket has one meaning.
	if body[0] == ticketFormatDraw {
		pad := drawPad(sc.pads[signer], body, sc.sum[:0])
		binary.BigEndian.PutUint64(body[9:17], binary.BigEndian.Uint64(body[9:17])^pad)
	}
	f, err := readTicketBody(body)
	if err != nil {
		return Verified{}, err
	}
	if string(f.room) != roomID {
		return Verified{}, ErrWrongRoom
	}
	iat, exp := time.Unix(f.iat, 0).UTC(), time.Unix(f.exp, 0).UTC()
	if err := checkTimes(now, iat, iat, exp); err != nil {
		return Verified{}, err
	}
	return Verified{
		Ticket:   room.Ticket{Room: roomID, Visitor: string(f.visitor), Seq: f.seq, Draw: f.draw},
		IssuedAt: iat, Expiry: exp,
		// A draw in plain (format 2 from before format 3) is reissued masked.
		Stale: signer > 0 || !t.current || (body[0] == ticketFormat && f.draw != 0),
	}, nil
}

// drawPad is the pad of format 3's draw for the ticket body b (its draw field
// not read), under m, a fresh or reset HMAC of the pad key P; buf is scratch.
func drawPad(m hash.Hash, b []byte, buf []byte) uint64 {
	m.Reset()
	m.Write(b[1:9])
	m.Write(b[33:])
	return binary.BigEndian.Uint64(m.Sum(buf)[:8])
}

// authentic decodes s into the scratch and checks its tag under each
// secret: the body the tag covers, and the index of the secret that signed
// it (0 the current one).
func (sc *ticketScratch) authentic(s string) (body []byte, signer int, err error) {
	n, ok := decodeB64URL(sc.raw[:], s)
	if !ok {
		return nil, 0, fmt.Errorf("%w: encoding", ErrInvalid)
	}
	if n < minTicketRaw || n > maxTicketRaw {
		return nil, 0, fmt.Errorf("%w: length", ErrInvalid)
	}
	body, tag := sc.raw[:n-ticketTagLen], sc.raw[n-ticketTagLen:n]
	for i, m := range sc.macs {
		m.Reset()
		m.Write(body)
		if subtle.ConstantTimeCompare(m.Sum(sc.sum[:0]), tag) == 1 {
			return body, i, nil
		}
	}
	return nil, 0, fmt.Errorf("%w: signature", ErrInvalid)
}

// ticketFields are the fields of a format-2 ticket's body; room and visitor
// are slices of it.
type ticketFields struct {
	seq           int64
	draw          float64
	iat, exp      int64 // Unix seconds
	room, visitor []byte
}

// readTicketBody reads a ticket's body strictly: its format, the lengths of
// its room and visitor, and each field in its range.
func readTicketBody(body []byte) (ticketFields, error) {
	if body[0] != ticketFormat && body[0] != ticketFormatDraw {
		return ticketFields{}, fmt.Errorf("%w: format %d", ErrInvalid, body[0])
	}
	f := ticketFields{
		seq: int64(binary.BigEndian.Uint64(body[1:9])),
		iat: int64(binary.BigEndian.Uint64(body[17:25])),
		exp: int64(binary.BigEndian.Uint64(body[25:33])),
	}
	drawBits := binary.BigEndian.Uint64(body[9:17])
	rl := int(body[33])
	if rl < 1 || rl > maxTicketRoom || ticketFixedLen+rl >= len(body) {
		return ticketFields{}, fmt.Errorf("%w: room length", ErrInvalid)
	}
	f.room = body[ticketFixedLen : ticketFixedLen+rl]
	vl := int(body[ticketFixedLen+rl])
	if vl < 1 || vl > maxTicketVisitor || ticketFixedLen+rl+1+vl != len(body) {
		return ticketFields{}, fmt.Errorf("%w: visitor length", ErrInvalid)
	}
	f.visitor = body[ticketFixedLen+rl+1:]
	f.draw = math.Float64frombits(drawBits)
	switch {
	case f.seq < 1:
		return ticketFields{}, fmt.Errorf("%w: seq below 1", ErrInvalid)
	case (drawBits != 0 || body[0] == ticketFormatDraw) && !(f.draw > 0 && f.draw < 1):
		return ticketFields{}, fmt.Errorf("%w: draw outside [0,1)", ErrInvalid)
	case f.iat < minTime.Unix() || f.exp > maxTime.Unix():
		return ticketFields{}, fmt.Errorf("%w: times out of range", ErrInvalid)
	case f.exp <= f.iat:
		return ticketFields{}, fmt.Errorf("%w: exp not after iat", ErrInvalid)
	case !idBytes(f.room) || !idBytes(f.visitor):
		return ticketFields{}, fmt.Errorf("%w: room or visitor characters", ErrInvalid)
	}
	return f, nil
}

// PeekTicket reads a ticket of any format without verifying anything: a
// client's own view of its place (the simulator's order, verify-draw's
// visitor). Never trust it. The draw of format 3 is masked: Draw is 0.
func PeekTicket(s string) (room.Ticket, bool) {
	if len(s) > MaxTokenLen {
		return room.Ticket{}, false
	}
	if strings.IndexByte(s, '.') >= 0 {
		return peekJWTTicket(s)
	}
	var raw [maxTicketRaw + 3]byte
	if len(s) > maxTicketLen {
		return room.Ticket{}, false
	}
	n, ok := decodeB64URL(raw[:], s)
	if !ok || n < minTicketRaw || n > maxTicketRaw || (raw[0] != ticketFormat && raw[0] != ticketFormatDraw) {
		return room.Ticket{}, false
	}
	draw := math.Float64frombits(binary.BigEndian.Uint64(raw[9:17]))
	if raw[0] == ticketFormatDraw {
		draw = 0
	}
	body := raw[:n-ticketTagLen]
	rl := int(body[33])
	if rl < 1 || ticketFixedLen+rl >= len(body) {
		return room.Ticket{}, false
	}
	vl := int(body[ticketFixedLen+rl])
	if vl < 1 || ticketFixedLen+rl+1+vl != len(body) {
		return room.Ticket{}, false
	}
	return room.Ticket{
		Room:    string(body[ticketFixedLen : ticketFixedLen+rl]),
		Visitor: string(body[ticketFixedLen+rl+1:]),
		Seq:     int64(binary.BigEndian.Uint64(body[1:9])),
		Draw:    draw,
	}, true
}

// idChars reports whether s is made of [A-Za-z0-9_-] only (room and visitor ids).
func idChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if b64URLValue[s[i]] == 0xff {
			return false
		}
	}
	return true
}

func idBytes(b []byte) bool {
	for _, c := range b {
		if b64URLValue[c] == 0xff {
			return false
		}
	}
	return true
}

// b64URLValue maps a base64url character to its value, anything else to 0xff.
var b64URLValue = func() (t [256]byte) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// decodeB64URL decodes s, base64url without padding, into dst, as
// base64.RawURLEncoding.Strict() does (FuzzDecodeB64URL compares them), but
// from a string and without allocating. It refuses any other character (line
// breaks too, which encoding/base64 skips), a dangling character and unused
// low bits that are not zero. dst must hold
// len(s)*3/4 bytes.
func decodeB64URL(dst []byte, s string) (int, bool) {
	n, i := 0, 0
	for ; i+4 <= len(s); i += 4 {
		a, b, c, d := b64URLValue[s[i]], b64URLValue[s[i+1]], b64URLValue[s[i+2]], b64URLValue[s[i+3]]
		if (a|b|c|d)&0xc0 != 0 {
			return 0, false
		}
		v := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6 | uint32(d)
		dst[n], dst[n+1], dst[n+2] = byte(v>>16), byte(v>>8), byte(v)
		n += 3
	}
	switch len(s) - i {
	case 1:
		return 0, false
	case 2:
		a, b := b64URLValue[s[i]], b64URLValue[s[i+1]]
		if (a|b)&0xc0 != 0 || b&0x0f != 0 {
			return 0, false
		}
		dst[n] = a<<2 | b>>4
		n++
	case 3:
		a, b, c := b64URLValue[s[i]], b64URLValue[s[i+1]], b64URLValue[s[i+2]]
		if (a|b|c)&0xc0 != 0 || c&0x03 != 0 {
			return 0, false
		}
		v := uint32(a)<<12 | uint32(b)<<6 | uint32(c)
		dst[n], dst[n+1] = byte(v>>10), byte(v>>2)
		n += 2
	}
	return n, true
}
