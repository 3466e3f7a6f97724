package room_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// pageOf decodes a Config holding only the given page JSON over baseConfig,
// as the admin API decodes a PUT, and validates it.
func pageOf(pageJSON string) (room.Config, error) {
	c := baseConfig()
	dec := json.NewDecoder(strings.NewReader(`{"page":` + pageJSON + `}`))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Every rule of the page setting refuses with a FieldError naming the part
// of the page that is wrong; what passes the rules validates.
func TestPageSettingsValidation(t *testing.T) {
	long := func(n int) string { return strings.Repeat("가", n) } // one character, three bytes
	langs := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`"l%c%c":"x"`, 'a'+i/26, 'a'+i%26))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	valid := []string{
		`null`,
		`{}`,
		`{"title":"Spring Concert"}`,
		`{"title":{"en":"Spring Concert","ko":"봄 콘서트","pt-BR":"Concerto","zh-Hant-TW":"春"}}`,
		`{"title":"` + long(120) + `","message":"` + long(1000) + `"}`,
		`{"message":"Sold out.\nThank you\tall."}`,
		`{"message":` + langs(10) + `}`,
		`{"logoUrl":"https://cdn.example/logo.png"}`,
		`{"logoUrl":"http://localhost:8080/logo.png"}`,
		`{"logoUrl":"http://127.0.0.1:8080/logo.png"}`,
		`{"logoUrl":"http://[::1]:8080/logo.png"}`,
		`{"logoUrl":"https://cdn.example/` + strings.Repeat("a", 2048-len("https://cdn.example/")) + `"}`,
		`{"accentColor":"#1d5c8a"}`,
		`{"accentColor":"#ABCDEF"}`,
		`{"title":null,"message":null}`,
		`{"title":""}`, // no title
	}
	for _, v := range valid {
		if _, err := pageOf(v); err != nil {
			t.Errorf("page %.80s: %v, want valid", v, err)
		}
	}
	invalid := []struct {
		page, field, reason string
	}{
		{`"Spring"`, "page", "must be an object"},
		{`[]`, "page", "must be an object"},
		{`{"titel":"x"}`, "page", `unknown field "titel"`},
		{`{"title":"x","logo":"https://a.example/"}`, "page", `unknown field "logo"`},
		{`{"title":5}`, "page.title", "must be a string or an object"},
		{`{"title":["a"]}`, "page.title", "must be a string or an object"},
		{`{"title":{"en":5}}`, "page.title", "must be a string or an object"},
		{`{"message":true}`, "page.message", "must be a string or an object"},
		{`{"logoUrl":5}`, "page.logoUrl", "must be a string"},
		{`{"accentColor":255}`, "page.accentColor", "must be a string"},
		{`{"title":"  "}`, "page.title", "is empty"},
		{`{"title":"` + long(121) + `"}`, "page.title", "is 121 characters, more than 120"},
		{`{"title":{"en":"ok","ko":"` + long(121) + `"}}`, "page.title", "ko: is 121 characters, more than 120"},
		{`{"message":"` + long(1001) + `"}`, "page.message", "is 1001 characters, more than 1000"},
		{`{"title":"a\u0000b"}`, "page.title", "control character"},
		{`{"message":"a\u001bb"}`, "page.message", "control character"},
		{`{"message":"a\u0085b"}`, "page.message", "control character"},
		{`{"title":{}}`, "page.title", "must have 1 to 10 languages, has 0"},
		{`{"message":` + langs(11) + `}`, "page.message", "must have 1 to 10 languages, has 11"},
		{`{"title":{"english":"x"}}`, "page.title", `"english" is not a language tag`},
		{`{"title":{"EN":"x"}}`, "page.title", `"EN" is not a language tag`},
		{`{"title":{"en_US":"x"}}`, "page.title", `"en_US" is not a language tag`},
		{`{"title":{"":"x"}}`, "page.title", `"" is not a language tag`},
		{`{"title":{"en":""}}`, "page.title", "en: is empty"},
		{`{"logoUrl":"http://cdn.example/logo.png"}`, "page.logoUrl", "must be an https:// URL"},
		{`{"logoUrl":"http://192.168.1.2/logo.png"}`, "page.logoUrl", "must be an https:// URL"},
		{`{"logoUrl":"javascript:alert(1)"}`, "page.logoUrl", "must be an absolute https:// URL"},
		{`{"logoUrl":"data:image/png;base64,AAAA"}`, "page.logoUrl", "must be an absolute https:// URL"},
		{`{"logoUrl":"/logo.png"}`, "page.logoUrl", "must be an absolute https:// URL"},
		{`{"logoUrl":"//cdn.example/logo.png"}`, "page.logoUrl", "must be an https:// URL"},
		{`{"logoUrl":"ftp://cdn.example/logo.png"}`, "page.logoUrl", "must be an https:// URL"},
		{`{"logoUrl":"https://user:pw@cdn.example/logo.png"}`, "page.logoUrl", "must not carry credentials"},
		{`{"logoUrl":"https://cdn.example/` + strings.Repeat("a", 2049-len("https://cdn.example/")) + `"}`, "page.logoUrl", "longer than 2048 characters"},
		{`{"accentColor":"red"}`, "page.accentColor", "#rrggbb"},
		{`{"accentColor":"#abc"}`, "page.accentColor", "#rrggbb"},
		{`{"accentColor":"#abcdefa"}`, "page.accentColor", "#rrggbb"},
		{`{"accentColor":"#ghijkl"}`, "page.accentColor", "#rrggbb"},
		{`{"accentColor":"#123456;background:url(x)"}`, "page.accentColor", "#rrggbb"},
	}
	for _, c := range invalid {
		_, err := pageOf(c.page)
		var fe *room.FieldError
		if !errors.As(err, &fe) || !errors.Is(err, room.ErrInvalidConfig) {
			t.Errorf("page %.80s: %v, want a FieldError", c.page, err)
			continue
		}
		if fe.Field != c.field || !strings.Contains(fe.Reason, c.reason) {
			t.Errorf("page %.80s: field %q, reason %q; want %q, %q", c.page, fe.Field, fe.Reason, c.field, c.reason)
		}
	}
}

// A text keeps the form it was given (a string, or an object by language),
// and a page decoded over another replaces it rather than merging.
func TestPageSettingsJSON(t *testing.T) {
	for _, in := range []string{
		`{"title":"Spring"}`,
		`{"title":{"en":"Spring","ko":"봄"},"message":"Sold out","logoUrl":"https://a.example/l.png","accentColor":"#aabbcc"}`,
	} {
		var p room.Page
		if err := json.Unmarshal([]byte(in), &p); err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("page %s came back as %s", in, out)
		}
	}
	c, err := pageOf(`{"title":"Old","message":{"en":"old"},"accentColor":"#000000"}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"page":{"message":{"ko":"새"}}}`), &c); err != nil {
		t.Fatal(err)
	}
	want := &room.Page{Message: room.Text{ByLang: map[string]string{"ko": "새"}}}
	if diff := cmp.Diff(want, c.Page); diff != "" {
		t.Errorf("a page over another (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"page":null}`), &c); err != nil || c.Page != nil {
		t.Errorf("page null: %+v, %v; want no page", c.Page, err)
	}
}

// The page's version follows its content: the same page, the same version;
// any change, another; no page and an empty page are the same.
func TestPageSettingsVersion(t *testing.T) {
	a := &room.Page{Title: room.Text{All: "A"}}
	if room.PageVersion(a) != room.PageVersion(&room.Page{Title: room.Text{All: "A"}}) {
		t.Error("equal pages have different versions")
	}
	if room.PageVersion(nil) != room.PageVersion(&room.Page{}) {
		t.Error("no page and an empty page have different versions")
	}
	seen := map[string]bool{}
	for _, p := range []*room.Page{nil, a, {Title: room.Text{All: "B"}}, {Title: room.Text{ByLang: map[string]string{"en": "A"}}},
		{Title: room.Text{All: "A"}, AccentColor: "#000000"}, {Title: room.Text{All: "A"}, LogoURL: "https://a.example/"}} {
		v := room.PageVersion(p)
		if len(v) != 12 || seen[v] {
			t.Errorf("version %q of %+v: not 12 hex digits, or shared", v, p)
		}
		seen[v] = true
	}
}
