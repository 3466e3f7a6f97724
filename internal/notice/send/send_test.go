package send_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/notice/send"
	"github.com/vestibule-dev/vestibule/internal/pushtest"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/sestest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// keys are a notice secret's keys, its sealer and opener.
func keys(t *testing.T) (*notice.Keys, *notice.Sealer, *notice.Opener) {
	t.Helper()
	k, err := notice.FromSecret([]byte("send-test-notice-secret-0123456789abcdefghij"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := notice.NewSealer(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return k, s, notice.NewOpener(k)
}

// pushAddress is an address of a stand-in subscription made for the keys' VAPID key.
func pushAddress(t *testing.T, push *pushtest.Server, k *notice.Keys, lang string) (notice.Address, *pushtest.Subscription) {
	sub := push.Subscribe(t, k.Public().VAPID)
	a := notice.Address{Push: &notice.Subscription{Endpoint: sub.Endpoint}, Lang: lang, VAPID: k.Public().VAPIDID}
	a.Push.Keys.P256dh, a.Push.Keys.Auth = sub.P256dh, sub.Auth
	return a, sub
}

// A push notice reaches the push service (the stand-in checks RFC 8291's
// encryption and RFC 8292's VAPID signature by the deployment's key), with
// a TTL to the end of the turn; the payload is the message in the
// visitor's language, whose link is the room's waiting page. An expired
// subscription (410, 404) is gone; a failing service is tried again; an
// endpoint not on a push service is never called.
func TestPushNotice(t *testing.T) {
	push := pushtest.Start(t)
	k, sealer, opener := keys(t)
	s := &send.Sender{Opener: opener, Page: "https://wait.example/", From: "turns@example.com",
		Policy: notice.Policy{Push: true, PushHosts: []string{push.URL}}}
	now := time.Now().Truncate(time.Second)
	deadline := now.Add(10 * time.Minute)
	a, sub := pushAddress(t, push, k, "fr")
	sealed, err := sealer.Seal("spring", 7, a)
	if err != nil {
		t.Fatal(err)
	}
	n := room.DueNotice{Seq: 7, Sealed: sealed, Deadline: deadline}
	page := &room.Page{Title: room.Text{All: "Concert de printemps"}}
	if got := s.Send(context.Background(), "spring", page, n, now); got.Outcome != room.NoticeSent || got.Status != 201 {
		t.Fatalf("send: %+v", got)
	}
	ms := push.Messages()
	if len(ms) != 1 {
		t.Fatalf("the stand-in took %d messages", len(ms))
	}
	m := ms[0]
	var p notice.Message
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		t.Fatalf("payload %q: %v", m.Payload, err)
	}
	if p.Title != "C'est votre tour" || !strings.Contains(p.Body, "Concert de printemps") || p.URL != "https://wait.example/?lang=fr&room=spring" ||
		p.Tag != "vestibule:spring" || p.Lang != "fr" {
		t.Errorf("payload %+v", p)
	}
	if m.VAPIDKey != k.Public().VAPID || m.Subject != "mailto:turns@example.com" || m.TTL < 590 || m.TTL > 600 || m.Urgency != "high" {
		t.Errorf("message: key %q sub %q ttl %d urgency %q", m.VAPIDKey, m.Subject, m.TTL, m.Urgency)
	}
	for status, want := range map[int]room.NoticeOutcome{410: room.NoticeGone, 404: room.NoticeGone, 500: room.NoticeRetry, 429: room.NoticeRetry} {
		push.SetStatus(sub, status)
		if got := s.Send(context.Background(), "spring", page, n, now); got.Outcome != want || got.Status != status {
			t.Errorf("answered %d: %+v, want %s", status, got, want)
		}
	}
	// A sealed address of another place, or an endpoint the policy refuses.
	if got := s.Send(context.Background(), "spring", page, room.DueNotice{Seq: 8, Sealed: sealed, Deadline: deadline}, now); got.Outcome != room.NoticeGone {
		t.Errorf("another place's address: %+v", got)
	}
	strict := *s
	strict.Policy = notice.Policy{Push: true}
	before := len(push.Messages())
	if got := strict.Send(context.Background(), "spring", page, n, now); got.Outcome != room.NoticeGone || got.Code != "endpoint" {
		t.Errorf("an endpoint off the policy: %+v", got)
	}
	if len(push.Messages()) != before {
		t.Error("an endpoint off the policy was called")
	}
}

// An email notice goes through SES (the stand-in) from the team's sender, in
// the visitor's language, text and HTML with the room's brand and the link;
// an address SES rejects is gone, SES's throttling is tried again.
func TestEmailNotice(t *testing.T) {
	ses := sestest.Start(t)
	_, sealer, opener := keys(t)
	s := &send.Sender{Opener: opener, Page: "https://wait.example/", Mail: ses.Client(), From: "Turns <turns@example.com>",
		Policy: notice.Policy{Email: true}}
	now := time.Now().Truncate(time.Second)
	page := &room.Page{Title: room.Text{ByLang: map[string]string{"en": "Spring", "ja": "春のコンサート"}}, AccentColor: "#0a7d32"}
	mail := func(addr string, seq int64) room.DueNotice {
		sealed, err := sealer.Seal("spring", seq, notice.Address{Email: addr, Lang: "ja"})
		if err != nil {
			t.Fatal(err)
		}
		return room.DueNotice{Seq: seq, Sealed: sealed, Deadline: now.Add(15 * time.Minute)}
	}
	if got := s.Send(context.Background(), "spring", page, mail("ana@example.com", 1), now); got.Outcome != room.NoticeSent || got.Channel != send.ChannelEmail {
		t.Fatalf("send: %+v", got)
	}
	ms := ses.Mails()
	if len(ms) != 1 {
		t.Fatalf("SES took %d", len(ms))
	}
	m := ms[0]
	link := "https://wait.example/?lang=ja&room=spring"
	if m.From != "Turns <turns@example.com>" || m.To != "ana@example.com" || m.Subject != "順番が来ました：春のコンサート" ||
		!strings.Contains(m.Text, link) || !strings.Contains(m.Text, "15分間") || !strings.Contains(m.HTML, "#0a7d32") ||
		!strings.Contains(m.HTML, strings.ReplaceAll(link, "&", "&amp;")) || m.Charset != "UTF-8" {
		t.Errorf("mail %+v", m)
	}
	ses.Refuse("bad@example.com", "MessageRejected")
	if got := s.Send(context.Background(), "spring", page, mail("bad@example.com", 2), now); got.Outcome != room.NoticeGone || got.Code != "MessageRejected" {
		t.Errorf("rejected: %+v", got)
	}
	ses.Refuse("slow@example.com", "TooManyRequestsException")
	if got := s.Send(context.Background(), "spring", page, mail("slow@example.com", 3), now); got.Outcome != room.NoticeRetry {
		t.Errorf("throttled: %+v", got)
	}
	nomail := *s
	nomail.Mail = nil
	if got := nomail.Send(context.Background(), "spring", page, mail("ana@example.com", 4), now); got.Outcome != room.NoticeGone {
		t.Errorf("no SES: %+v", got)
	}
}

// Run against the real engine: the granted visitor's notice is taken, sent
// and acked; a failed send is due again at its retry, and sent then; the
// log names rooms and sequences, never an address.
func TestRunSendsDueNotices(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) { runOn(t, rdb) })
	}
}

func runOn(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	push := pushtest.Start(t)
	k, sealer, opener := keys(t)
	clk := testkit.FixedClock(time.Now().Truncate(time.Second))
	eng := roomdb.New(rdb, roomdb.WithClock(clk.Now))
	id := redistest.Room(t)
	cfg := room.DefaultConfig()
	cfg.OriginURL, cfg.MaxActive, cfg.NotifiedClaimTTLSeconds = "https://shop.example/", 1, 600
	if _, err := eng.PutConfig(ctx, id, cfg); err != nil {
		t.Fatal(err)
	}
	first, err := eng.Enqueue(ctx, id, "v0")
	if err != nil {
		t.Fatal(err)
	}
	second, err := eng.Enqueue(ctx, id, "v1")
	if err != nil {
		t.Fatal(err)
	}
	a, sub := pushAddress(t, push, k, "en")
	sealed, err := sealer.Seal(id, second.Ticket.Seq, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.RegisterNotice(ctx, second.Ticket, room.NoticeSignup{Sealed: sealed, Network: "n", Address: "a", Expires: clk.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{
		func() error { _, err := eng.Tick(ctx, id); return err },
		func() error { return eng.Complete(ctx, id, first.Ticket.Seq, cfg.OriginURL) },
	} {
		clk.Advance(time.Second)
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Second)
	if r, err := eng.Tick(ctx, id); err != nil || r.Notices != 1 {
		t.Fatalf("the grant's tick: %+v, %v", r, err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	s := &send.Sender{Opener: opener, Page: "https://wait.example/", Policy: notice.Policy{Push: true, PushHosts: []string{push.URL}}}
	q := send.EngineQueue{Engine: eng}
	push.SetStatus(sub, 503)
	r, err := send.Run(ctx, q, s, id, clk.Now, log)
	if err != nil || r.Retry != 1 || r.Sent != 0 {
		t.Fatalf("run with the service down: %+v, %v", r, err)
	}
	push.SetStatus(sub, 0)
	if r, _ := send.Run(ctx, q, s, id, clk.Now, log); r.Sent+r.Retry+r.Gone != 0 {
		t.Fatalf("a notice before its retry: %+v", r)
	}
	clk.Advance(time.Minute) // a tenth of what is left, at most a minute
	if tr, _ := eng.Tick(ctx, id); tr.Notices != 1 {
		t.Fatalf("due again at the retry: %+v", tr)
	}
	r, err = send.Run(ctx, q, s, id, clk.Now, log)
	if err != nil || r.Sent != 1 || r.Push != 1 {
		t.Fatalf("run at the retry: %+v, %v", r, err)
	}
	if len(push.Messages()) != 1 {
		t.Fatalf("the stand-in took %d messages", len(push.Messages()))
	}
	st, err := eng.Stats(ctx, id)
	if err != nil || st.NoticesSent != 1 || st.NoticesHeld != 0 {
		t.Fatalf("stats: %+v, %v", st, err)
	}
	if strings.Contains(logs.String(), sub.Endpoint) || strings.Contains(logs.String(), "127.0.0.1") || !strings.Contains(logs.String(), `"outcome":"sent"`) {
		t.Errorf("the log:\n%s", logs.String())
	}
}
