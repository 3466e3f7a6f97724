package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// stackAt is stack with the clock clk: a test moves it past a room's opening
// instead of waiting for the wall clock to (the machine's speed decides
// nothing).
func stackAt(t *testing.T, clk *testkit.Clock) *localstack.Stack {
	t.Helper()
	s, _ := stackAtRedis(t, clk)
	return s
}

// stackAtRedis is stackAt and a client of its Redis, for a test that reads
// or writes what the stack holds.
func stackAtRedis(t *testing.T, clk *testkit.Clock) (*localstack.Stack, *redis.Client) {
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
		Clock:        clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rdb
}

// verify-draw checks a pre-queue ticket against the room's published seed
// and commitment, and catches a ticket whose draw does not follow from them.
func TestVerifyDraw(t *testing.T) {
	clk := testkit.EngineClock()
	s := stackAt(t, clk)
	opens := clk.Now().Add(time.Hour)
	id := newRoom(t, s, map[string]any{"opensAt": opens.Format(time.RFC3339Nano)})
	resp, err := http.Post(s.URL()+"/api/rooms/"+id+"/enqueue", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var joined struct{ Ticket, State string }
	json.NewDecoder(resp.Body).Decode(&joined)
	resp.Body.Close()
	if joined.State != "prequeue" || joined.Ticket == "" {
		t.Fatalf("join: %+v", joined)
	}
	_, errs, code := vestibule(t, s, "verify-draw", "--room", id, "--ticket", joined.Ticket)
	if code != 1 || !strings.Contains(errs, "has not opened yet") {
		t.Fatalf("before opening: %d %q", code, errs)
	}
	clk.Set(opens.Add(time.Second))
	out, errs, code := vestibule(t, s, "verify-draw", "--room", id, "--ticket", joined.Ticket)
	if code != 0 || !strings.Contains(out, "ok: seed") || !strings.Contains(out, "ok: visitor") {
		t.Fatalf("after opening: %d %q %q", code, out, errs)
	}
	clk.Advance(time.Second) // the next poll as the visitor is not too soon
	// Public data only: no admin key, no AWS settings or credentials at all;
	// it prints the place as well as the draw.
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_PROFILE", "")
	public := func(args ...string) (string, string, int) {
		var out, errb testkit.Buffer
		code := run(context.Background(), append(args, "--endpoint", s.URL()), &out, &errb)
		return out.String(), errb.String(), code
	}
	out, errs, code = public("verify-draw", "--room", id, "--ticket", joined.Ticket)
	if code != 0 || !strings.Contains(out, "ok: visitor") || !regexp.MustCompile(`place: (admitted|\d+ of \d+ waiting now)`).MatchString(out) ||
		!strings.Contains(out, "of the pre-queue drew lower") {
		t.Fatalf("without credentials: %d %q %q", code, out, errs)
	}
	// The visitor reference the page shows: the seed's draw for it.
	tk0, _ := token.PeekTicket(joined.Ticket)
	seed := statusSeed(t, s, id)
	want := room.DrawOf(seed, tk0.Visitor)
	out, errs, code = public("verify-draw", "--room", id, "--visitor", tk0.Visitor)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("the seed gives draw %v (%.6f)", want, want)) {
		t.Fatalf("--visitor: %d %q %q", code, out, errs)
	}
	// A ticket that shows a draw in plain (format 2 from before format 3)
	// other than the seed's does not verify.
	b, err := base64.RawURLEncoding.DecodeString(joined.Ticket)
	if err != nil || len(b) < 17 || b[0] != 3 {
		t.Fatalf("ticket %q is not format 3: %v", joined.Ticket, err)
	}
	b[0] = 2
	binary.BigEndian.PutUint64(b[9:17], math.Float64bits(0.000001))
	forged := base64.RawURLEncoding.EncodeToString(b)
	_, errs, code = vestibule(t, s, "verify-draw", "--room", id, "--ticket", forged)
	if code != 1 || !strings.Contains(errs, "MISMATCH") {
		t.Fatalf("forged ticket: %d %q", code, errs)
	}
	// A format 1 (JWT) ticket from before the upgrade is read too.
	tk, _ := token.PeekTicket(joined.Ticket)
	payload, _ := json.Marshal(map[string]any{"typ": "vestibule-ticket", "iss": "vestibule", "sub": tk.Visitor,
		"room": id, "seq": tk.Seq, "draw": want, "iat": 1, "exp": 2})
	format1 := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"vst-ticket+jwt"}`)) + "." +
		base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	out, errs, code = vestibule(t, s, "verify-draw", "--room", id, "--ticket", format1)
	if code != 0 || !strings.Contains(out, "ok: visitor "+tk.Visitor) {
		t.Fatalf("format 1 ticket: %d %q %q", code, out, errs)
	}
	_, errs, code = vestibule(t, s, "verify-draw", "--room", id, "--ticket", "nonsense")
	if code == 0 || !strings.Contains(errs, "not a ticket") {
		t.Fatalf("nonsense ticket: %d %q", code, errs)
	}
}

// statusSeed is the room's published seed.
func statusSeed(t *testing.T, s *localstack.Stack, id string) string {
	t.Helper()
	resp, err := http.Get(s.URL() + "/api/rooms/" + id + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ DrawSeed string }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.DrawSeed == "" {
		t.Fatalf("status: %+v, %v", st, err)
	}
	return st.DrawSeed
}
