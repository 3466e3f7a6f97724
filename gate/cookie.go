package gate

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// CookieName is the name of the session cookie, the same for every room (the
// room is inside the value). See the package documentation for why. The
// __Host- prefix makes browsers accept it only with Secure, Path=/ and no
// Domain, from this host itself: a sibling subdomain cannot set a cookie of
// that name, so it cannot plant copies that crowd out the visitor's own.
const CookieName = "__Host-vestibule"

// DevCookieName is the session cookie's name on a loopback host over plain
// HTTP (make dev): browsers refuse a __Host- cookie without Secure, and not
// every browser keeps a Secure cookie from http://localhost. CookieOptions
// write it only for a loopback host; Middleware reads it only when the
// waiting room is plain http (which Config allows only on a loopback host)
// and the request's Host is a loopback host. Decide and the CloudFront
// function never read it.
const DevCookieName = "vestibule"

// ReceiptPrefix starts the value of an ended session's cookie: "end." and the
// session cookie's value. The gate writes it, in place of the session cookie,
// when the site's response carries EndHeader; the gate sends a request with a
// receipt and no session to /.vestibule/leave (LeavePath), which completes the
// session and clears the cookie. A receipt is no session: the value does not
// match the session grammar, so it passes nowhere.
const ReceiptPrefix = "end."

// EndHeader is the response header with which the site ends the visitor's
// session: "Vestibule-Session: end" on any response. The gate removes the
// header and replaces the session cookie with a receipt (EndCookie).
const (
	EndHeader = "Vestibule-Session"
	EndValue  = "end"
)

// MaxCookieLen is the longest cookie value Verify reads; longer values are
// refused before any parsing. The longest valid value is 183 characters.
const MaxCookieLen = 256

// MaxCookieValues is how many cookies named CookieName the gate reads from
// one request, in the order the Cookie header lists them; further ones are
// ignored. Reading one costs a regular expression, no key.
const MaxCookieValues = 32

// MaxCookieCandidates is how many of those cookies the gate checks the MAC of
// (the CloudFront function reads a key for each): only values of the right
// grammar, room and expiry are candidates, so malformed, expired or foreign
// copies cost nothing, and a header stuffed with forged copies costs at most
// this many key reads.
const MaxCookieCandidates = 3

// version is the first field of every cookie value.
const version = "v1"

// Limits of the fields, here and in the CloudFront function.
const (
	maxSeq    = 999_999_999_999_999_999 // 18 digits: always fits int64
	maxExpiry = 99_999_999_999          // 11 digits: exact in a JavaScript number
)

// Errors Verify wraps; callers branch on them with errors.Is. Every failure
// wraps exactly one.
var (
	ErrOversize   = errors.New("gate: cookie too long")
	ErrMalformed  = errors.New("gate: cookie malformed")
	ErrWrongRoom  = errors.New("gate: cookie for another room")
	ErrExpired    = errors.New("gate: session expired")
	ErrUnknownKey = errors.New("gate: cookie signed with an unknown key")
	ErrTampered   = errors.New("gate: cookie signature does not match")
)

// cookiePattern is the whole grammar of a value; the CloudFront function
// holds the same expression. Groups: kid, room, seq, expiry, renew and start
// (both or neither), MAC.
var cookiePattern = regexp.MustCompile(`^v1\.([A-Za-z0-9_-]{1,16})\.([A-Za-z0-9_-]{1,64})\.(0|[1-9][0-9]{0,17})\.([1-9][0-9]{0,10})(?:\.([1-9][0-9]{0,10})\.([1-9][0-9]{0,10}))?\.([A-Za-z0-9_-]{43})$`)

// roomPattern is a valid room id: a copy of room.ValidRoomID's, since a
// public package links nothing else of the module (TestRoomIDCopiesAgree keeps
// it, and the JavaScript copies, the same).
var roomPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Session is what a session cookie says: the visitor holds the session with
// sequence number Seq in Room until Expires (whole seconds; Sign drops the
// fraction).
//
// A session that can be renewed (the room's maxSessionSeconds) has RenewAt
// and Start too: from RenewAt on, the gate sends a GET navigation through
// RenewPath, which extends the session in the engine (from Start, up to the
// room's maximum) and signs a new cookie. Both are zero for a session that
// cannot be renewed (any more).
type Session struct {
	Room    string
	Seq     int64 // the grant's sequence, which POST /api/complete and /.vestibule/leave end
	Expires time.Time
	RenewAt time.Time // when the gate sends a navigation to RenewPath; zero: never
	Start   time.Time // when the session began, which caps its renewals; zero with RenewAt
}

// Renews reports whether the session carries a time to renew.
func (s Session) Renews() bool { return !s.RenewAt.IsZero() }

// Validate reports whether Sign can make a cookie of s that Verify accepts
// (ignoring time): a valid room id, 0 ≤ Seq < 10^18, and an expiry (and
// RenewAt and Start, both set or both zero) between 1970-01-01T00:00:01Z and
// about the year 5138.
func (s Session) Validate() error {
	inRange := func(t time.Time) bool { return t.Unix() >= 1 && t.Unix() <= maxExpiry }
	switch {
	case s.RenewAt.IsZero() != s.Start.IsZero():
		return fmt.Errorf("%w: renew at and start are set together", ErrMalformed)
	case s.Renews() && (!inRange(s.RenewAt) || !inRange(s.Start)):
		return fmt.Errorf("%w: renew at %v or start %v out of range", ErrMalformed, s.RenewAt, s.Start)
	case !roomPattern.MatchString(s.Room):
		return fmt.Errorf("%w: room %q is not 1-64 characters of [A-Za-z0-9_-]", ErrMalformed, s.Room)
	case s.Seq < 0 || s.Seq > maxSeq:
		return fmt.Errorf("%w: seq %d out of range", ErrMalformed, s.Seq)
	case s.Expires.Unix() < 1 || s.Expires.Unix() > maxExpiry:
		return fmt.Errorf("%w: expiry %v out of range", ErrMalformed, s.Expires)
	}
	return nil
}

// mac is the base64url (unpadded) HMAC-SHA256 of payload under key.
func mac(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Sign makes the cookie value of s under key:
//
//	v1.<kid>.<room>.<seq>.<expiry>.<mac>
//	v1.<kid>.<room>.<seq>.<expiry>.<renew>.<start>.<mac>   (a session that renews)
//
// It does not check s (Session.Validate does); a cookie made from an invalid
// Session is one that Verify refuses.
func Sign(key Key, s Session) string {
	payload := version + "." + key.ID + "." + s.Room + "." + strconv.FormatInt(s.Seq, 10) + "." + strconv.FormatInt(s.Expires.Unix(), 10)
	if s.Renews() || !s.Start.IsZero() {
		payload += "." + strconv.FormatInt(s.RenewAt.Unix(), 10) + "." + strconv.FormatInt(s.Start.Unix(), 10)
	}
	return payload + "." + mac(key.Secret, payload)
}

// Verify checks a cookie value for room at now and returns its session. It
// refuses, in this order: values longer than MaxCookieLen (ErrOversize), values
// off the grammar (ErrMalformed), another room's cookie (ErrWrongRoom), an
// ended session, expiry ≤ now (ErrExpired), a kid that is neither the current
// nor the previous key (ErrUnknownKey), and a MAC that does not match
// (ErrTampered, compared in constant time). Room and expiry are checked before
// the MAC only because that is cheaper; a cookie passes only if all hold.
func Verify(keys KeyRing, cookie, room string, now time.Time) (Session, error) {
	p, err := parse(cookie, room, now)
	if err != nil {
		return Session{}, err
	}
	return p.verify(keys)
}

// parsed is a cookie value that passed the checks that need no key.
type parsed struct {
	value, kid, mac string
	s               Session
}

// parse makes Verify's checks that need no key: size, grammar, room, expiry.
func parse(cookie, room string, now time.Time) (parsed, error) {
	if len(cookie) > MaxCookieLen {
		return parsed{}, ErrOversize
	}
	m := cookiePattern.FindStringSubmatch(cookie)
	if m == nil {
		return parsed{}, ErrMalformed
	}
	kid, cookieRoom, seqS, expS, renewS, startS, sum := m[1], m[2], m[3], m[4], m[5], m[6], m[7]
	if cookieRoom != room {
		return parsed{}, ErrWrongRoom
	}
	seq, err1 := strconv.ParseInt(seqS, 10, 64)
	exp, err2 := strconv.ParseInt(expS, 10, 64)
	if err1 != nil || err2 != nil { // unreachable: the grammar bounds both
		return parsed{}, ErrMalformed
	}
	if exp <= now.Unix() {
		return parsed{}, ErrExpired
	}
	s := Session{Room: cookieRoom, Seq: seq, Expires: time.Unix(exp, 0).UTC()}
	if renewS != "" {
		renew, err1 := strconv.ParseInt(renewS, 10, 64)
		start, err2 := strconv.ParseInt(startS, 10, 64)
		if err1 != nil || err2 != nil { // unreachable: the grammar bounds both
			return parsed{}, ErrMalformed
		}
		s.RenewAt, s.Start = time.Unix(renew, 0).UTC(), time.Unix(start, 0).UTC()
	}
	return parsed{value: cookie, kid: kid, mac: sum, s: s}, nil
}

// verify makes Verify's checks that need the key: the kid and the MAC.
func (p parsed) verify(keys KeyRing) (Session, error) {
	key, ok := keys.Lookup(p.kid)
	if !ok {
		return Session{}, ErrUnknownKey
	}
	// Compare the encodings, not decoded bytes: base64 has several spellings of
	// the last character, and the function compares strings too.
	want := mac(key.Secret, p.value[:len(p.value)-len(p.mac)-1])
	if !hmac.Equal([]byte(want), []byte(p.mac)) {
		return Session{}, ErrTampered
	}
	return p.s, nil
}

// VerifyReceipt checks the value of an ended session's cookie
// (ReceiptPrefix and a session cookie's value) as Verify checks a session
// cookie, and returns the session the site ended.
func VerifyReceipt(keys KeyRing, cookie, room string, now time.Time) (Session, error) {
	inner, ok := strings.CutPrefix(cookie, ReceiptPrefix)
	if !ok {
		return Session{}, ErrMalformed
	}
	return Verify(keys, inner, room, now)
}

// CookieRoom returns the room a session cookie's or a receipt's value names,
// or "" when it is not of the grammar; for a route that serves every room
// (/.vestibule/leave), before it calls Verify or VerifyReceipt.
func CookieRoom(cookie string) string {
	cookie = strings.TrimPrefix(cookie, ReceiptPrefix)
	if len(cookie) > MaxCookieLen {
		return ""
	}
	if m := cookiePattern.FindStringSubmatch(cookie); m != nil {
		return m[2]
	}
	return ""
}

// CookieValues returns the values of the cookies named name in a Cookie
// header, in order, at most MaxCookieValues of them. The header is split on
// ";", each part split at its first "=" and name and value trimmed of spaces
// and tabs; parts without "=" are skipped, values are taken as they are (no
// unquoting). The CloudFront function receives the same split from
// CloudFront as request.cookies.
func CookieValues(header, name string) []string {
	var out []string
	for part := range strings.SplitSeq(header, ";") {
		n, value, ok := strings.Cut(part, "=")
		if !ok || strings.Trim(n, " \t") != name {
			continue
		}
		out = append(out, strings.Trim(value, " \t"))
		if len(out) == MaxCookieValues {
			break
		}
	}
	return out
}

// SessionCookie is one session cookie of a request: its value, and the room
// its name gives ("" for CookieName, which every room shared).
type SessionCookie struct {
	Room, Value string
}

// SessionCookies returns the request's session cookies of every room, in the
// order of the Cookie header, at most MaxCookieValues of them: those named
// CookieName, and those named RoomCookieName of a valid room id (dev: the
// same names with DevCookieName). A route that serves every room
// (/.vestibule/leave, /.vestibule/renew) reads them; a value whose room is
// not the one its name gives is no session of that name (Verify refuses it).
func SessionCookies(header string, dev bool) []SessionCookie {
	base := CookieName
	if dev {
		base = DevCookieName
	}
	var out []SessionCookie
	for part := range strings.SplitSeq(header, ";") {
		n, value, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		n = strings.Trim(n, " \t")
		room, named := strings.CutPrefix(n, base+"-")
		switch {
		case n == base:
			room = ""
		case !named || !roomPattern.MatchString(room):
			continue
		}
		out = append(out, SessionCookie{Room: room, Value: strings.Trim(value, " \t")})
		if len(out) == MaxCookieValues {
			break
		}
	}
	return out
}

// CookieOptions say how SetCookie and ClearCookie write the cookie.
type CookieOptions struct {
	// InsecureLoopback leaves out the Secure attribute, so that a browser keeps
	// the cookie over plain HTTP, but only when Host is a loopback host
	// (localhost, *.localhost, 127.0.0.0/8, ::1): local development. For any
	// other host the cookie is Secure whatever this says.
	InsecureLoopback bool
	// Host is the request's Host header (with or without a port); read only
	// when InsecureLoopback is set.
	Host string
	// Room names the cookie: RoomCookieName(Room) (DevCookieName + "-" + Room
	// without Secure); "" for CookieName, the name every room shared.
	Room string
	// name, when set, is the name itself (the gate's receipt replaces the
	// cookie it found under whichever name it came).
	name string
}

// RoomCookieName is the name of room's session cookie: CookieName, "-" and
// the room id. A site with rooms by path holds one session per room, each
// under its own name, so entering one room never touches another's session.
func RoomCookieName(room string) string { return CookieName + "-" + room }

// secure reports whether the Secure attribute is set.
func (o CookieOptions) secure() bool {
	return !o.InsecureLoopback || !isLoopback(o.Host)
}

// Name is the cookie's name: RoomCookieName(Room), or CookieName without a
// Room; DevCookieName (+ "-" + Room) when the cookie goes without Secure (a
// loopback host with InsecureLoopback).
func (o CookieOptions) Name() string {
	name := CookieName
	if !o.secure() {
		name = DevCookieName
	}
	switch {
	case o.name != "":
		return o.name
	case o.Room != "":
		return name + "-" + o.Room
	}
	return name
}

// isLoopback reports whether host (maybe with a port) names this machine.
func isLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SetCookie returns the Set-Cookie header value that gives the visitor the
// session cookie value (from Sign) of s: named CookieName (DevCookieName
// without Secure), HttpOnly, Secure (see CookieOptions), SameSite=Lax (it must arrive on the top-level navigation
// from the waiting room), Path=/, no Domain (this host only), and both
// Expires and Max-Age at s.Expires, so the browser drops it when the session
// ends. A session already over at now gives a cookie that deletes itself.
func SetCookie(value string, s Session, now time.Time, opts CookieOptions) string {
	maxAge := int(s.Expires.Unix() - now.Unix())
	if maxAge <= 0 {
		maxAge = -1 // Max-Age=0: delete at once
	}
	c := http.Cookie{Name: opts.Name(), Value: value, Path: "/", Expires: s.Expires, MaxAge: maxAge,
		HttpOnly: true, Secure: opts.secure(), SameSite: http.SameSiteLaxMode}
	return c.String()
}

// EndCookie returns the Set-Cookie header value that replaces the session
// cookie value (of s) with its receipt, ReceiptPrefix + value, with
// SetCookie's attributes and expiry: the gate writes it when the site's
// response carries EndHeader.
func EndCookie(value string, s Session, now time.Time, opts CookieOptions) string {
	return SetCookie(ReceiptPrefix+value, s, now, opts)
}

// ClearCookie returns the Set-Cookie header value that removes the session
// cookie (empty value, Max-Age=0, an Expires in the past), with the attributes
// SetCookie uses so that browsers match it to the cookie they hold.
func ClearCookie(opts CookieOptions) string {
	c := http.Cookie{Name: opts.Name(), Value: "", Path: "/", Expires: time.Unix(1, 0), MaxAge: -1,
		HttpOnly: true, Secure: opts.secure(), SameSite: http.SameSiteLaxMode}
	return c.String()
}
