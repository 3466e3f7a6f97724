package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
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
	srv := &http.Server{Handler: operator.Console(cl, static.Console), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(c.stdout, "console: http://%s/ (admin calls to %s, %s; Ctrl-C stops)\n", ln.Addr(), cl.Endpoint, cl.Auth.Kind())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
