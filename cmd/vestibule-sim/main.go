// Command vestibule-sim plays a flash crowd against Vestibule and reports what
// it cost and what the visitors saw: requests per visitor-minute of waiting,
// grant-to-seen delays, time to drain, and the invariant checks (capacity,
// double consumes, FIFO order), and with -chart FILE a chart of the room over
// time. It writes nothing else: a rehearsal leaves no file behind.
//
//	go run ./cmd/vestibule-sim -visitors 2000                 # real local stack over HTTP
//	go run ./cmd/vestibule-sim -driver virtual -visitors 100000 # in-process, virtual time
//	go run ./cmd/vestibule-sim -book-seats 500 -book-stock 300  # admitted visitors also book (docs/BOOKING.md)
//
// With -url it targets a stack that is already running (loopback only);
// otherwise it starts a redis-server and the local stack itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/schollz/progressbar/v3"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/sim"
)

func main() {
	os.Exit(run())
}

func run() int {
	var (
		driver    = flag.String("driver", "http", "http (local stack, real time) or virtual (in-process handler, virtual time)")
		target    = flag.String("url", "", "http driver: a running stack's loopback URL (default: start one)")
		adminKey  = flag.String("admin-key", os.Getenv("VESTIBULE_ADMIN_KEY"), "admin key of the stack given by -url")
		redisAddr = flag.String("redis", "", "Redis host:port (default: start a redis-server)")
		c         sim.Config
		rc        = room.DefaultConfig()
		chart     = flag.String("chart", "", "write a chart of the room over time to this file (.png, .svg or .pdf); none by default")
		tick      = flag.Duration("tick", time.Second, "admission tick interval")
		fixed3s   = flag.Duration("replay", 3*time.Second, "also report the same crowd replayed with a page polling at this fixed interval (0: no)")
	)
	flag.IntVar(&c.Visitors, "visitors", 2000, "visitors in the crowd")
	flag.StringVar((*string)(&c.Shape), "shape", "burst", "arrivals: burst (first 10 s), ramp or steady (over -spread)")
	flag.DurationVar(&c.Spread, "spread", 2*time.Minute, "arrival window of ramp and steady")
	flag.Uint64Var(&c.Seed, "seed", 1, "seed of the crowd")
	flag.Float64Var(&c.CloseTab, "close-tab", 0.10, "share that closes the tab while waiting")
	flag.Float64Var(&c.NoConsume, "no-consume", 0.05, "share that is admitted and never goes to the origin")
	flag.Float64Var(&c.Leave, "leave", 0.05, "share that leaves the queue explicitly")
	flag.DurationVar(&c.AbandonAfter, "abandon-after", time.Minute, "mean time before an abandoner walks away")
	flag.DurationVar(&c.ThinkMin, "think-min", 10*time.Second, "shortest time on the origin")
	flag.DurationVar(&c.ThinkMax, "think-max", 40*time.Second, "longest time on the origin")
	flag.DurationVar(&c.FixedPoll, "fixed-poll", 0, "poll at this fixed interval instead of pollAfterMs (0: follow the server)")
	flag.BoolVar(&c.NoWatch, "no-watch", false, "the page only polls: no status reads between polls (the page before the watch, docs/PAGE.md)")
	flag.IntVar(&c.Workers, "workers", 64, "requests in flight at most")
	flag.DurationVar(&c.MaxDuration, "max-duration", 2*time.Hour, "stop after this much (virtual or real) time")
	flag.StringVar(&c.Room, "room", fmt.Sprintf("sim-%d", time.Now().Unix()), "room id: a fresh one, created for the run and deleted after it (default: a new sim-<time>)")
	flag.BoolVar(&c.Force, "force", false, "let -room name an existing room and rewrite its settings (it is then not deleted)")
	flag.BoolVar(&c.Keep, "keep", false, "keep the room the run created (for a look afterwards) instead of deleting it")
	flag.Int64Var(&rc.MaxActive, "max-active", 200, "room maxActive")
	flag.Int64Var(&rc.AdmitPerMinute, "admit-per-minute", 1200, "room admitPerMinute")
	flag.Int64Var(&rc.HeartbeatTTLSeconds, "heartbeat-ttl", 120, "room heartbeatTTLSeconds")
	flag.Int64Var(&rc.ClaimTTLSeconds, "claim-ttl", 60, "room claimTTLSeconds")
	flag.Int64Var(&rc.SessionTTLSeconds, "session-ttl", 600, "room sessionTTLSeconds")
	var bk sim.Booking
	flag.IntVar(&bk.Seats, "book-seats", 0, "booking: seats of the demo event named after the room (with -book-stock: 0 for none; both 0: no booking)")
	flag.Int64Var(&bk.Stock, "book-stock", 0, "booking: units of its general-admission sku")
	flag.Float64Var(&bk.Confirm, "book-confirm", 0.6, "booking: share of holders who pay (the hold is confirmed)")
	flag.Float64Var(&bk.Release, "book-release", 0.5, "booking: share of the other holders whose hold the origin releases (the rest let it expire)")
	flag.DurationVar(&bk.HoldTTL, "book-hold-ttl", time.Minute, "booking: the event's hold TTL (whole seconds)")
	flag.Float64Var(&bk.EndMidHold, "book-end-mid", 0.1, "booking: share of holders whose session ends mid-hold (the origin completes it before paying; the seats must be free at once)")
	flag.Float64Var(&bk.Extend, "book-extend", 0.2, "booking: share of payers whose payment is slow: the hold is extended once or twice and confirmed after its first end")
	flag.Parse()
	if bk.Seats > 0 || bk.Stock > 0 {
		c.Booking = &bk
	}
	// The whole simulated crowd comes from one address: a per-address enqueue
	// limit would refuse it.
	rc.ClientEnqueuePerMinute = 0
	rc.Mode = room.ModeQueue

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	defer redistest.StopAll()

	addr := *redisAddr
	if addr == "" && (*driver == "virtual" || *target == "") {
		srv, err := redistest.Start()
		if err != nil {
			fmt.Fprintln(os.Stderr, "vestibule-sim:", err)
			return 1
		}
		addr = srv.Addr
	}

	var d sim.Driver
	switch *driver {
	case "virtual":
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2 * c.Workers})
		defer func() { _ = rdb.Close() }()
		v, err := sim.NewVirtual(rdb, time.Now().Truncate(time.Second), *tick)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vestibule-sim:", err)
			return 1
		}
		d, *adminKey = v, v.AdminKey
		rc.OriginURL = "http://127.0.0.1:9/origin"
	case "http":
		base := *target
		rc.OriginURL = "http://127.0.0.1:9/origin"
		if base == "" {
			keys, err := os.MkdirTemp("", "vestibule-sim-keys-")
			if err != nil {
				fmt.Fprintln(os.Stderr, "vestibule-sim:", err)
				return 1
			}
			defer func() { _ = os.RemoveAll(keys) }()
			st, err := localstack.Start(ctx, localstack.Options{
				RedisURL: "redis://" + addr, Addr: "127.0.0.1:0", OriginAddr: "127.0.0.1:0",
				KeyDir: keys, TickInterval: *tick, Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, "vestibule-sim: local stack:", err)
				return 1
			}
			defer func() { _ = st.Close() }()
			base, *adminKey, rc.OriginURL = st.URL(), st.AdminKey(), st.ManualOriginURL()+"/"
		}
		h, err := sim.NewHTTP(base, c.Workers)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vestibule-sim:", err)
			return 2
		}
		d = h
	default:
		fmt.Fprintf(os.Stderr, "vestibule-sim: unknown -driver %q\n", *driver)
		return 2
	}
	c.RoomConfig = rc
	c.Rehearsal = true

	bar := progressbar.NewOptions64(int64(c.Visitors), progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription("visitors done"), progressbar.OptionShowCount(),
		progressbar.OptionThrottle(250*time.Millisecond), progressbar.OptionClearOnFinish())
	c.OnDone = func() { _ = bar.Add(1) }
	res, err := sim.Run(ctx, d, *adminKey, c)
	_ = bar.Finish()
	if res != nil && res.Interrupted {
		*fixed3s = 0 // no replay of an interrupted crowd: report what ran, at once
	}
	if err != nil && res == nil {
		fmt.Fprintln(os.Stderr, "vestibule-sim:", err)
		return 1
	}
	s := res.Summarize()
	if *fixed3s > 0 && c.FixedPoll == 0 {
		res.Replay(&s, *fixed3s)
	}
	fmt.Println()
	if err := s.WriteTable(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "vestibule-sim:", err)
		return 1
	}
	if *chart != "" {
		title := fmt.Sprintf("%d visitors, %s arrivals, maxActive %d, %d admitted/min (%s driver)",
			c.Visitors, c.Shape, rc.MaxActive, rc.AdmitPerMinute, d.Name())
		if err := res.Chart(*chart, title); err != nil {
			fmt.Fprintln(os.Stderr, "vestibule-sim: chart:", err)
			return 1
		}
		fmt.Println("chart:", *chart)
	}
	switch {
	case res.Cleanup != "":
		fmt.Fprintln(os.Stderr, "vestibule-sim: the rehearsal's room is left behind:", res.Cleanup)
	case !c.Keep && !c.Force:
		fmt.Printf("room %s: deleted\n", c.Room)
	}
	if res.Interrupted {
		fmt.Fprintln(os.Stderr, "vestibule-sim: interrupted")
		return 130
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vestibule-sim:", err)
		return 1
	}
	if !s.OK() {
		return 1
	}
	return 0
}
