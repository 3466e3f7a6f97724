package e2e

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// seatsStack starts a stack on a Redis of its own, so the demo event's seats
// start free whatever other tests sold, and makes the demo-api room admit at
// once.
func seatsStack(t *testing.T) *localstack.Stack {
	t.Helper()
	srv, err := redistest.Start()
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
	t.Cleanup(srv.Stop)
	s := stack(t, "redis://"+srv.Addr)
	cfg := baseSettings(s)
	cfg["maxActive"] = 5
	putRoom(t, s, localstack.DemoAPIRoomID, cfg)
	return s
}

// seatPickerOf sends a fresh visitor through the demo-api room to the
// hand-integration origin and waits for its seat map.
func seatPickerOf(t *testing.T, s *localstack.Stack) context.Context {
	t.Helper()
	v := visitor(t)
	do(t, v, chromedp.Navigate(pageURL(s.URL(), localstack.DemoAPIRoomID)))
	waitURL(t, v, s.ManualOriginURL()+"/")
	waitNav(t, v, `!!document.getElementById("picker") && document.getElementById("out").dataset.state === "session"`)
	waitJS(t, v, `document.getElementById("picker").dataset.state === "map" && !!document.getElementById("seat-A1")`, 10*time.Second)
	return v
}

func seatState(t *testing.T, v context.Context, seat string) string {
	t.Helper()
	return browsertest.Eval[string](t, v, `(document.getElementById("seat-`+seat+`") || {dataset: {}}).dataset.state || ""`)
}

// TestSeatPicker: admitted at the hand-integration origin, the visitor sees
// the demo event's seat map, holds a seat (a countdown runs), confirms, and
// sees the order, which the origin wrote to its SQLite store.
func TestSeatPicker(t *testing.T) {
	s := seatsStack(t)
	v := seatPickerOf(t, s)
	if got := browsertest.Eval[int](t, v, `document.querySelectorAll("#map button").length`); got != len(localstack.DemoSeats) {
		t.Errorf("seat map shows %d seats, want %d", got, len(localstack.DemoSeats))
	}
	if got := seatState(t, v, "A3"); got != "available" {
		t.Errorf("A3 = %q, want available", got)
	}
	// The bookingSession never reaches the address bar or storage.
	if got := browsertest.Eval[string](t, v, `location.href + JSON.stringify(localStorage) + JSON.stringify(sessionStorage)`); strings.Contains(got, "eyJ") {
		t.Errorf("a token is visible in the URL or storage: %s", got)
	}

	browsertest.Eval[any](t, v, `document.getElementById("seat-A3").click()`+";0")
	waitJS(t, v, `document.getElementById("picker").dataset.state === "held"`, 5*time.Second)
	if got := browsertest.Eval[string](t, v, `document.getElementById("countdown").textContent`); !regexp.MustCompile(`^[12]:\d\d$`).MatchString(got) {
		t.Errorf("countdown = %q, want about 2:00", got)
	}
	waitJS(t, v, `document.getElementById("seat-A3").dataset.state === "mine"`, 5*time.Second)
	// The seat is held for everyone else: the public view says so.
	if _, _, view := testkit.CallJSON(t, "GET", s.URL()+"/api/events/"+localstack.DemoEventID, "", nil); view["seats"].(map[string]any)["A3"] != "held" {
		t.Errorf("public view: %v", view["seats"])
	}

	browsertest.Eval[any](t, v, `document.getElementById("confirm").click()`+";0")
	waitJS(t, v, `document.getElementById("picker").dataset.state === "ordered"`, 5*time.Second)
	if got := text(t, v, "order-seats"); got != "A3" {
		t.Errorf("order seats = %q, want A3", got)
	}
	if got := text(t, v, "order-id"); !regexp.MustCompile(`^\d{10,}$`).MatchString(got) {
		t.Errorf("order id = %q, want a fencing token", got)
	}
	if _, _, view := testkit.CallJSON(t, "GET", s.URL()+"/api/events/"+localstack.DemoEventID, "", nil); view["seats"].(map[string]any)["A3"] != "sold" {
		t.Errorf("public view after confirm: %v", view["seats"])
	}
	screenshot(t, v, "screenshot-seats-ordered.png")
}

// TestSeatRace: two visitors click the same seat at once; one holds it, the
// other is told at once that it was taken (the hold answered 409 seat_taken)
// and sees it held on the map.
func TestSeatRace(t *testing.T) {
	s := seatsStack(t)
	a, b := seatPickerOf(t, s), seatPickerOf(t, s)

	var wg sync.WaitGroup
	start := time.Now()
	for _, v := range []context.Context{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chromedp.Run(v, chromedp.Evaluate[any](`document.getElementById("seat-A5").click();0`))
		}()
	}
	wg.Wait()
	outcome := `(document.getElementById("picker").dataset.state === "held" ? "held" : "") + (document.getElementById("msg").dataset.code || "")`
	for _, v := range []context.Context{a, b} {
		waitJS(t, v, outcome+` !== ""`, 5*time.Second)
	}
	got := []string{browsertest.Eval[string](t, a, outcome), browsertest.Eval[string](t, b, outcome)}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("the loser learned after %v", elapsed)
	}
	winner, loser := a, b
	if got[1] == "held" {
		winner, loser = b, a
		got[0], got[1] = got[1], got[0]
	}
	if got[0] != "held" || got[1] != "seat_taken" {
		t.Fatalf("outcomes = %q, want one held and one seat_taken", got)
	}
	if msg := browsertest.Eval[string](t, loser, `document.getElementById("msg").textContent`); !strings.Contains(msg, "taken") {
		t.Errorf("loser is told %q", msg)
	}
	waitJS(t, loser, `document.getElementById("seat-A5").dataset.state === "held" && document.getElementById("seat-A5").disabled`, 5*time.Second)
	// The loser picks another seat and both book.
	browsertest.Eval[any](t, loser, `document.getElementById("seat-A6").click()`+";0")
	waitJS(t, loser, `document.getElementById("picker").dataset.state === "held"`, 5*time.Second)
	for _, v := range []context.Context{winner, loser} {
		browsertest.Eval[any](t, v, `document.getElementById("confirm").click()`+";0")
		waitJS(t, v, `document.getElementById("picker").dataset.state === "ordered"`, 5*time.Second)
	}
	if w, l := text(t, winner, "order-seats"), text(t, loser, "order-seats"); w != "A5" || l != "A6" {
		t.Errorf("orders: winner %q, loser %q; want A5, A6", w, l)
	}
}
