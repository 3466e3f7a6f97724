package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// TestLotteryAtTheOpening: a pre-queue of 31 or more (one page, the rest
// through the API)
// on the local stack, whose clock the test moves past the opening. Before it
// the page shows its lottery reference but no draw. At the opening it learns
// its place: the true one, below everyone still waiting who drew lower and
// above everyone who drew higher (31 is too few for the draw alone to tell
// it, so the page polls for it at once). The reference stays on screen with
// a check that runs in the page and passes, and the command it prints
// verifies the draw as printed.
func TestLotteryAtTheOpening(t *testing.T) {
	clk := testkit.EngineClock()
	rdb := redistest.Own(t)
	s, err := localstack.Start(context.Background(), localstack.Options{
		RedisURL: "redis://" + rdb.Options().Addr, Addr: "127.0.0.1:0", OriginAddr: "127.0.0.1:0",
		StaticDir: repoPath(t, "static"), KeyDir: t.TempDir(), AdminKey: "e2e-admin-key-0123456789",
		TickInterval: tick, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clk.Now,
	})
	if err != nil {
		t.Fatalf("local stack: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	id := "lottery-" + strings.ToLower(time.Now().Format("150405.000"))
	id = strings.ReplaceAll(id, ".", "")
	opens := clk.Now().Add(time.Minute)
	cfg := baseSettings(s)
	cfg["admitPerMinute"], cfg["opensAt"] = 1, opens.UTC().Format(time.RFC3339)
	putRoom(t, s, id, cfg)

	v := visitor(t)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), id)))
	waitState(t, v, "prequeue", wait)
	me, ok := token.PeekTicket(ticketOf(t, v, id))
	if !ok || me.Visitor == "" {
		t.Fatalf("the page's ticket: %+v", me)
	}
	// Thirty more, at least one of whom drew lower than the page: the
	// opening's first tick admits the lowest draw (maxActive 1), which must
	// not be the page's. The test reads the secret seed from Redis for that.
	secret, err := rdb.HGet(context.Background(), "vst:{"+id+"}:cfg", "seed").Result()
	if err != nil {
		t.Fatal(err)
	}
	var others []string
	lower := false
	for len(others) < 30 || !lower {
		tk, body := enqueueAPI(t, s, id)
		if body["state"] != "prequeue" {
			t.Fatalf("join: %v", body)
		}
		others = append(others, tk)
		peek, _ := token.PeekTicket(tk)
		lower = lower || room.DrawOf(secret, peek.Visitor) < room.DrawOf(secret, me.Visitor)
	}
	waitJS(t, v, `document.getElementById("lottery").checkVisibility()`, wait)
	if ref := text(t, v, "draw-ref"); !strings.Contains(ref, me.Visitor) || regexp.MustCompile(`0\.\d{6}`).MatchString(ref) {
		t.Fatalf("before the opening the reference is %q: want the visitor id %s and no draw", ref, me.Visitor)
	}
	// The page keeps the commitment its watch reads before the opening.
	lottery := `(JSON.parse(localStorage.getItem("vestibule:lottery:` + id + `")) || {})`
	waitJS(t, v, lottery+`.commitment === "`+statusOf(t, s, id)["drawCommitment"].(string)+`"`, 3*wait)

	// The opening: the server's clock past it, and moving on from there.
	clk.Set(opens.Add(time.Second))
	moved := time.Now()
	stopClock := make(chan struct{})
	defer close(stopClock)
	go func() {
		for {
			select {
			case <-stopClock:
				return
			case <-time.After(50 * time.Millisecond):
				clk.Set(opens.Add(time.Second + time.Since(moved)))
			}
		}
	}()
	waitJS(t, v, `document.body.dataset.state === "waiting" && /\d/.test(document.getElementById("position").textContent)`, 3*wait)
	// The page shows "waiting" from the status read that sees the room open,
	// with a place estimated from it; its place and its draw come with its
	// first poll after the opening, which it makes at the opening by its own
	// clock (the server's here jumped a minute ahead of it).
	waitJS(t, v, `typeof (JSON.parse(localStorage.getItem("vestibule:view:`+id+`")) || {}).roomDraw === "number"`, 2*time.Minute)
	st := statusOf(t, s, id)
	seed, _ := st["drawSeed"].(string)
	if seed == "" {
		t.Fatalf("status after the opening: %v", st)
	}
	mine := room.DrawOf(seed, me.Visitor)
	replied := browsertest.Eval[int](t, v, `(JSON.parse(localStorage.getItem("vestibule:view:`+id+`")) || {}).position || 0`)
	// Everyone still waiting who drew lower is ahead, everyone who drew
	// higher behind (each asked once, as the page asked).
	ahead, behind := 0, 0
	for _, tk := range others {
		code, _, body := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/rooms/"+id+"/poll", tk, nil)
		if code != http.StatusOK {
			t.Fatalf("poll: %d %v", code, body)
		}
		peek, _ := token.PeekTicket(tk)
		if body["state"] != "waiting" {
			continue
		}
		if room.DrawOf(seed, peek.Visitor) < mine {
			ahead++
		} else {
			behind++
		}
	}
	if replied != ahead+1 {
		t.Errorf("the page's place %d; want %d (%d waiting drew lower, %d higher)", replied, ahead+1, ahead, behind)
	}
	place(t, v, id, replied)

	// The reference stays, with the draw, and the check in the page passes.
	ref := text(t, v, "draw-ref")
	if !strings.Contains(ref, me.Visitor) || !strings.Contains(ref, fmt.Sprintf("%.6f", mine)) {
		t.Errorf("after the opening the reference is %q: want %s and draw %.6f", ref, me.Visitor, mine)
	}
	// The page asks the visitor to try again while the room has not
	// confirmed the draw: its status read (an edge-cached second) or its
	// poll may still be from before the opening. The visitor's way: click
	// again, until the check passes or fails for good.
	for deadline := time.Now().Add(wait); ; {
		browsertest.Eval[bool](t, v, `delete document.body.dataset.drawCheck`)
		do(t, v, chromedp.Click(chromedp.ID("draw-check")))
		waitJS(t, v, `!!document.body.dataset.drawCheck`, wait)
		if browsertest.Eval[string](t, v, `document.body.dataset.drawCheck`) != "wait" || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got := text(t, v, "draw-result"); browsertest.Eval[string](t, v, `document.body.dataset.drawCheck`) != "ok" ||
		!strings.HasPrefix(got, "Checked in this page") {
		t.Errorf("the check says %q; the view %s", got, browsertest.Eval[string](t, v, `localStorage.getItem("vestibule:view:`+id+`")`))
	}
	checkAxe(t, v)

	// The command, as printed, verifies the draw.
	i := strings.Index(ref, "vestibule verify-draw ")
	if i < 0 {
		t.Fatalf("no command in %q", ref)
	}
	args := strings.Fields(ref[i:])
	bin := filepath.Join(t.TempDir(), "vestibule")
	build := exec.Command("go", "build", "-o", bin, "./cmd/vestibule")
	build.Dir = repoPath(t, "")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/vestibule: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args[1:]...)
	cmd.Env = append(os.Environ(), "VESTIBULE_ENDPOINT=", "VESTIBULE_STACK=", "VESTIBULE_ADMIN_KEY=")
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "ok: seed") ||
		!strings.Contains(out.String(), fmt.Sprintf("the seed gives draw %v (%.6f)", mine, mine)) {
		t.Errorf("%q: %v\n%s%s", args, err, out.String(), errs.String())
	}
}

// statusOf is the room's public status.
func statusOf(t *testing.T, s *localstack.Stack, id string) map[string]any {
	t.Helper()
	code, _, body := testkit.CallJSON(t, http.MethodGet, s.URL()+"/api/rooms/"+id+"/status", "", nil)
	if code != http.StatusOK {
		t.Fatalf("status: %d %v", code, body)
	}
	return body
}
