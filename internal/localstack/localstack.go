// Package localstack runs the whole product on one machine: the waiting page
// (static/) and every API route on one port, translated from plain HTTP into
// the API Gateway v2 events Lambda receives and served by the very same
// api.Handler; the admit ticks on a ticker (the same admission.Run as the admit
// Lambda); a "demo" room; and a small demo booking origin on a second port
// that consumes the entry token server to server, as a real origin would.
// Redis is embedded (miniredis) unless a URL names a real one. Room settings
// are kept on disk beside the keys (.vestibule/rooms, package durable), so the
// rooms of a previous run come back in a fresh embedded Redis.
package localstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/admission"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// DemoRoomID is the room the stack creates.
const DemoRoomID = "demo"

// Options configure the stack. The zero value of every field has a default.
type Options struct {
	RedisURL     string // "" → embedded miniredis; redis:// rediss://; with RedisCluster a cluster seed
	RedisCluster bool
	RedisCAFile  string
	Addr         string           // waiting room + API listen address, e.g. ":8080" or "127.0.0.1:0"
	OriginAddr   string           // demo booking origin listen address, e.g. ":8081" or "127.0.0.1:0"
	StaticDir    string           // default "static"
	KeyDir       string           // default ".vestibule/keys"
	AdminKey     string           // "" → random, printed
	TickInterval time.Duration    // default 1 s; the same tick function as the admit Lambda
	Clock        func() time.Time // nil → time.Now
	DemoRoom     *room.Config     // nil → a default demo room "demo" (maxActive 5, admitPerMinute 60, originUrl = the demo origin's URL + "/")
	Logger       *slog.Logger
}

// Stack is a running local stack.
type Stack struct {
	url, originURL, adminKey string

	rdb     redis.UniversalClient
	mini    *miniredis.Miniredis
	servers []*http.Server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
	err     error
}

// Start starts the stack and returns once it serves. Close stops it.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.OriginAddr == "" {
		o.OriginAddr = "127.0.0.1:0"
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AdminKey != "" && len(o.AdminKey) < config.MinAdminKeyLen {
		return nil, fmt.Errorf("the admin key must be at least %d characters", config.MinAdminKeyLen)
	}
	if o.AdminKey == "" {
		b := make([]byte, 18)
		rand.Read(b)
		o.AdminKey = base64.RawURLEncoding.EncodeToString(b)
	}

	s := &Stack{adminKey: o.AdminKey}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()

	if o.RedisURL == "" {
		m, err := miniredis.Run()
		if err != nil {
			return nil, fmt.Errorf("embedded redis: %w", err)
		}
		s.mini = m
		s.rdb = redis.NewClient(&redis.Options{Addr: m.Addr()})
	} else {
		rdb, err := app.NewRedis(o.RedisURL, o.RedisCluster, o.RedisCAFile)
		if err != nil {
			return nil, err
		}
		s.rdb = rdb
	}
	cfg := config.Config{
		KeyDir: o.KeyDir, Issuer: config.DefaultIssuer,
		AdminAuth: config.AdminKey, AdminKey: o.AdminKey, DefaultRoom: room.DefaultConfig(),
	}
	keys, err := apiapp.LoadKeys(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The rooms' durable settings: .vestibule/rooms beside .vestibule/keys.
	store := durable.Disk{Dir: filepath.Join(filepath.Dir(o.KeyDir), "rooms")}
	engine := durable.New(app.NewEngine(s.rdb, o.Clock), durable.Options{Store: store, Logger: o.Logger, Clock: o.Clock})

	appLn, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.Addr, err)
	}
	originLn, err := net.Listen("tcp", o.OriginAddr)
	if err != nil {
		appLn.Close()
		return nil, fmt.Errorf("listen %s: %w", o.OriginAddr, err)
	}
	s.url = "http://" + loopback(appLn.Addr())
	s.originURL = "http://" + loopback(originLn.Addr())

	cfg.DefaultRoom.OriginURL = s.originURL + "/"
	origins := token.NewOrigins(keys.TicketSecret)
	h := apiapp.NewHandler(engine, keys, cfg, apiapp.Options{TickInterval: o.TickInterval, Clock: o.Clock, Logger: o.Logger})
	if err := s.demoRoom(ctx, engine, o.DemoRoom); err != nil {
		appLn.Close()
		originLn.Close()
		return nil, err
	}

	app := http.NewServeMux()
	app.Handle("/api/", Gateway(h.Handle))
	app.Handle("/", http.FileServer(http.Dir(o.StaticDir)))
	// The path form of a room's page (docs/PAGE.md), as CloudFront's function maps it.
	page := func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(o.StaticDir, "index.html"))
	}
	app.HandleFunc("GET /r/{room}", page)
	app.HandleFunc("GET /rooms/{room}", page)
	// The operator's console (docs/OPERATING.md); it asks for the admin key.
	app.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(o.StaticDir, "console.html"))
	})
	s.serve(appLn, noReferrer(app))
	originOf := func(ctx context.Context, id string) (string, error) {
		cfg, err := engine.GetConfig(ctx, id)
		return cfg.OriginURL, err
	}
	s.serve(originLn, noReferrer(newOrigin(s.url, s.originURL, origins.Credential, originOf, o.Logger)))

	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		admission.Run(tctx, engine, o.TickInterval, o.Logger)
	}()
	ok = true
	return s, nil
}

// demoRoom creates the demo room, or points an existing one (a real Redis
// keeps it between runs) at this run's origin.
func (s *Stack) demoRoom(ctx context.Context, q room.Queue, cfg *room.Config) error {
	want := room.DefaultConfig()
	want.MaxActive, want.AdmitPerMinute = 5, 60
	if cfg != nil {
		want = *cfg
	}
	if want.OriginURL == "" {
		want.OriginURL = s.originURL + "/"
	}
	cur, err := q.GetConfig(ctx, DemoRoomID)
	switch {
	case errors.Is(err, room.ErrUnknownRoom) || cfg != nil:
	case err != nil:
		return fmt.Errorf("demo room: %w", err)
	default:
		if cur.OriginURL == want.OriginURL {
			return nil
		}
		cur.OriginURL = want.OriginURL
		want = cur
	}
	if _, err := q.PutConfig(ctx, DemoRoomID, want); err != nil {
		return fmt.Errorf("demo room: %w", err)
	}
	return nil
}

func (s *Stack) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.servers = append(s.servers, srv)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		srv.Serve(ln)
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

// OriginURL is the demo booking origin's base URL.
func (s *Stack) OriginURL() string { return s.originURL }

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
			s.rdb.Close()
		}
		if s.mini != nil {
			s.mini.Close()
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}
