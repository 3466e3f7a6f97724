package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestSeatHoldExtended: the demo origin's visitor holds a seat, asks for
// more time twice (the waiting room counts two extensions), is told at the
// third that no more can be added (409 extension_limit), and still books
// the seat. The page with the hold shown passes axe-core.
func TestSeatHoldExtended(t *testing.T) {
	s := seatsStack(t)
	v := seatPickerOf(t, s)
	extended := func() int64 {
		t.Helper()
		code, _, ev := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/events/"+localstack.DemoEventID, "e2e-admin-key-0123456789", nil)
		counters, _ := ev["counters"].(map[string]any)
		if code != 200 || counters == nil {
			t.Fatalf("admin view: %d %v", code, ev)
		}
		n, _ := counters["extended"].(float64)
		return int64(n)
	}

	browsertest.Eval[any](t, v, `document.getElementById("seat-A7").click()`+";0")
	waitJS(t, v, `document.getElementById("picker").dataset.state === "held"`, 5*time.Second)
	for i, want := range []string{"1", "2"} {
		browsertest.Eval[any](t, v, `document.getElementById("extend").click()`+";0")
		waitJS(t, v, `document.getElementById("extended").dataset.extensions === "`+want+`"`, 5*time.Second)
		if got := extended(); got != int64(i+1) {
			t.Errorf("after extension %s the waiting room counts %d", want, got)
		}
	}
	if got := text(t, v, "extended"); !strings.HasPrefix(got, "Extended (2 times): held until ") {
		t.Errorf("the page says %q", got)
	}
	if ids := axeAll(t, v); len(ids) > 0 {
		t.Errorf("axe-core on the held seat with its More time button: %v", ids)
	}
	browsertest.Eval[any](t, v, `document.getElementById("extend").click()`+";0")
	waitJS(t, v, `document.getElementById("msg").dataset.code === "extension_limit"`, 5*time.Second)
	if !browsertest.Eval[bool](t, v, `document.getElementById("extend").disabled`) || extended() != 2 {
		t.Errorf("after the limit: the button is enabled or the count moved (%d)", extended())
	}

	browsertest.Eval[any](t, v, `document.getElementById("confirm").click()`+";0")
	waitJS(t, v, `document.getElementById("picker").dataset.state === "ordered"`, 5*time.Second)
	if got := text(t, v, "order-seats"); got != "A7" {
		t.Errorf("order seats = %q, want A7", got)
	}
}
