package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// The console's Schedule section plans a change for an hour on, lists it
// and cancels it; a change the API refuses shows its reason; the Report
// section shows the sale's totals and exports the CSV of `vestibule report`.
func TestConsoleScheduleAndReport(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	ctx := browser(t)
	url := startConsole(t, s)
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"&every=0.3")); err != nil {
		t.Fatal(err)
	}
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, id)
	waitJS(t, ctx, card+` !== null`, 10*time.Second)
	plan := func(settings string) {
		browsertest.Eval[any](t, ctx, `(() => {
			const c = `+card+`;
			c.querySelector('.schedule').open = true;
			const d = new Date(Date.now() + 3600e3), p = (x) => String(x).padStart(2, '0');
			c.querySelector('[data-schedule="at"]').value = d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes());
			c.querySelector('[data-schedule="settings"]').value = `+fmt.Sprintf("%q", settings)+`;
			c.querySelector('.schedule-form button').click();
			return null; })()`)
	}
	plan(`{"maxActive": -1}`)
	waitJS(t, ctx, card+`.querySelector('[data-field="schedule-error"]').textContent.includes('maxActive')`, 10*time.Second)
	plan(`{"admitPerMinute": 3000}`)
	waitJS(t, ctx, card+`.dataset.schedule === "1" && `+card+`.querySelector('[data-field="schedule"]').textContent.includes('3000')`, 10*time.Second)
	if hidden := browsertest.Eval[bool](t, ctx, card+`.querySelector('[data-field="schedule-error"]').hidden`); !hidden {
		t.Error("the refusal stays shown after a change was planned")
	}
	browsertest.Eval[any](t, ctx, card+`.querySelector('[data-field="schedule"] button').click()`)
	waitJS(t, ctx, card+`.dataset.schedule === "0"`, 10*time.Second)

	browsertest.Eval[any](t, ctx, card+`.querySelector('.report').open = true`)
	waitJS(t, ctx, `Number(`+card+`.dataset.report) >= 1`, 30*time.Second)
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-field="report-totals"]').textContent`); !contains(got, "Visitors", "Wait p50 / p95 (measured)", "Abandoned", "Lapsed", "Orders confirmed") {
		t.Errorf("report totals %q", got)
	}
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('.report-plot').textContent`); !contains(got, "abandoned/min", "orders/min", "wait p50 (s)", "wait p95 (s)") {
		t.Errorf("the report's chart has the series %q", got)
	}
	browsertest.Eval[any](t, ctx, `(import('/js/console-sale.js').then((m) => { window.csvHead = m.reportCSV({minutes: []}); }), null)`)
	waitJS(t, ctx, `typeof window.csvHead === 'string'`, 10*time.Second)
	head := browsertest.Eval[string](t, ctx, `window.csvHead`)
	if head != strings.Join(reportColumns, ",")+"\n" {
		t.Errorf("CSV header %q, want the command's columns", head)
	}
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// An open Schedule section follows the room: a change the ticks applied
// leaves the list without the section being opened again; Cancel on a
// change listed before it applied says when it was applied. The stack's
// clock stands still but where the test moves it past a change's time,
// once the console lists the change.
func TestConsoleScheduleFollowsAppliedChanges(t *testing.T) {
	clock := testkit.FixedClock(time.Now().UTC().Truncate(time.Second))
	s := stackAt(t, clock)
	id := newRoom(t, s, nil)
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, id)
	plan := func() string {
		t.Helper()
		at := clock.Now().Add(time.Minute).Format(time.RFC3339)
		out, errs, code := vestibule(t, s, "rooms", "schedule", id, "--at", at, "admitPerMinute=90")
		if code != 0 {
			t.Fatalf("schedule: %d %q %q", code, out, errs)
		}
		return strings.Fields(out)[2]
	}
	applied := func() {
		t.Helper()
		clock.Advance(2 * time.Minute)
		if !testkit.WaitFor(30*time.Second, func() bool {
			out, _, _ := vestibule(t, s, "rooms", "schedule", id)
			return strings.Contains(out, "nothing scheduled")
		}) {
			t.Fatal("the change was never applied")
		}
	}
	openSchedule := func(ctx context.Context, change string) {
		t.Helper()
		waitJS(t, ctx, card+` !== null`, 10*time.Second)
		browsertest.Eval[any](t, ctx, card+`.querySelector('.schedule').open = true`)
		waitJS(t, ctx, card+`.querySelector('[data-change="`+change+`"]') !== null`, 10*time.Second)
	}

	ctx := browser(t)
	url := startConsole(t, s)
	change := plan()
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"&every=0.3")); err != nil {
		t.Fatal(err)
	}
	openSchedule(ctx, change)
	applied()
	waitJS(t, ctx, card+`.dataset.schedule === "0" && `+card+`.querySelector('[data-field="schedule"]').textContent.includes("Nothing scheduled")`, 10*time.Second)

	// A console whose refreshes are far apart still lists the change when it
	// applies; its Cancel then says so.
	late := browser(t)
	change = plan()
	if err := chromedp.Do(late, chromedp.Navigate(url+"&every=600")); err != nil {
		t.Fatal(err)
	}
	openSchedule(late, change)
	applied()
	browsertest.Eval[any](t, late, card+`.querySelector('[data-change="`+change+`"] button').click()`)
	waitJS(t, late, `!`+card+`.querySelector('[data-field="schedule-error"]').hidden`, 10*time.Second)
	if got := browsertest.Eval[string](t, late, card+`.querySelector('[data-field="schedule-error"]').textContent`); !strings.Contains(got, "was applied at") {
		t.Errorf("Cancel of an applied change says %q", got)
	}
	waitJS(t, late, card+`.dataset.schedule === "0"`, 10*time.Second)
}

// One rounding of a wait everywhere: a minute whose one measured wait makes
// a p50 of 5.2 s and a p95 of 5.6 s (the bucket [4.76, 5.66) s, interpolated)
// reads 5 and 6 in the report's JSON, "5s / 6s" in the command's table and
// the console's, and 5,6 in the CSV.
func TestReportWaitsRoundedAlike(t *testing.T) {
	s, rdb := stackRedis(t)
	id := newRoom(t, s, nil)
	minute := time.Now().Unix()/60 - 1
	if err := rdb.HSet(context.Background(), roomdb.KeysFor(id).History(),
		fmt.Sprintf("w%d", minute%room.HistoryMinutes), fmt.Sprintf("%d:%d=1", minute, room.WaitBucket(5200*time.Millisecond))).Err(); err != nil {
		t.Fatal(err)
	}
	out, errs, code := vestibule(t, s, "report", id, "--json")
	var rep struct {
		Totals room.ReportTotals `json:"totals"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("report --json: %d %v %q %q", code, err, out, errs)
	}
	if rep.Totals.WaitsMeasured != 1 || rep.Totals.WaitP50Seconds != 5 || rep.Totals.WaitP95Seconds != 6 {
		t.Fatalf("the JSON's waits: %+v, want 5 and 6", rep.Totals)
	}
	out, _, _ = vestibule(t, s, "report", id)
	if !regexp.MustCompile(`wait p50 / p95\s+5s / 6s\s`).MatchString(out) {
		t.Errorf("the table's waits:\n%s", out)
	}
	out, _, _ = vestibule(t, s, "report", id, "--csv")
	if !strings.Contains(out, ",1,5,6,") {
		t.Errorf("the CSV's waits:\n%s", out)
	}

	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(startConsole(t, s)+"&every=0.3")); err != nil {
		t.Fatal(err)
	}
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, id)
	waitJS(t, ctx, card+` !== null`, 10*time.Second)
	browsertest.Eval[any](t, ctx, card+`.querySelector('.report').open = true`)
	waitJS(t, ctx, `Number(`+card+`.dataset.report) >= 1`, 10*time.Second)
	if got := browsertest.Eval[string](t, ctx, card+`.querySelector('[data-field="report-totals"]').textContent`); !strings.Contains(got, "5s / 6s (1 waits)") {
		t.Errorf("the console's waits: %q", got)
	}
}
