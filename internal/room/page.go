package room

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vestibule-dev/vestibule/internal/text"
)

// Page is how the waiting page presents a room (the page setting): the
// event's title, a message, a logo and an accent colour. Every field is
// optional; a room without a page setting shows the page's own texts. The page
// renders the texts as text (never as HTML), loads the logo as an image, and
// picks black or white text to put on the accent (see docs/PAGE.md).
type Page struct {
	// Title names the event, e.g. "Spring Concert 2026".
	Title Text `json:"title,omitzero"`
	// Message is shown below the page's own lead; in a closed room it replaces
	// the generic "closed" line (the "sold out" case).
	Message Text `json:"message,omitzero"`
	// LogoURL is an https:// image (or, for make dev, an http:// loopback one).
	LogoURL string `json:"logoUrl,omitempty"`
	// AccentColor is #rrggbb.
	AccentColor string `json:"accentColor,omitempty"`
}

// Text is a piece of page text: one string for every language (All), or one
// per language tag (ByLang: {"en": "…", "ko": "…"}), of which the page shows
// the visitor's language and otherwise English. In JSON it is a string or an
// object, and keeps the form it was given.
type Text struct {
	All    string
	ByLang map[string]string
}

// The page setting's limits.
const (
	maxTitleLen   = 120  // characters of a title, in each language
	maxMessageLen = 1000 // characters of a message, in each language
	maxLanguages  = 10   // languages of one text
	maxLogoLen    = 2048 // characters of the logo URL
)

// languageTag is a BCP 47 tag as the page needs it: a language, then up to
// three subtags (region, script, variant), e.g. en, ko, pt-BR, zh-Hant-TW.
var languageTag = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$`)

// accentColor is #rrggbb.
var accentColor = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// IsZero reports a text that says nothing.
func (t Text) IsZero() bool { return t.All == "" && len(t.ByLang) == 0 }

// MarshalJSON writes the text in the form it was given: a string, or an object.
func (t Text) MarshalJSON() ([]byte, error) {
	if t.ByLang != nil {
		return json.Marshal(t.ByLang)
	}
	return json.Marshal(t.All)
}

// errTextType is the reason for a text that is neither a string nor an object of strings.
const errTextType = "must be a string or an object from language tag to string"

// UnmarshalJSON reads a string or an object from language tag to string.
func (t *Text) UnmarshalJSON(b []byte) error {
	*t = Text{}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &t.All)
	case len(b) > 0 && b[0] == '{':
		m := map[string]string{}
		if err := json.Unmarshal(b, &m); err != nil {
			return errors.New(errTextType)
		}
		t.ByLang = m
		return nil
	case string(b) == "null":
		return nil
	}
	return errors.New(errTextType)
}

// pageFields are the JSON names of Page's fields, which the strict decoding
// names in its errors.
var pageFields = []string{"title", "message", "logoUrl", "accentColor"}

// UnmarshalJSON decodes a page strictly: an unknown field or a value of the
// wrong type is a *FieldError naming it, so the admin API answers
// invalid_config rather than keeping a typo silently. The page is replaced as
// a whole, never merged into the one it overwrites.
func (p *Page) UnmarshalJSON(b []byte) error {
	*p = Page{}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return &FieldError{Field: "page", Reason: "must be an object with title, message, logoUrl and accentColor"}
	}
	for k := range raw {
		if !slices.Contains(pageFields, k) {
			return &FieldError{Field: "page", Reason: fmt.Sprintf("unknown field %q (it takes %s)", k, strings.Join(pageFields, ", "))}
		}
	}
	for _, f := range []struct {
		name string
		into any
		why  string
	}{
		{"title", &p.Title, errTextType}, {"message", &p.Message, errTextType},
		{"logoUrl", &p.LogoURL, "must be a string"}, {"accentColor", &p.AccentColor, "must be a string"},
	} {
		if v, ok := raw[f.name]; ok {
			if err := json.Unmarshal(v, f.into); err != nil {
				return &FieldError{Field: "page." + f.name, Reason: f.why}
			}
		}
	}
	return nil
}

// IsZero reports a page that changes nothing on the waiting page.
func (p *Page) IsZero() bool {
	return p == nil || (p.Title.IsZero() && p.Message.IsZero() && p.LogoURL == "" && p.AccentColor == "")
}

// check says what is wrong with the page: the field ("page.title") and why;
// "" for a valid page (or none).
func (p *Page) check() (field, reason string) {
	if p == nil {
		return "", ""
	}
	for _, x := range []struct {
		name string
		text Text
		max  int
	}{{"title", p.Title, maxTitleLen}, {"message", p.Message, maxMessageLen}} {
		if r := x.text.check(x.max); r != "" {
			return "page." + x.name, r
		}
	}
	if p.LogoURL != "" {
		if r := checkLogo(p.LogoURL); r != "" {
			return "page.logoUrl", r
		}
	}
	if p.AccentColor != "" && !accentColor.MatchString(p.AccentColor) {
		return "page.accentColor", "must be a colour as #rrggbb"
	}
	return "", ""
}

// check says why a text is invalid, "" when it is valid (or absent): every
// string is 1..max characters of printable text (line breaks and tabs
// allowed), a language object has 1..maxLanguages entries keyed by language tags.
func (t Text) check(max int) string {
	if t.All == "" && t.ByLang == nil {
		return ""
	}
	if t.ByLang == nil {
		return checkString(t.All, max)
	}
	if len(t.ByLang) == 0 || len(t.ByLang) > maxLanguages {
		return fmt.Sprintf("must have 1 to %d languages, has %d", maxLanguages, len(t.ByLang))
	}
	for _, tag := range slices.Sorted(maps.Keys(t.ByLang)) {
		if !languageTag.MatchString(tag) {
			return fmt.Sprintf("%q is not a language tag such as en, ko or pt-BR", tag)
		}
		if r := checkString(t.ByLang[tag], max); r != "" {
			return fmt.Sprintf("%s: %s", tag, r)
		}
	}
	return ""
}

// checkString says why s is not a page text of at most max characters.
func checkString(s string, max int) string {
	if strings.TrimSpace(s) == "" {
		return "is empty"
	}
	if n := utf8.RuneCountInString(s); n > max {
		return fmt.Sprintf("is %d characters, more than %d", n, max)
	}
	if !text.Clean(s, true) {
		return "contains a control character"
	}
	return ""
}

// checkLogo says why u is not a logo URL: https with a host, or http on a
// loopback host (make dev), no credentials, at most maxLogoLen characters.
func checkLogo(s string) string {
	if len(s) > maxLogoLen {
		return fmt.Sprintf("longer than %d characters", maxLogoLen)
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "must be an absolute https:// URL"
	}
	if reason := checkURL(s, u); reason != "" {
		return reason
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		if Loopback(u.Hostname()) {
			return ""
		}
	}
	return "must be an https:// URL (or http:// on a loopback host, for make dev)"
}

// encodePage is the page as the settings hash stores it: its JSON, "" for none.
func encodePage(p *Page) string {
	if p.IsZero() {
		return ""
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "" // cannot happen: strings and maps of strings
	}
	return string(b)
}

// decodePage reads the settings hash's page; "" or a value this version
// cannot read is no page, so the waiting page falls back to its own texts.
func decodePage(s string) *Page {
	if s == "" {
		return nil
	}
	var p Page
	if err := json.Unmarshal([]byte(s), &p); err != nil || p.IsZero() {
		return nil
	}
	return &p
}

// PageVersion names a page's content: the first 12 hex digits of the SHA-256
// of its stored form ("" hashed for none). Poll replies carry it so the
// waiting page re-reads the room's status only when the page changed.
func PageVersion(p *Page) string {
	sum := sha256.Sum256([]byte(encodePage(p)))
	return hex.EncodeToString(sum[:6])
}
