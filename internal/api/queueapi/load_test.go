package queueapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/apitest"
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
