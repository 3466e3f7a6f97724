// Command vestibule-dev runs the whole product locally (make dev): the waiting
// page and the API on PORT (default 8080), the demo site behind the edge gate
// on PORT+1, the hand-integration example origin on PORT+2, the demo site
// through the gating proxy on PORT+3 (and through nginx on PORT+4, with the
// snippet it prints; the plain site, nginx's upstream, on PORT+5), the admit
// ticks, and an embedded Redis unless REDIS_URL names a real one.
// It prints the URLs and the admin key, and stops cleanly on Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/vestibule-dev/vestibule/internal/config"
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
	host := flag.String("host", envOr("HOST", "127.0.0.1"), "address to listen on (env HOST); 0.0.0.0 exposes the stack and its admin key to the network")
	port := flag.Int("port", 0, "waiting room and API port (env PORT, default 8080); the demo site uses port+1, the hand-integration example port+2, "+
		"the gating proxy port+3, nginx's snippet port+4, the plain demo site port+5")
	snippet := flag.String("nginx-snippet", "", "also write the nginx snippet to this file (e.g. /etc/nginx/conf.d/vestibule-demo.conf)")
	redisURL := flag.String("redis", os.Getenv(config.EnvRedisURL), "Redis URL, redis:// or rediss:// (env "+config.EnvRedisURL+"; empty: embedded Redis)")
	clusterEnv, err := config.ParseBool(envOr(config.EnvRedisCluster, "false"))
	if err != nil {
		return fmt.Errorf("%s=%q is not true or false", config.EnvRedisCluster, os.Getenv(config.EnvRedisCluster))
	}
	cluster := flag.Bool("redis-cluster", clusterEnv, "the Redis URL is a cluster seed (env "+config.EnvRedisCluster+"=true)")
	caFile := flag.String("redis-ca", os.Getenv(config.EnvRedisCAFile), "PEM CA file for rediss:// (env "+config.EnvRedisCAFile+")")
	adminKey := flag.String("admin-key", os.Getenv(config.EnvAdminKey), "admin bearer key (env "+config.EnvAdminKey+"; empty: the one kept in .vestibule/admin-key, made on first run)")
	static := flag.String("static", "static", "folder of the waiting page")
	keys := flag.String("keys", envOr(config.EnvKeyDir, config.DefaultKeyDir), "folder of the local token keys (created on first run)")
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
	if err := level.UnmarshalText([]byte(envOr(config.EnvLogLevel, "info"))); err != nil {
		return fmt.Errorf("%s: %w", config.EnvLogLevel, err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := localstack.Start(ctx, localstack.Options{
		RedisURL: *redisURL, RedisCluster: *cluster, RedisCAFile: *caFile,
		Addr: net.JoinHostPort(*host, strconv.Itoa(*port)), OriginAddr: net.JoinHostPort(*host, strconv.Itoa(*port+1)),
		ManualOriginAddr: net.JoinHostPort(*host, strconv.Itoa(*port+2)),
		Orders:           os.Stdout, Events: os.Stdout, StaticDir: *static, KeyDir: *keys, AdminKey: *adminKey, TickInterval: *tick, Logger: log,
		DoorOptions: localstack.DoorOptions{
			ProxyAddr: net.JoinHostPort(*host, strconv.Itoa(*port+3)), NginxAddr: net.JoinHostPort(*host, strconv.Itoa(*port+4)),
			PlainSiteAddr: net.JoinHostPort(*host, strconv.Itoa(*port+5)),
		},
	})
	if err != nil {
		return err
	}
	if *snippet != "" && s.NginxSnippet() != "" {
		if err := os.WriteFile(*snippet, []byte(s.NginxSnippet()), 0o644); err != nil {
			_ = s.Close()
			return err
		}
	}
	keyFile := filepath.Join(filepath.Dir(*keys), localstack.AdminKeyFile)
	if *adminKey != "" {
		keyFile = config.EnvAdminKey
	}
	redis := "embedded (miniredis)"
	if *redisURL != "" {
		redis = "REDIS_URL"
	}
	fmt.Fprintf(os.Stderr, `
Vestibule is running (Redis: %s).
  demo site      %s/  (behind the edge gate: sends you to the waiting room of room demo)
  waiting room   %s/?room=demo
  by hand        %s/?room=demo-api  (its origin %s/ redeems the token with POST /api/consume)
  console        %s/console
  outbox         %s%s  (the notices of visitors' turns, push and email: nothing leaves this machine)
  API            %s/api/
  admin key      %s  (kept in %s: the same at every start)
For the vestibule command:
  export VESTIBULE_ENDPOINT=%s VESTIBULE_ADMIN_KEY=%s
`, redis, s.OriginURL(), s.URL(), s.URL(), s.ManualOriginURL(), s.URL(), s.URL(), localstack.OutboxPath, s.URL(), s.AdminKey(), keyFile,
		s.URL(), s.AdminKey())
	fmt.Fprint(os.Stderr, doors(s, *snippet))
	fmt.Fprint(os.Stderr, s.OIDCDemo())
	fmt.Fprint(os.Stderr, "Press Ctrl-C to stop.\n\n")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping…")
	return s.Close()
}

// snippetMark is the line above and below the printed nginx snippet.
const snippetMark = "----- 8< ----- nginx snippet"

// doors says where the demo site answers through each door (docs/GATE.md,
// "Doors"), and prints the nginx snippet of the forward-auth door, between
// two snippetMark lines, exactly as nginx takes it (or says where it was
// written).
func doors(s *localstack.Stack, snippetFile string) string {
	out := fmt.Sprintf(`The demo site through each door (docs/GATE.md, "Doors"), each its own room:
  Go middleware        %s/  (room demo: gate.Middleware, as above)
  gating proxy         %s/  (room demo-proxy: vestibule gate serve's proxy, in front of %s/)
`, s.OriginURL(), s.ProxyURL(), s.PlainSiteURL())
	if s.NginxSnippet() == "" {
		return out
	}
	out += fmt.Sprintf("  nginx forward-auth   %s/  (room demo-nginx, once nginx runs the snippet)\n", s.NginxURL())
	if snippetFile != "" {
		return out + "  The nginx snippet is in " + snippetFile + ": include it in nginx's http block and reload nginx.\n"
	}
	return out + `  Save the snippet in nginx's http block (Debian: /etc/nginx/conf.d/vestibule-demo.conf) and
  reload nginx (nginx -s reload); -nginx-snippet FILE writes it there instead of printing it.
` + snippetMark + "\n" + s.NginxSnippet() + snippetMark + "\n"
}
