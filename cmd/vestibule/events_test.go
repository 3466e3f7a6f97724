package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// eventID is an event of the test's own (the Redis is shared).
func eventID(t *testing.T) string {
	return "ev-" + strconv.FormatInt(int64(os.Getpid()), 36) + "-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
}

// writeFile writes a file of the test's own and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "def.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// events define stores the file's definition (the admin API then shows it),
// events get shows it with the seat states and counters, events orders
// lists the orders, a cancelled one as cancelled, each once; --json gives
// the API's fields.
func TestEvents(t *testing.T) {
	s, rdb := stackRedis(t)
	ev := eventID(t)
	def := writeFile(t, `{"seats":["A1","A2","A3"],"stock":{"parking":5},"holdTTLSeconds":60,"sessionLimit":4,"maxHoldExtensions":2}`)
	out, errs, code := vestibule(t, s, "events", "define", ev, "--file", def)
	want := ev + ": defined for room " + ev + ": 3 seats, units: parking 5; a hold lasts 60 s, extended up to 2 times, at most 180 s; 4 items a session"
	if code != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("define: %d %q %q\nwant %q", code, out, errs, want)
	}
	code, _, m := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/events/"+ev, adminKey, nil)
	if code != 200 || m["maxHoldExtensions"] != float64(2) || m["holdTTLSeconds"] != float64(60) || len(m["seats"].(map[string]any)) != 3 {
		t.Fatalf("the admin API after define: %d %v", code, m)
	}

	out, errs, code = vestibule(t, s, "events", "orders", ev)
	if code != 0 || strings.TrimSpace(out) != ev+": no orders yet" {
		t.Fatalf("orders of a new event: %d %q %q", code, out, errs)
	}

	ctx := context.Background()
	eng := bookingdb.New(rdb)
	buy := buyer(t, eng, ev)
	o1 := buy(booking.Request{Seats: []string{"A1"}, Units: map[string]int64{"parking": 2}})
	o2 := buy(booking.Request{Seats: []string{"A2"}})
	if _, err := eng.Cancel(ctx, ev, o2, "refund"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Hold(ctx, ev, "v:2", booking.Request{Seats: []string{"A3"}}); err != nil {
		t.Fatal(err)
	}

	out, errs, code = vestibule(t, s, "events", "get", ev)
	if code != 0 {
		t.Fatalf("get: %d %q", code, errs)
	}
	for _, re := range []string{`maxHoldExtensions\s+2\n`, `holdTTLSeconds\s+60\n`, `available\s+1\s+A2\n`, `held\s+1\s+A3\n`,
		`sold\s+1\s+A1\n`, `parking\s+3\n`, `confirmed\s+2\n`, `cancelled\s+1\n`, `holds\s+3\n`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("get: no %q in\n%s", re, out)
		}
	}
	out, _, code = vestibule(t, s, "events", "get", ev, "--json")
	var info struct {
		Event             string
		MaxHoldExtensions int64
		Seats             map[string]string
		Counters          map[string]int64
	}
	if err := json.Unmarshal([]byte(out), &info); code != 0 || err != nil || info.Event != ev || info.MaxHoldExtensions != 2 ||
		info.Seats["A3"] != "held" || info.Counters["cancelled"] != 1 {
		t.Fatalf("get --json: %d %v %q", code, err, out)
	}

	out, errs, code = vestibule(t, s, "events", "orders", ev)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ORDER") {
		t.Fatalf("orders: %d %q\n%s", code, errs, out)
	}
	for _, w := range [][]string{{o1, "confirmed", "v:1", "A1", "parking 2"}, {o2, "cancelled (refund)", "A2"}} {
		found := false
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 0 && f[0] == w[0] {
				found = true
				for _, part := range w[1:] {
					if !strings.Contains(l, part) {
						t.Errorf("order %s: no %q in %q", w[0], part, l)
					}
				}
			}
		}
		if !found {
			t.Errorf("order %s not listed:\n%s", w[0], out)
		}
	}
	out, _, code = vestibule(t, s, "events", "orders", ev, "--json")
	var list struct {
		Event  string
		Orders []booking.OrderEvent
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || list.Event != ev || len(list.Orders) != 2 {
		t.Fatalf("orders --json: %d %v %q", code, err, out)
	}

	// Redefining an event with a live hold and orders is refused, with what to do.
	_, errs, code = vestibule(t, s, "events", "define", ev, "--file", def)
	if code != 1 || !strings.Contains(errs, "event "+ev+" is in use") || !strings.Contains(errs, "vestibule events orders "+ev) {
		t.Fatalf("define of an event in use: %d %q", code, errs)
	}
}

// Mistakes get clear errors: the command line's exit 2, the API's exit 1
// with what to do.
func TestEventsErrors(t *testing.T) {
	s := stack(t)
	ev := eventID(t)
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no event", []string{"events", "get"}, 2, []string{"events get takes one event id"}},
		{"bad event id", []string{"events", "orders", "no/such"}, 2, []string{`"no/such" is not an event id`}},
		{"no file", []string{"events", "define", ev}, 2, []string{"events define needs --file"}},
		{"unknown event", []string{"events", "get", ev + "-none"}, 1, []string{`there is no event "` + ev + `-none" here`, "vestibule events define " + ev + "-none --file"}},
		{"orders of an unknown event", []string{"events", "orders", ev + "-none"}, 1, []string{`there is no event "` + ev + `-none" here`}},
		{"missing file", []string{"events", "define", ev, "--file", filepath.Join(t.TempDir(), "none.json")}, 1, []string{"the event's definition", "no such file"}},
		{"not JSON", []string{"events", "define", ev, "--file", writeFile(t, "seats: A1")}, 1, []string{"is not a JSON object", "docs/API.md"}},
		{"too large", []string{"events", "define", ev, "--file", writeFile(t, `{"seats":["A1"],"sessionLimit":1}`+strings.Repeat(" ", 1<<20))}, 1, []string{"larger than 1 MiB"}},
		{"refused", []string{"events", "define", ev, "--file", writeFile(t, `{"seats":["A1"],"sessionLimit":0}`)}, 1, []string{"the deployment refused the definition: invalid inventory: session limit 0", "docs/API.md"}},
		{"unknown field", []string{"events", "define", ev, "--file", writeFile(t, `{"seats":["A1"],"sessionLimit":1,"holdTTL":60}`)}, 1, []string{"the deployment refused the definition", "holdTTL"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := vestibule(t, s, c.args...)
			if code != c.code || out != "" {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, c.code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q, want %q", errs, w)
				}
			}
		})
	}
	var out, errb testkit.Buffer
	if code := run(context.Background(), []string{"events"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "events needs a subcommand: define, get, orders") {
		t.Errorf("no subcommand: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), []string{"events", "get", ev, "--endpoint", s.URL(), "--admin-key", "wrong-key-0123456789"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "the admin key was refused") {
		t.Errorf("a wrong admin key: %d %q", code, errb.String())
	}
	if code, _, m := testkit.CallJSON(t, "GET", s.URL()+"/api/admin/events/"+ev, adminKey, nil); code != 404 {
		t.Errorf("a refused definition left an event: %d %v", code, m)
	}
}

// The demo event lets a hold be extended: the demo origin's page offers it.
func TestDemoEventExtends(t *testing.T) {
	s := stack(t)
	out, errs, code := vestibule(t, s, "events", "get", localstack.DemoEventID, "--json")
	var info struct{ MaxHoldExtensions, HoldTTLSeconds, MaxHoldSeconds int64 }
	if err := json.Unmarshal([]byte(out), &info); code != 0 || err != nil {
		t.Fatalf("get the demo event: %d %v %q", code, err, errs)
	}
	if info.MaxHoldExtensions < 1 || info.MaxHoldSeconds <= info.HoldTTLSeconds {
		t.Errorf("the demo event allows no extension: %+v", info)
	}
}
