package localstack_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// A Redis kept from a run whose demo event allowed no extension, with a
// live hold on it: the stack starts, the event keeps that definition (an
// event in use is never redefined), and a warning says so and what to do.
// On a fresh Redis the demo event allows extensions and nothing is warned.
func TestDemoEventKeptWarns(t *testing.T) {
	srv, err := redistest.Start()
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
	t.Cleanup(srv.Stop)
	start := func(logs *testkit.Buffer) *localstack.Stack {
		t.Helper()
		s, err := localstack.Start(context.Background(), localstack.Options{
			RedisURL: "redis://" + srv.Addr, StaticDir: t.TempDir(), KeyDir: filepath.Join(t.TempDir(), "keys"),
			Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var fresh testkit.Buffer
	s := start(&fresh)
	_, _, ev := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/events/"+localstack.DemoEventID, s.AdminKey(), nil)
	s.Close()
	if ev["maxHoldExtensions"] != float64(localstack.DemoMaxHoldExtensions) || strings.Contains(fresh.String(), "earlier definition") {
		t.Fatalf("fresh Redis: the demo event %v; logs %s", ev, fresh.String())
	}

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	bk := bookingdb.New(rdb)
	// An earlier run's definition, and a hold that outlives the restart.
	if err := bk.Define(ctx, localstack.DemoEventID, booking.Inventory{Seats: localstack.DemoSeats, HoldTTL: time.Hour, SessionLimit: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := bk.Hold(ctx, localstack.DemoEventID, "v:1", booking.Request{Seats: []string{"A1"}}); err != nil {
		t.Fatal(err)
	}
	var kept testkit.Buffer
	s = start(&kept)
	defer s.Close()
	_, _, ev = testkit.CallJSON(t, "GET", s.URL()+"/api/admin/events/"+localstack.DemoEventID, s.AdminKey(), nil)
	if ev["maxHoldExtensions"] != float64(0) || ev["holdTTLSeconds"] != float64(3600) {
		t.Errorf("the event in use was redefined: %v", ev)
	}
	if logs := kept.String(); !strings.Contains(logs, `"level":"WARN","msg":"the demo event keeps an earlier definition`) ||
		!strings.Contains(logs, "vestibule events orders demo-api") || !strings.Contains(logs, `"maxHoldExtensions":0`) {
		t.Errorf("no warning of the kept definition:\n%s", logs)
	}
}
