package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/static"
)

const defaultConsolePort = 8484

func (c *command) console(ctx context.Context, pos []string) error {
	if len(pos) != 0 {
		return usageError("console takes no arguments")
	}
	if c.port < 0 || c.port > 65535 {
		return usageError("--port must be 0..65535")
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	// One read first, so a wrong target or a missing permission shows here
	// rather than as an empty page.
	if _, err := cl.ListRooms(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.port))
	if err != nil {
		return fmt.Errorf("listening on 127.0.0.1:%d: %w (pick another with --port)", c.port, err)
	}
	// A secret of this run, in the address printed below: other users of this
	// machine can reach 127.0.0.1 too, but not the operator's terminal.
	secret := operator.NewConsoleSecret()
	srv := &http.Server{Handler: operator.Console(cl, static.Console, secret), ReadHeaderTimeout: 10 * time.Second}
	// A browser opens connections it has not sent a request on yet
	// (preconnects); Shutdown counts them as busy for seconds, so they are
	// tracked here and closed when the console stops.
	var mu sync.Mutex
	fresh := map[net.Conn]bool{}
	stopping := false
	srv.ConnState = func(conn net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case st == http.StateNew && stopping:
			_ = conn.Close() // accepted as the console stops: nothing to say to it
		case st == http.StateNew:
			fresh[conn] = true
		default:
			delete(fresh, conn)
		}
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c.out.Printf("console: http://%s/?%s=%s (admin calls to %s, %s; the address carries this run's secret, keep it to yourself; Ctrl-C stops)\n",
		ln.Addr(), operator.ConsoleSecretParam, secret, cl.Endpoint, cl.Auth.Kind())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	return stopServer(srv, func() {
		mu.Lock()
		defer mu.Unlock()
		stopping = true
		for conn := range fresh {
			_ = conn.Close() // no request on it: nothing lost
		}
	})
}

// stopServer shuts srv down: it stops listening, closes what closeFresh
// closes (connections without a request), lets the requests under way finish
// for up to 3 s, then closes what is left. Ctrl-C is how a console ends, so
// none of that is a failure.
func stopServer(srv *http.Server, closeFresh func()) error {
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- srv.Shutdown(sctx) }()
	closeFresh()
	if err := <-res; errors.Is(err, context.DeadlineExceeded) {
		_ = srv.Close() // what is left after 3 s is cut off: Ctrl-C asked for it
	} else if err != nil {
		return err
	}
	return nil
}
