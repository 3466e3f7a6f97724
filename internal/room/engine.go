package room

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

	"github.com/vestibule-dev/vestibule/lua"
)

// Each script runs by SHA (EVALSHA) and falls back to EVAL when Redis lost it.
var (
	enqueueCmd   = redis.NewScript(lua.Enqueue)
	pollCmd      = redis.NewScript(lua.Poll)
	tickCmd      = redis.NewScript(lua.Tick)
	consumeCmd   = redis.NewScript(lua.Consume)
	completeCmd  = redis.NewScript(lua.Complete)
	leaveCmd     = redis.NewScript(lua.Leave)
	configCmd    = redis.NewScript(lua.Config)
	statsCmd     = redis.NewScript(lua.Stats)
	ratelimitCmd = redis.NewScript(lua.RateLimit)
)

// Scripter is the narrowest Redis client the engine needs: a client, a
// cluster client or a ring all fit.
type Scripter interface {
	redis.Scripter
	SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
}

var _ Scripter = (redis.UniversalClient)(nil)

// Engine is the room state machine over Redis. It implements Queue.
type Engine struct {
	rdb         Scripter
	clock       Clock
	batch       int
	minInterval time.Duration

	// Place replies carry the room's settings version, not the settings: they
	// are read once per version (random per PUT) and kept here.
	mu   sync.Mutex
	cfgs map[string]versioned
}

type versioned struct {
	ver string
	cfg Config
}

var _ Queue = (*Engine)(nil)

// Option configures an Engine.
type Option func(*Engine)

// WithClock replaces the clock (tests drive time with it).
func WithClock(c Clock) Option { return func(e *Engine) { e.clock = c } }

// WithEvictBatch sets the most stale heartbeats one tick evicts (default 2000).
func WithEvictBatch(n int) Option { return func(e *Engine) { e.batch = n } }

// WithMinPollInterval refuses (ErrRateLimited) a waiting visitor's poll that
// comes sooner than d after the last one (default 0: never).
func WithMinPollInterval(d time.Duration) Option { return func(e *Engine) { e.minInterval = d } }

// New returns an engine over the given Redis client.
func New(rdb Scripter, opts ...Option) *Engine {
	e := &Engine{rdb: rdb, clock: time.Now, batch: 2000, cfgs: map[string]versioned{}}
	for _, o := range opts {
		o(e)
	}
	return e
}

func (e *Engine) nowMS() int64 { return e.clock().UnixMilli() }

// run runs a room script and returns its reply as a slice.
func (e *Engine) run(ctx context.Context, s *redis.Script, room string, args ...any) ([]any, error) {
	if !ValidRoomID(room) {
		return nil, ErrInvalidRoom
	}
	v, err := s.Run(ctx, e.rdb, KeysFor(room).List(), args...).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	reply, ok := v.([]any)
	if !ok || len(reply) == 0 {
		return nil, fmt.Errorf("%w: unexpected script reply %T", ErrUnavailable, v)
	}
	return reply, nil
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err == nil {
			return n
		}
		f, _ := strconv.ParseFloat(x, 64)
		return int64(f)
	}
	return 0
}

// status maps the one-word replies every script may give to errors.
func status(reply []any) error {
	if len(reply) != 1 {
		return nil
	}
	switch str(reply[0]) {
	case "unknown", "noroom":
		return ErrUnknownRoom
	case "closed":
		return ErrClosed
	}
	return nil
}

// cached returns the settings the engine holds for a room, and their version
// ("" for none), which place scripts take so they send the settings only when
// they changed.
func (e *Engine) cached(room string) versioned {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfgs[room]
}

// maxCachedRooms bounds the settings cache: a deployment has a handful of
// rooms, but nothing else stops a process that meets many from growing.
const maxCachedRooms = 1024

// place decodes lib.lua's reply shape; have is the cached settings sent with the call.
func (e *Engine) place(t Ticket, have versioned, reply []any) (Place, error) {
	if err := status(reply); err != nil {
		return Place{}, err
	}
	if len(reply) < 8 {
		return Place{}, fmt.Errorf("%w: short place reply (%d)", ErrUnavailable, len(reply))
	}
	cfg := have.cfg
	switch ver := str(reply[7]); {
	case len(reply) >= 8+len(cfgFields):
		cfg = decodeConfig(reply[8:])
		if ver != "" {
			e.mu.Lock()
			if len(e.cfgs) >= maxCachedRooms {
				clear(e.cfgs) // a miss costs only the settings in one reply
			}
			e.cfgs[t.Room] = versioned{ver, cfg}
			e.mu.Unlock()
		}
	case ver == "" || ver != have.ver:
		return Place{}, fmt.Errorf("%w: place reply without settings", ErrUnavailable)
	}
	p := Place{Ticket: t}
	state := str(reply[0])
	if m := str(reply[1]); m != "" {
		p.Ticket.Seq = num(m)
	}
	if d := str(reply[2]); d != "" {
		p.Ticket.Draw, _ = strconv.ParseFloat(d, 64)
	}
	p.Position, p.Waiting = num(reply[3]), num(reply[4])
	deadline := num(reply[5])
	p.Config = cfg
	p.RatePerMinute = float64(num(reply[6]))
	if p.RatePerMinute <= 0 {
		p.RatePerMinute = float64(p.Config.AdmitPerMinute)
	}
	switch state {
	case "active":
		p.State, p.Active, p.GrantDeadline = StateAdmitted, true, time.UnixMilli(deadline)
	case "admitted":
		p.State, p.GrantDeadline = StateAdmitted, time.UnixMilli(deadline)
	default:
		p.State = State(state)
	}
	return p, nil
}

// Enqueue adds a new visitor (id chosen by the caller, never by the client)
// and returns the place with the ticket to sign.
func (e *Engine) Enqueue(ctx context.Context, room, visitor string) (Place, error) {
	have := e.cached(room)
	reply, err := e.run(ctx, enqueueCmd, room, e.nowMS(), visitor, have.ver)
	if err != nil {
		return Place{}, err
	}
	return e.place(Ticket{Room: room, Visitor: visitor}, have, reply)
}

// score is the queue score a ticket implies: its draw in the pre-queue, else its sequence.
func score(t Ticket) string {
	if t.Draw > 0 {
		return strconv.FormatFloat(t.Draw, 'g', -1, 64)
	}
	return strconv.FormatInt(t.Seq, 10)
}

// Poll reports where a ticket's holder stands and refreshes the heartbeat;
// it restores the place if Redis lost it and the head has not passed it (I4).
// A waiting visitor polling sooner than the engine's min poll interval gets a
// *RetryError (ErrRateLimited).
func (e *Engine) Poll(ctx context.Context, t Ticket) (Place, error) {
	return e.poll(ctx, t, e.minInterval)
}

// Locate is Poll without the min interval: for a visitor who comes back through
// enqueue (a refresh, a second tab), which must always find the place.
func (e *Engine) Locate(ctx context.Context, t Ticket) (Place, error) { return e.poll(ctx, t, 0) }

func (e *Engine) poll(ctx context.Context, t Ticket, minInterval time.Duration) (Place, error) {
	have := e.cached(t.Room)
	reply, err := e.run(ctx, pollCmd, t.Room, e.nowMS(), strconv.FormatInt(t.Seq, 10), score(t),
		minInterval.Milliseconds(), have.ver)
	if err != nil {
		return Place{}, err
	}
	if len(reply) == 2 && str(reply[0]) == "slow" {
		return Place{}, &RetryError{After: time.Duration(num(reply[1])) * time.Millisecond}
	}
	return e.place(t, have, reply)
}

// AllowEnqueue applies the room's per-client enqueue limit (clientEnqueuePerMinute,
// a GCRA in Redis) to a client (its address). It returns nil, a *RetryError
// (ErrRateLimited), ErrUnknownRoom or ErrUnavailable.
func (e *Engine) AllowEnqueue(ctx context.Context, room, client string) error {
	if !ValidRoomID(room) {
		return ErrInvalidRoom
	}
	sum := sha256.Sum256([]byte(client))
	k := KeysFor(room)
	v, err := ratelimitCmd.Run(ctx, e.rdb, []string{k.Config, k.Limiter(hex.EncodeToString(sum[:12]))}, e.nowMS()).Result()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	reply, ok := v.([]any)
	if !ok || len(reply) != 1 {
		return fmt.Errorf("%w: unexpected ratelimit reply %T", ErrUnavailable, v)
	}
	switch wait := num(reply[0]); {
	case wait == 0:
		return nil
	case wait < 0:
		return ErrUnknownRoom
	default:
		return &RetryError{After: time.Duration(wait) * time.Millisecond}
	}
}

// RetryError is a refusal for now: try again after After. It wraps ErrRateLimited.
type RetryError struct{ After time.Duration }

func (e *RetryError) Error() string {
	return fmt.Sprintf("room: too many requests, retry after %s", e.After)
}

// Unwrap makes errors.Is(err, ErrRateLimited) true.
func (e *RetryError) Unwrap() error { return ErrRateLimited }

// Leave removes the ticket's holder from the queue for good.
func (e *Engine) Leave(ctx context.Context, t Ticket) error {
	reply, err := e.run(ctx, leaveCmd, t.Room, e.nowMS(), strconv.FormatInt(t.Seq, 10), score(t))
	if err != nil {
		return err
	}
	return status(reply)
}

// Consume turns the grant into an active session, exactly once.
func (e *Engine) Consume(ctx context.Context, room string, seq int64) (Session, error) {
	reply, err := e.run(ctx, consumeCmd, room, e.nowMS(), strconv.FormatInt(seq, 10))
	if err != nil {
		return Session{}, err
	}
	switch str(reply[0]) {
	case "ok":
		if len(reply) < 2 {
			return Session{}, fmt.Errorf("%w: short consume reply", ErrUnavailable)
		}
		return Session{Room: room, ExpiresAt: time.UnixMilli(num(reply[1]))}, nil
	case "consumed":
		return Session{}, ErrAlreadyConsumed
	case "expired":
		return Session{}, ErrGrantExpired
	case "unknown":
		return Session{}, ErrUnknownGrant
	case "noroom":
		return Session{}, ErrUnknownRoom
	}
	return Session{}, fmt.Errorf("%w: consume replied %v", ErrUnavailable, reply[0])
}

// Complete ends a session (or gives up an unused grant); the slot frees at once.
func (e *Engine) Complete(ctx context.Context, room string, seq int64) error {
	reply, err := e.run(ctx, completeCmd, room, e.nowMS(), strconv.FormatInt(seq, 10))
	if err != nil {
		return err
	}
	switch str(reply[0]) {
	case "ok":
		return nil
	case "unknown":
		return ErrUnknownGrant
	}
	return ErrUnknownRoom
}

// Tick runs one admission tick of the room.
func (e *Engine) Tick(ctx context.Context, room string) (TickResult, error) {
	reply, err := e.run(ctx, tickCmd, room, e.nowMS(), e.batch)
	if err != nil {
		return TickResult{}, err
	}
	if err := status(reply); err != nil {
		return TickResult{}, err
	}
	if len(reply) < 4 {
		return TickResult{}, fmt.Errorf("%w: short tick reply", ErrUnavailable)
	}
	return TickResult{Admitted: num(reply[0]), Evicted: num(reply[1]),
		GrantsReclaimed: num(reply[2]), SessionsEnded: num(reply[3])}, nil
}

// PutConfig validates and stores a room's settings (creating the room), live.
func (e *Engine) PutConfig(ctx context.Context, room string, cfg Config) (Config, error) {
	if !ValidRoomID(room) {
		return Config{}, ErrInvalidRoom
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	// Redis keeps opensAt in milliseconds: answer what is stored, so a PUT and
	// a later GET show the same instant.
	if cfg.OpensAt != nil {
		t := time.UnixMilli(cfg.OpensAt.UnixMilli()).UTC()
		cfg.OpensAt = &t
	}
	seed := make([]byte, 16)
	if _, err := rand.Read(seed); err != nil {
		return Config{}, err
	}
	ver := make([]byte, 8)
	if _, err := rand.Read(ver); err != nil {
		return Config{}, err
	}
	args := []any{e.nowMS(), hex.EncodeToString(seed), hex.EncodeToString(ver)}
	args = append(args, encodeConfig(cfg)...)
	if _, err := e.run(ctx, configCmd, room, args...); err != nil {
		return Config{}, err
	}
	// The registry lives in its own slot: written after the room, so a room in
	// the registry always has a config (a crash between the two leaves a room
	// the admin can PUT again).
	if err := e.rdb.SAdd(ctx, RegistryKey, room).Err(); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return cfg, nil
}

// GetConfig reads a room's settings.
func (e *Engine) GetConfig(ctx context.Context, room string) (Config, error) {
	if !ValidRoomID(room) {
		return Config{}, ErrInvalidRoom
	}
	m, err := e.rdb.HGetAll(ctx, KeysFor(room).Config).Result()
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if len(m) == 0 {
		return Config{}, ErrUnknownRoom
	}
	return configOf(m), nil
}

// configOf decodes the settings hash.
func configOf(m map[string]string) Config {
	vals := make([]any, len(cfgFields))
	for i, f := range cfgFields {
		vals[i] = m[f]
	}
	return decodeConfig(vals)
}

// Rooms lists the registered rooms.
func (e *Engine) Rooms(ctx context.Context) ([]string, error) {
	rooms, err := e.rdb.SMembers(ctx, RegistryKey).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return rooms, nil
}

// Stats returns a snapshot of the room.
func (e *Engine) Stats(ctx context.Context, room string) (Stats, error) {
	reply, err := e.run(ctx, statsCmd, room, e.nowMS())
	if err != nil {
		return Stats{}, err
	}
	if err := status(reply); err != nil {
		return Stats{}, err
	}
	if len(reply) < 7 {
		return Stats{}, fmt.Errorf("%w: short stats reply", ErrUnavailable)
	}
	return Stats{Waiting: num(reply[0]), Admitted: num(reply[1]), Active: num(reply[2]),
		AdmittedLastMinute: num(reply[3]), Evicted: num(reply[4]), Consumed: num(reply[5]),
		ReplaysRefused: num(reply[6])}, nil
}

// cfgFields is the order decodeConfig reads the settings in.
var cfgFields = []string{"mode", "maxActive", "admitPerMinute", "sessionTTLSeconds", "claimTTLSeconds",
	"heartbeatTTLSeconds", "opensAt", "originUrl", "clientEnqueuePerMinute"}

func encodeConfig(c Config) []any {
	opens := int64(0)
	if c.OpensAt != nil {
		opens = c.OpensAt.UnixMilli()
	}
	return []any{
		"mode", string(c.Mode), "maxActive", c.MaxActive, "admitPerMinute", c.AdmitPerMinute,
		"sessionTTLSeconds", c.SessionTTLSeconds, "claimTTLSeconds", c.ClaimTTLSeconds,
		"heartbeatTTLSeconds", c.HeartbeatTTLSeconds, "opensAt", opens, "originUrl", c.OriginURL,
		"clientEnqueuePerMinute", c.ClientEnqueuePerMinute,
	}
}

func decodeConfig(v []any) Config {
	get := func(i int) string {
		if i < len(v) {
			return str(v[i])
		}
		return ""
	}
	c := Config{
		Mode:                   Mode(get(0)),
		MaxActive:              num(get(1)),
		AdmitPerMinute:         num(get(2)),
		SessionTTLSeconds:      num(get(3)),
		ClaimTTLSeconds:        num(get(4)),
		HeartbeatTTLSeconds:    num(get(5)),
		OriginURL:              get(7),
		ClientEnqueuePerMinute: num(get(8)),
	}
	if ms := num(get(6)); ms > 0 {
		t := time.UnixMilli(ms).UTC()
		c.OpensAt = &t
	}
	return c
}

// Unavailable reports whether err means Redis could not be reached or answered
// badly (the caller answers 503).
func Unavailable(err error) bool { return errors.Is(err, ErrUnavailable) }
