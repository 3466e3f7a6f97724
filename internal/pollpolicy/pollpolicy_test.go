package pollpolicy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

func TestAfter(t *testing.T) {
	w := func(pos int64, rate float64) Input {
		return Input{State: room.StateWaiting, Position: pos, RatePerMinute: rate}
	}
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	cases := []struct {
		name string
		in   Input
		want time.Duration
	}{
		{"first in line", w(1, 60), time.Second},
		{"within one tick's admissions", w(10, 600), time.Second},
		{"two ticks away: just after the second", w(11, 600), 2*time.Second + AfterTick},
		{"final window: just after the admission tick", w(50, 600), 5*time.Second + AfterTick},
		{"10 s away: just after the admission tick", w(100, 600), 10*time.Second + AfterTick},
		{"12 s away: just after the admission tick", w(120, 600), 12*time.Second + AfterTick},
		{"13 ticks away: just after the admission tick", w(130, 600), 13*time.Second + AfterTick},
		{"at the final window's end", w(450, 600), 45*time.Second + AfterTick},
		{"just past it: 5–10 s (or 15–18 %) before the ETA, into the window", w(460, 600), 38410 * time.Millisecond},
		{"a minute away: ETA less the margin", w(600, 600), 50100 * time.Millisecond},
		{"far: ETA less the margin", w(3000, 600), 250500 * time.Millisecond},
		{"farther: the engine's budget, spread", w(100_000, 600), scale(room.MaxPollAfter, 1-FarSpread/2)},
		{"a smaller budget wins", with(w(3000, 600), func(in *Input) { in.PollWithin = time.Minute }), scale(time.Minute, 1-FarSpread/2)},
		{"jitter up: a far poll earlier", with(w(600, 600), func(in *Input) { in.Jitter = 1.1 }), 49200 * time.Millisecond},
		{"jitter down: a far poll later", with(w(600, 600), func(in *Input) { in.Jitter = 0.9 }), 51 * time.Second},
		{"jitter spreads the landing in the final window", with(w(460, 600), func(in *Input) { in.Jitter = 0.9 }), 39100 * time.Millisecond},
		{"jitter leaves the final poll alone", with(w(50, 600), func(in *Input) { in.Jitter = 0.9 }), 5*time.Second + AfterTick},
		{"out-of-range jitter ignored", with(w(600, 600), func(in *Input) { in.Jitter = 5 }), 50100 * time.Millisecond},
		{"no pace known: the budget", w(5, 0), scale(room.MaxPollAfter, 1-FarSpread/2)},
		{"longer tick admits more per tick", with(w(20, 600), func(in *Input) { in.TickInterval = 2 * time.Second }), time.Second},
		{"longer tick: aim at its ticks", with(w(30, 600), func(in *Input) { in.TickInterval = 2 * time.Second }), 4*time.Second + AfterTick},
		{"a fraction of a visitor per tick", w(1, 30), 2*time.Second + AfterTick},
		{"far back, jitter down: the whole budget", with(w(100_000, 600), func(in *Input) { in.Jitter = 0.9 }), room.MaxPollAfter},
		{"far back, jitter up: the budget less FarSpread", with(w(100_000, 600), func(in *Input) { in.Jitter = 1.1 }), scale(room.MaxPollAfter, 1-FarSpread)},
		{"claim window: far back at a slow pace, polled before the fastest admission's grant could expire",
			with(w(3000, 60), func(in *Input) { in.AdmitPerMinute, in.ClaimTTL = 600, 30*time.Second }),
			// earliest: (3000 − 20) ÷ (2 × 600) min = 149 s; + 30 s − 3 s
			176 * time.Second},
		{"claim window: at the front, a short window", with(w(1, 600), func(in *Input) { in.ClaimTTL = 5 * time.Second }), time.Second},
		{"claim window: a long one does not bind", with(w(3000, 600), func(in *Input) { in.AdmitPerMinute, in.ClaimTTL = 600, 120*time.Second }), 250500 * time.Millisecond},
		{"pre-queue, opening soon, place unknown: spread over the claim window",
			Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, Jitter: 1.1, ClaimTTL: 60 * time.Second}, 5*time.Second + 54*time.Second},
		{"pre-queue, opening soon, place unknown, jitter down: the first second", Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, Jitter: 0.9, ClaimTTL: 60 * time.Second}, 6 * time.Second},
		{"pre-queue, opening later: the budget, spread", Input{State: room.StatePrequeue, UntilOpen: time.Hour, Jitter: 1}, scale(room.MaxPollAfter, 1-FarSpread/2)},
		{"pre-queue, opening later, small budget", Input{State: room.StatePrequeue, UntilOpen: time.Hour, Jitter: 0.9, PollWithin: 20 * time.Second}, 20 * time.Second},
		{"pre-queue, opening now", Input{State: room.StatePrequeue, Jitter: 0.9}, time.Second},
		{"pre-queue, opening soon, first at the opening: the first tick", Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, Position: 1, RatePerMinute: 600, Jitter: 1}, 6 * time.Second},
		{"pre-queue, opening soon, 50th: just after its tick", Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, Position: 50, RatePerMinute: 600, Jitter: 1}, 10*time.Second + AfterTick},
		{"pre-queue, opening soon, far back: the ETA less the margin", Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, Position: 3000, RatePerMinute: 600, Jitter: 1}, 255500 * time.Millisecond},
		{"pre-queue, opening soon, farther: the budget, spread", Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, Position: 100_000, RatePerMinute: 600, Jitter: 1}, scale(room.MaxPollAfter, 1-FarSpread/2)},
		{"pre-queue, opening soon, farther, a join: anywhere in the mean far interval", Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, Position: 100_000, RatePerMinute: 600, Jitter: 1, Join: true}, scale(room.MaxPollAfter, (1-FarSpread/2)*0.5)},
		{"far back, a join: anywhere in the mean far interval", with(w(100_000, 600), func(in *Input) { in.Join, in.Jitter = true, 1 }), scale(room.MaxPollAfter, (1-FarSpread/2)*0.5)},
		{"far back, a join, jitter up: as soon as a second", with(w(100_000, 600), func(in *Input) { in.Join, in.Jitter = true, 1.1 }), time.Second},
		{"near the front, a join: the descent as any", with(w(50, 600), func(in *Input) { in.Join = true }), 5*time.Second + AfterTick},
		{"pre-queue, opening soon, far back, short claim window: within it after the fastest admission",
			Input{State: room.StatePrequeue, UntilOpen: 5 * time.Second, Position: 3000, RatePerMinute: 600, AdmitPerMinute: 600, ClaimTTL: 30 * time.Second, Jitter: 1},
			5*time.Second + 176*time.Second},
		{"paused: the budget, spread", Input{State: room.StatePaused, Jitter: 1}, scale(room.MaxPollAfter, 1-FarSpread/2)},
		{"closed: the budget, spread", Input{State: room.StateClosed, Jitter: 1.1}, scale(room.MaxPollAfter, 1-FarSpread)},
		{"paused at the front: within the claim window of a resume", Input{State: room.StatePaused, Position: 1, RatePerMinute: 600, AdmitPerMinute: 600, ClaimTTL: 120 * time.Second, Jitter: 1}, 110 * time.Second},
		{"closed, place not shown: within the claim window of an opening", Input{State: room.StateClosed, Position: 40, AdmitPerMinute: 600, ClaimTTL: 120 * time.Second, Jitter: 0.9}, 111 * time.Second},
		{"a closed room's answer without a place: the hold", Input{State: room.StateClosed, PollWithin: HoldPollAfter, Jitter: 0.9}, HoldPollAfter},
		{"admitted: stop", Input{State: room.StateAdmitted}, 0},
		{"expired: stop", Input{State: room.StateExpired}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := After(c.in); got != c.want {
				t.Errorf("After(%+v) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

// A pre-queue of 1,000,000 at 50,000 a minute, all told 10 s before the
// opening: no second after the opening gets more than 1 % of the crowd's
// polls, where a place-blind policy sends everyone within 2 s.
func TestPrequeueOpeningIsSpread(t *testing.T) {
	const n, rate = 1_000_000, 50_000
	r := rand.New(rand.NewPCG(3, 4))
	perSecond := map[int64]int{}
	for pos := int64(1); pos <= n; pos++ {
		d := After(Input{State: room.StatePrequeue, UntilOpen: 10 * time.Second, Position: pos, RatePerMinute: rate,
			TickInterval: time.Second, Jitter: 0.9 + 0.2*r.Float64()})
		perSecond[int64((d-10*time.Second)/time.Second)]++
	}
	for s, k := range perSecond {
		if k > n/100 {
			t.Errorf("second %d after the opening: %d polls (%.1f %% of the crowd)", s, k, 100*float64(k)/n)
		}
	}
}

// The policy never tells more than the engine's budget, never less than
// MinPollAfter, and a far poll lands before the admission even when the queue
// moves Margin faster than the rate says.
func TestAfterBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		in := Input{
			State:         []room.State{room.StateWaiting, room.StatePrequeue, room.StatePaused, room.StateClosed}[r.IntN(4)],
			Position:      1 + r.Int64N(2_000_000),
			RatePerMinute: float64(r.IntN(100_000)),
			PollWithin:    time.Duration(r.Int64N(int64(room.MaxPollAfter))) + time.Second,
			TickInterval:  time.Duration(1+r.IntN(4)) * time.Second,
			UntilOpen:     time.Duration(r.Int64N(int64(time.Hour))),
			Jitter:        0.9 + r.Float64()*0.2,
		}
		d := After(in)
		if d > max(in.PollWithin, MinPollAfter) || d < MinPollAfter {
			t.Fatalf("After(%+v) = %v: outside [%v, %v]", in, d, MinPollAfter, in.PollWithin)
		}
		if in.State == room.StateWaiting && in.RatePerMinute > 0 {
			etaSec := float64(in.Position) * 60 / in.RatePerMinute
			if etaSec > FinalWindow.Seconds()+in.TickInterval.Seconds() && d.Seconds() > (etaSec+in.TickInterval.Seconds())*(1-Margin)+1e-3 {
				t.Fatalf("After(%+v) = %v: later than the ETA %.1fs less the margin", in, d, etaSec)
			}
		}
	}
}

// descent plays one visitor against an exact queue: admissions of rate a
// minute, the bucket carrying the fraction (after k ticks ⌊k·rate/60⌋ were
// admitted), ticks every second from phase on, the visitor at position pos when
// it joins at time 0, the queue moving speedup times faster than the rate says
// (visitors ahead who left and are skipped). It returns the requests (the
// enqueue and every poll) and the delay from the grant to the poll that sees it.
func descent(pos int64, rate float64, phase time.Duration, speedup, jitter float64) (requests int, seen time.Duration) {
	const tick = time.Second
	perTick := rate / 60 * speedup
	passed := func(k float64) int64 { return int64(math.Floor(k*perTick + 1e-9)) }
	grantTick := math.Ceil(float64(pos)/perTick - 1e-9) // the first tick k with passed(k) ≥ pos
	for passed(grantTick) < pos {
		grantTick++
	}
	grant := phase + time.Duration(grantTick-1)*tick
	now := time.Duration(0)
	requests = 1
	for now < grant {
		done := 0.0
		if now >= phase {
			done = math.Floor(float64(now-phase)/float64(tick)) + 1
		}
		d := After(Input{State: room.StateWaiting, Position: pos - passed(done), RatePerMinute: rate,
			TickInterval: tick, Jitter: jitter, PollWithin: room.MaxPollAfter})
		now += d
		requests++
	}
	return requests, now - grant
}

// The descent's cost and the grant→seen delay, over tick phases and jitters: a
// one-minute wait costs three requests, a 20-minute one at most nine; the
// grant is seen within a second at the median and 2.3 s at worst (the bucket's
// fraction can bring the admission a tick earlier than the position says).
// When the queue moves 10 % faster than the measured rate (leavers ahead not
// yet swept), a one-minute wait still sees it within 3 s; a long wait's last
// poll, aimed from up to FinalWindow (45 s) out, can land 10 % of that late:
// within 5 s, 3 s at the median. That is the price of one poll fewer on every
// short wait (docs/BENCHMARKS.md: the crowds, whose leavers are mostly swept
// before the front, see the grant within 3 s at p99).
func TestDescent(t *testing.T) {
	for _, c := range []struct {
		name    string
		pos     int64
		rate    float64
		maxReqs int
		speedup float64
		maxSeen time.Duration
		medSeen time.Duration
	}{
		{"one minute", 1000, 1000, 3, 1, 2300 * time.Millisecond, time.Second},
		{"one minute, 10 % faster", 1000, 1000, 3, 1.1, 3 * time.Second, 1500 * time.Millisecond},
		{"twenty minutes at 5,000 a minute", 100_000, 5000, 9, 1, 2300 * time.Millisecond, time.Second},
		{"twenty minutes, 10 % faster", 100_000, 5000, 9, 1.1, 5 * time.Second, 3 * time.Second},
		{"half a minute", 250, 500, 3, 1, 2300 * time.Millisecond, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			var seens []time.Duration
			for ph := 10 * time.Millisecond; ph <= time.Second; ph += 70 * time.Millisecond {
				for i, j := range []float64{0.9, 0.95, 1, 1.05, 1.1} {
					// Positions over one tick's admissions, and the phases and jitters.
					pos := c.pos + int64(float64(i)*c.rate/300) + int64(ph/(70*time.Millisecond))%3
					reqs, seen := descent(pos, c.rate, ph, c.speedup, j)
					if reqs > c.maxReqs || seen > c.maxSeen {
						t.Errorf("position %d, phase %v, jitter %v: %d requests, seen after %v; want ≤ %d, ≤ %v", pos, ph, j, reqs, seen, c.maxReqs, c.maxSeen)
					}
					seens = append(seens, seen)
				}
			}
			slices.Sort(seens)
			if med := seens[len(seens)/2]; med > c.medSeen {
				t.Errorf("median grant→seen %v, want ≤ %v", med, c.medSeen)
			}
		})
	}
}

func TestETASeconds(t *testing.T) {
	if ETASeconds(10, 0) != nil {
		t.Error("no rate must give no ETA")
	}
	for _, c := range []struct {
		pos  int64
		rate float64
		want int64
	}{{1, 60, 1}, {30, 60, 30}, {1, 600, 1}, {601, 600, 61}, {0, 60, 0}} {
		if got := ETASeconds(c.pos, c.rate); got == nil || *got != c.want {
			t.Errorf("ETASeconds(%d, %v) = %v, want %d", c.pos, c.rate, got, c.want)
		}
	}
}

// earliestAdmission is, independently of the policy, the soonest a visitor at
// pos can be admitted: a full bucket (two seconds of the configured rate, at
// least one) at once, then the front moving at most twice the configured rate.
func earliestAdmission(pos int64, admitPerMinute float64) time.Duration {
	bucket := math.Max(1, admitPerMinute/30)
	return time.Duration(math.Max(0, float64(pos)-bucket) / (2 * admitPerMinute) * float64(time.Minute))
}

// No told poll, in any state, comes later than the claim window after the
// earliest the visitor could be admitted (less the slack kept for the tick and
// the request's way), whatever pace the policy is given.
func TestAfterWithinTheClaimWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100_000 {
		admit := float64(1 + r.IntN(100_000))
		in := Input{
			State:          []room.State{room.StateWaiting, room.StatePrequeue, room.StatePaused, room.StateClosed}[r.IntN(4)],
			Position:       1 + r.Int64N(2_000_000),
			AdmitPerMinute: admit,
			RatePerMinute:  admit * r.Float64(), // any pace up to the configured rate
			ClaimTTL:       time.Duration(5+r.IntN(3596)) * time.Second,
			TickInterval:   time.Duration(1+r.IntN(4)) * time.Second,
			UntilOpen:      time.Duration(r.Int64N(int64(10 * time.Minute))),
			Jitter:         0.9 + r.Float64()*0.2,
		}
		if in.State != room.StatePrequeue {
			in.UntilOpen = 0
		}
		d := After(in)
		limit := max(in.UntilOpen+earliestAdmission(in.Position, admit)+in.ClaimTTL-min(max(in.ClaimTTL/10, 2*time.Second), 10*time.Second, in.ClaimTTL/2),
			MinPollAfter)
		if in.State == room.StatePrequeue && in.UntilOpen >= room.MaxPollAfter {
			continue // told before the opening's window: the next poll plans again
		}
		if d > limit {
			t.Fatalf("After(%+v) = %v, later than the claim window after the earliest admission (%v)", in, d, limit)
		}
	}
}

// Whoever polls when told never loses a grant, even when the pace the policy
// was given is far below what the room then does (a burst after a trickle: the
// measured pace of the trickle, the room admitting at its configured rate, the
// front up to twice as fast as that): played against an exact queue, the poll
// that sees the grant comes within the claim window.
func TestObeyingNeverLosesAGrant(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 20_000 {
		admit := float64(60 + r.IntN(20_000))
		told := math.Max(1, admit*r.Float64()*r.Float64()) // a pace much too slow, often
		claim := time.Duration(5+r.IntN(300)) * time.Second
		speed := admit / 60 * (1 + r.Float64()) // admissions a second, up to FrontSpeedMax× the rate
		pos := 1 + r.Int64N(200_000)
		grant := time.Duration(math.Max(0, float64(pos)-math.Max(1, admit/30)) / speed * float64(time.Second))
		now := time.Duration(0)
		for now < grant {
			left := pos - int64(float64(now)/float64(time.Second)*speed)
			budget := min(room.MaxPollAfter, time.Duration(float64(left)*60/told*float64(time.Second))+room.PollSlack)
			now += After(Input{State: room.StateWaiting, Position: max(left, 1), RatePerMinute: told, AdmitPerMinute: admit,
				ClaimTTL: claim, PollWithin: budget, Jitter: 0.9 + 0.2*r.Float64()})
		}
		if late := now - grant; late >= claim {
			t.Fatalf("position %d, rate %.0f/min told %.1f/min, claim %v: the grant at %v was seen %v later", pos, admit, told, claim, grant, late)
		}
	}
}

// A crowd far back told at the same instant comes back over FarSpread of the
// budget, not at one instant: no second of it gets more than 2 % of the crowd.
func TestFarPollsAreSpread(t *testing.T) {
	const n = 100_000
	r := rand.New(rand.NewPCG(9, 10))
	perSecond := map[int64]int{}
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for range n {
		d := After(Input{State: room.StateWaiting, Position: 100_000 + r.Int64N(100_000), RatePerMinute: 5000, AdmitPerMinute: 5000,
			ClaimTTL: 120 * time.Second, Jitter: 0.9 + 0.2*r.Float64()})
		perSecond[int64(d/time.Second)]++
		lo, hi = min(lo, d), max(hi, d)
	}
	if spread := hi - lo; spread < scale(room.MaxPollAfter, FarSpread*0.95) {
		t.Errorf("far polls spread over %v, want about %v", spread, scale(room.MaxPollAfter, FarSpread))
	}
	for s, k := range perSecond {
		if k > n/50 {
			t.Errorf("second %d: %d polls (%.1f %% of the crowd)", s, k, 100*float64(k)/n)
		}
	}
}

// A crowd of 100,000 joining in ten seconds, played against an exact queue
// admitting 5,000 a minute, polls at an even pace: its busiest ten seconds stay
// under twice its mean rate (with every first far poll in the budget's last
// FarSpread, they came back as one wave at three times it).
func TestJoiningCrowdPollsEvenly(t *testing.T) {
	const n, rate = 100_000, 5000.0
	r := rand.New(rand.NewPCG(11, 12))
	perTen := map[int]int{}
	polls, last := 0, 0.0
	for i := range n {
		pos0 := float64(i + 1)
		now := r.Float64() * 10
		grant := pos0 / (rate / 60)
		for first := true; now < grant; first = false {
			pos := max(int64(pos0-now*rate/60), 1)
			budget := min(room.MaxPollAfter, time.Duration((float64(pos)*60/rate+5)*float64(time.Second)))
			now += After(Input{State: room.StateWaiting, Position: pos, RatePerMinute: rate, AdmitPerMinute: rate,
				ClaimTTL: 120 * time.Second, PollWithin: budget, Join: first, Jitter: 0.9 + 0.2*r.Float64()}).Seconds()
			perTen[int(now/10)]++
			polls++
			last = max(last, now)
		}
	}
	mean := float64(polls) / (last / 10)
	for s, k := range perTen {
		if float64(k) > 2*mean {
			t.Errorf("seconds %d–%d: %d polls, over twice the mean %.0f", 10*s, 10*s+10, k, mean)
		}
	}
}
