package notice

import (
	"bytes"
	"html/template"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Message is a notice as it goes out, in the visitor's language: the push
// notification (Title, Body, URL, Tag: the payload the page's service worker
// shows) and the email (Subject, Text, HTML, with the same link).
type Message struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	URL   string `json:"url"`
	Tag   string `json:"tag"`
	Lang  string `json:"lang"`

	Subject string `json:"-"`
	Text    string `json:"-"`
	HTML    string `json:"-"`
}

// Link is the waiting page of a room in a language: where a notice sends
// the visitor (page is the site's waiting page, e.g. https://d1.cloudfront.net/).
// It carries no ticket and no entry token: the visitor's browser holds the
// ticket, and the page claims the turn with it as always.
func Link(page, roomID, lang string) string {
	u, err := url.Parse(page)
	if err != nil || page == "" {
		u = &url.URL{Path: "/"}
	}
	q := url.Values{"room": {roomID}, "lang": {lang}}
	u.RawQuery, u.Fragment = q.Encode(), ""
	return u.String()
}

// Compose writes the notice of roomID's turn (its page setting p, nil for
// none) for a visitor of lang, whose turn is kept until deadline, at now.
func Compose(page, roomID string, p *room.Page, lang string, deadline, now time.Time) Message {
	if !slices.Contains(Languages, lang) {
		lang = "en"
	}
	w := texts[lang]
	title := w.Room
	var accent string
	if p != nil {
		if t := pick(p.Title, lang); t != "" {
			title = t
		}
		if accentRE.MatchString(p.AccentColor) {
			accent = p.AccentColor
		}
	}
	minutes := max(1, int(deadline.Sub(now)/time.Minute))
	fill := func(s string) string {
		return strings.NewReplacer("{title}", title, "{minutes}", strconv.Itoa(minutes)).Replace(s)
	}
	link := Link(page, roomID, lang)
	m := Message{Title: w.Title, Body: fill(w.Body), URL: link, Tag: "vestibule:" + roomID, Lang: lang,
		Subject: fill(w.Subject)}
	m.Text = strings.Join([]string{fill(w.Lead), link, w.Note, "—", w.Why}, "\n\n") + "\n"
	var b bytes.Buffer
	_ = emailHTML().Execute(&b, map[string]string{"Lang": lang, "Title": w.Title, "Lead": fill(w.Lead),
		"Button": w.Button, "Link": link, "Note": w.Note, "Why": w.Why, "Accent": accentOr(accent),
		"OnAccent": textOn(accentOr(accent))})
	m.HTML = b.String()
	return m
}

var accentRE = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

func accentOr(a string) string {
	if a == "" {
		return "#1a56db"
	}
	return a
}

// textOn is the text colour to put on a #rrggbb background: black or white,
// whichever has the higher WCAG contrast with it (as the page's brand.js).
func textOn(bg string) string {
	lin := func(h string) float64 {
		v, _ := strconv.ParseUint(h, 16, 8)
		c := float64(v) / 255
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	l := 0.2126*lin(bg[1:3]) + 0.7152*lin(bg[3:5]) + 0.0722*lin(bg[5:7])
	if (l+0.05)/0.05 >= 1.05/(l+0.05) {
		return "#000000"
	}
	return "#ffffff"
}

// pick is a room text in lang: the same tag, else the same language, else
// English, else the first tag in order; "" for none.
func pick(t room.Text, lang string) string {
	if t.All != "" || len(t.ByLang) == 0 {
		return t.All
	}
	base := func(s string) string { b, _, _ := strings.Cut(strings.ToLower(s), "-"); return b }
	tags := make([]string, 0, len(t.ByLang))
	for k := range t.ByLang {
		tags = append(tags, k)
	}
	slices.Sort(tags)
	for _, match := range []func(string) bool{
		func(k string) bool { return strings.EqualFold(k, lang) },
		func(k string) bool { return base(k) == base(lang) },
		func(k string) bool { return base(k) == "en" },
		func(string) bool { return true },
	} {
		for _, k := range tags {
			if match(k) && strings.TrimSpace(t.ByLang[k]) != "" {
				return t.ByLang[k]
			}
		}
	}
	return ""
}

// emailHTML is the email's HTML part: one column, the room's accent on the
// button (with black or white text, whichever contrasts more: textOn),
// every text escaped by html/template. It is parsed on first use: the API
// functions link this package for the sign-ups and never compose a notice,
// and a template parsed at start-up would keep html/template's parser and
// executor, and the reflection they use, in their bootstraps.
func emailHTML() *template.Template {
	emailOnce.Do(func() {
		emailTemplate = template.Must(template.New("email").Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.Title}}</title></head>
<body style="margin:0;padding:24px;background:#f4f5f7;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1f2328">
<table role="presentation" width="100%" style="max-width:560px;margin:0 auto;background:#ffffff;border-top:4px solid {{.Accent}};border-radius:8px">
<tr><td style="padding:24px 28px">
<h1 style="margin:0 0 12px;font-size:22px">{{.Title}}</h1>
<p style="margin:0 0 20px;font-size:16px;line-height:1.5">{{.Lead}}</p>
<p style="margin:0 0 20px"><a href="{{.Link}}" style="display:inline-block;padding:12px 20px;background:{{.Accent}};color:{{.OnAccent}};text-decoration:underline;border-radius:6px;font-weight:600">{{.Button}}</a></p>
<p style="margin:0 0 16px;font-size:14px;line-height:1.5;color:#4b5563">{{.Note}}</p>
<p style="margin:0;font-size:12px;line-height:1.5;color:#6b7280">{{.Why}}</p>
</td></tr></table>
</body></html>
`))
	})
	return emailTemplate
}

var (
	emailOnce     sync.Once
	emailTemplate *template.Template
)
