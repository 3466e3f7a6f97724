package roomdb_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// What the model knows of a visitor.
type mstatus int

const (
	mWaiting  mstatus = iota // in the queue
	mEvicted                 // dropped for a stale heartbeat; restorable while above the head
	mAdmitted                // holds a grant
	mActive                  // consumed: a session runs
	mEnded                   // consumed, then completed or timed out
	mLapsed                  // granted, never consumed, the grant expired
	mLeft
)

var mstatusNames = []string{"waiting", "evicted", "admitted", "active", "ended", "lapsed", "left"}

func (s mstatus) String() string { return mstatusNames[s] }

type mvisitor struct {
	tk     room.Ticket
	status mstatus
	seen   time.Time     // last heartbeat
	told   time.Duration // the silence its class allows before the grace (room.ToldMS)
	until  time.Time     // grant deadline, or session end
}

// model is a plain in-memory waiting room, run beside the engine. Clock jumps
// are whole seconds plus one millisecond, and TTLs whole seconds, so no event
// ever falls exactly on a deadline: the model needs no "either" answers.
type model struct {
	rt       *rapid.T
	ctx      context.Context
	rdb      redis.UniversalClient
	eng      *roomdb.Engine
	clk      *testkit.Clock
	room     string
	keys     roomdb.Keys
	cfg      room.Config
	vs       []*mvisitor
	head     int64 // highest sequence ever admitted
	consumed map[int64]bool
	inUse    int64 // admitted + active in Redis after the previous step
	// A shortened heartbeat window: the old one applies until hbGraceUntil.
	hbGrace      time.Duration
	hbGraceUntil time.Time
	events       map[string]int // how often each branch was reached, over all runs
}

// TestModel drives random interleavings of every operation, config changes and
// clock jumps, and after each step compares Redis with the model and checks
// I1 (capacity), I2 (one-time consume), I3 (order) and I5 (reclaim).
func TestModel(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		base := redistest.Room(t)
		if len(base) > 50 {
			base = base[len(base)-50:]
		}
		run := 0
		seen := map[string]int{}
		rapid.Check(t, func(rt *rapid.T) {
			run++
			m := newModel(rt, rdb, fmt.Sprintf("%s-%d", base, run))
			m.events = seen
			actions := []string{"enqueue", "enqueue", "poll", "poll", "tick", "tick", "consume", "complete",
				"leave", "config", "advance", "advance"}
			for i := 0; i < 50; i++ {
				a := rapid.SampledFrom(actions).Draw(rt, "action")
				switch a {
				case "enqueue":
					m.enqueue()
				case "poll":
					m.poll()
				case "tick":
					m.tick()
				case "consume":
					m.consume()
				case "complete":
					m.complete()
				case "leave":
					m.leave()
				case "config":
					m.config()
				case "advance":
					m.advance()
				}
				m.check(a)
			}
		})
		// The run is only worth something if it reached every branch. The fast tier (-short)
		// makes rapid run a fifth of the checks, too few to reach the rarest branches every
		// time: there the invariants are checked, and the coverage is left to the full run.
		t.Logf("events over %d runs: %v", run, seen)
		if testing.Short() {
			return
		}
		for _, ev := range []string{"admitted by tick", "admitted on arrival", "evicted", "restored", "expired on poll",
			"grant reclaimed", "session ended", "consumed", "replay refused", "consume too late", "paused tick",
			"left", "completed"} {
			if seen[ev] == 0 {
				t.Errorf("no run reached %q", ev)
			}
		}
	})
}

func newModel(rt *rapid.T, rdb redis.UniversalClient, id string) *model {
	clk := newClock()
	m := &model{
		rt: rt, ctx: context.Background(), rdb: rdb, clk: clk,
		eng: roomdb.New(rdb, roomdb.WithClock(clk.Now)), room: id, keys: roomdb.KeysFor(id),
		consumed: map[int64]bool{}, head: -1,
	}
	// Short TTLs, so reclaim and eviction happen within a run's clock jumps.
	m.cfg = baseConfig()
	m.cfg.MaxActive, m.cfg.ClaimTTLSeconds, m.cfg.SessionTTLSeconds, m.cfg.HeartbeatTTLSeconds = 3, 10, 20, 20
	m.cfg.Mode = rapid.SampledFrom([]room.Mode{room.ModeQueue, room.ModeAuto}).Draw(rt, "initial mode")
	m.putConfig()
	return m
}

func (m *model) putConfig() {
	if _, err := m.eng.PutConfig(m.ctx, m.room, m.cfg); err != nil {
		m.rt.Fatalf("PutConfig(%+v): %v", m.cfg, err)
	}
}

func (m *model) now() time.Time { return m.clk.Now() }

// pick draws one of the visitors for which ok holds, or nil.
func (m *model) pick(label string, ok func(*mvisitor) bool) *mvisitor {
	var c []*mvisitor
	for _, v := range m.vs {
		if ok(v) {
			c = append(c, v)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[rapid.IntRange(0, len(c)-1).Draw(m.rt, label)]
}

func (m *model) with(st ...mstatus) func(*mvisitor) bool {
	return func(v *mvisitor) bool { return slices.Contains(st, v.status) }
}

func (m *model) waiting() []*mvisitor {
	var w []*mvisitor
	for _, v := range m.vs {
		if v.status == mWaiting {
			w = append(w, v)
		}
	}
	sort.Slice(w, func(i, j int) bool { return w[i].tk.Seq < w[j].tk.Seq })
	return w
}

func (m *model) position(v *mvisitor) int64 {
	return int64(slices.Index(m.waiting(), v) + 1)
}

func (m *model) count(st ...mstatus) int64 {
	var n int64
	for _, v := range m.vs {
		if slices.Contains(st, v.status) {
			n++
		}
	}
	return n
}

func (m *model) waitingState() room.State {
	if m.cfg.Mode == room.ModePaused {
		return room.StatePaused
	}
	return room.StateWaiting
}

func (m *model) enqueue() {
	id := "v" + strconv.Itoa(len(m.vs))
	queueWasEmpty := m.count(mWaiting) == 0
	p, err := m.eng.Enqueue(m.ctx, m.room, id)
	if err != nil {
		m.rt.Fatalf("Enqueue: %v", err)
	}
	for _, v := range m.vs {
		if p.Ticket.Seq <= v.tk.Seq {
			m.rt.Fatalf("new sequence %d not above earlier %d", p.Ticket.Seq, v.tk.Seq)
		}
	}
	v := &mvisitor{tk: p.Ticket, seen: m.now()}
	m.vs = append(m.vs, v)
	if p.State == room.StateAdmitted {
		if m.cfg.Mode != room.ModeAuto || !queueWasEmpty || m.inUse >= m.cfg.MaxActive {
			m.rt.Fatalf("enqueue admitted at once in mode %s (queue empty %v, in use %d of %d)",
				m.cfg.Mode, queueWasEmpty, m.inUse, m.cfg.MaxActive)
		}
		if want := m.now().Add(time.Duration(m.cfg.ClaimTTLSeconds) * time.Second); !p.GrantDeadline.Equal(want) {
			m.rt.Fatalf("grant deadline %v, want %v", p.GrantDeadline, want)
		}
		v.status, v.until, m.head = mAdmitted, p.GrantDeadline, p.Ticket.Seq
		m.events["admitted on arrival"]++
		return
	}
	v.status = mWaiting
	m.expectPlace("enqueue", v, p, m.waitingState(), m.position(v))
	m.heartbeat(v, p)
}

// heartbeat records a waiting visitor's heartbeat, after checking the budget
// the engine gave: the ETA at the reply's rate plus room.PollSlack, at most
// room.MaxPollAfter (always that in a paused room).
func (m *model) heartbeat(v *mvisitor, p room.Place) {
	want := room.MaxPollAfter
	if p.State == room.StateWaiting {
		eta := time.Duration(math.Floor(float64(p.Position)*60000/p.RatePerMinute)) * time.Millisecond
		want = min(room.MaxPollAfter, eta+room.PollSlack)
	}
	if p.PollWithin != want {
		m.rt.Fatalf("%d at %d (rate %v, %s): PollWithin %v, want %v", v.tk.Seq, p.Position, p.RatePerMinute, p.State, p.PollWithin, want)
	}
	v.seen = m.now()
	v.told = time.Duration(room.ToldMS(room.ToldClass(want.Milliseconds()))) * time.Millisecond
}

func (m *model) expectPlace(op string, v *mvisitor, p room.Place, st room.State, pos int64) {
	got := view{State: p.State, Position: p.Position, Waiting: p.Waiting}
	want := view{State: st, Position: pos, Waiting: m.count(mWaiting)}
	if got != want {
		m.rt.Fatalf("%s of %d (model: %s): got %+v, want %+v", op, v.tk.Seq, v.status, got, want)
	}
}

func (m *model) poll() {
	v := m.pick("poll any", func(*mvisitor) bool { return true })
	if rapid.Bool().Draw(m.rt, "poll a queued or evicted one") {
		v = m.pick("poll", m.with(mWaiting, mEvicted))
	}
	// An evicted visitor the ticks have not passed yet comes back (I4): a
	// branch the other draws reach too rarely to count on it in 100 runs.
	if back := m.pick("poll a restorable one", func(v *mvisitor) bool { return v.status == mEvicted && v.tk.Seq > m.head }); back != nil &&
		rapid.IntRange(0, 3).Draw(m.rt, "prefer a restorable one") == 0 {
		v = back
	}
	if v == nil {
		return
	}
	p, err := m.eng.Poll(m.ctx, v.tk)
	if err != nil {
		m.rt.Fatalf("Poll: %v", err)
	}
	now := m.now()
	switch v.status {
	case mEvicted:
		if v.tk.Seq > m.head {
			v.status = mWaiting // restored (I4)
			m.events["restored"]++
			m.expectPlace("poll (restore)", v, p, m.waitingState(), m.position(v))
			m.heartbeat(v, p)
			return
		}
		m.expectState(v, p, room.StateExpired, false)
	case mWaiting:
		m.expectPlace("poll", v, p, m.waitingState(), m.position(v))
		m.heartbeat(v, p)
	case mAdmitted:
		if now.After(v.until) {
			m.expectState(v, p, room.StateExpired, false)
			return
		}
		m.expectState(v, p, room.StateAdmitted, false)
		if !p.GrantDeadline.Equal(v.until) {
			m.rt.Fatalf("grant deadline %v, want %v", p.GrantDeadline, v.until)
		}
	case mActive:
		if now.After(v.until) { // ended by time, not yet reclaimed: either answer is honest
			if p.State != room.StateExpired && !(p.State == room.StateAdmitted && p.Active) {
				m.rt.Fatalf("poll of a timed-out session: %s", p.State)
			}
			return
		}
		m.expectState(v, p, room.StateAdmitted, true)
	default: // ended, lapsed, left
		m.expectState(v, p, room.StateExpired, false)
		m.events["expired on poll"]++
	}
}

func (m *model) expectState(v *mvisitor, p room.Place, st room.State, active bool) {
	if p.State != st || p.Active != active {
		m.rt.Fatalf("poll of %d (model: %s): state %s active %v, want %s active %v",
			v.tk.Seq, v.status, p.State, p.Active, st, active)
	}
}

func (m *model) tick() {
	now := m.now()
	hbTTL := time.Duration(m.cfg.HeartbeatTTLSeconds) * time.Second
	if now.Before(m.hbGraceUntil) {
		hbTTL = max(hbTTL, m.hbGrace)
	}
	var want room.TickResult
	for _, v := range m.vs {
		switch {
		case v.status == mAdmitted && v.until.Before(now):
			v.status = mLapsed
			want.GrantsReclaimed++
		case v.status == mActive && v.until.Before(now):
			v.status = mEnded
			want.SessionsEnded++
		case v.status == mWaiting && m.cfg.Mode != room.ModePaused && now.Sub(v.seen) > v.told+hbTTL:
			v.status = mEvicted
			want.Evicted++
		}
	}
	free := m.cfg.MaxActive - m.count(mAdmitted, mActive)
	fresh := m.waiting()

	r, err := m.eng.Tick(m.ctx, m.room)
	if err != nil {
		m.rt.Fatalf("Tick: %v", err)
	}
	want.Admitted = r.Admitted
	m.events["admitted by tick"] += int(r.Admitted)
	m.events["evicted"] += int(want.Evicted)
	m.events["grant reclaimed"] += int(want.GrantsReclaimed)
	m.events["session ended"] += int(want.SessionsEnded)
	if m.cfg.Mode == room.ModePaused {
		m.events["paused tick"]++
	}
	event := r // the admission event's fields, checked below
	r.FirstSeq, r.LastSeq, r.After = 0, 0, room.TickCounts{}
	r.Net, r.Pace, event.Net, event.Pace = nil, nil, nil, nil // the room's steering: steer_test.go
	if r != want {
		m.rt.Fatalf("Tick = %+v, want %+v", r, want)
	}
	if m.cfg.Mode == room.ModePaused && r.Admitted != 0 {
		m.rt.Fatalf("paused room admitted %d", r.Admitted)
	}
	if r.Admitted > max(free, 0) {
		m.rt.Fatalf("admitted %d with %d free slots (I1)", r.Admitted, free)
	}
	if burst := max(1, m.cfg.AdmitPerMinute/30); r.Admitted > burst {
		m.rt.Fatalf("admitted %d in one tick, above the two-second burst %d", r.Admitted, burst)
	}
	if r.Admitted > int64(len(fresh)) {
		m.rt.Fatalf("admitted %d, but only %d fresh visitors wait", r.Admitted, len(fresh))
	}
	// I3: those admitted are the front of the queue, in ticket order.
	for _, v := range fresh[:r.Admitted] {
		v.status, v.until = mAdmitted, now.Add(time.Duration(m.cfg.ClaimTTLSeconds)*time.Second)
		m.head = max(m.head, v.tk.Seq)
	}
	// The admission event: the range admitted and the counts after the tick,
	// only when the tick changed something.
	if r == (room.TickResult{}) {
		if event != r {
			m.rt.Fatalf("a tick that changed nothing reported %+v", event)
		}
		return
	}
	var lo, hi int64
	if r.Admitted > 0 {
		lo, hi = fresh[0].tk.Seq, fresh[r.Admitted-1].tk.Seq
	}
	after := room.TickCounts{Waiting: int64(len(m.waiting())), Admitted: m.count(mAdmitted), Active: m.count(mActive)}
	if event.FirstSeq != lo || event.LastSeq != hi || event.After != after {
		m.rt.Fatalf("tick event %+v, want range %d..%d and counts %+v", event, lo, hi, after)
	}
}

func (m *model) consume() {
	var seq int64
	var v *mvisitor
	switch rapid.IntRange(0, 9).Draw(m.rt, "consume whom") {
	case 0:
		seq = rapid.Int64Range(1, 1<<40).Draw(m.rt, "seq")
	case 1, 2, 3:
		v = m.pick("consume any", func(*mvisitor) bool { return true })
	default: // mostly the grants, where the interesting answers are
		v = m.pick("consume granted", m.with(mAdmitted, mActive))
	}
	if v != nil {
		seq = v.tk.Seq
	} else if seq == 0 {
		return
	}
	s, err := m.eng.Consume(m.ctx, m.room, seq, m.cfg.OriginURL)
	if err == nil {
		if m.consumed[seq] {
			m.rt.Fatalf("grant %d consumed twice (I2)", seq)
		}
		m.consumed[seq] = true
		m.events["consumed"]++
	}
	if errors.Is(err, room.ErrAlreadyConsumed) {
		m.events["replay refused"]++
	}
	if errors.Is(err, room.ErrGrantExpired) {
		m.events["consume too late"]++
	}
	status := mstatus(-1)
	if v != nil {
		status = v.status
	}
	now := m.now()
	switch {
	case status == mAdmitted && !now.After(v.until):
		if err != nil {
			m.rt.Fatalf("consume of a live grant: %v", err)
		}
		v.status, v.until = mActive, now.Add(time.Duration(m.cfg.SessionTTLSeconds)*time.Second)
		if !s.ExpiresAt.Equal(v.until) {
			m.rt.Fatalf("session expires %v, want %v", s.ExpiresAt, v.until)
		}
	case status == mAdmitted:
		if !errors.Is(err, room.ErrGrantExpired) {
			m.rt.Fatalf("consume after the claim deadline: %v, want ErrGrantExpired", err)
		}
		// Whether the refused grant is dropped now or by the next tick is the
		// engine's choice; follow Redis.
		if m.rdb.ZScore(m.ctx, m.keys.Grants, strconv.FormatInt(seq, 10)).Err() == redis.Nil {
			v.status = mLapsed
		}
	case status == mActive:
		if !errors.Is(err, room.ErrAlreadyConsumed) {
			m.rt.Fatalf("consume of an active session: %v, want ErrAlreadyConsumed", err)
		}
	case status == mEnded, status == mLapsed:
		if err == nil {
			m.rt.Fatalf("consume of %s grant %d succeeded", status, seq)
		}
	default: // never granted
		if !errors.Is(err, room.ErrUnknownGrant) {
			m.rt.Fatalf("consume of a never granted %d (model: %v): %v, want ErrUnknownGrant", seq, status, err)
		}
	}
}

func (m *model) complete() {
	if rapid.IntRange(0, 2).Draw(m.rt, "complete or let run") != 0 {
		return // most sessions run out their TTL
	}
	v := m.pick("complete", m.with(mActive, mEnded))
	if v == nil {
		return
	}
	_ = m.eng.Complete(m.ctx, m.room, v.tk.Seq, m.cfg.OriginURL) // a repeat may say unknown; the slot count is what matters
	v.status = mEnded
	m.events["completed"]++
}

func (m *model) leave() {
	if rapid.IntRange(0, 2).Draw(m.rt, "leave or stay") != 0 {
		return
	}
	v := m.pick("leave", m.with(mWaiting, mEvicted))
	if v == nil {
		return
	}
	if err := m.eng.Leave(m.ctx, v.tk); err != nil {
		m.rt.Fatalf("Leave: %v", err)
	}
	v.status = mLeft
	m.events["left"]++
}

func (m *model) config() {
	c := m.cfg
	switch rapid.IntRange(0, 5).Draw(m.rt, "setting") {
	case 0:
		c.MaxActive = rapid.Int64Range(1, 6).Draw(m.rt, "maxActive")
	case 1:
		c.AdmitPerMinute = rapid.SampledFrom([]int64{1, 6, 60, 90, 600, 6000}).Draw(m.rt, "admitPerMinute")
	case 2:
		c.Mode = rapid.SampledFrom([]room.Mode{room.ModeQueue, room.ModeAuto, room.ModePaused}).Draw(m.rt, "mode")
	case 3:
		c.ClaimTTLSeconds = rapid.SampledFrom([]int64{5, 10, 30}).Draw(m.rt, "claimTTL")
	case 4:
		c.SessionTTLSeconds = rapid.SampledFrom([]int64{10, 30, 60}).Draw(m.rt, "sessionTTL")
	case 5:
		c.HeartbeatTTLSeconds = rapid.SampledFrom([]int64{10, 20, 60}).Draw(m.rt, "heartbeatTTL")
		if old := m.cfg.HeartbeatTTLSeconds; c.HeartbeatTTLSeconds < old {
			m.hbGrace = time.Duration(old) * time.Second
			m.hbGraceUntil = m.now().Add(m.hbGrace)
		}
	}
	m.cfg = c
	m.putConfig()
	if got, err := m.eng.GetConfig(m.ctx, m.room); err != nil || !reflect.DeepEqual(got, m.cfg) {
		m.rt.Fatalf("GetConfig after a live change = %+v, %v; want %+v", got, err, m.cfg)
	}
}

func (m *model) advance() {
	s := rapid.IntRange(0, 3).Draw(m.rt, "advance seconds")
	if rapid.IntRange(0, 3).Draw(m.rt, "long jump") == 0 {
		s = rapid.IntRange(4, 70).Draw(m.rt, "advance seconds (long)")
	}
	m.clk.Advance(time.Duration(s)*time.Second + time.Millisecond)
}

// check compares Redis with the model after every step.
func (m *model) check(after string) {
	want := map[string][]int64{}
	for _, v := range m.vs {
		switch v.status {
		case mWaiting:
			want["queue"] = append(want["queue"], v.tk.Seq)
		case mAdmitted:
			want["grants"] = append(want["grants"], v.tk.Seq)
		case mActive:
			want["active"] = append(want["active"], v.tk.Seq)
		}
	}
	var q, g, a *redis.StringSliceCmd
	if _, err := m.rdb.TxPipelined(m.ctx, func(p redis.Pipeliner) error {
		q = p.ZRange(m.ctx, m.keys.Queue, 0, -1)
		g = p.ZRange(m.ctx, m.keys.Grants, 0, -1)
		a = p.ZRange(m.ctx, m.keys.Active, 0, -1)
		return nil
	}); err != nil {
		m.rt.Fatalf("read back: %v", err)
	}
	got := map[string][]int64{}
	for name, cmd := range map[string]*redis.StringSliceCmd{"queue": q, "grants": g, "active": a} {
		for _, s := range cmd.Val() {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				m.rt.Fatalf("%s member %q", name, s)
			}
			got[name] = append(got[name], n)
		}
		slices.Sort(got[name])
		slices.Sort(want[name])
		if !slices.Equal(got[name], want[name]) {
			m.rt.Fatalf("after %s: Redis %s = %v, model %v", after, name, got[name], want[name])
		}
	}
	// I1: whatever raised admitted + active kept it within maxActive (a lowered
	// maxActive may leave a room above it until sessions end, never raise it).
	inUse := int64(len(got["grants"]) + len(got["active"]))
	if inUse > m.inUse && inUse > m.cfg.MaxActive {
		m.rt.Fatalf("after %s: admitted+active rose from %d to %d, above maxActive %d (I1)",
			after, m.inUse, inUse, m.cfg.MaxActive)
	}
	m.inUse = inUse
}
