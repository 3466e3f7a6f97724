// Package challenge is the join challenge: a proof of work a room can ask of
// every fresh join, so that a bot pays per place what a person pays once
// (about a second of a phone's time), without punishing visitors who share an
// address. Challenges are stateless: the server signs what it issued (room,
// difficulty, expiry, a random nonce) and checks its own signature; the room's
// enqueue script spends the nonce, so each proof joins once.
//
// A challenge is "v1.<room>.<bits>.<expiry unix s>.<nonce>.<mac>"; a solution
// is a decimal counter n such that SHA-256(challenge + "." + n) begins with
// at least <bits> zero bits.
package challenge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// The request headers a join carries its proof in (CloudFront forwards them).
const (
	HeaderChallenge = "X-Vestibule-Challenge"
	HeaderSolution  = "X-Vestibule-Solution"
)

// TTL is how long a challenge may be solved and used.
const TTL = 2 * time.Minute

// MaxBits is the highest difficulty a room may ask (about 16 million hashes).
const MaxBits = 24

// maxLen bounds what Verify reads.
const maxLen = 256

// Errors of Verify; callers answer each with 403.
var (
	ErrInvalid  = errors.New("challenge: invalid")  // malformed, tampered, or for another room
	ErrExpired  = errors.New("challenge: expired")  // past its expiry
	ErrUnsolved = errors.New("challenge: unsolved") // the solution does not do the work asked
)

// label separates the challenge key from every other use of the secret.
const label = "vestibule-join-challenge"

// Challenges issues and verifies join challenges under a key derived from a
// secret only the functions hold. It is safe for concurrent use.
type Challenges struct{ key []byte }

// New returns Challenges keyed from secret (the ticket secret).
func New(secret []byte) *Challenges {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return &Challenges{key: m.Sum(nil)}
}

// Challenge is what the page is asked to solve.
type Challenge struct {
	Value     string    `json:"challenge"`
	Bits      int       `json:"bits"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Proof is what a verified solution proves: the work done and the nonce the
// room's script spends so the proof joins once.
type Proof struct {
	Bits      int
	Nonce     string
	ExpiresAt time.Time
}

// Issue makes a challenge of the given difficulty for a room.
func (c *Challenges) Issue(room string, difficulty int, now time.Time) Challenge {
	return c.IssueFor(room, difficulty, now, "", nil)
}

// fitTries bounds the random nonces IssueFor draws: with 1 in 15 accepted
// (a room's most arrival shards), all of them fail about once in 50 million.
const fitTries = 256

// IssueFor is Issue with a nonce that begins with prefix (which the room
// chooses: room.ChallengeError.NoncePrefix; one with a dot is left out) and
// that accept approves, when it is not nil: the first of up to fitTries
// random ones (the last one if none is). A room whose joins are spread asks
// it so that the proof joins where the client's joins go
// (room.ChallengeError.Accepts).
func (c *Challenges) IssueFor(room string, difficulty int, now time.Time, prefix string, accept func(nonce string) bool) Challenge {
	if strings.Contains(prefix, ".") {
		prefix = ""
	}
	n := make([]byte, 12)
	var nonce string
	for range fitTries {
		rand.Read(n) // never fails (crypto/rand, Go ≥ 1.24)
		nonce = prefix + base64.RawURLEncoding.EncodeToString(n)
		if accept == nil || accept(nonce) {
			break
		}
	}
	exp := now.Add(TTL).Truncate(time.Second)
	body := fmt.Sprintf("v1.%s.%d.%d.%s", room, difficulty, exp.Unix(), nonce)
	return Challenge{Value: body + "." + c.mac(body), Bits: difficulty, ExpiresAt: exp.UTC()}
}

func (c *Challenges) mac(body string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks that value is a challenge this deployment issued for room,
// not expired at now, and that solution does its work. It says nothing about
// whether the proof was used before: the enqueue script spends Proof.Nonce.
func (c *Challenges) Verify(value, solution, room string, now time.Time) (Proof, error) {
	if len(value) > maxLen || len(solution) > 20 {
		return Proof{}, ErrInvalid
	}
	dot := strings.LastIndexByte(value, '.')
	if dot < 0 {
		return Proof{}, ErrInvalid
	}
	body, mac := value[:dot], value[dot+1:]
	if !hmac.Equal([]byte(mac), []byte(c.mac(body))) {
		return Proof{}, ErrInvalid
	}
	// Room ids hold no dots, so the fields split cleanly.
	f := strings.Split(body, ".")
	if len(f) != 5 || f[0] != "v1" || f[1] != room {
		return Proof{}, ErrInvalid
	}
	difficulty, err1 := strconv.Atoi(f[2])
	exp, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || difficulty < 0 || difficulty > MaxBits {
		return Proof{}, ErrInvalid
	}
	expires := time.Unix(exp, 0)
	if !now.Before(expires) {
		return Proof{}, ErrExpired
	}
	if _, err := strconv.ParseUint(solution, 10, 64); err != nil || ZeroBits(value, solution) < difficulty {
		return Proof{}, ErrUnsolved
	}
	return Proof{Bits: difficulty, Nonce: f[4], ExpiresAt: expires}, nil
}

// ZeroBits is the number of leading zero bits of SHA-256(value + "." + solution).
func ZeroBits(value, solution string) int {
	sum := sha256.Sum256([]byte(value + "." + solution))
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// Solve finds a solution by counting up from 0, as the page does; for tests,
// the simulator and tools.
func Solve(c Challenge) string {
	for n := uint64(0); ; n++ {
		s := strconv.FormatUint(n, 10)
		if ZeroBits(c.Value, s) >= c.Bits {
			return s
		}
	}
}
