package room_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A room's OIDC redirect URIs are exact https URLs (http on localhost or
// 127.0.0.1 only), without fragments or credentials, each once, at most ten.
func TestOIDCRedirectURIs(t *testing.T) {
	long := "https://rp.example.com/" + strings.Repeat("a", room.MaxOIDCRedirectURILen)
	many := make([]string, room.MaxOIDCRedirectURIs+1)
	for i := range many {
		many[i] = fmt.Sprintf("https://rp%d.example.com/cb", i)
	}
	for _, c := range []struct {
		uris []string
		ok   bool
	}{
		{nil, true},
		{[]string{"https://app.example.com/oauth2/idpresponse"}, true},
		{[]string{"https://app.example.com/oauth2/idpresponse", "https://alb-123.eu-west-1.elb.amazonaws.com/oauth2/idpresponse"}, true},
		{[]string{"http://127.0.0.1:4180/oauth2/callback", "http://localhost:4180/oauth2/callback"}, true},
		{[]string{"https://app.example.com/cb?x=1"}, true},
		{many[:room.MaxOIDCRedirectURIs], true},
		{many, false},
		{[]string{"http://app.example.com/cb"}, false},
		{[]string{"http://[::1]:4180/cb"}, false}, // the page's form may not go there
		{[]string{"https://app.example.com/cb#x"}, false},
		{[]string{"https://app.example.com/cb#"}, false},
		{[]string{"https://user:pw@app.example.com/cb"}, false},
		{[]string{"/oauth2/callback"}, false},
		{[]string{"javascript:alert(1)"}, false},
		{[]string{"https://app.example.com/cb", "https://app.example.com/cb"}, false},
		{[]string{"https://app.example.com/\ncb"}, false},
		{[]string{long}, false},
		{[]string{""}, false},
	} {
		cfg := room.DefaultConfig()
		cfg.OriginURL = "https://app.example.com/"
		cfg.OIDCRedirectURIs = c.uris
		err := cfg.Validate()
		var fe *room.FieldError
		switch {
		case c.ok && err != nil:
			t.Errorf("%q: %v, want valid", c.uris, err)
		case !c.ok && (!errors.As(err, &fe) || fe.Field != "oidcRedirectUris"):
			t.Errorf("%q: %v, want a FieldError for oidcRedirectUris", c.uris, err)
		}
	}
}

// The match is exact: no prefix, no case folding, no trailing slash.
func TestAllowsRedirect(t *testing.T) {
	cfg := room.DefaultConfig()
	cfg.OIDCRedirectURIs = []string{"https://app.example.com/oauth2/idpresponse"}
	for uri, want := range map[string]bool{
		"https://app.example.com/oauth2/idpresponse":              true,
		"https://app.example.com/oauth2/idpresponse/":             false,
		"https://app.example.com/oauth2/idpresponse?x=1":          false,
		"https://APP.example.com/oauth2/idpresponse":              false,
		"https://app.example.com/oauth2":                          false,
		"https://app.example.com.evil.example/oauth2/idpresponse": false,
		"": false,
	} {
		if got := cfg.AllowsRedirect(uri); got != want {
			t.Errorf("AllowsRedirect(%q) = %v, want %v", uri, got, want)
		}
	}
}

// The list keeps its value through the settings hash's encoding and a PUT's
// JSON; a PUT that gives it leaves the config it was applied to unchanged.
func TestOIDCRedirectURIsStored(t *testing.T) {
	cfg := room.DefaultConfig()
	cfg.OriginURL = "https://app.example.com/"
	cfg.OIDCRedirectURIs = []string{"https://a.example.com/cb", "https://b.example.com/cb"}
	var row room.Setting
	for _, s := range room.Settings() {
		if s.Name == "oidcRedirectUris" {
			row = s
		}
	}
	var back room.Config
	row.Decode(&back, row.Encode(cfg))
	if !slices.Equal(back.OIDCRedirectURIs, cfg.OIDCRedirectURIs) {
		t.Errorf("through the hash: %q, want %q", back.OIDCRedirectURIs, cfg.OIDCRedirectURIs)
	}
	for _, stored := range []string{"", "not json", "{}", "[]", "[1]"} {
		var c room.Config
		row.Decode(&c, stored)
		if c.OIDCRedirectURIs != nil {
			t.Errorf("stored %q decodes to %q, want none", stored, c.OIDCRedirectURIs)
		}
	}
	put, err := room.ApplySettings(cfg, json.RawMessage(`{"oidcRedirectUris":["https://c.example.com/cb"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(put.OIDCRedirectURIs, []string{"https://c.example.com/cb"}) || cfg.OIDCRedirectURIs[0] != "https://a.example.com/cb" {
		t.Errorf("after the PUT %q, and the config it was applied to %q", put.OIDCRedirectURIs, cfg.OIDCRedirectURIs)
	}
}
