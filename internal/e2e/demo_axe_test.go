package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeAll runs axe-core on the page and returns every violation's id, of
// any impact (checkAxe counts serious and critical ones only).
func axeAll(t *testing.T, ctx context.Context) []string {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](axeScript(t)+";0")); err != nil {
		t.Fatalf("inject axe-core: %v", err)
	}
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document).then(r => r.violations.map(v => v.id))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe-core: %v", err)
	}
	return ids
}

// The booking demo page (the hand-integration origin with its seat map)
// passes axe-core with no violation of any impact: its content is in a main
// landmark (landmark-one-main, region).
func TestBookingDemoAccessible(t *testing.T) {
	s := seatsStack(t)
	v := seatPickerOf(t, s)
	if ids := axeAll(t, v); len(ids) > 0 {
		t.Errorf("axe-core on the booking demo page: %v", ids)
	}
}
