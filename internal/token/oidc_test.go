package token

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func testOIDC(t *testing.T) (*OIDC, *Entries) {
	t.Helper()
	k, err := EntryKeyFromSeed(testSeed)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEntries([]*EntryKey{k}, testIssuer)
	o, err := NewOIDC(testSecret, e)
	if err != nil {
		t.Fatal(err)
	}
	return o, e
}

// Each sealed kind opens as itself, in its room, until it expires; a value
// tampered with, of another kind or of another room is invalid.
func TestOIDCSealed(t *testing.T) {
	o, _ := testOIDC(t)
	exp := testNow.Add(time.Minute)
	req, err := o.SealRequest(AuthRequest{Room: "r1", RedirectURI: "https://rp.example/cb", State: "st", Nonce: "n", Challenge: "ch", Expires: exp})
	if err != nil {
		t.Fatal(err)
	}
	code, err := o.SealCode(Code{Room: "r1", Seq: 42, Visitor: "v", Audience: "https://site/", RedirectURI: "https://rp.example/cb", AuthTime: testNow, Expires: exp})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := o.SealAccess(Access{Room: "r1", Subject: "v", Expires: exp})
	if err != nil {
		t.Fatal(err)
	}
	r, err := o.OpenRequest(req, "r1", testNow)
	checkErr(t, err, nil)
	if r.State != "st" || r.Nonce != "n" || r.Challenge != "ch" || r.RedirectURI != "https://rp.example/cb" {
		t.Errorf("request %+v", r)
	}
	c, err := o.OpenCode(code, "r1", testNow)
	checkErr(t, err, nil)
	if c.Seq != 42 || c.Visitor != "v" || !c.AuthTime.Equal(testNow) {
		t.Errorf("code %+v", c)
	}
	a, err := o.OpenAccess(acc, "r1", exp.Add(-time.Nanosecond))
	checkErr(t, err, nil)
	if a.Subject != "v" {
		t.Errorf("access %+v", a)
	}
	_, err = o.OpenAccess(acc, "r1", exp)
	checkErr(t, err, ErrExpired)
	_, err = o.OpenCode(code, "r2", testNow)
	checkErr(t, err, ErrInvalid)
	_, err = o.OpenCode(req, "r1", testNow)
	checkErr(t, err, ErrInvalid)
	_, err = o.OpenRequest(code, "r1", testNow)
	checkErr(t, err, ErrInvalid)
	_, err = o.OpenAccess(code, "r1", testNow)
	checkErr(t, err, ErrInvalid)
	flip := []byte(code)
	flip[len(flip)/2] ^= 1
	_, err = o.OpenCode(string(flip), "r1", testNow)
	checkErr(t, err, ErrInvalid)
	for _, bad := range []string{"", "x", code + "=", strings.Repeat("A", MaxSealedLen+1), code[:20]} {
		_, err = o.OpenCode(bad, "r1", testNow)
		checkErr(t, err, ErrInvalid)
	}
	// another ticket secret: another provider
	other, _ := NewOIDC([]byte("another-ticket-secret-0123456789abcdef"), nil)
	_, err = other.OpenCode(code, "r1", testNow)
	checkErr(t, err, ErrInvalid)
	if _, err := NewOIDC([]byte("short"), nil); err == nil {
		t.Error("a short secret was taken")
	}
}

// The ID token verifies with the entry key's public half (the JWKS), names
// the key, and carries the claims OpenID Connect asks for.
func TestOIDCIDToken(t *testing.T) {
	o, e := testOIDC(t)
	end := testNow.Add(10*time.Minute + 500*time.Millisecond)
	s, err := o.IDToken(IDClaims{Issuer: "https://q.example/oidc/r1", Subject: "v", Audience: "r1", Nonce: "n",
		IssuedAt: testNow, AuthTime: testNow.Add(-time.Second), Expiry: end})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Parse(s, func(tk *jwt.Token) (any, error) { return e.byID[tk.Header["kid"].(string)], nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithTimeFunc(func() time.Time { return testNow }))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(tok.Claims)
	want := `{"aud":"r1","auth_time":1772366399,"exp":1772367000,"iat":1772366400,"iss":"https://q.example/oidc/r1","nonce":"n","sub":"v"}`
	if string(got) != want {
		t.Errorf("claims %s\nwant   %s", got, want)
	}
	if tok.Header["kid"] != e.keys[0].ID || tok.Header["typ"] != "JWT" {
		t.Errorf("header %v", tok.Header)
	}
	if _, err := o.IDToken(IDClaims{Issuer: "i", Subject: "v", Audience: "r1", IssuedAt: testNow, Expiry: testNow}); err == nil {
		t.Error("an ID token that ends when it starts was signed")
	}
}
