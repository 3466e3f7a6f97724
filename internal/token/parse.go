package token

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// segment is the JWS base64url alphabet without padding, strict: the unused
// low bits of the last character must be zero, so one token has one spelling.
var segment = base64.RawURLEncoding.Strict()

// maxKidLen bounds the kid we look up; ours are 11 characters.
const maxKidLen = 64

// Claim names. A payload may hold only the names of its kind, each at most once.
var (
	ticketClaimsRequired = []string{"typ", "iss", "sub", "room", "seq", "iat", "exp"}
	ticketClaimsAllowed  = append([]string{"draw"}, ticketClaimsRequired...)
	entryClaimsRequired  = []string{"typ", "iss", "sub", "room", "seq", "jti", "aud", "iat", "nbf", "exp"}
	entryClaimsAllowed   = entryClaimsRequired
)

// shape is what a kind of token must look like before its signature is checked.
type shape struct {
	alg, typ string   // the header's alg and typ, exactly
	kid      bool     // the header carries a kid (and nothing else besides alg and typ)
	required []string // claims that must be present
	allowed  []string // claims that may be present
	parser   *jwt.Parser
	typClaim string // the typ claim inside the payload
}

func newShape(alg, typ, typClaim string, kid bool, required, allowed []string) shape {
	return shape{
		alg: alg, typ: typ, kid: kid, required: required, allowed: allowed, typClaim: typClaim,
		// Claims are validated by our own code below, which knows which failure
		// is which; golang-jwt pins the algorithm and checks the signature.
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{alg}),
			jwt.WithStrictDecoding(),
			jwt.WithoutClaimsValidation(),
		),
	}
}

// inspect checks what golang-jwt leaves alone: the size, the exact header, and
// duplicated, unknown, missing or non-scalar claims. It returns the kid (empty
// when the shape has none). Every error wraps ErrInvalid.
func (sh shape) inspect(s string) (kid string, err error) {
	if len(s) > MaxTokenLen {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrInvalid, MaxTokenLen)
	}
	if strings.Count(s, ".") != 2 {
		return "", fmt.Errorf("%w: not three segments", ErrInvalid)
	}
	h, rest, _ := strings.Cut(s, ".")
	p, _, _ := strings.Cut(rest, ".")
	hb, err := segment.DecodeString(h)
	if err != nil {
		return "", fmt.Errorf("%w: header encoding", ErrInvalid)
	}
	pb, err := segment.DecodeString(p)
	if err != nil {
		return "", fmt.Errorf("%w: payload encoding", ErrInvalid)
	}

	headerNames := []string{"alg", "typ"}
	if sh.kid {
		headerNames = append(headerNames, "kid")
	}
	header, err := flatObject(hb, headerNames)
	if err != nil {
		return "", fmt.Errorf("%w: header: %v", ErrInvalid, err)
	}
	if len(header) != len(headerNames) {
		return "", fmt.Errorf("%w: header fields missing", ErrInvalid)
	}
	if stringField(header, "alg") != sh.alg {
		return "", fmt.Errorf("%w: header alg", ErrInvalid)
	}
	if stringField(header, "typ") != sh.typ {
		return "", fmt.Errorf("%w: header typ", ErrInvalid)
	}
	if sh.kid {
		k := stringField(header, "kid")
		if k == "" || len(k) > maxKidLen {
			return "", fmt.Errorf("%w: header kid", ErrInvalid)
		}
		kid = k
	}

	claims, err := flatObject(pb, sh.allowed)
	if err != nil {
		return "", fmt.Errorf("%w: payload: %v", ErrInvalid, err)
	}
	for _, name := range sh.required {
		if _, ok := claims[name]; !ok {
			return "", fmt.Errorf("%w: claim %s missing", ErrInvalid, name)
		}
	}
	if stringField(claims, "typ") != sh.typClaim {
		return "", fmt.Errorf("%w: typ claim", ErrInvalid)
	}
	return kid, nil
}

// flatObject reads b as one JSON object whose names are all in allowed, each at
// most once, and whose values are strings, numbers or booleans (never null,
// arrays or objects: no claim of ours is one). Names are compared exactly, after
// JSON unescaping, so "r\u006fom" and "room" are the same name and "ROOM" is
// unknown.
//
// A map silently keeps the last of duplicated names, so the members are also
// counted in the raw bytes: fewer map entries than members means a duplicate.
// (A json.Decoder token walk would see every name too, but cost most of a
// ticket check; FuzzFlatObject compares the two.)
func flatObject(b []byte, allowed []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil { // nil: the JSON was null
		return nil, errors.New("not a JSON object")
	}
	if len(m) != countMembers(b) {
		return nil, errors.New("duplicate field")
	}
	for name, v := range m {
		known := false
		for _, a := range allowed {
			if a == name {
				known = true
				break
			}
		}
		if !known {
			// The name is attacker-chosen; it stays out of the error (and the logs).
			return nil, errors.New("unknown field")
		}
		switch v[0] { // Unmarshal trims whitespace around values, and a value is never empty
		case '{', '[', 'n':
			return nil, fmt.Errorf("field %s is not a string, number or boolean", name)
		}
	}
	return m, nil
}

// countMembers counts the members of the top-level object in b, which must be
// valid JSON: commas at depth one, outside strings, plus one if any name exists.
func countMembers(b []byte) int {
	depth, commas, named := 0, 0, false
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			if depth == 1 {
				named = true
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 1 {
				commas++
			}
		}
	}
	if !named {
		return 0
	}
	return commas + 1
}

// stringField reads m[name] as a JSON string ("" when absent or not a string).
func stringField(m map[string]json.RawMessage, name string) string {
	var s string
	if v, ok := m[name]; ok {
		if json.Unmarshal(v, &s) != nil {
			return ""
		}
	}
	return s
}

// holder is what both kinds of JWT say about their holder: the kind (typ,
// signed with the rest), the issuer, and the visitor's place.
type holder struct {
	claimsBase
	Type    string `json:"typ"`
	Issuer  string `json:"iss"`
	Visitor string `json:"sub"`
	Room    string `json:"room"`
	Seq     int64  `json:"seq"`
}

// checkHolder refuses a holder the engine never makes.
func checkHolder(room, visitor string, seq int64) error {
	switch {
	case room == "":
		return fmt.Errorf("%w: empty room", ErrInvalid)
	case visitor == "":
		return fmt.Errorf("%w: empty visitor", ErrInvalid)
	case seq < 1:
		return fmt.Errorf("%w: seq below 1", ErrInvalid)
	}
	return nil
}

// Time claims outside [minTime, maxTime] are refused: they can only come from
// a bug or a forgery, and bounding them keeps every conversion exact.
var (
	minTime = time.Unix(1, 0)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// claimTime converts a time claim, refusing absent and out-of-range values.
func claimTime(d *jwt.NumericDate, name string) (time.Time, error) {
	if d == nil {
		return time.Time{}, fmt.Errorf("%w: claim %s missing", ErrInvalid, name)
	}
	t := d.UTC()
	if t.Before(minTime) || t.After(maxTime) {
		return time.Time{}, fmt.Errorf("%w: claim %s out of range", ErrInvalid, name)
	}
	return t, nil
}

// numericDate is the encoding of t in a token: whole seconds, as golang-jwt writes them.
func numericDate(t time.Time) *jwt.NumericDate {
	return jwt.NewNumericDate(t.UTC().Truncate(time.Second))
}

// checkTimes applies the time rules shared by both kinds of token: the token
// is valid from notBefore−Leeway until expiry+Leeway (exclusive), and was not
// issued in the future. Expiry wins over not-yet-valid when both hold, which
// only a malformed token (exp before nbf) can reach and Verify refuses earlier.
func checkTimes(now, issuedAt, notBefore, expiry time.Time) error {
	if !now.Before(expiry.Add(Leeway)) {
		return fmt.Errorf("%w: expired at %s", ErrExpired, expiry.Format(time.RFC3339))
	}
	if issuedAt.After(now.Add(Leeway)) {
		return fmt.Errorf("%w: issued at %s", ErrNotYetValid, issuedAt.Format(time.RFC3339))
	}
	if notBefore.After(now.Add(Leeway)) {
		return fmt.Errorf("%w: valid from %s", ErrNotYetValid, notBefore.Format(time.RFC3339))
	}
	return nil
}

// sign serializes header and claims and signs them. Header fields are set
// explicitly: golang-jwt's default typ "JWT" would not tell our kinds apart.
func sign(method jwt.SigningMethod, header map[string]any, claims jwt.Claims, key any) (string, error) {
	t := jwt.NewWithClaims(method, claims)
	t.Header = header
	s, err := t.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("token: signing: %w", err)
	}
	if len(s) > MaxTokenLen {
		return "", fmt.Errorf("%w: the token would be longer than %d bytes", ErrInvalid, MaxTokenLen)
	}
	return s, nil
}

// claimsBase gives our claim structs the jwt.Claims methods golang-jwt needs
// to decode into them. Validation does not use them (WithoutClaimsValidation):
// each kind checks its own claims after the signature.
type claimsBase struct{}

func (claimsBase) GetExpirationTime() (*jwt.NumericDate, error) { return nil, nil }
func (claimsBase) GetIssuedAt() (*jwt.NumericDate, error)       { return nil, nil }
func (claimsBase) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (claimsBase) GetIssuer() (string, error)                   { return "", nil }
func (claimsBase) GetSubject() (string, error)                  { return "", nil }
func (claimsBase) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }
