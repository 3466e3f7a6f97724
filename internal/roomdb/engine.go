// Package roomdb is the room engine over Redis: the waiting room's state
// machine (Engine), the arrival shards a room's joins spread over
// (arrivals.go) and a room's Redis key layout (keys.go). Of the deployed code,
// it and the booking kit's engine (internal/bookingdb) are what talks to
// Redis (internal/app only builds the client); the rest speaks the types of
// package room. Every state change is one Lua script from lua/, run by SHA
// with a fallback to load, and every key of a room shares the room's hash tag
// so a room lives in one Redis Cluster slot.
//
// Time never comes from Redis (except the sequence floor, see docs/ENGINE.md):
// callers pass it in through the Engine's clock, which tests replace.
package roomdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/lua"
)

// script is one Lua script of lua/ and the name errors give it.
type script = lua.Script

// Each script runs by SHA (EVALSHA) and falls back to EVAL when Redis lost it.
var (
	enqueueCmd     = lua.NewScript("enqueue", lua.Enqueue)
	pollCmd        = lua.NewScript("poll", lua.Poll)
	tickCmd        = lua.NewScript("tick", lua.Tick)
	consumeCmd     = lua.NewScript("consume", lua.Consume)
	completeCmd    = lua.NewScript("complete", lua.Complete)
	renewCmd       = lua.NewScript("renew", lua.Renew)
	leaveCmd       = lua.NewScript("leave", lua.Leave)
	configCmd      = lua.NewScript("config", lua.Config)
	statsCmd       = lua.NewScript("stats", lua.Stats)
	ratelimitCmd   = lua.NewScript("ratelimit", lua.RateLimit)
	headCmd        = lua.NewScript("head", lua.Head)
	drainCmd       = lua.NewScript("drain", lua.Drain)
	arriveCmd      = lua.NewScript("arrive", lua.Arrive)
	arrivalsCmd    = lua.NewScript("arrivals", lua.Arrivals)
	arrtrimCmd     = lua.NewScript("arrtrim", lua.ArrTrim)
	mergeCmd       = lua.NewScript("merge", lua.Merge)
	arrdropCmd     = lua.NewScript("arrdrop", lua.ArrDrop)
	fenceCmd       = lua.NewScript("fence", lua.Fence)
	arrfenceCmd    = lua.NewScript("arrfence", lua.ArrFence)
	spollCmd       = lua.NewScript("spoll", lua.SPoll)
	ssweepCmd      = lua.NewScript("ssweep", lua.SSweep)
	sevictCmd      = lua.NewScript("sevict", lua.SEvict)
	sleaveCmd      = lua.NewScript("sleave", lua.SLeave)
	schedputCmd    = lua.NewScript("schedput", lua.SchedPut)
	schedfreeCmd   = lua.NewScript("schedfree", lua.SchedFree)
	schedrefuseCmd = lua.NewScript("schedrefuse", lua.SchedRefuse)
)

// Scripter is the narrowest Redis client the engine needs: a client, a
// cluster client or a ring all fit.
type Scripter interface {
	redis.Scripter
	SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
	HGet(ctx context.Context, key, field string) *redis.StringCmd
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	ZAdd(ctx context.Context, key string, members ...redis.Z) *redis.IntCmd
	Pipeline() redis.Pipeliner
	TxPipeline() redis.Pipeliner
}

var _ Scripter = (redis.UniversalClient)(nil)

// Engine is the room state machine over Redis; room.Engine is its interface,
// which the wrappers above it (durable.Queue) take.
type Engine struct {
	rdb         Scripter
	clock       room.Clock
	batch       int
	mergeChunk  int
	minInterval time.Duration

	// Place replies carry the room's settings version, not the settings: they
	// are read once per version (new per PUT) and kept here.
	mu   sync.Mutex
	cfgs map[string]versioned
	// Rooms whose arrival shards could not be read: their merges wait (arrivals.go, holdMerges).
	holds map[string]mergeHold

	// The region this engine writes for, and its scripts as that region
	// runs them (region.go, WithRegion).
	region string
	bound  sync.Map // script name → script
}

type versioned struct {
	ver string
	cfg room.Config
	at  time.Time // when the room's shard last confirmed ver (engine clock)
}

// Option configures an Engine.
type Option func(*Engine)

// WithClock replaces the clock (tests drive time with it).
func WithClock(c room.Clock) Option { return func(e *Engine) { e.clock = c } }

// EvictBatch is how many places of the queue one tick's sweep checks for a
// stale heartbeat (WithEvictBatch changes it): a sweep passes a queue of n in
// n ÷ EvictBatch ticks, which a silent visitor's eviction may wait beyond the
// told poll and the grace.
const EvictBatch = 2000

// WithEvictBatch sets the most stale heartbeats one tick evicts (default EvictBatch).
func WithEvictBatch(n int) Option { return func(e *Engine) { e.batch = n } }

// WithMergeChunk sets the most arrivals one merge call puts into a spread
// room's queue (default 4000: 15–26 ms of the room's shard here, where one
// call of 20,000 took 96–118 ms).
func WithMergeChunk(n int) Option { return func(e *Engine) { e.mergeChunk = max(n, 1) } }

// WithMinPollInterval refuses (ErrRateLimited) a waiting visitor's poll that
// comes sooner than d after the last one (default 0: never).
func WithMinPollInterval(d time.Duration) Option { return func(e *Engine) { e.minInterval = d } }

// New returns an engine over the given Redis client.
func New(rdb Scripter, opts ...Option) *Engine {
	e := &Engine{rdb: rdb, clock: time.Now, batch: EvictBatch, mergeChunk: 4000, cfgs: map[string]versioned{}, holds: map[string]mergeHold{}}
	for _, o := range opts {
		o(e)
	}
	return e
}

func (e *Engine) nowMS() int64 { return e.clock().UnixMilli() }

// run runs a room script and returns its reply as a slice. A Redis error is
// ErrUnavailable wrapping the cause (a context error stays visible to errors.Is)
// and naming the script.
func (e *Engine) run(ctx context.Context, s script, roomID string, args ...any) ([]any, error) {
	return e.runKeys(ctx, s, roomID, nil, args...)
}

// runKeys is run with keys of the room beyond lib.lua's, after them.
func (e *Engine) runKeys(ctx context.Context, s script, roomID string, extra []string, args ...any) ([]any, error) {
	if !room.ValidRoomID(roomID) {
		return nil, room.ErrInvalidRoom
	}
	reply, err := e.inRegion(s).Reply(ctx, e.rdb, append(KeysFor(roomID).List(), extra...), args...)
	if err != nil {
		return nil, unavailable(err)
	}
	return reply, nil
}

// unexpected is the error of a reply the engine cannot read.
func unexpected(s script, reply []any) error {
	return fmt.Errorf("%w: %s script: unexpected reply %.80v", room.ErrUnavailable, s.Name, reply)
}

// str and num read reply values (lua.Str, lua.Num).
var str, num = lua.Str, lua.Num

// word is a one-word reply's word, or "" when the reply is not one.
func word(reply []any) string {
	if len(reply) != 1 {
		return ""
	}
	return str(reply[0])
}

// cached returns the settings the engine holds for a room, and their version
// ("" for none), which place scripts take so they send the settings only when
// they changed.
func (e *Engine) cached(roomID string) versioned {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfgs[roomID]
}

// keep caches a room's settings, confirmed now.
func (e *Engine) keep(roomID string, v versioned) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.cfgs) >= maxCachedRooms {
		clear(e.cfgs) // a miss costs only the settings in one reply
	}
	e.cfgs[roomID] = v
}

// maxCachedRooms bounds the settings cache: a deployment has a handful of
// rooms, but nothing else stops a process that meets many from growing.
const maxCachedRooms = 1024

// place decodes lib.lua's reply shape; have is the cached settings sent with the call.
func (e *Engine) place(s script, t room.Ticket, have versioned, reply []any) (room.Place, error) {
	switch word(reply) {
	case wordNoRoom:
		return room.Place{}, room.ErrUnknownRoom
	case wordClosed:
		return room.Place{}, room.ErrClosed
	}
	if len(reply) < placeSettings {
		return room.Place{}, unexpected(s, reply)
	}
	cfg := have.cfg
	switch ver := str(reply[placeVersion]); {
	case len(reply) > placeSettings:
		var err error
		if cfg, err = decodePairs(reply[placeSettings:]); err != nil {
			return room.Place{}, fmt.Errorf("%w: %s script: %w", room.ErrUnavailable, s.Name, err)
		}
		if ver != "" {
			e.keep(t.Room, versioned{ver, cfg, e.clock()})
		}
	case ver == "" || ver != have.ver:
		return room.Place{}, fmt.Errorf("%w: %s script: place reply without settings", room.ErrUnavailable, s.Name)
	default:
		e.confirm(t.Room, ver)
	}
	p := room.Place{Ticket: t, Config: cfg}
	if m := str(reply[placeSeq]); m != "" {
		p.Ticket.Seq = num(m)
	}
	if d := str(reply[placeDraw]); d != "" {
		p.Ticket.Draw, _ = strconv.ParseFloat(d, 64)
	}
	p.Position, p.Waiting = num(reply[placePosition]), num(reply[placeWaiting])
	p.PollWithin = time.Duration(num(reply[placeWithin])) * time.Millisecond
	held := num(reply[placeNotice]) == 1
	p.Notice = &held
	deadline := num(reply[placeDeadline])
	p.RatePerMinute = float64(num(reply[placeRate])) / 1000
	if p.RatePerMinute <= 0 {
		p.RatePerMinute = float64(p.Config.AdmitPerMinute)
	}
	switch state := str(reply[placeState]); state {
	case stateActive:
		p.State, p.Active, p.GrantDeadline = room.StateAdmitted, true, time.UnixMilli(deadline)
	case string(room.StateAdmitted):
		p.State, p.GrantDeadline = room.StateAdmitted, time.UnixMilli(deadline)
	default:
		p.State = room.State(state)
	}
	if p.State == room.StatePrequeue || p.State == room.StateClosed {
		// The scripts send the place at the opening (or, closed, should the
		// room open again); it is not shown.
		p.OpeningRank, p.Position = p.Position, 0
	}
	return p, nil
}

// Enqueue adds a new visitor (id chosen by the caller, never by the client)
// and returns the place with the ticket to sign.
func (e *Engine) Enqueue(ctx context.Context, roomID, visitor string) (room.Place, error) {
	return e.Join(ctx, roomID, visitor, room.JoinProof{})
}

// score is the queue score a ticket implies: its draw in the pre-queue, else its sequence.
func score(t room.Ticket) string {
	if t.Draw > 0 {
		return strconv.FormatFloat(t.Draw, 'g', -1, 64)
	}
	return strconv.FormatInt(t.Seq, 10)
}

// Poll reports where a ticket's holder stands and refreshes the heartbeat;
// it restores the place if Redis lost it and the head has not passed it (I4).
// A waiting visitor polling sooner than the engine's min poll interval gets a
// *RetryError (ErrRateLimited).
func (e *Engine) Poll(ctx context.Context, t room.Ticket) (room.Place, error) {
	return e.poll(ctx, t, e.minInterval)
}

func (e *Engine) poll(ctx context.Context, t room.Ticket, minInterval time.Duration) (room.Place, error) {
	if !room.ValidRoomID(t.Room) { // before the shard's poll reads the room's settings
		return room.Place{}, room.ErrInvalidRoom
	}
	if p, ok, err := e.pollOnShard(ctx, t, minInterval); ok || err != nil {
		return p, err
	}
	p, err := e.pollRoom(ctx, t, minInterval)
	if err == nil && p.PollWithin < 0 {
		// Far, with no heartbeat on either shard: it starts on the visitor's.
		p.PollWithin = -p.PollWithin
		if sp, ok := e.adopt(ctx, t, p.Position); ok {
			return sp, nil
		}
	}
	return p, err
}

// pollRoom is a poll on the room's shard (poll.lua).
func (e *Engine) pollRoom(ctx context.Context, t room.Ticket, minInterval time.Duration) (room.Place, error) {
	have := e.cached(t.Room)
	reply, err := e.run(ctx, pollCmd, t.Room, e.nowMS(), strconv.FormatInt(t.Seq, 10), score(t),
		minInterval.Milliseconds(), have.ver)
	if err != nil {
		return room.Place{}, err
	}
	if len(reply) == slowWait+1 && str(reply[0]) == wordSlow {
		return room.Place{}, &room.RetryError{After: time.Duration(num(reply[slowWait])) * time.Millisecond}
	}
	return e.place(pollCmd, t, have, reply)
}

// AllowEnqueue applies the room's per-client enqueue limit (clientEnqueuePerMinute,
// a GCRA in Redis) to a client (its address), alone: the enqueue route joins
// with JoinProof.Client instead, which checks the same limit in the join's script. It returns nil, a *RetryError
// (ErrRateLimited), ErrUnknownRoom or ErrUnavailable.
func (e *Engine) AllowEnqueue(ctx context.Context, roomID, client string) error {
	if !room.ValidRoomID(roomID) {
		return room.ErrInvalidRoom
	}
	k := KeysFor(roomID)
	client = room.ClientNetwork(client, e.cached(roomID).cfg)
	v, err := ratelimitCmd.Run(ctx, e.rdb, []string{k.Config, k.Limiter(clientHash(client))}, e.nowMS()).Result()
	if err != nil {
		return fmt.Errorf("%w: %s script: %w", room.ErrUnavailable, ratelimitCmd.Name, err)
	}
	reply, ok := v.([]any)
	if !ok || len(reply) != 1 {
		return fmt.Errorf("%w: %s script: unexpected reply %T", room.ErrUnavailable, ratelimitCmd.Name, v)
	}
	if word(reply) == wordNoRoom {
		return room.ErrUnknownRoom
	}
	wait, ok := reply[0].(int64)
	switch {
	case !ok || wait < 0:
		return unexpected(ratelimitCmd, reply)
	case wait == 0:
		return nil
	default:
		return &room.RetryError{After: time.Duration(wait) * time.Millisecond}
	}
}

// clientHash names a client's limiter: a hash of its address, never the raw input.
func clientHash(client string) string {
	sum := sha256.Sum256([]byte(client))
	return hex.EncodeToString(sum[:12])
}

// Leave removes the ticket's holder from the queue for good.
func (e *Engine) Leave(ctx context.Context, t room.Ticket) error {
	now := e.nowMS()
	reply, err := e.runKeys(ctx, leaveCmd, t.Room, endKeys(t.Room, now), now, strconv.FormatInt(t.Seq, 10), score(t))
	if err != nil {
		return err
	}
	switch word(reply) {
	case wordOK:
		return e.leaveShard(ctx, t)
	case wordNoRoom:
		return room.ErrUnknownRoom
	}
	return unexpected(leaveCmd, reply)
}

// Consume turns the grant seq into an active session, exactly once. audience
// is the entry token's: the script refuses it (ErrWrongAudience) unless it is
// the room's origin URL, before it looks at the grant. Errors: ErrUnknownRoom,
// ErrWrongAudience, ErrUnknownGrant, ErrAlreadyConsumed, ErrGrantExpired,
// ErrUnavailable.
func (e *Engine) Consume(ctx context.Context, roomID string, seq int64, audience string) (room.Session, error) {
	now := e.nowMS()
	reply, err := e.runKeys(ctx, consumeCmd, roomID, endKeys(roomID, now), now, strconv.FormatInt(seq, 10), audience)
	if err != nil {
		return room.Session{}, err
	}
	return sessionReply(consumeCmd, roomID, reply)
}

// sessionReply decodes the reply of a script that answers a session (consume,
// renew): "ok" with the session's end, or the word of a refusal.
func sessionReply(s script, roomID string, reply []any) (room.Session, error) {
	switch str(reply[0]) {
	case wordOK:
		if len(reply) <= consumeEnds {
			return room.Session{}, unexpected(s, reply)
		}
		return room.Session{Room: roomID, ExpiresAt: time.UnixMilli(num(reply[consumeEnds]))}, nil
	case wordConsumed:
		return room.Session{}, room.ErrAlreadyConsumed
	case wordExpired:
		return room.Session{}, room.ErrGrantExpired
	case wordNoGrant:
		return room.Session{}, room.ErrUnknownGrant
	case wordNoRoom:
		return room.Session{}, room.ErrUnknownRoom
	case wordAudience:
		return room.Session{}, room.ErrWrongAudience
	}
	return room.Session{}, unexpected(s, reply)
}

// Complete ends the session of grant seq (or gives up the grant if it was
// never consumed); the slot frees at once. audience is checked as by Consume.
// Errors: ErrUnknownRoom, ErrWrongAudience, ErrUnknownGrant (already ended or
// expired), ErrUnavailable.
func (e *Engine) Complete(ctx context.Context, roomID string, seq int64, audience string) error {
	now := e.nowMS()
	reply, err := e.runKeys(ctx, completeCmd, roomID, endKeys(roomID, now), now, strconv.FormatInt(seq, 10), audience)
	if err != nil {
		return err
	}
	switch word(reply) {
	case wordOK:
		return nil
	case wordNoGrant:
		return room.ErrUnknownGrant
	case wordNoRoom:
		return room.ErrUnknownRoom
	case wordAudience:
		return room.ErrWrongAudience
	}
	return unexpected(completeCmd, reply)
}

// Renew extends the active session seq, which started at start (from the
// session cookie Vestibule signed), to end at min(now + sessionTTLSeconds,
// start + maxSessionSeconds), and never earlier than it ends already: an
// active visitor keeps a session whose idle timeout is sessionTTLSeconds, up
// to the room's maximum (a room with maxSessionSeconds 0 renews nothing).
// It returns the session's end, moved or not. audience is checked as by
// Consume. Errors: ErrUnknownRoom, ErrWrongAudience, ErrUnknownGrant (no such
// session: completed, expired or never consumed), ErrUnavailable.
func (e *Engine) Renew(ctx context.Context, roomID string, seq int64, audience string, start time.Time) (room.Session, error) {
	reply, err := e.run(ctx, renewCmd, roomID, e.nowMS(), strconv.FormatInt(seq, 10), audience, strconv.FormatInt(start.UnixMilli(), 10))
	if err != nil {
		return room.Session{}, err
	}
	return sessionReply(renewCmd, roomID, reply)
}

// Tick runs one admission tick of the room.
func (e *Engine) Tick(ctx context.Context, roomID string) (room.TickResult, error) {
	return e.tick(ctx, roomID, 0)
}

// TickGuarded runs one admission tick of the room unless any tick of it ran
// less than guard ago (ErrTickBusy); the check and the tick are one script, so
// concurrent callers run at most one tick per guard. Visitors' requests drive
// a quiet room's ticks with it while the scheduled admit function is idle.
func (e *Engine) TickGuarded(ctx context.Context, roomID string, guard time.Duration) (room.TickResult, error) {
	return e.tick(ctx, roomID, max(1, guard.Milliseconds()))
}

func (e *Engine) tick(ctx context.Context, roomID string, guardMS int64) (room.TickResult, error) {
	if !room.ValidRoomID(roomID) {
		return room.TickResult{}, room.ErrInvalidRoom
	}
	now := e.nowMS()
	// The notices' keys, then the trail, the last key (ARGV[4]).
	keys := append(append([]string{KeysFor(roomID).History()}, noticeKeys(roomID)...), KeysFor(roomID).Trail(now))
	reply, err := e.runKeys(ctx, tickCmd, roomID, keys, now, e.batch, guardMS, 1)
	if err != nil {
		return room.TickResult{}, err
	}
	switch word(reply) {
	case wordNoRoom:
		return room.TickResult{}, room.ErrUnknownRoom
	case wordBusy:
		return room.TickResult{}, room.ErrTickBusy
	}
	if len(reply) != tickLen && len(reply) != tickLenEvent && len(reply) != tickLenSteer {
		return room.TickResult{}, unexpected(tickCmd, reply)
	}
	r := room.TickResult{Admitted: num(reply[tickAdmitted]), Evicted: num(reply[tickEvicted]),
		GrantsReclaimed: num(reply[tickReclaimed]), SessionsEnded: num(reply[tickEnded]), Notices: num(reply[tickNotices])}
	// A tick that only steered (tickLenSteer) changed no count: no event fields.
	if len(reply) >= tickLenEvent && r.Admitted+r.Evicted+r.GrantsReclaimed+r.SessionsEnded+r.Notices > 0 {
		r.FirstSeq, r.LastSeq = num(reply[tickFirst]), num(reply[tickLast])
		r.After = room.TickCounts{Waiting: num(reply[tickWaiting]), Admitted: num(reply[tickGranted]), Active: num(reply[tickActive])}
	}
	if len(reply) == tickLenSteer {
		r.Net, r.Pace = steered(reply)
	}
	// After the admissions, so a guarded tick that was busy merges nothing
	// either: what it merges is admitted from the next tick on.
	var evicted int64
	r.Merged, evicted, r.MergeErr = e.merge(ctx, roomID, min(max(int(num(reply[tickShards])), 0), room.MaxJoinShards))
	r.Evicted += evicted
	return r, nil
}

// PutConfig validates and stores a room's settings (creating the room), live,
// and returns them as stored (opensAt to the millisecond, in UTC). An invalid
// config is a *FieldError (ErrInvalidConfig) and stores nothing.
func (e *Engine) PutConfig(ctx context.Context, roomID string, cfg room.Config) (room.Config, error) {
	return e.storeConfig(ctx, roomID, cfg, lease{})
}

// storeConfig is PutConfig, under a scheduled change's lease when l names
// one (ApplyScheduled).
func (e *Engine) storeConfig(ctx context.Context, roomID string, cfg room.Config, l lease) (room.Config, error) {
	if !room.ValidRoomID(roomID) {
		return room.Config{}, room.ErrInvalidRoom
	}
	if err := cfg.Validate(); err != nil {
		return room.Config{}, err
	}
	seed := make([]byte, 16)
	rand.Read(seed) // never fails (crypto/rand, Go ≥ 1.24)
	pairs := EncodeConfig(cfg)
	for try := 1; ; try++ {
		stored, err := e.putConfig(ctx, roomID, hex.EncodeToString(seed), pairs, l)
		if err != nil {
			return room.Config{}, err
		}
		if stored {
			break
		}
		if try == putTries {
			return room.Config{}, fmt.Errorf("%w: the room's settings changed %d times during this change", room.ErrUnavailable, putTries)
		}
	}
	// The registry lives in its own slot: written after the room, so a room in
	// the registry always has a config (a crash between the two leaves a room
	// the admin can PUT again).
	if err := e.rdb.SAdd(ctx, RegistryKey, roomID).Err(); err != nil {
		return room.Config{}, fmt.Errorf("%w: register room: %w", room.ErrUnavailable, err)
	}
	// Answer what is stored, so a PUT and a later GET show the same settings.
	stored, _ := decodePairs(pairs)
	return stored, nil
}

// putTries is how many times PutConfig begins again when another change,
// begun after it, stored its settings first (config.lua's 'raced').
const putTries = 3

// putConfig is one try of PutConfig: it fences the room's arrival shards
// (fence.lua, arrfence.lua), then stores the settings with the fence in their
// version (config.lua). stored is false when a later change stored its
// settings first. A shard that cannot be fenced is skipped: it turns away
// the joins of older settings from the next change on, and until then takes
// them for at most confirmFor, as every shard did before fences.
// room.ErrLeaseLost when l names a lease that is no longer the caller's.
func (e *Engine) putConfig(ctx context.Context, roomID, seed string, pairs []any, l lease) (stored bool, err error) {
	k := KeysFor(roomID)
	reply, err := fenceCmd.Reply(ctx, e.rdb, []string{k.Fence(), k.Config})
	if err != nil {
		return false, fmt.Errorf("%w: %w", room.ErrUnavailable, err)
	}
	if len(reply) != 2 {
		return false, unexpected(fenceCmd, reply)
	}
	fence := str(reply[0])
	if shards := min(max(int(num(reply[1])), 0), room.MaxJoinShards); shards > 0 {
		keys := make([][]string, shards)
		for i := range keys {
			keys[i] = []string{ArrivalKeysFor(roomID, i).State}
		}
		fctx, cancel := context.WithTimeout(ctx, shardBudget)
		arrfenceCmd.Each(fctx, e.rdb, keys, fence)
		cancel()
	}
	ver := make([]byte, 8)
	rand.Read(ver)
	args := append([]any{e.nowMS(), seed, fence + "." + hex.EncodeToString(ver), l.token, l.change}, pairs...)
	var extra []string
	if l.token != "" {
		extra = []string{k.ScheduleLease(l.change), k.Schedule(), k.ScheduleVersion()}
	}
	reply, err = e.runKeys(ctx, configCmd, roomID, extra, args...)
	if err != nil {
		return false, err
	}
	switch word(reply) {
	case wordCreated, wordUpdated:
		return true, nil
	case wordRaced:
		return false, nil
	case wordLost:
		return false, fmt.Errorf("%w: %s", room.ErrLeaseLost, l.change)
	}
	return false, unexpected(configCmd, reply)
}

// Head reads the room's admission head (the highest score admitted) and
// raises its floor to floor when floor is higher (pass a negative floor to
// only read). A ticket at or below the floor is never restored (lib.lua
// passed): the durable store records the head and a restore after a total loss
// gives it back as the floor, before it re-creates the room. It returns the
// higher of the head and the floor (-1 for neither), which is what the store
// should keep. It works on a room with no settings (ErrUnknownRoom never).
func (e *Engine) Head(ctx context.Context, roomID string, floor float64) (float64, error) {
	arg := ""
	if floor >= 0 {
		arg = strconv.FormatFloat(floor, 'g', -1, 64)
	}
	return e.head(ctx, roomID, arg)
}

// FloorNow raises the room's floor to the sequence a join would get now
// (Redis server time in µs, as sequences are made): no ticket issued before
// it is ever restored or admitted. A restore whose recorded head is missing or
// unreadable sets it (package durable). It returns what Head returns.
func (e *Engine) FloorNow(ctx context.Context, roomID string) (float64, error) {
	return e.head(ctx, roomID, "now")
}

func (e *Engine) head(ctx context.Context, roomID, arg string) (float64, error) {
	reply, err := e.run(ctx, headCmd, roomID, arg)
	if err != nil {
		return 0, err
	}
	if len(reply) != 2 {
		return 0, unexpected(headCmd, reply)
	}
	top := -1.0
	for _, v := range reply {
		if s := str(v); s != "" {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return 0, unexpected(headCmd, reply)
			}
			top = max(top, f)
		}
	}
	return top, nil
}

// GetConfig reads a room's settings.
func (e *Engine) GetConfig(ctx context.Context, roomID string) (room.Config, error) {
	if !room.ValidRoomID(roomID) {
		return room.Config{}, room.ErrInvalidRoom
	}
	m, err := e.rdb.HGetAll(ctx, KeysFor(roomID).Config).Result()
	if err != nil {
		return room.Config{}, fmt.Errorf("%w: read settings: %w", room.ErrUnavailable, err)
	}
	if len(m) == 0 {
		return room.Config{}, room.ErrUnknownRoom
	}
	return DecodeConfig(m), nil
}

// Rooms lists the registered rooms.
func (e *Engine) Rooms(ctx context.Context) ([]string, error) {
	rooms, err := e.rdb.SMembers(ctx, RegistryKey).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: list rooms: %w", room.ErrUnavailable, err)
	}
	return rooms, nil
}

// Status returns a room's settings and a snapshot of its counts, read together
// in one script.
func (e *Engine) Status(ctx context.Context, roomID string) (room.Config, room.Stats, error) {
	reply, err := e.runKeys(ctx, statsCmd, roomID, noticeKeys(roomID)[:1], e.nowMS())
	if err != nil {
		return room.Config{}, room.Stats{}, err
	}
	if word(reply) == wordNoRoom {
		return room.Config{}, room.Stats{}, room.ErrUnknownRoom
	}
	if len(reply) < statsSettings {
		return room.Config{}, room.Stats{}, unexpected(statsCmd, reply)
	}
	cfg, err := decodePairs(reply[statsSettings:])
	if err != nil {
		return room.Config{}, room.Stats{}, fmt.Errorf("%w: %s script: %w", room.ErrUnavailable, statsCmd.Name, err)
	}
	st := room.Stats{Waiting: num(reply[statsWaiting]), Admitted: num(reply[statsAdmitted]),
		Active: num(reply[statsActive]), AdmittedLastMinute: num(reply[statsLastMinute]),
		Evicted: num(reply[statsEvicted]), Consumed: num(reply[statsConsumed]),
		ReplaysRefused: num(reply[statsReplays]), DrawSeed: str(reply[statsSeed]),
		PacePerMinute: float64(num(reply[statsPace])) / 1000, Net: netState(cfg, str(reply[statsNet])),
		NetWhy: str(reply[statsNetWhy]), PaceWhy: paceWhy(cfg, str(reply[statsPaceWhy])),
		RatePerMinute: float64(num(reply[statsRate])) / 1000,
		NoticeSignups: num(reply[statsSignups]), NoticesSent: num(reply[statsSent]), NoticesFailed: num(reply[statsFailed]),
		TurnsSaved: num(reply[statsSaved]), NoticesHeld: num(reply[statsHeld])}
	if slope := num(reply[statsClimbSlope]); slope > 0 {
		st.Climb = &room.Climb{RatePerMinute: float64(num(reply[statsClimbRate])) / 1000,
			SlopePerMinute: float64(slope) / 1000, TopPerMinute: float64(num(reply[statsClimbTop])) / 1000}
	}
	return cfg, st, nil
}

// Stats returns a snapshot of the room's counts: Status without the settings.
func (e *Engine) Stats(ctx context.Context, roomID string) (room.Stats, error) {
	_, st, err := e.Status(ctx, roomID)
	return st, err
}

// Queued reports, for each sequence, whether the room's queue holds it. It
// only reads: the simulator checks with it that a visitor who stopped polling
// is evicted within the bound docs/ENGINE.md states ("Heartbeats are
// deadlines").
func (e *Engine) Queued(ctx context.Context, roomID string, seqs []int64) ([]bool, error) {
	if !room.ValidRoomID(roomID) {
		return nil, room.ErrInvalidRoom
	}
	q := KeysFor(roomID).Queue
	p := e.rdb.Pipeline()
	cmds := make([]*redis.FloatCmd, len(seqs))
	for i, seq := range seqs {
		cmds[i] = p.ZScore(ctx, q, strconv.FormatInt(seq, 10))
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: queued %s: %w", room.ErrUnavailable, roomID, err)
	}
	out := make([]bool, len(seqs))
	for i, c := range cmds {
		out[i] = c.Err() == nil
	}
	return out, nil
}

// History returns the room's points of the last day (at most
// HistoryMinutes, oldest first), as the admission ticks recorded them once a
// minute (tick.lua), with the waits of each minute, the current one's so far
// (history.go); a minute without a tick has no point. An unknown room has
// none.
func (e *Engine) History(ctx context.Context, roomID string) ([]room.HistoryPoint, error) {
	return e.history(ctx, roomID)
}

// drainBatch is the most waiting visitors one drain script removes: the
// engine calls it again until the queue is empty, so Redis serves other
// commands between batches.
const drainBatch = 10000

// Drain empties a closed room's queue: waiting and pre-queue visitors lose
// their places for good (they poll "expired"), grants and sessions stay. It
// returns how many were removed. Errors: ErrNotClosed (nothing removed),
// ErrUnknownRoom, ErrUnavailable. A room reopened between two batches stops
// the drain with ErrNotClosed after what was already removed.
func (e *Engine) Drain(ctx context.Context, roomID string) (int64, error) {
	var total int64
	for {
		reply, err := e.runKeys(ctx, drainCmd, roomID, noticeKeys(roomID)[:1], e.nowMS(), drainBatch)
		if err != nil {
			return total, err
		}
		switch word(reply) {
		case wordNoRoom:
			return total, room.ErrUnknownRoom
		case wordOpen:
			return total, room.ErrNotClosed
		}
		if len(reply) != drainLen || str(reply[0]) != wordOK {
			return total, unexpected(drainCmd, reply)
		}
		total += num(reply[drainRemoved])
		if num(reply[drainWaiting]) == 0 || num(reply[drainRemoved]) == 0 {
			n, err := e.dropArrivals(ctx, roomID)
			if err == nil {
				err = e.dropShardHeartbeats(ctx, roomID)
			}
			return total + n, err
		}
	}
}

// decodePairs reads settings from a script reply's field, value pairs (an
// HGETALL of the settings hash).
func decodePairs(pairs []any) (room.Config, error) {
	if len(pairs)%2 != 0 {
		return room.Config{}, fmt.Errorf("odd number of settings fields (%d)", len(pairs))
	}
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		m[str(pairs[i])] = str(pairs[i+1])
	}
	return DecodeConfig(m), nil
}
