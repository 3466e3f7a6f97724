package sim

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Shape is how arrivals spread over time.
type Shape string

// The arrival shapes.
const (
	Burst  Shape = "burst"  // everyone within the first 10 seconds
	Ramp   Shape = "ramp"   // arrivals grow linearly over Spread
	Steady Shape = "steady" // a steady trickle over Spread
	Even   Shape = "even"   // one every Spread ÷ visitors, the first at once
)

// Wave is one group of arrivals of a crowd: N visitors from At on, spread by
// Shape (Burst: within 10 s; Ramp, Steady, Even: over Spread).
type Wave struct {
	N      int
	At     time.Duration
	Shape  Shape
	Spread time.Duration
}

// Change is a PUT of the room's settings at a virtual instant of the run:
// Body is the JSON the admin API takes (fields left out keep their value).
type Change struct {
	At   time.Duration
	Body string
}

// Config describes a run.
type Config struct {
	Visitors int
	Shape    Shape
	Spread   time.Duration // Ramp and Steady: the arrival window (default 2 minutes)
	Seed     uint64        // the crowd is a pure function of the seed

	// Shares of the crowd that abandon, each in [0,1]; the rest complete.
	CloseTab, NoConsume, Leave float64
	AbandonAfter               time.Duration // mean time before an abandoner walks away (default 60 s)
	ThinkMin, ThinkMax         time.Duration // time on the origin (default 20–60 s)

	Room       string
	RoomConfig room.Config // PUT through the admin API before the crowd arrives

	// FixedPoll > 0 makes every page poll at that interval, ignoring pollAfterMs
	// (the fixed-interval page of the seed documents).
	FixedPoll time.Duration

	Workers     int           // requests in flight at most (default 64)
	MaxDuration time.Duration // the run stops after this much (virtual or real) time (default 4 h)
	SampleEvery time.Duration // stats sampling period (default 1 s)

	// OnDone is called (from the run's goroutine) each time a visitor finishes.
	OnDone func()

	// Booking, when set, drives every visitor who consumes through a booking (booking.go).
	Booking *Booking
	// Origin, when set, is the booking site the visitors land on: it serves
	// their bookings and reports its load on consume and complete (origin.go).
	Origin *Origin

	// Waves, when set, are the crowd's arrivals instead of Visitors, Shape
	// and Spread (Visitors becomes their sum).
	Waves []Wave
	// OpensAfter > 0 gives the room an opening (opensAt) that long after
	// the run's start: arrivals before it join the pre-queue.
	OpensAfter time.Duration
	// Changes are PUTs of the room's settings during the run, in order of At.
	Changes []Change
	// NoWatch turns off the page's watch (watch.go): the visitors poll
	// only, as the page did before it read the status between polls.
	NoWatch bool

	// Rehearsal makes the run leave no trace (vestibule-sim sets it): a
	// room that exists already is refused (ErrRoomExists) unless Force, and
	// a room the run created is closed, drained and deleted at the end,
	// interrupted or not, unless Keep.
	Rehearsal bool
	// Force lets a rehearsal rewrite an existing room's settings (it is
	// then not deleted).
	Force bool
	// Keep leaves the room a rehearsal created, for a look afterwards.
	Keep bool
}

func (c *Config) defaults() {
	if len(c.Waves) > 0 {
		c.Visitors = 0
		for _, w := range c.Waves {
			c.Visitors += w.N
		}
	}
	if c.Shape == "" {
		c.Shape = Burst
	}
	if c.Spread <= 0 {
		c.Spread = 2 * time.Minute
	}
	if c.AbandonAfter <= 0 {
		c.AbandonAfter = time.Minute
	}
	if c.ThinkMin <= 0 {
		c.ThinkMin = 20 * time.Second
	}
	if c.ThinkMax < c.ThinkMin {
		c.ThinkMax = max(c.ThinkMin, 60*time.Second)
	}
	if c.Workers <= 0 {
		c.Workers = 64
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = 4 * time.Hour
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = time.Second
	}
}

// Driver runs the crowd's requests and owns time.
type Driver interface {
	Transport
	// Now is the current (real or virtual) time.
	Now() time.Time
	// AdvanceTo sleeps until t (real time) or sets the clock to t (virtual).
	AdvanceTo(ctx context.Context, t time.Time) error
	// NextTick is when the driver must run the admission tick next; ok is false
	// when something else (the local stack) ticks.
	NextTick() (t time.Time, ok bool)
	// Tick runs one admission tick of the room.
	Tick(ctx context.Context, room string) error
	// Name names the driver in reports.
	Name() string
	// Granularity is how far ahead of now eventHeap may run in one batch.
	Granularity() time.Duration
}

// Sample is one observation of the room.
type Sample struct {
	At       time.Duration // since the run started
	Waiting  int64
	Admitted int64
	Active   int64
	Arrivals int     // visitors that arrived since the previous sample
	Pace     float64 // the room's admission rate (room.Stats.RatePerMinute)
	Told     float64 // the pace it tells (room.Stats.PacePerMinute)
	Why      string  // why the steered pace is where it is (room.Stats.PaceWhy)
}

// Result is everything a run measured.
type Result struct {
	Config Config
	Driver string
	Start  time.Time
	End    time.Time
	Wall   time.Duration // real time the run took
	// ClockWall is the part of Wall spent on the run's clock rather than on
	// its visitors: the admission ticks and the samples, one each a second
	// of the run however large the crowd.
	ClockWall time.Duration
	Visitors  []*Visitor
	Samples   []Sample
	// MaxInUse is the highest admitted + active seen in any sample.
	MaxInUse int64
	// StatsErrors counts failed samples.
	StatsErrors int
	// Stopped is true when MaxDuration ended the run before every visitor was done.
	Stopped bool
	// Interrupted is true when the run's context ended it (Ctrl-C): the
	// report is of what ran, and visitors not done are left out of the checks.
	Interrupted bool
	// Cleanup is what went wrong removing a rehearsal's room ("" when it
	// was removed, or had not to be).
	Cleanup string
	// Booking is the event at the end, when Config.Booking is set.
	Booking *BookingResult

	// Log counts every request by kind and second (log.go).
	Log *RequestLog
	// Marks are the instants the visitors' Marks are about: each change of
	// the settings (Config.Changes) and the opening (Config.OpensAfter), in
	// order of time.
	Marks []MarkAt
	// OpensAt is the room's opening (zero without Config.OpensAfter).
	OpensAt time.Time
	// Admissions are the ticks' admissions (Virtual only): the run's own
	// grant times, for the measured-rate estimator (moments.go).
	Admissions []Admission
	// StatusFetches and StatusBytes: the status answers the edge fetched
	// through the API, and their bodies' bytes in all.
	StatusFetches, StatusBytes int64
}

// MarkAt is one mark of a run: a change of the settings (Change its index in
// Config.Changes) or the opening (Change −1).
type MarkAt struct {
	At     time.Time
	Change int
}

// Admission is one tick's admissions.
type Admission struct {
	At time.Time
	N  int64
}

// Crowd builds the visitors of a config: arrival times, behaviours, think times.
func Crowd(c Config, start time.Time) []*Visitor {
	c.defaults()
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0x5eed))
	waves := c.Waves
	if len(waves) == 0 {
		waves = []Wave{{N: c.Visitors, Shape: c.Shape, Spread: c.Spread}}
	}
	vs := make([]*Visitor, 0, c.Visitors)
	for _, w := range waves {
		spread := w.Spread
		if spread <= 0 {
			spread = c.Spread
		}
		for j := range w.N {
			u := rng.Float64()
			var off time.Duration
			switch w.Shape {
			case Ramp: // density grows linearly: the inverse CDF of t² is √u
				off = time.Duration(math.Sqrt(u) * float64(spread))
			case Steady:
				off = time.Duration(u * float64(spread))
			case Even:
				off = time.Duration(int64(spread) * int64(j) / int64(w.N))
			default:
				off = time.Duration(u * float64(10*time.Second))
			}
			i := len(vs)
			v := &Visitor{ID: i, Arrive: start.Add(w.At + off), JoinETA: -1}
			if !c.NoWatch { // the generator times the watch alone
				v.rng = rand.New(rand.NewPCG(c.Seed^0x9a9e, uint64(i)))
			}
			switch b := rng.Float64(); {
			case b < c.CloseTab:
				v.Behavior = CloseTab
			case b < c.CloseTab+c.NoConsume:
				v.Behavior = NoConsume
			case b < c.CloseTab+c.NoConsume+c.Leave:
				v.Behavior = Leave
			}
			if v.Behavior.Abandons() {
				v.GiveUpAt = v.Arrive.Add(time.Second + time.Duration(rng.ExpFloat64()*float64(c.AbandonAfter)))
			}
			v.Think = c.ThinkMin + time.Duration(rng.Float64()*float64(c.ThinkMax-c.ThinkMin))
			vs = append(vs, v)
		}
	}
	return vs
}

// event is a visitor's next action.
type event struct {
	at time.Time
	v  *Visitor
}

type eventHeap []event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// ErrSetup means the room could not be prepared through the admin API.
var ErrSetup = errors.New("sim: room setup failed")

// ErrRoomExists is a rehearsal refused because its room exists: the run
// would rewrite its settings and leave its visitors there.
var ErrRoomExists = errors.New("sim: the room exists")

// Run plays the crowd of c through d. adminKey authenticates the admin routes.
func Run(ctx context.Context, d Driver, adminKey string, c Config) (*Result, error) {
	c.defaults()
	start := d.Now()
	if c.OpensAfter > 0 {
		at := start.Add(c.OpensAfter)
		c.RoomConfig.OpensAt = &at
	}
	created := false
	if c.Rehearsal {
		status, body, _, err := d.Do(ctx, "GET", "/api/admin/rooms/"+c.Room, adminKey, nil)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: GET room: %v", ErrSetup, err)
		case status == http.StatusOK && !c.Force:
			return nil, fmt.Errorf("%w: %s; a rehearsal would rewrite its settings: leave -room out for a fresh room, or pass -force", ErrRoomExists, c.Room)
		case status == http.StatusNotFound:
			created = true
		case status != http.StatusOK:
			return nil, fmt.Errorf("%w: GET room: status %d: %s", ErrSetup, status, body)
		}
	}
	cfgBody, _ := json.Marshal(c.RoomConfig)
	status, body, _, err := d.Do(ctx, "PUT", "/api/admin/rooms/"+c.Room, adminKey, cfgBody)
	if err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("%w: PUT room: status %d: %s %v", ErrSetup, status, body, err)
	}
	var put struct {
		OriginCredential string `json:"originCredential"`
	}
	if json.Unmarshal(body, &put) != nil || put.OriginCredential == "" {
		return nil, fmt.Errorf("%w: PUT room: no origin credential in %s", ErrSetup, body)
	}
	wallStart := time.Now()
	res := &Result{Config: c, Driver: d.Name(), Start: start, Visitors: Crowd(c, start),
		Log: NewRequestLog(start, c.MaxDuration+time.Minute)}
	if created && !c.Keep {
		defer func() { res.Cleanup = cleanup(ctx, d, adminKey, c.Room) }()
	}
	for i, ch := range c.Changes {
		res.Marks = append(res.Marks, MarkAt{At: start.Add(ch.At), Change: i})
	}
	if c.OpensAfter > 0 {
		res.OpensAt = start.Add(c.OpensAfter)
		res.Marks = append(res.Marks, MarkAt{At: res.OpensAt, Change: -1})
	}
	slices.SortStableFunc(res.Marks, func(a, b MarkAt) int { return a.At.Compare(b.At) })
	e := &env{tr: d, room: c.Room, claimTTL: time.Duration(c.RoomConfig.ClaimTTLSeconds) * time.Second,
		grace: time.Duration(c.RoomConfig.HeartbeatTTLSeconds) * time.Second, fixedPoll: c.FixedPoll, origin: put.OriginCredential,
		watch: !c.NoWatch, edge: &edgeCache{}, log: res.Log, site: c.Origin}
	if c.Origin != nil {
		c.Origin.begin(start)
	}
	if e.book, err = setupBooking(ctx, d, adminKey, c); err != nil {
		return nil, err
	}

	q := make(eventHeap, 0, len(res.Visitors))
	for _, v := range res.Visitors {
		q = append(q, event{v.Arrive, v})
	}
	heap.Init(&q)
	nextSample := start
	arrived, lastArrived := 0, 0
	left := len(res.Visitors)
	deadline := start.Add(c.MaxDuration)
	batch := make([]event, 0, 1024)
	probes := newProber(d, c, start)

	interrupted := func(err error) (*Result, error) {
		res.End, res.Wall, res.Interrupted = d.Now(), time.Since(wallStart), true
		return res, err
	}
	for left > 0 {
		if err := ctx.Err(); err != nil {
			return interrupted(err)
		}
		// The next instant something happens: a visitor, a tick or a sample.
		at := nextSample
		if len(q) > 0 && q[0].at.Before(at) {
			at = q[0].at
		}
		tickAt, ticks := d.NextTick()
		if ticks && tickAt.Before(at) {
			at = tickAt
		}
		marked := e.appliedMarks()
		if marked < len(res.Marks) && res.Marks[marked].At.Before(at) {
			at = res.Marks[marked].At
		}
		if at.After(deadline) {
			res.Stopped = true
			break
		}
		if err := d.AdvanceTo(ctx, at); err != nil {
			if ctx.Err() != nil {
				return interrupted(err)
			}
			return res, err
		}
		now := d.Now()
		// A change of the settings at its instant, before the visitors due then.
		for ; marked < len(res.Marks) && !res.Marks[marked].At.After(now); marked++ {
			if k := res.Marks[marked].Change; k >= 0 {
				status, body, _, err := d.Do(ctx, "PUT", "/api/admin/rooms/"+c.Room, adminKey, []byte(c.Changes[k].Body))
				if err != nil || status != http.StatusOK {
					return res, fmt.Errorf("%w: change %d: status %d: %s %v", ErrSetup, k, status, body, err)
				}
			}
			e.applied.Store(int32(marked + 1))
		}
		clockStart := time.Now()
		if ticks && !tickAt.After(now) {
			if err := d.Tick(ctx, c.Room); err != nil {
				return res, err
			}
			if err := probes.ticked(ctx, now, arrived); err != nil {
				return res, err
			}
		}
		if err := probes.probe(ctx, now); err != nil {
			return res, err
		}
		if !nextSample.After(now) {
			res.sample(ctx, d, adminKey, now, arrived-lastArrived)
			lastArrived = arrived
			nextSample = nextSample.Add(c.SampleEvery)
		}
		res.ClockWall += time.Since(clockStart)
		// Everything due within the driver's granularity runs now, in parallel.
		batch = batch[:0]
		limit := now.Add(d.Granularity())
		for len(q) > 0 && !q[0].at.After(limit) {
			ev := heap.Pop(&q).(event)
			if ev.v.phase == arriving && ev.v.Requests == 0 {
				arrived++
			}
			batch = append(batch, ev)
		}
		runBatch(ctx, e, batch, now, c.Workers)
		for _, ev := range batch {
			if ev.v.phase == done {
				probes.closed(ev.v)
				left--
				if c.OnDone != nil {
					c.OnDone()
				}
				continue
			}
			heap.Push(&q, ev)
		}
	}
	res.End = d.Now()
	res.Wall = time.Since(wallStart)
	res.StatusFetches, res.StatusBytes = e.edge.fetches.Load(), e.edge.fetchBytes.Load()
	if a, ok := d.(interface{ Admissions() []Admission }); ok {
		for _, x := range a.Admissions() {
			if !x.At.Before(start) {
				res.Admissions = append(res.Admissions, x)
			}
		}
	}
	res.sample(ctx, d, adminKey, res.End, arrived-lastArrived)
	res.Booking, err = finishBooking(ctx, d, adminKey, e.book, res.Visitors)
	return res, err
}

// runBatch steps every event of the batch at now with at most workers in
// flight, storing each visitor's next time in the batch.
func runBatch(ctx context.Context, e *env, batch []event, now time.Time, workers int) {
	if len(batch) == 0 {
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(batch) {
					return
				}
				at, ok := batch[i].v.step(ctx, e, now)
				if !ok {
					batch[i].v.phase = done
				}
				batch[i].at = at
			}
		}()
	}
	wg.Wait()
}

// adminRoom is the part of GET /api/admin/rooms/{room} the sampler reads.
type adminRoom struct {
	Stats room.Stats `json:"stats"`
}

func (r *Result) sample(ctx context.Context, d Driver, adminKey string, now time.Time, arrivals int) {
	s := Sample{At: now.Sub(r.Start), Arrivals: arrivals}
	status, body, _, err := d.Do(ctx, "GET", "/api/admin/rooms/"+r.Config.Room, adminKey, nil)
	var ar adminRoom
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &ar) != nil {
		r.StatsErrors++
		return
	}
	s.Waiting, s.Admitted, s.Active, s.Pace = ar.Stats.Waiting, ar.Stats.Admitted, ar.Stats.Active, ar.Stats.RatePerMinute
	s.Told, s.Why = ar.Stats.PacePerMinute, ar.Stats.PaceWhy
	r.MaxInUse = max(r.MaxInUse, s.Admitted+s.Active)
	r.Samples = append(r.Samples, s)
}

// cleanup removes a rehearsal's room: closed (no one joins meanwhile),
// drained, deleted with its grants and sessions. It runs after an interrupt
// too, so it has a context of its own. It returns what went wrong, if
// anything ("" when the room is gone).
func cleanup(ctx context.Context, d Driver, adminKey, id string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	path := "/api/admin/rooms/" + id
	for _, step := range []struct{ method, path, body string }{
		{"PUT", path, `{"mode":"closed"}`},
		{"POST", path + "/drain", "{}"},
		{"DELETE", path, ""},
	} {
		var body []byte
		if step.body != "" {
			body = []byte(step.body)
		}
		status, b, _, err := d.Do(ctx, step.method, step.path, adminKey, body)
		if err != nil || status != http.StatusOK {
			return fmt.Sprintf("removing room %s: %s %s: status %d: %s %v", id, step.method, step.path, status, b, err)
		}
	}
	return ""
}
