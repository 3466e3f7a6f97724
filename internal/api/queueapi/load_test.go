package queueapi_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/apitest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The origin reports its load with Vestibule-Load on consume and complete;
// the room's pace follows it (backs off at 0.9 and more) and the status shows
// the pace and why. A header that is not a load in 0..1 is a 400 that
// consumes nothing.
func TestConsumeAndCompleteCarryTheOriginsLoad(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"maxActive":50,"admitPerMinute":600,"admitPerMinuteMin":60,"claimTTLSeconds":600,"originUrl":"https://origin.example/"}`)
		for range 185 {
			f.Clock.Advance(time.Second)
			f.Tick(id)
		}
		st := f.Do("GET", "/api/rooms/"+id+"/status", "", nil)
		if rateOf(t, st) != 600 || st.Str("paceWhy") != "top" {
			t.Fatalf("status after the climb: %s", st.Body)
		}
		admit := func() string {
			t.Helper()
			e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
			for range 5 {
				p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket")))
				if tok := p.Str("entryToken"); tok != "" {
					return tok
				}
				f.Clock.Advance(time.Second)
				f.Tick(id)
			}
			t.Fatal("not admitted")
			return ""
		}
		redeem := func(path, tok, load string) apitest.Response {
			t.Helper()
			h := apitest.OriginOf(f.Entries, f.Origins, f.Clock.Now(), tok)
			h["Vestibule-Load"] = load
			return f.Do("POST", path, `{"token":"`+tok+`"}`, h)
		}
		tok := admit()
		for _, bad := range []string{"1.5", "-0.1", "NaN", "high", "0x1p-1"} {
			apitest.WantStatus(t, redeem("/api/consume", tok, bad), 400, "bad_load")
		}
		apitest.WantStatus(t, redeem("/api/consume", tok, "0.95"), 200, "")
		f.Clock.Advance(time.Second)
		f.Tick(id)
		st = f.Do("GET", "/api/rooms/"+id+"/status", "", nil)
		if rateOf(t, st) != 450 || st.Str("paceWhy") != "backoff" {
			t.Errorf("status after a consume at 0.95: %s, want 450 (backoff)", st.Body)
		}
		// Within LOAD_MEMORY of the cut a load is judged at the pace that
		// made it: the complete's 1 at 450 a minute reads 0.75, so the pace
		// holds at its cut (still "backoff"). Had the complete carried no
		// load, or a low one, the pace would climb (to 510 at 0.5).
		f.Clock.Advance(5 * time.Second)
		apitest.WantStatus(t, redeem("/api/complete", tok, "1"), 200, "")
		f.Tick(id)
		st = f.Do("GET", "/api/rooms/"+id+"/status", "", nil)
		if rateOf(t, st) != 450 || st.Str("paceWhy") != "backoff" {
			t.Errorf("status after a complete at 1: %s, want 450 held (backoff)", st.Body)
		}
	})
}

// rateOf is a status answer's ratePerMinute.
func rateOf(t *testing.T, r apitest.Response) float64 {
	t.Helper()
	var v struct{ RatePerMinute float64 }
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		t.Fatal(err)
	}
	return v.RatePerMinute
}

// While the pace climbs the status route carries the climb (its rate now,
// its slope and its top, in places a minute), and each waiting place's poll
// is told its own pace on it: the page counts a place down on the climb, and
// the far places pass faster than the near.
func TestTheStatusCarriesTheClimb(t *testing.T) {
	apitest.ForEachRedis(t, func(t *testing.T, f *apitest.Fixture) {
		id := f.Room(`{"maxActive":100000,"admitPerMinute":600,"admitPerMinuteMin":60,"claimTTLSeconds":600,"originUrl":"https://origin.example/"}`)
		e := f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil)
		f.Clock.Advance(time.Second)
		f.Tick(id)
		p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(e.Str("ticket")))
		tok := p.Str("entryToken")
		if tok == "" {
			t.Fatalf("not admitted: %s", p.Body)
		}
		h := apitest.OriginOf(f.Entries, f.Origins, f.Clock.Now(), tok)
		h["Vestibule-Load"] = "1"
		apitest.WantStatus(t, f.Do("POST", "/api/consume", `{"token":"`+tok+`"}`, h), 200, "")
		f.Clock.Advance(time.Second)
		f.Tick(id)
		st := f.Do("GET", "/api/rooms/"+id+"/status", "", nil)
		if st.Str("paceWhy") != "backoff" || strings.Contains(st.Body, `"climb"`) {
			t.Fatalf("status after a consume at 1: %s, want a back-off and no climb", st.Body)
		}
		var tickets []string
		for range 1000 {
			tickets = append(tickets, f.Do("POST", "/api/rooms/"+id+"/enqueue", "", nil).Str("ticket"))
		}
		// No report for 30 s: the pace climbs ("quiet") to the setting.
		for range 31 {
			f.Clock.Advance(time.Second)
			f.Tick(id)
		}
		st = f.Do("GET", "/api/rooms/"+id+"/status", "", nil)
		var v struct {
			PaceWhy string
			Climb   *room.Climb
		}
		if err := json.Unmarshal([]byte(st.Body), &v); err != nil {
			t.Fatal(err)
		}
		if v.PaceWhy != "quiet" || v.Climb == nil || v.Climb.SlopePerMinute != 180 || v.Climb.TopPerMinute != 600 ||
			v.Climb.RatePerMinute <= 300 || v.Climb.RatePerMinute >= 600 {
			t.Fatalf("status while the pace climbs: %s, want a climb by 180 a minute to 600", st.Body)
		}
		var last float64
		for _, i := range []int{300, 600, 999} {
			p := f.Do("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(tickets[i]))
			var w struct {
				Position      int64
				RatePerMinute float64
			}
			if err := json.Unmarshal([]byte(p.Body), &w); err != nil {
				t.Fatal(err)
			}
			own := v.Climb.PaceAt(float64(w.Position))
			if w.Position <= 0 || math.Abs(w.RatePerMinute-own) > 0.01*own || w.RatePerMinute <= last {
				t.Errorf("place %d: %s, want its own pace on the climb, %.1f, above the nearer place's %.1f", i+1, p.Body, own, last)
			}
			last = w.RatePerMinute
		}
	})
}
