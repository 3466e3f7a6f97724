package room

import (
	"regexp"
	"strings"
	"testing"
)

// Each setting's value survives its Redis encoding (roomdb.DecodeConfig and
// roomdb.EncodeConfig, over them all: roomdb.TestSettingsEncoding).
func TestSettingEncoding(t *testing.T) {
	c := DefaultConfig()
	c.OriginURL = "https://shop.example.com/checkout"
	for _, s := range settings {
		v := s.Encode(c)
		var d Config
		s.Decode(&d, v)
		if s.Encode(d) != v {
			t.Errorf("%s: %q decodes to something that encodes as %q", s.Name, v, s.Encode(d))
		}
	}
}

// The limits the settings table states (the console's fields take them from
// it) are the ones Validate applies: a value at a text's MaxLen passes, one
// character more is refused; the colour's Pattern and the page check agree.
func TestSettingsTableLimitsAreTheChecks(t *testing.T) {
	base := DefaultConfig()
	base.OriginURL = "https://origin.example/"
	rows := map[string]Setting{}
	for _, s := range Settings() {
		rows[s.Name] = s
		for _, p := range s.Parts {
			rows[s.Name+"."+p.Name] = p
		}
	}
	url := func(n int64) string {
		u := "https://origin.example/"
		return u + strings.Repeat("a", int(n)-len(u))
	}
	for _, c := range []struct {
		name string
		set  func(c *Config, n int64)
	}{
		{"originUrl", func(c *Config, n int64) { c.OriginURL = url(n) }},
		{"page.title", func(c *Config, n int64) {
			c.Page = &Page{Title: Text{ByLang: map[string]string{"en": strings.Repeat("é", int(n))}}}
		}},
		{"page.message", func(c *Config, n int64) { c.Page = &Page{Message: Text{All: strings.Repeat("x", int(n))}} }},
		{"page.logoUrl", func(c *Config, n int64) { c.Page = &Page{LogoURL: url(n)} }},
	} {
		max := rows[c.name].MaxLen
		if max == 0 {
			t.Errorf("%s: the table states no length", c.name)
			continue
		}
		at, over := base, base
		c.set(&at, max)
		c.set(&over, max+1)
		if err := at.Validate(); err != nil {
			t.Errorf("%s at the table's %d: %v", c.name, max, err)
		}
		if err := over.Validate(); err == nil {
			t.Errorf("%s at %d, one over the table's limit, is valid", c.name, max+1)
		}
	}
	color := regexp.MustCompile(rows["page.accentColor"].Pattern)
	for _, v := range []string{"#b3261e", "#B3261E", "b3261e", "#b3261", "#b3261e0", "#g3261e", "red"} {
		c := base
		c.Page = &Page{AccentColor: v}
		if valid := c.Validate() == nil; valid != color.MatchString(v) {
			t.Errorf("accentColor %q: valid %v, the table's pattern matches %v", v, valid, color.MatchString(v))
		}
	}
}
