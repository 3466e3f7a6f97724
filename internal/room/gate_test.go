package room_test

import (
	"errors"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A gated room needs a site its Secure cookie can live on: https, or http on a
// loopback host for local development; originUrl's rule asks that of every
// room, gated or not (plain http would carry the entry token in the clear).
func TestGateNeedsASecureOrigin(t *testing.T) {
	for _, c := range []struct {
		origin string
		ok     bool
	}{
		{"https://booking.example.com/", true},
		{"http://127.0.0.1:8081/", true},
		{"http://localhost:3000/shop", true},
		{"http://[::1]:8081/", true},
		{"http://booking.example.com/", false},
		{"http://127.0.0.1.example.com/", false},
	} {
		cfg := room.DefaultConfig()
		cfg.OriginURL, cfg.Gate = c.origin, true
		err := cfg.Validate()
		var fe *room.FieldError
		switch {
		case c.ok && err != nil:
			t.Errorf("gate on %s: %v, want valid", c.origin, err)
		case !c.ok && (!errors.As(err, &fe) || fe.Field != "originUrl"):
			t.Errorf("gate on %s: %v, want a FieldError for originUrl", c.origin, err)
		}
		cfg.Gate = false
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("no gate on %s: %v, want valid: %v", c.origin, err, c.ok)
		}
	}
}

// sessionIdleSeconds is 0 (off) or at least 10 s and at most the session's
// longest life: maxSessionSeconds, or sessionTTLSeconds without it.
func TestSessionIdleSecondsRange(t *testing.T) {
	for _, c := range []struct {
		idle, ttl, max int64
		ok             bool
	}{
		{0, 600, 0, true},
		{30, 600, 0, true},
		{600, 600, 0, true},
		{601, 600, 0, false},
		{900, 600, 3600, true},
		{3601, 600, 3600, false},
		{9, 600, 0, false},
		{-1, 600, 0, false},
	} {
		cfg := room.DefaultConfig()
		cfg.OriginURL, cfg.Gate = "https://booking.example.com/", true
		cfg.SessionIdleSeconds, cfg.SessionTTLSeconds, cfg.MaxSessionSeconds = c.idle, c.ttl, c.max
		err := cfg.Validate()
		var fe *room.FieldError
		switch {
		case c.ok && err != nil:
			t.Errorf("%+v: %v, want valid", c, err)
		case !c.ok && (!errors.As(err, &fe) || fe.Field != "sessionIdleSeconds"):
			t.Errorf("%+v: %v, want a FieldError for sessionIdleSeconds", c, err)
		}
	}
	idle, longest := room.Config{SessionTTLSeconds: 600}.SessionLimits()
	if idle != 600 || longest != 600 {
		t.Errorf("without either setting: idle %d, longest %d, want 600 and 600 (no renewal)", idle, longest)
	}
}
