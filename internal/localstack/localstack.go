// Package localstack runs the whole product on one machine: the waiting page
// (static/) and every API route on one port, translated from plain HTTP into
// the API Gateway v2 events Lambda receives and served by the very same
// api.Handler; the admit ticks on a ticker (the same admission.Loop.Run as the admit
// Lambda); and two example booking sites. The demo site (the gated "demo"
// room's origin) is a plain site behind the edge gate (gate.Middleware, as the
// CloudFront function in AWS), with /.vestibule/* passed to the API. The
// hand-integration example (the "demo-api" room's origin) consumes the entry
// token server to server, as an origin that integrates by hand does.
// Redis is embedded (miniredis) unless a URL names a real one.
// Room settings are kept on disk beside the keys (.vestibule/rooms, package
// durable), so the rooms of a previous run come back in a fresh embedded Redis.
package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/admission"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/notice/send"
	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/orders"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// DemoRoomID is the gated room the stack creates: its origin is the demo
// site behind the edge gate.
const DemoRoomID = "demo"

// DemoAPIRoomID is the room of the hand-integration example origin, which
// redeems tokens with POST /api/consume itself.
const DemoAPIRoomID = "demo-api"

// Options configure the stack. The zero value of every field has a default.
type Options struct {
	RedisURL     string // "" → embedded miniredis; redis:// rediss://; with RedisCluster a cluster seed
	RedisCluster bool
	RedisCAFile  string
	Addr         string           // waiting room + API listen address, e.g. ":8080" or "127.0.0.1:0"
	OriginAddr   string           // demo site (behind the gate) listen address, e.g. ":8081" or "127.0.0.1:0"
	StaticDir    string           // default "static"
	KeyDir       string           // default ".vestibule/keys"
	AdminKey     string           // "" → the one kept beside KeyDir (AdminKeyFile), made on first run
	TickInterval time.Duration    // default 1 s; the same tick function as the admit Lambda
	Clock        func() time.Time // nil → time.Now
	DemoRoom     *room.Config     // nil → a default demo room "demo" (maxActive 5, admitPerMinute 60, gated, originUrl = the demo site's URL + "/")
	Logger       *slog.Logger
	// ManualOriginAddr is the hand-integration example origin's listen
	// address, e.g. ":8082"; default "127.0.0.1:0".
	ManualOriginAddr string
	// Orders receives the booking kit's order events as JSON lines (the local
	// stand-in for EventBridge); nil → discarded.
	Orders io.Writer
	// Events receives the admission events (ticks that changed something,
	// consumes, completes) as JSON lines, as the functions write them to
	// CloudWatch Logs; nil → discarded.
	Events io.Writer
	// Notices sends the notices of visitors' turns for real (the tests' push
	// and SES stand-ins); nil: to the outbox page (OutboxPath), make dev's.
	Notices *NoticeOptions
	// NotifiedClaimTTL is the demo rooms' notifiedClaimTTLSeconds (0: 600 s).
	NotifiedClaimTTL time.Duration
	// DoorOptions place the demo site's other doors (doors.go).
	DoorOptions
}

// Stack is a running local stack.
type Stack struct {
	url, originURL, manualURL, adminKey string
	plainURL, proxyURL, nginxURL        string                   // the other doors (doors.go)
	credential                          func(room string) string // the rooms' origin credentials

	rdb     redis.UniversalClient
	mini    *miniredis.Miniredis
	servers []*http.Server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closers []func() error // closed last (the origin's order store)
	// notified is the demo rooms' notifiedClaimTTLSeconds.
	notified int64
	once     sync.Once
	err      error
}

// Start starts the stack and returns once it serves. Close stops it.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	s := &Stack{adminKey: o.AdminKey, notified: int64(o.NotifiedClaimTTL / time.Second)}
	if s.notified == 0 {
		s.notified = 600
	}
	ok := false
	defer func() {
		if !ok {
			_ = s.Close()
		}
	}()

	if err := s.connect(&o); err != nil {
		return nil, err
	}
	cfg := config.Config{
		KeyDir: o.KeyDir, Issuer: config.DefaultIssuer,
		AdminAuth: config.AdminKey, AdminKey: o.AdminKey, DefaultRoom: room.DefaultConfig(),
		LogSample: 1, // on this machine every request is logged, every poll too
		// Both channels: the outbox shows either (or the tests' stand-ins take them).
		NoticePush: true, NoticeEmail: true,
	}
	if o.Notices != nil {
		cfg.NoticePushHosts = o.Notices.PushHosts
	}
	keys, err := apiapp.LoadKeys(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The rooms' durable settings: .vestibule/rooms beside .vestibule/keys.
	store := durable.Disk{Dir: filepath.Join(filepath.Dir(o.KeyDir), "rooms")}
	notices := newNoticeRunner()
	engine := durable.New(emitting(app.NewEngine(s.rdb, o.Clock), o, notices), durable.Options{Store: store, Logger: o.Logger, Clock: o.Clock})

	appLn, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.Addr, err)
	}
	originLn, err := net.Listen("tcp", o.OriginAddr)
	if err != nil {
		_ = appLn.Close()
		return nil, fmt.Errorf("listen %s: %w", o.OriginAddr, err)
	}
	manualLn, err := net.Listen("tcp", o.ManualOriginAddr)
	if err != nil {
		_ = appLn.Close()
		_ = originLn.Close()
		return nil, fmt.Errorf("listen %s: %w", o.ManualOriginAddr, err)
	}
	s.url = "http://" + loopback(appLn.Addr())
	s.originURL = "http://" + loopback(originLn.Addr())
	s.manualURL = "http://" + loopback(manualLn.Addr())

	cfg.DefaultRoom.OriginURL = s.manualURL + "/"
	origins := token.NewOrigins(keys.TicketSecret)
	s.credential = origins.Credential
	// Plain HTTP on this machine: the gate's cookie goes without Secure on a
	// loopback host (and only there).
	// The booking kit over the same Redis; its order events go out as JSON lines.
	bopts := []bookingdb.Option{bookingdb.WithClock(o.Clock), bookingdb.WithDefinitions(durable.Events(store)), bookingdb.WithLogger(o.Logger)}
	bk, pub := bookingdb.New(s.rdb, bopts...), orders.NewLog(o.Orders)
	h := apiapp.NewHandler(engine, keys, cfg, apiapp.Options{TickInterval: o.TickInterval, Clock: o.Clock, Logger: o.Logger,
		InsecureLoopback: true, Booking: bk, Orders: pub})
	ring, err := keys.GateKeys()
	if err != nil {
		_ = appLn.Close()
		_ = originLn.Close()
		_ = manualLn.Close()
		return nil, err
	}
	gateCfg := gate.Config{Room: DemoRoomID, WaitingRoomURL: s.url + "/", OpenPaths: SiteOpenPaths, Keys: ring}
	// A browser keeps the gate's cookie over plain HTTP only on a loopback
	// host: listening elsewhere (-host 192.0.2.7), the demo room goes to the
	// hand-integration example instead.
	gated := gateCfg.Validate() == nil
	if !gated {
		o.Logger.Warn("the demo site's gate needs a loopback host over plain HTTP; the demo room uses the hand-integration origin", "url", s.url)
	}
	err = s.demoRooms(ctx, engine, o.DemoRoom, gated)
	if err != nil {
		_ = appLn.Close()
		_ = originLn.Close()
		_ = manualLn.Close()
		return nil, err
	}

	app := http.NewServeMux()
	app.Handle("/api/", Gateway(h.Handle))
	// The gate's routes, which the demo site passes here (in AWS, CloudFront's
	// /.vestibule/* behaviour of the protected site's distribution).
	app.Handle(gate.VestibulePrefix, Gateway(h.Handle))
	// The room as an OpenID Connect provider (oidc.go), on the waiting
	// room's host as CloudFront's /oidc/* behaviour puts it.
	app.Handle(routes.OIDCPrefix, Gateway(h.Handle))
	app.Handle("/", http.FileServer(http.Dir(o.StaticDir)))
	notifier, box, err := s.notifier(keys, cfg, o)
	if err != nil {
		_ = appLn.Close()
		_ = originLn.Close()
		_ = manualLn.Close()
		return nil, err
	}
	if box != nil {
		app.Handle("GET "+OutboxPath, box)
		app.Handle("GET "+OutboxPath+".json", box)
	}
	// The path form of a room's page (docs/PAGE.md), as CloudFront's function maps it.
	page := func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(o.StaticDir, "index.html"))
	}
	app.HandleFunc("GET /r/{room}", page)
	app.HandleFunc("GET /rooms/{room}", page)
	// The operator's console (docs/OPERATING.md); it asks for the admin key.
	// Under the policy `vestibule console` serves it with: no other page may
	// frame it (a click-jacked pause or drain).
	console := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", operator.ConsoleCSP)
		http.ServeFile(w, r, filepath.Join(o.StaticDir, "console.html"))
	}
	app.HandleFunc("GET /console", console)
	app.HandleFunc("GET /console.html", console)
	app.HandleFunc("GET "+operator.ConsoleSettingsPath, operator.ConsoleSettings)
	s.serve(appLn, noReferrer(app))
	originOf := func(ctx context.Context, id string) (string, error) {
		cfg, err := engine.GetConfig(ctx, id)
		return cfg.OriginURL, err
	}
	// The hand-integration origin sells the demo event's seats and keeps its
	// orders in its own SQLite file beside the keys (.vestibule/orders.db).
	if err := defineDemoEvent(ctx, bk, o.Logger); err != nil {
		_ = manualLn.Close()
		_ = originLn.Close()
		return nil, err
	}
	db, err := openOrderDB(ctx, filepath.Join(filepath.Dir(o.KeyDir), "orders.db"))
	if err != nil {
		_ = manualLn.Close()
		_ = originLn.Close()
		return nil, err
	}
	s.closers = append(s.closers, db.Close)
	if err := rebuildDemoEvent(ctx, bk, db, o.Logger); err != nil {
		_ = manualLn.Close()
		_ = originLn.Close()
		return nil, err
	}
	picker := newSeatPicker(s.url, origins.Credential, db, o.Logger)
	s.serve(manualLn, noReferrer(newOrigin(s.url, s.manualURL, origins.Credential, originOf, picker, o.Logger)))
	if gated {
		apiURL, _ := url.Parse(s.url)
		gatedSite, err := newGatedSite(gateCfg, apiURL)
		if err != nil {
			_ = manualLn.Close()
			_ = originLn.Close()
			return nil, fmt.Errorf("localstack: the demo site's gate: %w", err)
		}
		s.serve(originLn, noReferrer(gatedSite))
		if err := s.startDoors(ctx, engine, o.DoorOptions, gateCfg, apiURL); err != nil {
			return nil, err
		}
	} else {
		s.serve(originLn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "the demo site's gate needs a loopback host (or https)", http.StatusServiceUnavailable)
		}))
	}

	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		admission.For(engine).Run(tctx, o.TickInterval, o.Logger, orders.Task(bk, pub, 5*time.Second, o.Clock, o.Logger))
	}()
	go func() {
		defer s.wg.Done()
		notices.run(tctx, send.EngineQueue{Engine: engine}, notifier, o.Clock, o.Logger)
	}()
	ok = true
	return s, nil
}

// notifier is what sends the stack's notices: the real sender with o's
// stand-ins, or else the outbox (returned to be served).
func (s *Stack) notifier(keys *token.Keys, cfg config.Config, o Options) (send.Notifier, *outbox, error) {
	k, err := notice.FromSecret(keys.NoticeSecret)
	if err != nil {
		return nil, nil, err
	}
	opener := notice.NewOpener(k)
	if o.Notices == nil {
		b := &outbox{opener: opener, page: s.url + "/"}
		return b, b, nil
	}
	sender := &send.Sender{Opener: opener, Page: s.url + "/", Mail: o.Notices.Mail, From: o.Notices.From,
		Policy: notice.Policy{Push: true, Email: true, PushHosts: cfg.NoticePushHosts}}
	if o.Notices.HTTP != nil {
		sender.HTTP = o.Notices.HTTP
	}
	return sender, nil, nil
}

// defaults fills what the options leave empty, the admin key from the one
// stored beside the keys, and refuses an admin key too short.
func (o *Options) defaults() error {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.OriginAddr == "" {
		o.OriginAddr = "127.0.0.1:0"
	}
	if o.ManualOriginAddr == "" {
		o.ManualOriginAddr = "127.0.0.1:0"
	}
	if o.StaticDir == "" {
		o.StaticDir = "static"
	}
	if o.KeyDir == "" {
		o.KeyDir = config.DefaultKeyDir
	}
	if o.TickInterval <= 0 {
		o.TickInterval = time.Second
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Orders == nil {
		o.Orders = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AdminKey != "" && len(o.AdminKey) < config.MinAdminKeyLen {
		return fmt.Errorf("the admin key must be at least %d characters", config.MinAdminKeyLen)
	}
	if o.AdminKey == "" {
		k, err := storedAdminKey(filepath.Dir(o.KeyDir))
		if err != nil {
			return err
		}
		o.AdminKey = k
	}
	return nil
}

// connect opens the stack's Redis: the embedded one when o names none (its
// expected restores are then not logged as errors).
func (s *Stack) connect(o *Options) error {
	if o.RedisURL == "" {
		m, err := miniredis.Run()
		if err != nil {
			return fmt.Errorf("embedded redis: %w", err)
		}
		s.mini = m
		s.rdb = redis.NewClient(&redis.Options{Addr: m.Addr()})
		o.Logger = slog.New(expectedRestores{o.Logger.Handler()})
	} else {
		rdb, err := app.NewRedis(o.RedisURL, o.RedisCluster, o.RedisCAFile)
		if err != nil {
			return err
		}
		s.rdb = rdb
	}
	return nil
}

// settingsPutter is what the demo rooms need of the queue.
type settingsPutter interface {
	PutConfig(ctx context.Context, room string, cfg room.Config) (room.Config, error)
}

// demoRooms creates the demo rooms: "demo", gated, whose origin is the demo
// site (or, when the site cannot be gated, the hand-integration example), and
// "demo-api", whose origin is the hand-integration example. cfg, when set,
// is the demo room's settings.
func (s *Stack) demoRooms(ctx context.Context, q settingsPutter, cfg *room.Config, gated bool) error {
	want := room.DefaultConfig()
	want.MaxActive, want.AdmitPerMinute, want.NotifiedClaimTTLSeconds = 5, 60, s.notified
	if cfg != nil {
		want = *cfg
	} else {
		want.Gate = gated
	}
	if want.OriginURL == "" {
		want.OriginURL = s.originURL + "/"
		if !gated {
			want.OriginURL = s.manualURL + "/"
		}
	}
	if err := s.demoRoom(ctx, q, DemoRoomID, want); err != nil {
		return err
	}
	manual := room.DefaultConfig()
	manual.MaxActive, manual.AdmitPerMinute, manual.OriginURL = 5, 60, s.manualURL+"/"
	manual.NotifiedClaimTTLSeconds = s.notified
	if err := s.demoRoom(ctx, q, DemoAPIRoomID, manual); err != nil {
		return err
	}
	return s.demoRoom(ctx, q, DemoOIDCRoomID, s.oidcDemoRoom())
}

// demoRoom puts a demo room's settings as the README gives them, whatever a
// previous run (kept in .vestibule/rooms or a real Redis) changed: a demo
// starts from the same place every time. Other rooms are left as they are.
func (s *Stack) demoRoom(ctx context.Context, q settingsPutter, id string, want room.Config) error {
	if _, err := q.PutConfig(ctx, id, want); err != nil {
		return fmt.Errorf("room %s: %w", id, err)
	}
	return nil
}

func (s *Stack) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.servers = append(s.servers, srv)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = srv.Serve(ln)
	}()
}

// loopback names a listener's address as a URL host; an unspecified address
// (":8080") is reachable on 127.0.0.1.
func loopback(a net.Addr) string {
	ta := a.(*net.TCPAddr)
	if ta.IP == nil || ta.IP.IsUnspecified() {
		return fmt.Sprintf("127.0.0.1:%d", ta.Port)
	}
	return ta.String()
}

// noReferrer keeps the entry token's page, and every other, out of Referer
// headers.
func noReferrer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// URL is the waiting room's base URL (static files and /api).
func (s *Stack) URL() string { return s.url }

// OriginURL is the demo site's base URL: the gated demo room's origin, a
// plain site behind the edge gate.
func (s *Stack) OriginURL() string { return s.originURL }

// ManualOriginURL is the hand-integration example origin's base URL: the
// demo-api room's origin, which redeems entry tokens with POST /api/consume.
func (s *Stack) ManualOriginURL() string { return s.manualURL }

// AdminKey is the bearer key of the admin routes.
func (s *Stack) AdminKey() string { return s.adminKey }

// Close stops the ticks and the servers and closes Redis. It is safe to call twice.
func (s *Stack) Close() error {
	s.once.Do(func() {
		if s.cancel != nil {
			s.cancel()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var errs []error
		for _, srv := range s.servers {
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		s.wg.Wait()
		if s.rdb != nil {
			_ = s.rdb.Close()
		}
		if s.mini != nil {
			s.mini.Close()
		}
		for _, c := range s.closers {
			_ = c()
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}
