package gate

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The cookie format is pinned: values computed independently (Python's hmac
// and hashlib) from the spec in the package documentation.
func TestSignGolden(t *testing.T) {
	k, err := DeriveKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(k, Session{Room: "demo", Seq: 42, Expires: time.Unix(1800000000, 0)})
	const want = "v1.sV7q34tA.demo.42.1800000000.p4WSn-gvQTflwolCAIveXr-fRCBfKOgwyniSRNPjqWA"
	if got != want {
		t.Fatalf("Sign = %s\nwant   %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	k0, k1, k2 := testKey(t, "0"), testKey(t, "1"), testKey(t, "2")
	ring := KeyRing{Current: k2, Previous: k1}
	now := time.Unix(1800000000, 0)
	s := Session{Room: "demo", Seq: 1764150000123456, Expires: now.Add(10 * time.Minute)}
	valid := Sign(k2, s)
	parts := strings.Split(valid, ".")
	edit := func(field int, v string) string {
		p := append([]string(nil), parts...)
		p[field] = v
		return strings.Join(p, ".")
	}

	got, err := Verify(ring, valid, "demo", now)
	if err != nil || got != (Session{Room: "demo", Seq: s.Seq, Expires: s.Expires.UTC()}) {
		t.Fatalf("Verify(valid) = %+v, %v", got, err)
	}
	if _, err := Verify(ring, Sign(k1, s), "demo", now); err != nil {
		t.Errorf("previous key: %v", err)
	}
	// The fraction of a second is dropped by Sign.
	if got, err := Verify(ring, Sign(k2, Session{Room: "demo", Seq: 1, Expires: now.Add(1500 * time.Millisecond)}), "demo", now); err != nil || !got.Expires.Equal(now.Add(time.Second)) {
		t.Errorf("sub-second expiry: %+v, %v", got, err)
	}

	for _, tc := range []struct {
		name, cookie, room string
		now                time.Time
		want               error
	}{
		{"oversize", valid + strings.Repeat("A", MaxCookieLen), "demo", now, ErrOversize},
		{"empty", "", "demo", now, ErrMalformed},
		{"garbage", "garbage", "demo", now, ErrMalformed},
		{"version", "v2" + valid[2:], "demo", now, ErrMalformed},
		{"extra field", valid + ".x", "demo", now, ErrMalformed},
		{"short MAC", valid[:len(valid)-1], "demo", now, ErrMalformed},
		{"padded MAC", valid + "=", "demo", now, ErrMalformed},
		{"standard base64 MAC", edit(5, strings.Repeat("+", 43)), "demo", now, ErrMalformed},
		{"kid too long", edit(1, strings.Repeat("k", 17)), "demo", now, ErrMalformed},
		{"room with a dot", edit(2, "de.mo"), "demo", now, ErrMalformed},
		{"room too long", edit(2, strings.Repeat("r", 65)), "demo", now, ErrMalformed},
		{"negative seq", edit(3, "-1"), "demo", now, ErrMalformed},
		{"seq leading zero", edit(3, "01"), "demo", now, ErrMalformed},
		{"seq 19 digits", edit(3, "1000000000000000000"), "demo", now, ErrMalformed},
		{"expiry zero", edit(4, "0"), "demo", now, ErrMalformed},
		{"expiry 12 digits", edit(4, "100000000000"), "demo", now, ErrMalformed},
		{"space", " " + valid, "demo", now, ErrMalformed},
		{"wrong room", valid, "other", now, ErrWrongRoom},
		{"room is case-sensitive", valid, "Demo", now, ErrWrongRoom},
		{"expired: expiry = now", valid, "demo", s.Expires, ErrExpired},
		{"expired: long ago", valid, "demo", s.Expires.Add(time.Hour), ErrExpired},
		{"unknown kid", Sign(k0, s), "demo", now, ErrUnknownKey},
		{"kid of no key", edit(1, "nobody"), "demo", now, ErrUnknownKey},
		{"tampered MAC", edit(5, strings.Repeat("A", 43)), "demo", now, ErrTampered},
		{"tampered seq", edit(3, "1764150000123457"), "demo", now, ErrTampered},
		{"tampered expiry", edit(4, "1900000000"), "demo", now, ErrTampered},
		{"tampered kid", edit(1, k1.ID), "demo", now, ErrTampered},
		{"right kid, wrong secret", Sign(Key{ID: k2.ID, Secret: k0.Secret}, s), "demo", now, ErrTampered},
	} {
		_, err := Verify(ring, tc.cookie, tc.room, tc.now)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
	// One second before the end it still holds.
	if _, err := Verify(ring, valid, "demo", s.Expires.Add(-time.Second)); err != nil {
		t.Errorf("last second: %v", err)
	}
	// Without keys nothing verifies, and nothing panics.
	if _, err := Verify(KeyRing{}, valid, "demo", now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("empty ring: %v", err)
	}
}

func TestSessionValidate(t *testing.T) {
	exp := time.Unix(1800000000, 0)
	for _, tc := range []struct {
		s  Session
		ok bool
	}{
		{Session{Room: "demo", Seq: 0, Expires: exp}, true},
		{Session{Room: strings.Repeat("r", 64), Seq: maxSeq, Expires: time.Unix(maxExpiry, 0)}, true},
		{Session{Room: "", Seq: 1, Expires: exp}, false},
		{Session{Room: "a.b", Seq: 1, Expires: exp}, false},
		{Session{Room: "demo", Seq: -1, Expires: exp}, false},
		{Session{Room: "demo", Seq: maxSeq + 1, Expires: exp}, false},
		{Session{Room: "demo", Seq: 1}, false},
		{Session{Room: "demo", Seq: 1, Expires: time.Unix(maxExpiry+1, 0)}, false},
		// A session that renews has both times, in range.
		{Session{Room: "demo", Seq: 1, Expires: exp, RenewAt: exp.Add(-time.Minute), Start: exp.Add(-time.Hour)}, true},
		{Session{Room: strings.Repeat("r", 64), Seq: maxSeq, Expires: time.Unix(maxExpiry, 0), RenewAt: time.Unix(maxExpiry, 0), Start: time.Unix(maxExpiry, 0)}, true},
		{Session{Room: "demo", Seq: 1, Expires: exp, RenewAt: exp}, false},
		{Session{Room: "demo", Seq: 1, Expires: exp, Start: exp}, false},
		{Session{Room: "demo", Seq: 1, Expires: exp, RenewAt: time.Unix(maxExpiry+1, 0), Start: exp}, false},
		{Session{Room: "demo", Seq: 1, Expires: exp, RenewAt: exp, Start: time.Unix(0, 0)}, false},
	} {
		err := tc.s.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%+v: Validate = %v", tc.s, err)
		}
		// What Validate accepts, Verify accepts once signed; and the reverse.
		k := testKey(t, "v")
		_, verr := Verify(KeyRing{Current: k}, Sign(k, tc.s), tc.s.Room, time.Unix(0, 0))
		if (verr == nil) != tc.ok {
			t.Errorf("%+v: Verify(Sign) = %v", tc.s, verr)
		}
	}
}

func TestCookieValues(t *testing.T) {
	for header, want := range map[string]string{
		"":                                      "",
		"__Host-vestibule=a":                    "a",
		"x=1; __Host-vestibule=a; y=2":          "a",
		"__Host-vestibule=a;__Host-vestibule=b": "a|b",
		" __Host-vestibule = a ; __Host-vestibule\t=\tb ":                                "a|b",
		"__Host-vestibule=a; __Host-vestibule=b; __Host-vestibule=c; __Host-vestibule=d": "a|b|c|d",
		"__Host-vestibule; __Host-vestibule=a=b":                                         "a=b",
		"__host-vestibule=a; __Host-vestibules=b; x__Host-vestibule=c; vestibule=d":      "",
		`__Host-vestibule="a"`: `"a"`,
		strings.Repeat("__Host-vestibule=a;", MaxCookieValues+5): strings.TrimSuffix(strings.Repeat("a|", MaxCookieValues), "|"),
	} {
		if got := strings.Join(CookieValues(header, CookieName), "|"); got != want {
			t.Errorf("CookieValues(%q) = %q, want %q", header, got, want)
		}
	}
	if got := strings.Join(CookieValues("__Host-vestibule=a; vestibule=b", DevCookieName), "|"); got != "b" {
		t.Errorf("the development name: %q", got)
	}
}

func TestSetCookie(t *testing.T) {
	now := time.Unix(1800000000, 0)
	s := Session{Room: "demo", Seq: 42, Expires: now.Add(10 * time.Minute)}
	got := SetCookie("v1.x", s, now, CookieOptions{})
	want := "__Host-vestibule=v1.x; Path=/; Expires=Fri, 15 Jan 2027 08:10:00 GMT; Max-Age=600; HttpOnly; Secure; SameSite=Lax"
	if got != want {
		t.Errorf("SetCookie = %s\nwant        %s", got, want)
	}
	for host, secure := range map[string]bool{
		"localhost:8081":     false,
		"localhost":          false,
		"LOCALHOST.":         false,
		"shop.localhost:80":  false,
		"127.0.0.1:8081":     false,
		"127.9.9.9":          false,
		"[::1]:8081":         false,
		"example.com":        true,
		"localhost.example":  true,
		"10.0.0.1:8081":      true,
		"":                   true,
		"notlocalhost":       true,
		"[::ffff:127.0.0.1]": false,
	} {
		c := SetCookie("v", s, now, CookieOptions{InsecureLoopback: true, Host: host})
		if strings.Contains(c, "; Secure") != secure {
			t.Errorf("host %q: %s", host, c)
		}
		// __Host- only with Secure: browsers refuse the prefix without it.
		if strings.HasPrefix(c, CookieName+"=") != secure || strings.HasPrefix(c, DevCookieName+"=") == secure {
			t.Errorf("host %q: name of %s", host, c)
		}
		if !strings.Contains(ClearCookie(CookieOptions{InsecureLoopback: true, Host: host}), "; Secure") == secure {
			t.Errorf("clear, host %q: Secure should be %v", host, secure)
		}
	}
	// Secure is kept on localhost unless asked for.
	if c := SetCookie("v", s, now, CookieOptions{Host: "localhost"}); !strings.Contains(c, "; Secure") {
		t.Errorf("localhost without InsecureLoopback: %s", c)
	}
	// A session already over deletes the cookie.
	if c := SetCookie("v", s, s.Expires, CookieOptions{}); !strings.Contains(c, "Max-Age=0") {
		t.Errorf("ended session: %s", c)
	}
	if c := SetCookie("v", s, s.Expires.Add(-time.Second), CookieOptions{}); !strings.Contains(c, "Max-Age=1;") {
		t.Errorf("last second: %s", c)
	}
	const clear = "__Host-vestibule=; Path=/; Expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0; HttpOnly; Secure; SameSite=Lax"
	if c := ClearCookie(CookieOptions{}); c != clear {
		t.Errorf("ClearCookie = %s\nwant          %s", c, clear)
	}
	const dev = "vestibule=; Path=/; Expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0; HttpOnly; SameSite=Lax"
	if c := ClearCookie(CookieOptions{InsecureLoopback: true, Host: "localhost:8081"}); c != dev {
		t.Errorf("ClearCookie on loopback = %s\nwant                      %s", c, dev)
	}
	const end = "__Host-vestibule=end.v1.x; Path=/; Expires=Fri, 15 Jan 2027 08:10:00 GMT; Max-Age=600; HttpOnly; Secure; SameSite=Lax"
	if c := EndCookie("v1.x", s, now, CookieOptions{}); c != end {
		t.Errorf("EndCookie = %s\nwant        %s", c, end)
	}
}

func TestVerifyReceipt(t *testing.T) {
	k := testKey(t, "r")
	ring := KeyRing{Current: k}
	now := time.Unix(1800000000, 0)
	s := Session{Room: "demo", Seq: 42, Expires: now.Add(time.Minute)}
	v := Sign(k, s)
	if got, err := VerifyReceipt(ring, ReceiptPrefix+v, "demo", now); err != nil || got.Seq != s.Seq || !got.Expires.Equal(s.Expires) {
		t.Errorf("receipt: %+v %v", got, err)
	}
	for _, bad := range []string{v, "end." + v[:len(v)-1] + "A", "end.end." + v, "END." + v, ""} {
		if _, err := VerifyReceipt(ring, bad, "demo", now); err == nil {
			t.Errorf("VerifyReceipt(%q) accepted", bad)
		}
	}
	if _, err := Verify(ring, ReceiptPrefix+v, "demo", now); err == nil {
		t.Error("a receipt verifies as a session")
	}
	if CookieRoom(v) != "demo" || CookieRoom(ReceiptPrefix+v) != "demo" || CookieRoom("x") != "" {
		t.Error("CookieRoom")
	}
}

// Whatever Verify accepts is exactly what Sign makes of the session it
// returns, so no two spellings of one session verify.
func FuzzVerify(f *testing.F) {
	k := testKey(f, "fuzz")
	ring := KeyRing{Current: k}
	now := time.Unix(1800000000, 0)
	f.Add(Sign(k, Session{Room: "demo", Seq: 42, Expires: now.Add(time.Hour)}), "demo")
	f.Add("v1.x.demo.1.1900000000."+strings.Repeat("A", 43), "demo")
	f.Add("garbage", "demo")
	f.Fuzz(func(t *testing.T, cookie, room string) {
		s, err := Verify(ring, cookie, room, now)
		if err != nil {
			return
		}
		if again := Sign(k, s); again != cookie {
			t.Fatalf("Verify accepted %q, which signs as %q", cookie, again)
		}
		if s.Room != room || s.Validate() != nil || !s.Expires.After(now) {
			t.Fatalf("Verify returned %+v", s)
		}
	})
}

// A session that renews carries its time to renew and its start, both under
// the MAC; the value stays within MaxCookieLen at its longest.
func TestSignRenewing(t *testing.T) {
	k, err := DeriveKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	s := Session{Room: "demo", Seq: 42, Expires: time.Unix(1800000000, 0).UTC(),
		RenewAt: time.Unix(1799999700, 0).UTC(), Start: time.Unix(1799990000, 0).UTC()}
	v := Sign(k, s)
	if !strings.HasPrefix(v, "v1.sV7q34tA.demo.42.1800000000.1799999700.1799990000.") {
		t.Fatalf("Sign = %s", v)
	}
	got, err := Verify(KeyRing{Current: k}, v, "demo", time.Unix(1799999000, 0))
	if err != nil || got != s {
		t.Fatalf("Verify = %+v, %v; want %+v", got, err, s)
	}
	parts := strings.Split(v, ".")
	for _, bad := range []string{
		strings.Join(append(append([]string{}, parts[:5]...), parts[6:]...), "."), // one of the two fields
		strings.Join(append(append([]string{}, parts[:6]...), "1799999999", parts[7]), "."),
		strings.Join(append(append([]string{}, parts[:5]...), "0", parts[6], parts[7]), "."),
	} {
		if _, err := Verify(KeyRing{Current: k}, bad, "demo", time.Unix(1799999000, 0)); err == nil {
			t.Errorf("Verify(%s) accepted", bad)
		}
	}
	longest := Sign(Key{ID: strings.Repeat("k", 16), Secret: k.Secret}, Session{Room: strings.Repeat("r", 64), Seq: maxSeq,
		Expires: time.Unix(maxExpiry, 0), RenewAt: time.Unix(maxExpiry, 0), Start: time.Unix(maxExpiry, 0)})
	if len(longest) != 183 || len(longest) > MaxCookieLen {
		t.Errorf("the longest value is %d characters", len(longest))
	}
}
