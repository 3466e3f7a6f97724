package redistest

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestServersAnswer(t *testing.T) {
	ctx := context.Background()
	for name, c := range Clients(t) {
		t.Run(name, func(t *testing.T) {
			key := "{" + Room(t) + "}:k"
			if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
				t.Fatalf("GET = %q, %v; want v", got, err)
			}
		})
	}
}

// A server of the test's own is started whatever REDIS_URL and
// REDIS_CLUSTER_ADDRS say (a test that flushes it must not flush the one
// the run shares), FlushAll empties it, and it stops when the test ends.
func TestOwnIgnoresSharedServers(t *testing.T) {
	ctx := context.Background()
	const nowhere = "127.0.0.1:1"
	t.Setenv("REDIS_URL", "redis://"+nowhere)
	t.Setenv("REDIS_CLUSTER_ADDRS", nowhere)
	var addrs []string
	t.Run("own", func(t *testing.T) {
		OwnEach(t, func(t *testing.T, c redis.UniversalClient) {
			key := "{" + Room(t) + "}:k"
			if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
				t.Fatalf("SET on a server of its own: %v", err)
			}
			if err := FlushAll(ctx, c); err != nil {
				t.Fatal(err)
			}
			if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Fatalf("EXISTS after FlushAll: %d, %v", n, err)
			}
			switch c := c.(type) {
			case *redis.Client:
				addrs = append(addrs, c.Options().Addr)
			case *redis.ClusterClient:
				addrs = append(addrs, c.Options().Addrs...)
			}
		})
	})
	if len(addrs) != 4 || slices.Contains(addrs, nowhere) {
		t.Fatalf("servers of its own: %v, want 4 started ones", addrs)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			_ = c.Close()
			t.Errorf("%s still answers after its test ended", a)
		}
	}
}

// FlushAll refuses the servers other tests share, started here or not.
func TestFlushAllRefusesSharedServers(t *testing.T) {
	ctx := context.Background()
	for name, c := range Clients(t) {
		t.Run(name, func(t *testing.T) {
			key := "{" + Room(t) + "}:k"
			if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := FlushAll(ctx, c); !errors.Is(err, errShared) {
				t.Fatalf("FlushAll of a shared server: %v, want refused", err)
			}
			if n, err := c.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Fatalf("EXISTS after the refused FlushAll: %d, %v", n, err)
			}
		})
	}
}

func TestRoomIsValidID(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	t.Run("a/b c#(d)", func(t *testing.T) {
		if r := Room(t); !re.MatchString(r) {
			t.Fatalf("Room() = %q, not a valid room id", r)
		}
	})
}

// A server whose port another process's server took answers as that one:
// the start must tell (INFO's process_id), or a test binary would run on
// another binary's Redis, which flushes and stops it under the tests' feet
// when two make test runs share the machine.
func TestStartRefusesAnotherProcesssServer(t *testing.T) {
	other, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Stop)
	// A process of ours that is not the server on that port.
	s := &Server{Addr: other.Addr, Dir: t.TempDir(), Args: []string{"--port", "0"}}
	s.cmd = exec.Command("sleep", "30")
	if err := s.cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	if err := s.ours(); !errors.Is(err, errPortTaken) {
		t.Fatalf("another process's server taken for ours: %v", err)
	}
	if err := other.ours(); err != nil {
		t.Fatalf("a server of ours: %v", err)
	}
}

// A port a stopped cluster node held can be the next server's: the new one
// must start empty, not with the old node's slots from its files.
func TestAServerOnAFreedPortStartsEmpty(t *testing.T) {
	base, err := dir()
	if err != nil {
		t.Fatal(err)
	}
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	node := []string{"cluster-enabled", "yes", "cluster-config-file", "nodes.conf"}
	ctx := context.Background()
	addSlots := func(s *Server) error {
		c := redis.NewClient(&redis.Options{Addr: s.Addr})
		defer func() { _ = c.Close() }()
		return c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 99).Err()
	}
	mu.Lock()
	first, err := startOn(base, port, node)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := addSlots(first); err != nil {
		t.Fatal(err)
	}
	first.Stop()
	mu.Lock()
	second, err := startOn(base, port, node)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	if err := addSlots(second); err != nil {
		t.Errorf("a new node on the port of a stopped one: %v", err)
	}
}
