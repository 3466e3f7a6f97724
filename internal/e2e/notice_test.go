package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/pushtest"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/sestest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// The notices' tests run the local stack on a clock that follows real time
// and that the test moves ahead (the turn comes when the test lets the one
// before lapse, and the visitor comes back after the page's claim window),
// with the real sender posting to a push service's stand-in (which checks
// RFC 8291's encryption and RFC 8292's VAPID signature, and decrypts) and to
// an SES stand-in.

// noticeRoom is a room of one slot, the page's claim window of a minute, a
// notified one of 10 minutes.
func noticeRoom(s *localstack.Stack) settings {
	cfg := baseSettings(s)
	cfg["claimTTLSeconds"], cfg["notifiedClaimTTLSeconds"] = 60, 600
	return cfg
}

// lapse is past the page's claim window: the blocker's grant is reclaimed.
const lapse = 61 * time.Second

// emailRoom is a stack that sends notices by email only (SES's stand-in), on
// a Redis of its own and a clock the test moves, and a room offering them
// whose one slot a blocker holds: the next visitor waits.
func emailRoom(t *testing.T) (*sestest.Server, *testkit.Clock, *redis.Client, *localstack.Stack, string) {
	t.Helper()
	ses := sestest.Start(t)
	clk := testkit.SkewedClock()
	rdb := redistest.Single(t)
	s := noticeStack(t, "redis://"+rdb.Options().Addr, clk, nil, ses)
	room := redistest.Room(t)
	putRoom(t, s, room, noticeRoom(s))
	blocker(t, s, clk, room)
	return ses, clk, rdb, s, room
}

// noticeStack is the local stack on rdb's address with notices sent to the
// stand-ins, on the clock clk.
func noticeStack(t *testing.T, redisURL string, clk *testkit.Clock, push *pushtest.Server, ses *sestest.Server) *localstack.Stack {
	t.Helper()
	o := &localstack.NoticeOptions{From: "turns@example.com"}
	if push != nil {
		o.PushHosts = []string{push.URL}
	}
	if ses != nil {
		o.Mail = ses.Client()
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() && os.Getenv("E2E_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL: redisURL, StaticDir: repoPath(t, "static"), KeyDir: t.TempDir(), AdminKey: "e2e-admin-key-0123456789",
		TickInterval: tick, Clock: clk.Now, Logger: logger, Notices: o,
	})
	if err != nil {
		t.Fatalf("local stack: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// blocker fills the room's one slot with a visitor of the API, on the
// stack's clock: its grant lapses when the test moves the clock past the
// claim window.
func blocker(t *testing.T, s *localstack.Stack, clk *testkit.Clock, room string) {
	t.Helper()
	ticket, body := enqueueAPI(t, s, room)
	clk.Advance(time.Second) // the bucket fills on the stack's clock
	if !testkit.WaitFor(wait, func() bool {
		_, _, body = testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/rooms/"+room+"/poll", ticket, nil)
		return body["state"] == "admitted"
	}) {
		t.Fatalf("blocker not admitted: %v", body)
	}
}

// stats is the room's counts as the admin route gives them.
func roomStats(t *testing.T, s *localstack.Stack, room string) map[string]any {
	t.Helper()
	_, _, r := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/admin/rooms/"+room, s.AdminKey(), nil)
	st, _ := r["stats"].(map[string]any)
	return st
}

// tickedSince waits for a tick of room that ran at or after the minute of
// at: the first tick of each minute records it (histmin in the room's
// state), after it reclaimed the grants that ended by then.
func tickedSince(t *testing.T, rdb *redis.Client, room string, at time.Time) {
	t.Helper()
	minute := at.UnixMilli() / 60000
	var got int64
	if !testkit.WaitFor(wait, func() bool {
		got, _ = rdb.HGet(context.Background(), "vst:{"+room+"}:st", "histmin").Int64()
		return got >= minute
	}) {
		t.Fatalf("no tick since minute %d (the last at %d)", minute, got)
	}
}

// noAddressKept fails the test when any key of the room holds marker, or,
// once the place ended, a registration is left (a Redis scan of the room's
// keys).
func noAddressKept(t *testing.T, rdb *redis.Client, room, marker string, ended bool) {
	t.Helper()
	ctx := context.Background()
	it := rdb.Scan(ctx, 0, "vst:{"+room+"}:*", 1000).Iterator()
	for it.Next(ctx) {
		k := it.Val()
		if ended && (strings.HasSuffix(k, ":ntc") || strings.HasSuffix(k, ":ntd")) {
			t.Errorf("%s is left after the place ended", k)
		}
		if v, _ := rdb.Dump(ctx, k).Result(); marker != "" && strings.Contains(v, marker) {
			t.Errorf("%s holds %q", k, marker)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
}

// fakePush stands in for the browser's push service in the page: headless
// Chromium reaches none, so PushManager.subscribe answers the subscription
// the test made on the stand-in (whose keys the test holds), and records
// the application server key the page subscribed with.
func fakePush(sub *pushtest.Subscription) string {
	j, _ := json.Marshal(map[string]any{"endpoint": sub.Endpoint, "keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}})
	return `(() => {
	if (!window.PushManager) return;
	const json = ` + string(j) + `;
	let made = null;
	PushManager.prototype.subscribe = async function (o) {
		const k = new Uint8Array(o.applicationServerKey);
		localStorage.setItem("__pushKey", btoa(String.fromCharCode(...k)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""));
		made = {endpoint: json.endpoint, options: o, toJSON: () => json, unsubscribe: async () => { made = null; return true; }};
		return made;
	};
	PushManager.prototype.getSubscription = async function () { return made; };
})()`
}

// swTarget is the chromedp context of the service worker of origin.
func swTarget(t *testing.T, v context.Context, origin string) context.Context {
	t.Helper()
	var ctx context.Context
	if !testkit.WaitFor(wait, func() bool {
		infos, err := chromedp.Targets(v)
		if err != nil {
			return false
		}
		for _, info := range infos {
			if info.Type == "service_worker" && strings.HasPrefix(info.URL, origin+"/notice-sw.js") {
				c, cancel := chromedp.NewContext(v, chromedp.WithTargetID(info.TargetID))
				t.Cleanup(cancel)
				ctx = c
				return true
			}
		}
		return false
	}) {
		t.Fatal("no service worker of the page")
	}
	return ctx
}

// registration is the id of the service worker registration of origin, as
// the DevTools protocol names it.
func registration(t *testing.T, v context.Context, origin string) serviceworker.RegistrationID {
	t.Helper()
	ctx, cancel := context.WithTimeout(v, wait)
	defer cancel()
	regs := chromedp.Events(ctx, serviceworker.WorkerRegistrationUpdated)
	if _, err := chromedp.Call(v, serviceworker.Enable, struct{}{}); err != nil {
		t.Fatal(err)
	}
	for ev, err := range regs {
		if err != nil {
			break
		}
		for _, r := range ev.Registrations {
			if strings.HasPrefix(r.ScopeURL, origin+"/") && !r.IsDeleted {
				return r.RegistrationID
			}
		}
	}
	t.Fatal("no registration of the page's service worker")
	return ""
}

// backToThePlace opens a notice's link in tab: the waiting page claims the
// turn with the ticket the browser holds and goes to the origin, which
// redeems the entry. It returns where the page went (with the fragment).
func backToThePlace(tab context.Context, t *testing.T, s *localstack.Stack, link string) string {
	t.Helper()
	navigations := chromedp.Events(tab, page.FrameNavigated)
	do(t, tab, chromedp.Navigate(link))
	origin := s.ManualOriginURL() + "/"
	for ev, err := range navigations {
		if err != nil {
			t.Fatalf("never reached the origin: %v; page shows %s", err, pageSummary(tab))
		}
		if ev.Frame.ParentID == "" && strings.HasPrefix(ev.Frame.URL, origin) {
			waitJS(t, tab, `document.getElementById("out") && document.getElementById("out").dataset.state === "session"`, wait)
			return ev.Frame.URL + ev.Frame.URLFragment
		}
	}
	return ""
}

// TestPushNotice: a visitor signs up for a push, closes the tab; when the
// turn comes the notify path's real sender posts the push to the push
// service's stand-in, which checks its encryption and VAPID signature and
// decrypts it; the test hands it to the page's real service worker through
// the DevTools protocol, which shows the notification; its click (the
// DevTools protocol cannot click a notification: the test dispatches
// notificationclick in the worker, and records the window the worker asks
// to open, which Chromium opens only on a real click) brings the visitor
// back to their place, after the page's claim window and within the
// notified one, and to the site with their entry. Nothing of the address is
// left in Redis.
func TestPushNotice(t *testing.T) {
	push := pushtest.Start(t)
	clk := testkit.SkewedClock()
	rdb := redistest.Single(t)
	s := noticeStack(t, "redis://"+rdb.Options().Addr, clk, push, nil)
	room := redistest.Room(t)
	putRoom(t, s, room, noticeRoom(s))
	blocker(t, s, clk, room)

	v := visitor(t)
	if _, err := chromedp.CallBrowser(v, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: "granted",
		Origin: s.URL(), BrowserContextID: chromedp.FromContext(v).BrowserContextID,
	}); err != nil {
		t.Fatal(err)
	}
	// The subscription is made for the deployment's VAPID key (the offer of
	// any room of it): the stand-in refuses a message signed with another.
	elsewhere := redistest.Room(t)
	putRoom(t, s, elsewhere, noticeRoom(s))
	_, offerBody := enqueueAPI(t, s, elsewhere)
	offer, _ := offerBody["notices"].(map[string]any)
	vapid, _ := offer["push"].(string)
	if vapid == "" {
		t.Fatalf("no push in the offer: %v", offerBody)
	}
	sub := push.Subscribe(t, vapid)
	first, closePage := tab(t, v)
	beforeLoad(t, first, fakePush(sub))
	do(t, first, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, first, "waiting", wait)
	waitJS(t, first, `!document.getElementById("notify").hidden`, wait)
	do(t, first, chromedp.Click(chromedp.ID("notify")))
	waitJS(t, first, `document.body.dataset.notice === "push"`, wait)
	if got := text(t, first, "notify-note"); !strings.Contains(got, "10 minutes") || !strings.Contains(got, "close this page") {
		t.Errorf("the line after the sign-up: %q", got)
	}
	if got := browsertest.Eval[string](t, first, `localStorage.getItem("__pushKey")`); got != vapid {
		t.Errorf("the page subscribed with key %q, the offer's is %q", got, vapid)
	}
	reg := registration(t, first, s.URL())
	closePage() // the visitor looks away: the tab is closed

	// The turn comes: the blocker's grant lapses on the stack's clock.
	clk.Advance(lapse)
	if !testkit.WaitFor(wait, func() bool { return len(push.Messages()) == 1 }) {
		ctx := context.Background()
		k := "vst:{" + room + "}:"
		a, _ := rdb.ZRangeWithScores(ctx, k+"adm", 0, -1).Result()
		q, _ := rdb.ZRangeWithScores(ctx, k+"q", 0, -1).Result()
		d, _ := rdb.ZRangeWithScores(ctx, k+"ntd", 0, -1).Result()
		g, _ := rdb.ZRangeWithScores(ctx, k+"ntg", 0, -1).Result()
		n, _ := rdb.HLen(ctx, k+"ntc").Result()
		t.Logf("adm %v q %v ntd %v ntg %v ntc %d now %d stats %v", a, q, d, g, n, clk.Now().UnixMilli(), roomStats(t, s, room))
		t.Fatalf("the push service got %d messages", len(push.Messages()))
	}
	m := push.Messages()[0]
	var p notice.Message
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		t.Fatalf("payload %q: %v", m.Payload, err)
	}
	link := s.URL() + "/?lang=en&room=" + room
	if p.Title != "It's your turn" || p.URL != link || m.VAPIDKey != vapid || m.TTL < 590 || m.Urgency != "high" {
		t.Fatalf("the push: %+v, key %s, ttl %d", p, m.VAPIDKey, m.TTL)
	}
	if strings.Contains(string(m.Payload), "token") || strings.Contains(string(m.Payload), "ticket") {
		t.Fatalf("the push carries a token or ticket: %s", m.Payload)
	}

	// The payload reaches the page's service worker, which shows it.
	other, _ := tab(t, v)
	do(t, other, chromedp.Navigate("about:blank"))
	if _, err := chromedp.Call(other, serviceworker.Enable, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(other, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
		Origin: s.URL(), RegistrationID: reg, Data: string(m.Payload)}); err != nil {
		t.Fatal(err)
	}
	sw := swTarget(t, v, s.URL())
	var shown string
	if !testkit.WaitFor(wait, func() bool {
		got, err := chromedp.Run(sw, chromedp.Evaluate[string](`self.registration.getNotifications().then(ns =>
			JSON.stringify(ns.map(n => ({title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url}))))`, chromedp.EvalAwaitPromise))
		shown = got
		return err == nil && strings.Contains(got, "It's your turn")
	}) {
		t.Fatalf("no notification shown: %s", shown)
	}
	if !strings.Contains(shown, `"url":"`+link+`"`) || !strings.Contains(shown, `"tag":"vestibule:`+room+`"`) {
		t.Errorf("the notification: %s", shown)
	}
	opened, err := chromedp.Run(sw, chromedp.Evaluate[string](`(async () => {
		let asked = "";
		self.clients.openWindow = async u => { asked = u; return null; };
		const [n] = await self.registration.getNotifications();
		self.dispatchEvent(new NotificationEvent("notificationclick", {notification: n}));
		for (let i = 0; i < 50 && !asked; i++) await new Promise(r => setTimeout(r, 20));
		const left = (await self.registration.getNotifications()).length;
		return asked + " " + left;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil || opened != link+" 0" {
		t.Fatalf("the click asked to open %q (%v), want %s and the notification closed", opened, err, link)
	}

	// Back after the page's minute, within the notified 10 minutes: the page
	// claims the turn with the ticket this browser holds.
	clk.Advance(2 * time.Minute)
	back, _ := tab(t, v)
	landed := backToThePlace(back, t, s, link)
	if !strings.Contains(landed, "#token=") {
		t.Errorf("landed on %s, without the entry", landed)
	}
	if st := roomStats(t, s, room); st["noticesSent"] != float64(1) || st["turnsSaved"] != float64(1) {
		t.Errorf("stats: %v", st)
	}
	noAddressKept(t, rdb, room, sub.Endpoint[len("http://"):], true)
}

// TestEmailNotice: a browser without push (as Safari outside a home-screen
// app) gets the email form; the visitor gives an address and closes the
// tab; when the turn comes SES's stand-in gets the email, in the visitor's
// language, whose link (no ticket, no token) brings the visitor back to
// their place within the notified window. Nothing of the address is kept.
func TestEmailNotice(t *testing.T) {
	ses, clk, rdb, s, room := emailRoom(t)

	v := visitor(t)
	first, closePage := tab(t, v)
	beforeLoad(t, first, `delete window.PushManager`)
	do(t, first, chromedp.Navigate(pageURL(s.URL(), room)+"&lang=fr"))
	waitState(t, first, "waiting", wait)
	waitJS(t, first, `!document.getElementById("notify").hidden`, wait)
	do(t, first, chromedp.Click(chromedp.ID("notify")))
	waitJS(t, first, `document.body.dataset.notice === "form" && document.activeElement.id === "notice-email"`, wait)
	if got := text(t, first, "notify-note"); !strings.Contains(got, "adresse e-mail") {
		t.Errorf("the form's line in French: %q", got)
	}
	checkAxe(t, first) // the form: labelled, in the page's language
	const email = "ana.visitor@example.com"
	do(t, first, chromedp.SendKeys(chromedp.ID("notice-email"), email), chromedp.Click(chromedp.ID("notice-send")))
	waitJS(t, first, `document.body.dataset.notice === "email"`, wait)
	if got := text(t, first, "notify-note"); !strings.Contains(got, email) || !strings.Contains(got, "10 minutes") {
		t.Errorf("the line after the sign-up: %q", got)
	}
	noAddressKept(t, rdb, room, email, false) // sealed: never in the clear, even while it is kept
	closePage()

	clk.Advance(lapse)
	if !testkit.WaitFor(wait, func() bool { return len(ses.Mails()) == 1 }) {
		t.Fatalf("SES got %d mails", len(ses.Mails()))
	}
	m := ses.Mails()[0]
	link := regexp.MustCompile(`http://[^\s]+`).FindString(m.Text)
	if m.To != email || m.From != "turns@example.com" || !strings.HasPrefix(m.Subject, "C'est votre tour") ||
		link != s.URL()+"/?lang=fr&room="+room || !strings.Contains(m.HTML, "lang=fr&amp;room="+room) {
		t.Fatalf("the mail: %+v (link %q)", m, link)
	}
	clk.Advance(3 * time.Minute)
	back, _ := tab(t, v)
	backToThePlace(back, t, s, link)
	if st := roomStats(t, s, room); st["noticesSent"] != float64(1) || st["turnsSaved"] != float64(1) {
		t.Errorf("stats: %v", st)
	}
	noAddressKept(t, rdb, room, email, true)
}

// TestNotifiedVisitorWhoNeverReturns: a visitor signs up for an email and
// closes the tab; the turn comes, the email goes, and the visitor never
// comes back. The turn is kept past the page's claim window (it holds the
// room's one slot: nobody else is let in), and at the notified window's end
// the grant is reclaimed like any other: the slot is free and the next
// visitor gets it. Nothing of the address is left.
func TestNotifiedVisitorWhoNeverReturns(t *testing.T) {
	ses, clk, rdb, s, room := emailRoom(t)

	v := visitor(t)
	page, closePage := tab(t, v)
	beforeLoad(t, page, `delete window.PushManager`)
	do(t, page, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, page, "waiting", wait)
	waitJS(t, page, `!document.getElementById("notify").hidden`, wait)
	do(t, page, chromedp.Click(chromedp.ID("notify")))
	waitJS(t, page, `document.body.dataset.notice === "form"`, wait)
	const email = "gone.visitor@example.com"
	do(t, page, chromedp.SendKeys(chromedp.ID("notice-email"), email), chromedp.Click(chromedp.ID("notice-send")))
	waitJS(t, page, `document.body.dataset.notice === "email"`, wait)
	closePage()

	clk.Advance(lapse)
	if !testkit.WaitFor(wait, func() bool { return len(ses.Mails()) == 1 }) {
		t.Fatalf("SES got %d mails", len(ses.Mails()))
	}
	// Past the page's claim window, the told visitor's turn still holds the
	// slot, once a tick ran on the clock moved ahead (it would have reclaimed
	// a grant of the page's window).
	clk.Advance(5 * time.Minute)
	tickedSince(t, rdb, room, clk.Now())
	if st := roomStats(t, s, room); st["admitted"] != float64(1) {
		t.Fatalf("five minutes into the notified window: %v, want the turn still held", st)
	}
	// At the notified window's end the grant is reclaimed: the slot is free.
	clk.Advance(5*time.Minute + time.Second)
	if !testkit.WaitFor(wait, func() bool { st := roomStats(t, s, room); return st["admitted"] == float64(0) }) {
		t.Fatalf("after the notified window: %v, want the slot free", roomStats(t, s, room))
	}
	blocker(t, s, clk, room) // the next visitor is let in
	if st := roomStats(t, s, room); st["noticesSent"] != float64(1) || st["turnsSaved"] != float64(0) || st["noticesHeld"] != float64(0) {
		t.Errorf("stats: %v", st)
	}
	noAddressKept(t, rdb, room, email, true)
}

// TestNoticeLostWithRedis: a total loss of Redis takes the registration
// with the place's state; the room comes back from the settings store and
// the place from the ticket, without a notice, and the page, when the
// visitor comes back to it, says so and asks for the address again.
func TestNoticeLostWithRedis(t *testing.T) {
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	s := noticeStack(t, "redis://"+srv.Addr, testkit.SkewedClock(), nil, sestest.Start(t))
	room := redistest.Room(t)
	cfg := noticeRoom(s)
	cfg["mode"] = "paused" // nobody is admitted: the place stays in the line across the loss
	putRoom(t, s, room, cfg)
	v := visitor(t)
	beforeLoad(t, v, `delete window.PushManager`)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), room)))
	waitState(t, v, "paused", wait)
	waitJS(t, v, `!document.getElementById("notify").hidden`, wait)
	do(t, v, chromedp.Click(chromedp.ID("notify")))
	waitJS(t, v, `document.body.dataset.notice === "form"`, wait)
	do(t, v, chromedp.SendKeys(chromedp.ID("notice-email"), "ana@example.com"), chromedp.Click(chromedp.ID("notice-send")))
	waitJS(t, v, `document.body.dataset.notice === "email"`, wait)

	// Everything in Redis is gone. Back on the page, the place comes back
	// from the ticket, without its notice.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	do(t, v, chromedp.Reload())
	waitJS(t, v, `document.body.dataset.notice === "form" && document.body.dataset.state === "paused"`, wait)
	if got := text(t, v, "notify-note"); !strings.Contains(got, "lost the address") {
		t.Errorf("the line after the loss: %q", got)
	}
	// Asked again, it holds again.
	do(t, v, chromedp.SendKeys(chromedp.ID("notice-email"), "ana@example.com"), chromedp.Click(chromedp.ID("notice-send")))
	waitJS(t, v, `document.body.dataset.notice === "email"`, wait)
	if n, _ := c.HLen(context.Background(), "vst:{"+room+"}:ntc").Result(); n != 1 {
		t.Errorf("%d registrations after the sign-up again", n)
	}
}
