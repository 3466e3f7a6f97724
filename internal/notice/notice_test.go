package notice

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"html"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// subscription is a valid push subscription on endpoint.
func subscription(t *testing.T, endpoint string) *Subscription {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := &Subscription{Endpoint: endpoint}
	s.Keys.P256dh = base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes())
	s.Keys.Auth = base64.RawURLEncoding.EncodeToString(make([]byte, 16))
	return s
}

// What a policy takes and refuses, and why: only a push service's https
// endpoint is ever called, and only a plain email address is written to.
func TestPolicyCheck(t *testing.T) {
	both := Policy{Push: true, Email: true}
	good := subscription(t, "https://fcm.googleapis.com/fcm/send/abc")
	badKey := subscription(t, "https://fcm.googleapis.com/fcm/send/abc")
	badKey.Keys.P256dh = base64.RawURLEncoding.EncodeToString(make([]byte, 65))
	shortAuth := subscription(t, "https://updates.push.services.mozilla.com/wpush/v2/x")
	shortAuth.Keys.Auth = "AAAA"
	for _, c := range []struct {
		name string
		p    Policy
		a    Address
		ok   bool
	}{
		{"fcm", both, Address{Push: good}, true},
		{"mozilla", both, Address{Push: subscription(t, "https://updates.push.services.mozilla.com/wpush/v2/x")}, true},
		{"apple", both, Address{Push: subscription(t, "https://web.push.apple.com/QGx")}, true},
		{"windows", both, Address{Push: subscription(t, "https://wns2-by3p.notify.windows.com/w/?token=x")}, true},
		{"another host", both, Address{Push: subscription(t, "https://evil.example/fcm.googleapis.com")}, false},
		{"a lookalike", both, Address{Push: subscription(t, "https://notfcm.googleapis.com.evil.example/x")}, false},
		{"plain http", both, Address{Push: subscription(t, "http://fcm.googleapis.com/x")}, false},
		{"another port", both, Address{Push: subscription(t, "https://fcm.googleapis.com:8443/x")}, false},
		{"credentials", both, Address{Push: subscription(t, "https://u:p@fcm.googleapis.com/x")}, false},
		{"an internal address", both, Address{Push: subscription(t, "https://169.254.169.254/latest")}, false},
		{"not a point", both, Address{Push: badKey}, false},
		{"a short auth", both, Address{Push: shortAuth}, false},
		{"the stand-in, allowed", Policy{Push: true, PushHosts: []string{"http://127.0.0.1:4444"}}, Address{Push: subscription(t, "http://127.0.0.1:4444/push/1")}, true},
		{"the stand-in, another port", Policy{Push: true, PushHosts: []string{"http://127.0.0.1:4444"}}, Address{Push: subscription(t, "http://127.0.0.1:4445/push/1")}, false},
		{"push off", Policy{Email: true}, Address{Push: good}, false},
		{"email", both, Address{Email: "ana@example.com"}, true},
		{"email with a name", both, Address{Email: "Ana <ana@example.com>"}, false},
		{"email without a dot", both, Address{Email: "ana@localhost"}, false},
		{"email with a space", both, Address{Email: "ana @example.com"}, false},
		{"email with a line break", both, Address{Email: "ana@example.com\nBcc: x@y.z"}, false},
		{"email not ASCII", both, Address{Email: "anä@example.com"}, false},
		{"email too long", both, Address{Email: strings.Repeat("a", 250) + "@x.io"}, false},
		{"email at an address literal", both, Address{Email: "ana@[127.0.0.1]"}, false},
		{"email off", Policy{Push: true}, Address{Email: "ana@example.com"}, false},
		{"both", both, Address{Push: good, Email: "ana@example.com"}, false},
		{"neither", both, Address{}, false},
	} {
		a := c.a
		err := c.p.Check(&a)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrAddress)) {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
	a := Address{Email: "Ana@Example.COM", Lang: "tlh"}
	if err := both.Check(&a); err != nil || a.Email != "Ana@example.com" || a.Lang != "en" {
		t.Errorf("kept as %+v (%v): the domain in lower case, an unknown language English", a, err)
	}
}

// A sealed address opens with the notice secret's key, for its place only;
// the API's sealer never holds the key that opens; after a rotation the
// previous key still opens what it sealed.
func TestSealOpen(t *testing.T) {
	old, err := FromSecret([]byte(strings.Repeat("o", 48)))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := FromSecret([]byte(strings.Repeat("c", 48)))
	if err != nil {
		t.Fatal(err)
	}
	a := Address{Email: "ana@example.com", Lang: "ko"}
	s, err := NewSealer(old.Public())
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal("demo", 42, a)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "ana@") {
		t.Fatal("the address is in the sealed bytes")
	}
	o := NewOpener(cur, old)
	if got, err := o.Open("demo", 42, sealed); err != nil || got != a {
		t.Fatalf("open: %+v, %v", got, err)
	}
	for _, c := range []struct {
		room string
		seq  int64
		b    []byte
	}{
		{"demo", 43, sealed}, {"other", 42, sealed}, {"demo", 42, append(append([]byte{}, sealed[:len(sealed)-1]...), sealed[len(sealed)-1]^1)},
		{"demo", 42, sealed[:8]},
	} {
		if _, err := o.Open(c.room, c.seq, c.b); !errors.Is(err, ErrSealed) {
			t.Errorf("open %s/%d: %v, want ErrSealed", c.room, c.seq, err)
		}
	}
	if _, err := NewOpener(cur).Open("demo", 42, sealed); !errors.Is(err, ErrSealed) {
		t.Errorf("opened without the key it was sealed to: %v", err)
	}
	if _, err := FromSecret([]byte("short")); err == nil {
		t.Error("a short secret makes keys")
	}
	p, err := ParsePublic(old.Public().Seal, old.Public().VAPID)
	if err != nil || p != old.Public() {
		t.Errorf("ParsePublic: %+v, %v; want %+v", p, err, old.Public())
	}
	if _, err := ParsePublic("x", old.Public().VAPID); err == nil {
		t.Error("ParsePublic took a bad key")
	}
}

// The derivation of the keys from the secret never changes: a change would
// make every sealed address unreadable and every push subscription
// unusable. These are the ids of a fixed secret's keys.
func TestKeysFromSecretAreFixed(t *testing.T) {
	k, err := FromSecret([]byte("vestibule-notice-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	p := k.Public()
	if p.SealID != "3o7TCGTzlmM" || p.VAPIDID != "dmFWjLDvDfw" {
		t.Fatalf("ids %s %s: the derivation changed", p.SealID, p.VAPIDID)
	}
}

// Every language of the waiting page has every text of a notice, with the
// placeholders English has.
func TestTextsInEveryLanguage(t *testing.T) {
	src, err := os.ReadFile("../../static/js/i18n.js")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)export const LANGUAGES = \{(.*?)\};`).FindSubmatch(src)
	if block == nil {
		t.Fatal("no LANGUAGES in i18n.js")
	}
	var page []string
	for _, m := range regexp.MustCompile(`'?([A-Za-z-]+)'?:`).FindAllSubmatch(block[1], -1) {
		page = append(page, string(m[1]))
	}
	if !slices.Equal(page, Languages) {
		t.Fatalf("the page's languages %v, the notices' %v", page, Languages)
	}
	ph := regexp.MustCompile(`\{[a-z]+\}`)
	en := texts["en"]
	for _, l := range Languages {
		w, ok := texts[l]
		if !ok {
			t.Errorf("%s: no texts", l)
			continue
		}
		for _, pair := range [][2]string{{en.Room, w.Room}, {en.Title, w.Title}, {en.Body, w.Body}, {en.Subject, w.Subject},
			{en.Lead, w.Lead}, {en.Button, w.Button}, {en.Note, w.Note}, {en.Why, w.Why}} {
			if strings.TrimSpace(pair[1]) == "" || (l != "en" && pair[1] == pair[0]) {
				t.Errorf("%s: %q is missing or untranslated", l, pair[0])
			}
			if !slices.Equal(ph.FindAllString(pair[0], -1), ph.FindAllString(pair[1], -1)) {
				t.Errorf("%s: %q has other placeholders than %q", l, pair[1], pair[0])
			}
		}
	}
}

// A notice in the visitor's language with the room's brand: its title in
// that language, its accent, the minutes left; the link is the room's
// waiting page, with no ticket nor token; every text is escaped in HTML.
func TestCompose(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := &room.Page{Title: room.Text{ByLang: map[string]string{"en": "Spring <script>alert(1)</script>", "ko": "봄 콘서트"}},
		AccentColor: "#f2a900"}
	m := Compose("https://wait.example/", "spring", p, "ko", now.Add(9*time.Minute+30*time.Second), now)
	if m.Lang != "ko" || m.Title != texts["ko"].Title || !strings.Contains(m.Body, "봄 콘서트") || !strings.Contains(m.Body, "9분") {
		t.Errorf("push: %+v", m)
	}
	if m.URL != "https://wait.example/?lang=ko&room=spring" || m.Tag != "vestibule:spring" {
		t.Errorf("link %q, tag %q", m.URL, m.Tag)
	}
	if !strings.Contains(m.Subject, "봄 콘서트") || !strings.Contains(m.Text, m.URL) || !strings.Contains(m.HTML, html.EscapeString(m.URL)) {
		t.Errorf("email: %q\n%s", m.Subject, m.Text)
	}
	if !strings.Contains(m.HTML, `lang="ko"`) || !strings.Contains(m.HTML, "#f2a900") || !strings.Contains(m.HTML, "color:#000000") {
		t.Errorf("html: the language, the accent, black on amber:\n%s", m.HTML)
	}
	en := Compose("https://wait.example/", "spring", p, "it", now.Add(time.Minute), now)
	if en.Lang != "en" || strings.Contains(en.HTML, "<script>") || !strings.Contains(en.HTML, "&lt;script&gt;") {
		t.Errorf("English, escaped:\n%s", en.HTML)
	}
	for _, s := range []string{m.URL, m.Text, m.HTML} {
		if strings.Contains(s, "token") || strings.Contains(s, "ticket=") {
			t.Errorf("a notice carries a token or ticket: %q", s)
		}
	}
	plain := Compose("", "r1", nil, "de", now.Add(time.Hour), now)
	if !strings.Contains(plain.Subject, texts["de"].Room) || plain.URL != "/?lang=de&room=r1" || !strings.Contains(plain.HTML, "#1a56db") {
		t.Errorf("no brand: %q %q", plain.Subject, plain.URL)
	}
	if textOn("#ffffff") != "#000000" || textOn("#000000") != "#ffffff" || textOn("#1a56db") != "#ffffff" {
		t.Error("textOn")
	}
}

// The per-address limit's key is a keyed hash: the same address (an email
// in any case) gives the same key, another address or another key another.
func TestHasher(t *testing.T) {
	h, g := NewHasher([]byte("secret-one-0123456789abcdef0123456789")), NewHasher([]byte("secret-two-0123456789abcdef0123456789"))
	a, b := Address{Email: "Ana@Example.com"}, Address{Email: "ana@example.com"}
	if h.Of(a) != h.Of(b) || h.Of(a) == h.Of(Address{Email: "bob@example.com"}) || h.Of(a) == g.Of(a) {
		t.Error("the address hash")
	}
	if strings.Contains(h.Of(a), "ana") || len(h.Of(a)) != 24 {
		t.Errorf("hash %q", h.Of(a))
	}
}
