package localstack

import (
	"context"
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/notice/send"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
)

// NoticeOptions make the local stack send its notices of visitors' turns
// (docs/ENGINE.md, "Notices") for real, as the notify function does: by web
// push to the subscription's push service and by email through SES (the
// tests give their stand-ins). Without them (make dev) every notice goes to
// the outbox page, /outbox, and nowhere else: no mail server is needed.
type NoticeOptions struct {
	PushHosts []string     // the push services a subscription may be on; nil: notice.DefaultPushHosts
	HTTP      *http.Client // posts the pushes; nil: a client with send.SendTimeout
	Mail      send.Mailer  // SES; nil: no email
	From      string       // the sender of email notices
}

// OutboxPath is where make dev shows the notices it sent.
const OutboxPath = "/outbox"

// outbox is make dev's notifier: it opens each address, writes the notice
// as the notify function would, and keeps it for the outbox page (the last
// outboxKeep of them, in memory) instead of sending it.
type outbox struct {
	opener *notice.Opener
	page   string

	mu   sync.Mutex
	sent []OutboxEntry
}

// OutboxEntry is one notice the outbox holds (also its JSON, /outbox.json).
type OutboxEntry struct {
	At      time.Time `json:"at"`
	Room    string    `json:"room"`
	Seq     int64     `json:"seq"`
	Channel string    `json:"channel"`
	To      string    `json:"to"` // the email address, or the push service's host
	Subject string    `json:"subject"`
	Title   string    `json:"title"`
	Body    string    `json:"body"`
	Text    string    `json:"text"`
	Link    string    `json:"link"`
	Lang    string    `json:"lang"`
}

const outboxKeep = 100

// Send records the notice instead of sending it.
func (o *outbox) Send(_ context.Context, roomID string, p *room.Page, n room.DueNotice, now time.Time) send.Sent {
	a, err := o.opener.Open(roomID, n.Seq, n.Sealed)
	if err != nil {
		return send.Sent{Outcome: room.NoticeGone, Code: "sealed"}
	}
	m := notice.Compose(o.page, roomID, p, a.Lang, n.Deadline, now)
	e := OutboxEntry{At: now, Room: roomID, Seq: n.Seq, Channel: string(send.ChannelEmail), To: a.Email, Subject: m.Subject,
		Title: m.Title, Body: m.Body, Text: m.Text, Link: m.URL, Lang: m.Lang}
	if a.Push != nil {
		e.Channel, e.To = string(send.ChannelPush), pushHost(a.Push.Endpoint)
	}
	o.mu.Lock()
	o.sent = append(o.sent, e)
	if len(o.sent) > outboxKeep {
		o.sent = o.sent[len(o.sent)-outboxKeep:]
	}
	o.mu.Unlock()
	return send.Sent{Outcome: room.NoticeSent, Channel: send.Channel(e.Channel)}
}

func pushHost(endpoint string) string {
	h := strings.TrimPrefix(strings.TrimPrefix(endpoint, "https://"), "http://")
	host, _, _ := strings.Cut(h, "/")
	return host
}

// ServeHTTP shows the outbox, newest first: the page, or its JSON at
// /outbox.json.
func (o *outbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	es := make([]OutboxEntry, len(o.sent))
	for i, e := range o.sent {
		es[len(o.sent)-1-i] = e
	}
	o.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasSuffix(r.URL.Path, ".json") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(es)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_ = outboxPage.Execute(w, es)
}

var outboxPage = template.Must(template.New("outbox").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Outbox: notices sent (make dev)</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}
article{border:1px solid #ccc;border-radius:8px;padding:.75rem 1rem;margin:1rem 0}
.meta{color:#555;font-size:13px}pre{white-space:pre-wrap;font:inherit}</style></head>
<body><h1>Outbox</h1>
<p>The notices of visitors' turns this stack sent, newest first. No mail server and no push service is
called: each notice is kept here, as it would have gone out. Open its link in the browser that joined
the line to claim the turn.</p>
{{range .}}<article><p class="meta">{{.At.Format "15:04:05"}} · room {{.Room}} · place {{.Seq}} · {{.Channel}} to {{.To}} · {{.Lang}}</p>
{{if eq .Channel "email"}}<h2>{{.Subject}}</h2><pre>{{.Text}}</pre>{{else}}<h2>{{.Title}}</h2><p>{{.Body}}</p>{{end}}
<p><a href="{{.Link}}">{{.Link}}</a></p></article>
{{else}}<p>No notice yet.</p>{{end}}
</body></html>
`))

// noticeRunner sends a room's due notices when a tick's event counts any,
// as the stack's rule and the notify function do in AWS: the engine's
// events come here as they go to the log, and each room's notices are sent
// on this runner's goroutine, never in the tick's path.
type noticeRunner struct {
	rooms  chan string
	mu     sync.Mutex
	queued map[string]bool
}

func newNoticeRunner() *noticeRunner {
	return &noticeRunner{rooms: make(chan string, 64), queued: map[string]bool{}}
}

// Publish takes the tick events that count notices due (eventbus.Publisher).
func (n *noticeRunner) Publish(_ context.Context, entries []eventbus.Entry) error {
	for _, e := range entries {
		var d roomevents.TickEvent
		if e.DetailType != roomevents.TypeTick || json.Unmarshal(e.Detail, &d) != nil || d.Notices <= 0 {
			continue
		}
		n.mu.Lock()
		queue := !n.queued[d.Room]
		n.queued[d.Room] = true
		n.mu.Unlock()
		if queue {
			select {
			case n.rooms <- d.Room:
			default: // full: a later tick's event asks again
				n.mu.Lock()
				delete(n.queued, d.Room)
				n.mu.Unlock()
			}
		}
	}
	return nil
}

// run sends until ctx ends.
func (n *noticeRunner) run(ctx context.Context, q send.Queue, s send.Notifier, clock func() time.Time, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-n.rooms:
			n.mu.Lock()
			delete(n.queued, id)
			n.mu.Unlock()
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			if _, err := send.Run(rctx, q, s, id, clock, log); err != nil {
				log.LogAttrs(ctx, slog.LevelWarn, "notices", slog.String("room", id), slog.String("error", err.Error()))
			}
			cancel()
		}
	}
}

// publishers is every publisher of a list.
type publishers []eventbus.Publisher

func (ps publishers) Publish(ctx context.Context, entries []eventbus.Entry) error {
	for _, p := range ps {
		if err := p.Publish(ctx, entries); err != nil {
			return err
		}
	}
	return nil
}
