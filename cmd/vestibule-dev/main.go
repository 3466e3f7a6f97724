// Command vestibule-dev runs the whole product locally (make dev): the waiting
// page and the API on PORT (default 8080), the demo booking origin on PORT+1,
// the admit ticks, and an embedded Redis unless REDIS_URL names a real one.
// It prints the URLs and the admin key, and stops cleanly on Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/vestibule-dev/vestibule/internal/localstack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vestibule-dev:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run() error {
	port := flag.Int("port", 0, "waiting room and API port (env PORT, default 8080); the demo origin uses port+1")
	redisURL := flag.String("redis", os.Getenv("REDIS_URL"), "Redis URL, redis:// or rediss:// (env REDIS_URL; empty: embedded Redis)")
	cluster := flag.Bool("redis-cluster", os.Getenv("REDIS_CLUSTER") == "true", "the Redis URL is a cluster seed (env REDIS_CLUSTER=true)")
	caFile := flag.String("redis-ca", os.Getenv("REDIS_CA_FILE"), "PEM CA file for rediss:// (env REDIS_CA_FILE)")
	adminKey := flag.String("admin-key", os.Getenv("VESTIBULE_ADMIN_KEY"), "admin bearer key (env VESTIBULE_ADMIN_KEY; empty: random)")
	static := flag.String("static", "static", "folder of the waiting page")
	keys := flag.String("keys", envOr("VESTIBULE_KEY_DIR", ".vestibule/keys"), "folder of the local token keys (created on first run)")
	tick := flag.Duration("tick", time.Second, "admission tick interval")
	flag.Parse()

	if *port == 0 {
		p, err := strconv.Atoi(envOr("PORT", "8080"))
		if err != nil || p <= 0 || p >= 65535 {
			return fmt.Errorf("PORT=%q is not a port number", os.Getenv("PORT"))
		}
		*port = p
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(envOr("LOG_LEVEL", "info"))); err != nil {
		return fmt.Errorf("LOG_LEVEL: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := localstack.Start(ctx, localstack.Options{
		RedisURL: *redisURL, RedisCluster: *cluster, RedisCAFile: *caFile,
		Addr: fmt.Sprintf(":%d", *port), OriginAddr: fmt.Sprintf(":%d", *port+1),
		StaticDir: *static, KeyDir: *keys, AdminKey: *adminKey, TickInterval: *tick, Logger: log,
	})
	if err != nil {
		return err
	}
	redis := "embedded (miniredis)"
	if *redisURL != "" {
		redis = "REDIS_URL"
	}
	fmt.Fprintf(os.Stderr, `
Vestibule is running (Redis: %s).
  waiting room   http://localhost:%d/?room=demo
  admin page     http://localhost:%d/admin.html
  API            http://localhost:%d/api/
  demo origin    http://localhost:%d/
  admin key      %s
Press Ctrl-C to stop.

`, redis, *port, *port, *port, *port+1, s.AdminKey())
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping…")
	return s.Close()
}
