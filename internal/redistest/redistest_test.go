package redistest

import (
	"context"
	"os"
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
