// Package pushtest is a stand-in of a web push service (RFC 8030) on
// loopback, for tests: a test registers a subscription whose endpoint is the
// stand-in and whose keys the test holds; every message the stand-in
// receives is checked as a push service would (the VAPID signature of RFC
// 8292 against the key in the header, its audience and expiry) and
// decrypted as the browser would (RFC 8291's aes128gcm), so a test sees the
// payload the service worker would get. A headless browser cannot reach a
// real push service; the browser tests hand the payload to the page's real
// service worker through the DevTools protocol.
package pushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Server is the stand-in push service.
type Server struct {
	URL string // http://127.0.0.1:port

	mu       sync.Mutex
	subs     map[string]*Subscription
	messages []Message
	next     int
}

// Subscription is one browser's subscription: its endpoint and the keys the
// browser would hold (the stand-in decrypts with them).
type Subscription struct {
	Endpoint string
	P256dh   string // the public key, base64url (what the page sends)
	Auth     string // the auth secret, base64url
	// VAPID, when set, is the application server key the subscription was
	// made for (base64url): a message signed with another is refused 403,
	// as a push service does.
	VAPID string
	// Status is what the stand-in answers a message (0: 201 Created).
	Status int

	id   string
	priv *ecdh.PrivateKey
	auth []byte
}

// Message is a message the stand-in accepted: checked and decrypted.
type Message struct {
	Endpoint  string
	Payload   []byte // decrypted
	TTL       int
	Urgency   string
	Topic     string
	VAPIDKey  string // the k= of the Authorization header
	Subject   string // the JWT's sub
	Audience  string // the JWT's aud
	ExpiresAt time.Time
}

// Start serves the stand-in until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{subs: map[string]*Subscription{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Subscribe makes a subscription on the stand-in, for the application
// server key vapid ("" for any), with fresh keys.
func (s *Server) Subscribe(t testing.TB, vapid string) *Subscription {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth) // never fails (crypto/rand, Go ≥ 1.24)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := strconv.Itoa(s.next)
	sub := &Subscription{Endpoint: s.URL + "/push/" + id, P256dh: b64(priv.PublicKey().Bytes()), Auth: b64(auth),
		VAPID: vapid, id: id, priv: priv, auth: auth}
	s.subs[id] = sub
	return sub
}

// SetStatus makes the stand-in answer sub's messages with status (410: the
// subscription expired; 500: the service failed).
func (s *Server) SetStatus(sub *Subscription, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub.Status = status
}

// Messages are the messages accepted so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/push/")
	s.mu.Lock()
	sub := s.subs[id]
	s.mu.Unlock()
	if !ok || sub == nil || r.Method != http.MethodPost {
		http.Error(w, "no such subscription", http.StatusNotFound)
		return
	}
	m, status, err := s.check(r, sub)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	s.mu.Lock()
	answer := sub.Status
	if answer == 0 || answer/100 == 2 {
		s.messages = append(s.messages, m)
	}
	s.mu.Unlock()
	if answer == 0 {
		answer = http.StatusCreated
	}
	w.WriteHeader(answer)
}

// check verifies a message as a push service and its browser would: the
// VAPID JWT (ES256 by the key in k=, aud the endpoint's origin, exp in the
// next 24 hours, a sub), the headers, and the aes128gcm body.
func (s *Server) check(r *http.Request, sub *Subscription) (Message, int, error) {
	m := Message{Endpoint: sub.Endpoint, Urgency: r.Header.Get("Urgency"), Topic: r.Header.Get("Topic")}
	ttl, err := strconv.Atoi(r.Header.Get("TTL"))
	if err != nil || ttl < 0 {
		return m, http.StatusBadRequest, errors.New("no TTL header")
	}
	m.TTL = ttl
	if r.Header.Get("Content-Encoding") != "aes128gcm" {
		return m, http.StatusBadRequest, errors.New("Content-Encoding is not aes128gcm")
	}
	if err := s.vapid(r.Header.Get("Authorization"), sub, &m); err != nil {
		return m, http.StatusForbidden, err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8192))
	if err != nil || len(body) > 4096 {
		return m, http.StatusRequestEntityTooLarge, errors.New("body over 4096 bytes")
	}
	payload, err := Decrypt(sub.priv, sub.auth, body)
	if err != nil {
		return m, http.StatusBadRequest, err
	}
	m.Payload = payload
	return m, 0, nil
}

func (s *Server) vapid(h string, sub *Subscription, m *Message) error {
	rest, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return errors.New("no vapid Authorization")
	}
	var tok string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			tok = v
		case "k":
			m.VAPIDKey = v
		}
	}
	if sub.VAPID != "" && m.VAPIDKey != sub.VAPID {
		return errors.New("signed with a key other than the subscription's")
	}
	point, err := base64.RawURLEncoding.DecodeString(m.VAPIDKey)
	if err != nil {
		return errors.New("k= is not base64url")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		return errors.New("k= is not a P-256 point")
	}
	var claims jwt.RegisteredClaims
	_, err = jwt.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithExpirationRequired())
	if err != nil {
		return fmt.Errorf("VAPID token: %w", err)
	}
	origin := s.URL
	if len(claims.Audience) != 1 || claims.Audience[0] != origin {
		return fmt.Errorf("VAPID aud %v, want %s", claims.Audience, origin)
	}
	if claims.ExpiresAt.After(time.Now().Add(24 * time.Hour)) {
		return errors.New("VAPID exp more than 24 hours ahead")
	}
	if !strings.HasPrefix(claims.Subject, "mailto:") && !strings.HasPrefix(claims.Subject, "https:") {
		return fmt.Errorf("VAPID sub %q is not a mailto: or https: URL", claims.Subject)
	}
	m.Subject, m.Audience, m.ExpiresAt = claims.Subject, claims.Audience[0], claims.ExpiresAt.Time
	return nil
}

// Decrypt opens an aes128gcm body (RFC 8188) of one record encrypted for a
// subscription's keys as RFC 8291 says: the header (salt, record size, the
// application server's ephemeral public key), then the record, whose
// plaintext ends with the delimiter 2 and zero padding.
func Decrypt(ua *ecdh.PrivateKey, auth, body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than its header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || idlen != 65 {
		return nil, errors.New("keyid is not a P-256 point")
	}
	asPub, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, errors.New("keyid is not a P-256 point")
	}
	record := body[21+idlen:]
	if rs < 18 || len(record) > int(rs) {
		return nil, errors.New("more than one record")
	}
	shared, err := ua.ECDH(asPub)
	if err != nil {
		return nil, err
	}
	info := "WebPush: info\x00" + string(ua.PublicKey().Bytes()) + string(asPub.Bytes())
	ikm, err := hkdf.Key(sha256.New, shared, auth, info, 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, record, nil)
	if err != nil {
		return nil, errors.New("the record does not decrypt")
	}
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 2 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:i], nil
}
