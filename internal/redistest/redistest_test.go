package redistest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"testing"
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
			if err := FlushAll(ctx, c); err != nil {
				t.Fatal(err)
			}
			if n, _ := c.Exists(ctx, key).Result(); n != 0 {
				t.Fatalf("key survived FlushAll")
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
