package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/gatekeys"
	"github.com/vestibule-dev/vestibule/internal/gateproxy"
	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// vestibule gate serve: the gating reverse proxy for a site with no proxy or CDN in front
// (docs/GATE.md, "The gating proxy"). The work is internal/gateproxy's; this reads the gate's
// settings and keys as the stack's gate has them, and serves.

// serveFlags are gate serve's own flags (the gate's are gateFlags and --room).
type serveFlags struct {
	upstream, listen, waitingRoom, api, keys string
	cert, key                                string // TLS
	reload                                   time.Duration
}

// bindGateServe registers the flags of gate serve.
func (c *command) bindGateServe(fs *flag.FlagSet) runFunc {
	fs.StringVar(&c.serve.upstream, "upstream", "", "the site the proxy guards: its http(s) URL")
	fs.StringVar(&c.serve.listen, "listen", defaultServeAddr, "the address the proxy serves on")
	fs.StringVar(&c.serve.cert, "tls-cert", "", "a PEM certificate (chain): serve HTTPS, as the session cookie needs off a loopback host (with --tls-key)")
	fs.StringVar(&c.serve.key, "tls-key", "", "the PEM key of --tls-cert")
	fs.StringVar(&c.room, "room", "", "the room that guards the whole site")
	fs.StringVar(&c.gate.routes, "routes", "", "rooms by path, comma-separated [HOST]/PREFIX=ROOM, e.g. /tickets=spring-tour,/merch=merch (the rest unprotected)")
	fs.StringVar(&c.gate.openPaths, "open-paths", "", "comma-separated paths that pass without a session, e.g. /robots.txt,/static/*")
	fs.StringVar(&c.serve.waitingRoom, "waiting-room", "", "the waiting room's URL (default: the stack's WaitingRoomUrl output, or --endpoint)")
	fs.StringVar(&c.serve.api, "api", "", "Vestibule's API, where /.vestibule/* go (default: the stack's ApiUrl output, or --endpoint)")
	fs.StringVar(&c.serve.keys, "keys", "", "the key folder of a local stack (make dev: "+config.DefaultKeyDir+"); with --stack the keys come from its entry-key secret")
	fs.StringVar(&c.gate.originSecretFile, "origin-secret-file", "", "a file holding the stack's origin secret (default with --stack: read from its OriginSecretArn)")
	fs.DurationVar(&c.serve.reload, "reload", time.Minute, "how often the keys are read again, so that a rotation reaches the proxy")
	return c.gateServe
}

// defaultServeAddr is where gate serve listens unless told.
const defaultServeAddr = "127.0.0.1:8090"

// serveSetup is what gate serve resolved from its flags: the proxy's options and where its keys
// come from.
type serveSetup struct {
	opts gateproxy.Options
	keys func(ctx context.Context) (gate.KeyRing, error)
	from string // where the keys come from, for the first line
}

// gateServe runs `vestibule gate serve --upstream URL (--room ROOM | --routes …)` until ctx ends.
func (c *command) gateServe(ctx context.Context, pos []string) error {
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("gate serve takes no arguments but flags (%q)", pos[0]))
	}
	setup, err := c.serveSetup(ctx)
	if err != nil {
		return err
	}
	ring, err := setup.keys(ctx)
	if err != nil {
		return fmt.Errorf("the gate's keys (%s): %w", setup.from, err)
	}
	setup.opts.Gate.Keys = ring
	if err := setup.opts.Gate.Validate(); err != nil {
		return usageError(err.Error())
	}
	p, err := gateproxy.New(setup.opts)
	if err != nil {
		return usageError(err.Error())
	}
	if (c.serve.cert == "") != (c.serve.key == "") {
		return usageError("gate serve takes --tls-cert and --tls-key together")
	}
	ln, err := net.Listen("tcp", c.serve.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: setup.opts.ErrorLog}
	scheme := "http"
	done := make(chan error, 1)
	if c.serve.cert != "" {
		scheme = "https"
		go func() { done <- srv.ServeTLS(ln, c.serve.cert, c.serve.key) }()
	} else {
		go func() { done <- srv.Serve(ln) }()
	}
	c.out.Printf("vestibule gate serve: %s://%s → %s\n", scheme, ln.Addr(), setup.opts.Upstream)
	c.out.Printf("  %s, the waiting room %s, /.vestibule/* to %s, keys from %s\n",
		guarded(setup.opts.Gate), setup.opts.Gate.WaitingRoomURL, setup.opts.API, setup.from)
	if err := c.reloadKeys(ctx, p, setup, ring, done); err != nil {
		return err // the server stopped on its own: a certificate it cannot read
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shut)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// reloadKeys reads the keys every --reload until ctx ends, and gives the proxy a ring that
// changed; a failed read keeps the ring it has. It returns the server's error when the server
// stops first.
func (c *command) reloadKeys(ctx context.Context, p *gateproxy.Proxy, setup serveSetup, ring gate.KeyRing, done <-chan error) error {
	if c.serve.reload <= 0 {
		c.serve.reload = time.Minute
	}
	tick := time.NewTicker(c.serve.reload)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			return err
		case <-tick.C:
		}
		next, err := setup.keys(ctx)
		switch {
		case err != nil:
			setup.opts.ErrorLog.Printf("gate serve: reading the keys again (%s): %v; keeping the ones it has", setup.from, err)
		case next.Current.ID != ring.Current.ID || next.Previous.ID != ring.Previous.ID:
			if err := p.SetKeys(next); err != nil {
				setup.opts.ErrorLog.Printf("gate serve: the new keys: %v; keeping the ones it has", err)
				continue
			}
			ring = next
			setup.opts.ErrorLog.Printf("gate serve: new keys, current %s", ring.Current.ID)
		}
	}
}

// guarded says which rooms guard what.
func guarded(g gate.Config) string {
	if len(g.Routes) == 0 {
		return "room " + g.Room + " on every path"
	}
	var parts []string
	for _, r := range g.Routes {
		parts = append(parts, r.Host+r.Prefix+" → "+r.Room)
	}
	return "rooms by path: " + strings.Join(parts, ", ")
}

// serveSetup resolves the flags: the gate's settings, then the waiting room, the API and the
// keys from the stack (--stack) or a local stack (--endpoint, --keys).
func (c *command) serveSetup(ctx context.Context) (serveSetup, error) {
	var s serveSetup
	s.opts.ErrorLog = log.New(c.stderr, "", log.LstdFlags)
	if c.serve.upstream == "" {
		return s, usageError("gate serve needs --upstream URL: the site it guards")
	}
	up, err := url.Parse(c.serve.upstream)
	if err != nil {
		return s, usageError("--upstream: " + err.Error())
	}
	s.opts.Upstream = up
	s.opts.Gate.Room = c.room
	if s.opts.Gate.Routes, err = gate.ParseRoutes(c.gate.routes); err != nil {
		return s, usageError(err.Error())
	}
	if c.room == "" && len(s.opts.Gate.Routes) == 0 {
		return s, usageError("gate serve needs --room ROOM or --routes /PREFIX=ROOM,…")
	}
	for p := range strings.SplitSeq(c.gate.openPaths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			s.opts.Gate.OpenPaths = append(s.opts.Gate.OpenPaths, p)
		}
	}
	if c.g.target.Stack != "" {
		err = c.serveFromStack(ctx, &s)
	} else {
		err = c.serveLocal(&s)
	}
	if err != nil {
		return s, err
	}
	if s.opts.API, err = url.Parse(c.serve.api); err != nil {
		return s, usageError("--api: " + err.Error())
	}
	s.opts.Gate.WaitingRoomURL = c.serve.waitingRoom
	return s, nil
}

// serveLocal takes the waiting room and the API from --endpoint (a local stack) unless given,
// and the keys from the local key folder.
func (c *command) serveLocal(s *serveSetup) error {
	end := strings.TrimSuffix(c.g.target.Endpoint, "/")
	if end == "" && (c.serve.api == "" || c.serve.waitingRoom == "") {
		return usageError("gate serve needs --stack NAME, or --endpoint URL (a local stack), or --api and --waiting-room")
	}
	if c.serve.api == "" {
		c.serve.api = end
	}
	if c.serve.waitingRoom == "" {
		c.serve.waitingRoom = end + "/"
	}
	dir := c.serve.keys
	if dir == "" {
		dir = os.Getenv(config.EnvKeyDir)
	}
	if dir == "" {
		dir = config.DefaultKeyDir
	}
	s.from = dir
	s.keys = func(context.Context) (gate.KeyRing, error) {
		// The folder must be the stack's: keys made here would sign nothing it verifies.
		if _, err := os.Stat(filepath.Join(dir, token.LocalEntryFile)); err != nil {
			return gate.KeyRing{}, fmt.Errorf("no %s in %s: --keys names the key folder of the stack (make dev: %s)", token.LocalEntryFile, dir, config.DefaultKeyDir)
		}
		k, err := token.LoadLocal(dir)
		if err != nil {
			return gate.KeyRing{}, err
		}
		return k.GateKeys()
	}
	return nil
}

// serveFromStack reads the stack's outputs (WaitingRoomUrl, ApiUrl, EntryKeySecretArn,
// OriginSecretArn) as gate attach does: the keys from the entry-key secret, the origin secret
// from its secret or --origin-secret-file.
func (c *command) serveFromStack(ctx context.Context, s *serveSetup) error {
	if c.serve.keys != "" {
		return usageError("gate serve takes --keys (a local stack's folder) or --stack, not both")
	}
	cl, err := newGateAWS(ctx, c.g)
	if err != nil {
		return err
	}
	outputs, err := c.gateOutputs(ctx, cl)
	if err != nil {
		return err
	}
	if c.serve.waitingRoom == "" {
		c.serve.waitingRoom = outputs[outWaitingRoomURL]
	}
	if c.serve.api == "" {
		c.serve.api = outputs[operator.ApiURLOutput]
	}
	arn := outputs[outEntrySecretARN]
	s.from = "the stack's entry-key secret"
	s.keys = func(ctx context.Context) (gate.KeyRing, error) {
		k, err := gatekeys.Load(ctx, cl.secrets, arn)
		return k.Ring, err
	}
	if f := c.gate.originSecretFile; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		s.opts.OriginSecret = strings.TrimSpace(string(b))
		return nil
	}
	origin := outputs[outOriginSecret]
	v, err := cl.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &origin})
	if err != nil {
		return fmt.Errorf("the origin secret: %w (or pass --origin-secret-file)", err)
	}
	s.opts.OriginSecret = aws.ToString(v.SecretString)
	return nil
}
