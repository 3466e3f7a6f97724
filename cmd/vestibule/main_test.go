package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func TestMain(m *testing.M) {
	code := redistest.Main(m)
	browsertest.Close()
	os.Exit(code)
}

const adminKey = "cli-test-admin-key-0123"

// stack starts a local stack on a real Redis of the test's own (the stack's
// admission loop ticks every room the server holds), serving the
// repository's static/ (the console among it).
func stack(t *testing.T) *localstack.Stack {
	t.Helper()
	s, _ := stackRedis(t)
	return s
}

// stackRedis is stack and a client of its Redis, for a test that reads or
// writes what the stack holds.
func stackRedis(t *testing.T) (*localstack.Stack, *redis.Client) {
	t.Helper()
	for _, k := range []string{"VESTIBULE_STACK", "VESTIBULE_ENDPOINT", "VESTIBULE_ADMIN_KEY"} {
		t.Setenv(k, "")
	}
	rdb := redistest.Own(t)
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL:     "redis://" + rdb.Options().Addr,
		StaticDir:    filepath.Join("..", "..", "static"),
		KeyDir:       t.TempDir(),
		AdminKey:     adminKey,
		TickInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rdb
}

// vestibule runs the command against the stack with its admin key.
func vestibule(t *testing.T, s *localstack.Stack, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb testkit.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = run(ctx, append(args, "--endpoint", s.URL(), "--admin-key", adminKey), &out, &errb)
	return out.String(), errb.String(), code
}

// newRoom creates a room of its own for a test (the Redis is shared).
func newRoom(t *testing.T, s *localstack.Stack, settings map[string]any) string {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	id := "cli-" + hex.EncodeToString(b)
	body := map[string]any{"originUrl": s.OriginURL() + "/", "maxActive": 5, "admitPerMinute": 60}
	for k, v := range settings {
		body[k] = v
	}
	if code, m := admin(t, s, "PUT", id, body); code != 200 {
		t.Fatalf("create %s: %d %v", id, code, m)
	}
	return id
}

// admin calls the admin API directly: what the tests check the command against.
func admin(t *testing.T, s *localstack.Stack, method, id string, body any) (int, map[string]any) {
	t.Helper()
	code, _, m := testkit.CallJSON(t, method, s.URL()+"/api/admin/rooms/"+id, adminKey, body)
	return code, m
}

func mode(t *testing.T, s *localstack.Stack, id string) string {
	t.Helper()
	code, m := admin(t, s, "GET", id, nil)
	if code != 200 {
		t.Fatalf("get %s: %d %v", id, code, m)
	}
	return m["config"].(map[string]any)["mode"].(string)
}

func enqueue(t *testing.T, s *localstack.Stack, id string, n int) {
	t.Helper()
	for range n {
		resp, err := http.Post(s.URL()+"/api/rooms/"+id+"/enqueue", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("enqueue: %d", resp.StatusCode)
		}
	}
}

func TestRooms(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, map[string]any{"mode": "paused"})
	enqueue(t, s, id, 3)

	t.Run("list", func(t *testing.T) {
		out, errs, code := vestibule(t, s, "rooms", "list")
		if code != 0 || !strings.Contains(out, "WAITING") || !strings.Contains(out, "demo") {
			t.Fatalf("%d %q %q", code, out, errs)
		}
		var line string
		for l := range strings.Lines(out) {
			if strings.Contains(l, id) {
				line = l
			}
		}
		if f := strings.Fields(line); len(f) < 8 || f[1] != "paused" || f[2] != "3" || f[5] != "5" || f[7] != "60" {
			t.Fatalf("row of %s: %q", id, line)
		}
		// Busiest first: the room with visitors before the idle demo room.
		if i, d := strings.Index(out, id), regexp.MustCompile(`(?m)^\s*demo\s`).FindStringIndex(out); i < 0 || d == nil || i > d[0] {
			t.Errorf("rooms are not ordered by activity:\n%s", out)
		}
		out, _, code = vestibule(t, s, "rooms", "list", "--json")
		var j struct {
			Rooms []struct {
				Room  string         `json:"room"`
				Stats map[string]any `json:"stats"`
			} `json:"rooms"`
		}
		if err := json.Unmarshal([]byte(out), &j); code != 0 || err != nil || len(j.Rooms) == 0 {
			t.Fatalf("--json: %d %v %q", code, err, out)
		}
		if strings.Contains(out, "originCredential") {
			t.Fatal("list --json shows origin credentials")
		}
	})

	t.Run("get", func(t *testing.T) {
		out, errs, code := vestibule(t, s, "rooms", "get", id)
		// A setting and its value, aligned in a column as wide as the longest setting's name.
		for _, want := range []string{`room  ` + regexp.QuoteMeta(id), `\n  maxActive +5\n`, `\n  mode +paused\n`, `waiting             3`, `active              0 / 5`} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("get lacks %q: %d %s %s", want, code, out, errs)
			}
		}
		if strings.Contains(out, "originCredential") {
			t.Error("get shows the origin credential without --credential")
		}
		out, _, _ = vestibule(t, s, "rooms", "get", id, "--credential")
		if !strings.Contains(out, "originCredential") {
			t.Errorf("get --credential: %s", out)
		}
		_, errs, code = vestibule(t, s, "rooms", "get", "no-such-room")
		if code != 1 || !strings.Contains(errs, `there is no room "no-such-room"`) || !strings.Contains(errs, "rooms list") {
			t.Errorf("unknown room: %d %q", code, errs)
		}
	})

	t.Run("set", func(t *testing.T) {
		out, errs, code := vestibule(t, s, "rooms", "set", id, "maxActive=500", "admitPerMinute=3000")
		if code != 0 || !strings.Contains(out, id+": maxActive 5 → 500") || !strings.Contains(out, id+": admitPerMinute 60 → 3000") {
			t.Fatalf("set: %d %q %q", code, out, errs)
		}
		_, m := admin(t, s, "GET", id, nil)
		if c := m["config"].(map[string]any); c["maxActive"] != float64(500) || c["admitPerMinute"] != float64(3000) || c["mode"] != "paused" {
			t.Fatalf("after set: %v", c)
		}
		// An unknown key is refused before anything is sent.
		_, errs, code = vestibule(t, s, "rooms", "set", id, "maxActiv=7")
		if code != 1 || !strings.Contains(errs, `unknown setting "maxActiv"`) || !strings.Contains(errs, "the settings are: maxActive, admitPerMinute") {
			t.Fatalf("unknown key: %d %q", code, errs)
		}
		_, errs, code = vestibule(t, s, "rooms", "set", id, "maxActive=lots")
		if code != 1 || !strings.Contains(errs, "must be a whole number") {
			t.Fatalf("wrong type: %d %q", code, errs)
		}
		// Out of range: the deployment refuses it, and the room keeps its value.
		_, errs, code = vestibule(t, s, "rooms", "set", id, "maxActive=0")
		if code != 1 || !strings.Contains(errs, "invalid maxActive: 0 is outside 1..1000000") {
			t.Fatalf("out of range: %d %q", code, errs)
		}
		if _, m := admin(t, s, "GET", id, nil); m["config"].(map[string]any)["maxActive"] != float64(500) {
			t.Fatalf("a refused value changed the room: %v", m)
		}
		// A new room needs --create.
		fresh := id + "-new"
		_, errs, code = vestibule(t, s, "rooms", "set", fresh, "maxActive=3")
		if code != 1 || !strings.Contains(errs, "--create") {
			t.Fatalf("set on a missing room: %d %q", code, errs)
		}
		if code, _ := admin(t, s, "GET", fresh, nil); code != 404 {
			t.Fatalf("set without --create made the room: %d", code)
		}
		out, errs, code = vestibule(t, s, "rooms", "set", fresh, "--create", "maxActive=3", "originUrl="+s.OriginURL()+"/")
		if code != 0 || !strings.Contains(out, fresh+": created") || !strings.Contains(out, fresh+": maxActive 3\n") || strings.Contains(out, "0 → ") {
			t.Fatalf("--create: %d %q %q", code, out, errs)
		}
		// Usage mistakes exit 2.
		if _, _, code := vestibule(t, s, "rooms", "set", id); code != 2 {
			t.Fatalf("set without pairs: %d", code)
		}
	})

	t.Run("modes", func(t *testing.T) {
		for _, c := range []struct{ verb, want string }{
			{"resume", "queue"}, {"pause", "paused"}, {"resume", "queue"}, {"close", "closed"}, {"open", "queue"},
		} {
			out, errs, code := vestibule(t, s, "rooms", c.verb, id)
			if code != 0 || !strings.Contains(out, "mode ") || !strings.HasSuffix(strings.TrimSpace(out), c.want) {
				t.Fatalf("%s: %d %q %q", c.verb, code, out, errs)
			}
			if got := mode(t, s, id); got != c.want {
				t.Fatalf("%s: mode %s, want %s", c.verb, got, c.want)
			}
		}
		// Pausing a typo does not create a room.
		_, errs, code := vestibule(t, s, "rooms", "pause", id+"-typo")
		if code != 1 || !strings.Contains(errs, "there is no room") {
			t.Fatalf("pause unknown: %d %q", code, errs)
		}
		if code, _ := admin(t, s, "GET", id+"-typo", nil); code != 404 {
			t.Fatalf("pause created a room: %d", code)
		}
	})

	t.Run("drain", func(t *testing.T) {
		// An open room is refused; a closed one is drained (the other tests
		// of this room leave some visitors waiting).
		_, errs, code := vestibule(t, s, "rooms", "drain", id)
		if code != 1 || !strings.Contains(errs, "only a closed room can be drained") {
			t.Fatalf("drain open room: %d %q", code, errs)
		}
		if _, errs, code := vestibule(t, s, "rooms", "close", id); code != 0 {
			t.Fatalf("close: %d %q", code, errs)
		}
		out, errs, code := vestibule(t, s, "rooms", "drain", id)
		if code != 0 || !strings.HasPrefix(out, id+": drained, ") || !strings.Contains(out, " removed from the queue") {
			t.Fatalf("drain: %d %q %q", code, out, errs)
		}
		if _, errs, code := vestibule(t, s, "rooms", "open", id); code != 0 {
			t.Fatalf("open: %d %q", code, errs)
		}
	})

	t.Run("wrong key", func(t *testing.T) {
		var out, errb testkit.Buffer
		code := run(context.Background(), []string{"rooms", "list", "--endpoint", s.URL(), "--admin-key", "not-the-key-at-all"}, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "admin key was refused") {
			t.Fatalf("%d %q", code, errb.String())
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{{}, {"rooms"}, {"rooms", "frobnicate"}, {"launch"}, {"rooms", "get"}, {"rooms", "list", "--bogus"}} {
			var out, errb testkit.Buffer
			if code := run(context.Background(), args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "vestibule help") {
				t.Errorf("%q: %d %q", args, code, errb.String())
			}
		}
		var out, errb testkit.Buffer
		if code := run(context.Background(), []string{"help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "vestibule watch ROOM") {
			t.Errorf("help: %d %q", code, out.String())
		}
	})
}

// watch refreshes on its interval and draws each figure with a sparkline
// of the values it has seen.
func TestWatch(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, map[string]any{"mode": "paused"})
	enqueue(t, s, id, 2)
	done := make(chan struct{})
	go func() { // a visitor more while the watch runs
		defer close(done)
		time.Sleep(250 * time.Millisecond)
		enqueue(t, s, id, 1)
	}()
	out, errs, code := vestibule(t, s, "watch", id, "--interval", "200ms", "--count", "4")
	<-done
	if code != 0 {
		t.Fatalf("%d %q", code, errs)
	}
	frames := strings.Split(out, "vestibule watch "+id)
	if len(frames) != 5 { // "" before the first
		t.Fatalf("%d frames:\n%s", len(frames)-1, out)
	}
	first, last := frames[1], frames[4]
	for _, want := range []string{"mode paused", "maxActive 5", "waiting", "active / maxActive", "admitted last min"} {
		if !strings.Contains(last, want) {
			t.Errorf("frame lacks %q:\n%s", want, last)
		}
	}
	row := func(frame string) []string {
		for l := range strings.Lines(frame) {
			if f := strings.Fields(l); len(f) > 0 && f[0] == "waiting" {
				return f
			}
		}
		return nil
	}
	if r := row(first); len(r) != 3 || r[1] != "2" || r[2] != "█" {
		t.Errorf("first frame's waiting row: %q", r)
	}
	if r := row(last); len(r) != 3 || r[1] != "3" || len([]rune(r[2])) != 4 || !strings.HasSuffix(r[2], "█") {
		t.Errorf("last frame's waiting row: %q", r)
	}
	// A wrong room is an error at once, not a screen of failures.
	_, errs, code = vestibule(t, s, "watch", "no-such-room", "--interval", "200ms")
	if code != 1 || !strings.Contains(errs, "there is no room") {
		t.Fatalf("watch unknown: %d %q", code, errs)
	}
}

func TestCommandFirst(t *testing.T) {
	for in, want := range map[string]string{
		"--stack S rooms list":                "rooms list --stack S",
		"rooms list --stack S":                "rooms list --stack S",
		"--json --endpoint=E rooms get demo":  "rooms get --json --endpoint=E demo",
		"--endpoint E watch demo --count 2":   "watch --endpoint E demo --count 2",
		"rooms set demo maxActive=5 --create": "rooms set demo maxActive=5 --create",
		"--region eu-west-1 console --port 0": "console --region eu-west-1 --port 0",
	} {
		if got := strings.Join(commandFirst(strings.Fields(in)), " "); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// watch over a pre-queue: the opening time and its countdown, the visitors
// pre-queued, the lottery's commitment; once open, the published seed. The
// capacity row counts admitted visitors with the active ones, and says so.
func TestWatchPrequeue(t *testing.T) {
	s := stack(t)
	opens := time.Now().Add(2 * time.Second).UTC()
	id := newRoom(t, s, map[string]any{"opensAt": opens.Format(time.RFC3339Nano), "maxActive": 2})
	enqueue(t, s, id, 3)
	out, errs, code := vestibule(t, s, "watch", id, "--interval", "400ms", "--count", "9")
	if code != 0 {
		t.Fatalf("%d %q", code, errs)
	}
	frames := strings.Split(out, "vestibule watch "+id)
	first, last := frames[1], frames[len(frames)-1]
	if !regexp.MustCompile(`opens [0-9:]+ \S+ \(in [12]s\)`).MatchString(first) {
		t.Errorf("first frame lacks the countdown:\n%s", first)
	}
	for _, want := range []string{"pre-queue: opens " + opens.Local().Format("15:04:05"), "3 pre-queued", "draw committed"} {
		if !strings.Contains(first, want) {
			t.Errorf("first frame lacks %q:\n%s", want, first)
		}
	}
	for _, want := range []string{"opened " + opens.Local().Format("15:04:05"), "draw seed published", "active (at the origin)", "admitted (on their way)", "admitted + active / maxActive"} {
		if !strings.Contains(last, want) {
			t.Errorf("last frame lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(last, "active / maxActive") && !strings.Contains(last, "admitted + active / maxActive") {
		t.Errorf("the capacity row is labelled as active alone:\n%s", last)
	}
	if !strings.Contains(last, "2 / 2 (100%)") {
		t.Errorf("capacity row: want 2 / 2 (100%%):\n%s", last)
	}
}
