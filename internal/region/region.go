// Package region fails a two-region deployment over from its primary region
// to its standby (docs/OPERATING.md, "A region's outage"): it promotes the
// standby's cache, gives every room to the standby's region (the fence that
// makes the old region's late writes change nothing), closes the booking
// kit's events to holds (the standby's copy lost the old region's last
// writes: each is rebuilt from the origin's record before it sells again),
// holds admission while the write name moves, and resumes. Each outside
// party is a small interface: the cache (ElastiCache's Global Datastore), the
// write name (Route 53), the standby's rooms and events (its admin API, or
// the engines themselves in tests), so the same Failover runs against AWS and
// against the chaos test's stand-ins.
package region

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// Cache is the standby's cache in the Global Datastore.
type Cache interface {
	// Promote asks for the standby's cache to become the primary (in AWS,
	// FailoverGlobalReplicationGroup); it returns before the promotion ends.
	Promote(ctx context.Context) error
	// Promoted reports whether the standby's cache takes writes now.
	Promoted(ctx context.Context) (bool, error)
}

// Name is the name the writes reach the active region by.
type Name interface {
	// Point moves the name to the standby's API (in AWS, an UPSERT of the
	// record by ChangeResourceRecordSets); it returns before the change is out.
	Point(ctx context.Context) error
	// Moved reports whether the change reached every name server (INSYNC).
	Moved(ctx context.Context) (bool, error)
}

// Rooms is the standby region's rooms, once its cache takes writes.
type Rooms interface {
	// List names every room.
	List(ctx context.Context) ([]string, error)
	// Claim gives the room to the standby's region and returns the room's
	// region epoch (roomdb.Engine.ClaimRegion): the old region's engines are
	// fenced out of it from then on.
	Claim(ctx context.Context, roomID string) (int64, error)
	// Mode reads the room's mode; SetMode changes it (a PUT of the mode alone).
	Mode(ctx context.Context, roomID string) (room.Mode, error)
	SetMode(ctx context.Context, roomID string, mode room.Mode) error
}

// Events is the standby region's booking events, once its cache takes writes.
type Events interface {
	// List names every event of the standby's kit.
	List(ctx context.Context) ([]string, error)
	// Close closes the event to holds until it is rebuilt from the origin's
	// record (bookingdb.Engine.Close); an event closed already stays so.
	Close(ctx context.Context, event string) error
}

// Plan is one failover: the standby's parts and how long to wait for AWS.
type Plan struct {
	Cache Cache
	Name  Name
	Rooms Rooms
	// Events, when set, are closed to holds while the rooms are paused.
	Events Events
	// Every is how often a wait asks again (default 2 s).
	Every time.Duration
	// PromoteWithin and MoveWithin bound the waits (default 5 min each;
	// the promotion takes about a minute).
	PromoteWithin, MoveWithin time.Duration
	// Log, when set, is told each step as it ends.
	Log func(Step)
}

// Step is one step of a failover, as it went.
type Step struct {
	Name string
	Took time.Duration
	// Note says what the step did ("12 rooms at epoch 3").
	Note string
}

// Report is what a failover did.
type Report struct {
	Steps []Step
	Rooms int
	Epoch int64
	// Resumed maps each room held to the mode it resumed in.
	Resumed map[string]room.Mode
	// Closed are the events closed to holds: each awaits its rebuild from
	// the origin's record (vestibule booking reconcile EVENT --origin F --apply).
	Closed []string
}

// Took is the failover's whole time.
func (r Report) Took() time.Duration {
	var d time.Duration
	for _, s := range r.Steps {
		d += s.Took
	}
	return d
}

// ErrTimeout is a wait for AWS that ran past its bound.
var ErrTimeout = errors.New("region: timed out")

func (p Plan) every() time.Duration { return cmpOr(p.Every, 2*time.Second) }

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Failover runs the plan's steps in order:
//
//  1. promote: the standby's cache becomes the primary (Cache.Promote), and
//     the wait until it takes writes;
//  2. fence: every room is given to the standby's region (Rooms.Claim, which
//     raises the room's region epoch), and held paused: from here the
//     old region's late ticks, consumes and joins change nothing, and nobody
//     is admitted before the name moves;
//  3. close: every booking event of the standby is closed to holds
//     (Events.Close): its copy lost the old region's last second of holds
//     and orders, so seats the origin sold may show available; it sells
//     again once rebuilt from the origin's record, which reopens it (not
//     here: the record is the origin's, docs/OPERATING.md);
//  4. name: the write name moves to the standby (Name.Point);
//  5. resume: each room goes back to the mode it had;
//  6. propagate: the wait until the name's change is out (Name.Moved).
//
// The rooms resume before the change is out: a grant's claim window
// (claimTTLSeconds, minutes) outlasts the record's TTL, so a visitor whose
// calls still resolve the old region claims the turn once they reach the
// new one, and the sale admits again a minute sooner.
//
// A room whose mode was paused or closed stays so. A step that fails stops
// the failover with what was done in the report: running it again is safe
// (a promotion of a primary, a claim of a room already the standby's, the
// same name).
func Failover(ctx context.Context, p Plan) (Report, error) {
	var r Report
	step := func(name string, start time.Time, note string) {
		s := Step{Name: name, Took: time.Since(start), Note: note}
		r.Steps = append(r.Steps, s)
		if p.Log != nil {
			p.Log(s)
		}
	}

	start := time.Now()
	promoted, err := p.Cache.Promoted(ctx)
	if err != nil {
		return r, fmt.Errorf("region: promote: %w", err)
	}
	if !promoted {
		if err := p.Cache.Promote(ctx); err != nil {
			return r, fmt.Errorf("region: promote: %w", err)
		}
		if err := wait(ctx, p.every(), cmpOr(p.PromoteWithin, 5*time.Minute), p.Cache.Promoted); err != nil {
			return r, fmt.Errorf("region: promote: %w", err)
		}
	}
	step("promote", start, "the standby's cache takes writes")

	start = time.Now()
	rooms, modes, epoch, err := fence(ctx, p.Rooms)
	r.Rooms, r.Epoch = len(rooms), epoch
	if err != nil {
		return r, fmt.Errorf("region: fence: %w", err)
	}
	step("fence", start, fmt.Sprintf("%d rooms given to the standby (epoch %d), held paused", len(rooms), epoch))

	if p.Events != nil {
		start = time.Now()
		r.Closed, err = closeEvents(ctx, p.Events)
		if err != nil {
			return r, fmt.Errorf("region: close: %w", err)
		}
		step("close", start, fmt.Sprintf("%d booking events closed to holds until rebuilt from the origin's record", len(r.Closed)))
	}

	start = time.Now()
	if err := p.Name.Point(ctx); err != nil {
		return r, fmt.Errorf("region: name: %w", err)
	}
	step("name", start, "the write name points at the standby")

	start = time.Now()
	r.Resumed = map[string]room.Mode{}
	for _, id := range rooms {
		if modes[id] == room.ModePaused || modes[id] == room.ModeClosed {
			r.Resumed[id] = modes[id]
			continue
		}
		if err := p.Rooms.SetMode(ctx, id, modes[id]); err != nil {
			return r, fmt.Errorf("region: resume %s: %w", id, err)
		}
		r.Resumed[id] = modes[id]
	}
	step("resume", start, fmt.Sprintf("%d rooms back in their modes", len(rooms)))

	start = time.Now()
	if err := wait(ctx, p.every(), cmpOr(p.MoveWithin, 5*time.Minute), p.Name.Moved); err != nil {
		return r, fmt.Errorf("region: propagate: %w", err)
	}
	step("propagate", start, "every name server gives the standby")
	return r, nil
}

// fence gives every room to the standby and holds those that admit paused;
// it returns the rooms, the mode each had and the highest region epoch.
func fence(ctx context.Context, rs Rooms) ([]string, map[string]room.Mode, int64, error) {
	rooms, err := rs.List(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	var top int64
	modes := map[string]room.Mode{}
	for _, id := range rooms {
		e, err := rs.Claim(ctx, id)
		if err != nil {
			return rooms, modes, top, fmt.Errorf("claim %s: %w", id, err)
		}
		top = max(top, e)
		m, err := rs.Mode(ctx, id)
		if err != nil {
			return rooms, modes, top, fmt.Errorf("%s: %w", id, err)
		}
		modes[id] = m
		if m == room.ModePaused || m == room.ModeClosed {
			continue
		}
		if err := rs.SetMode(ctx, id, room.ModePaused); err != nil {
			return rooms, modes, top, fmt.Errorf("pause %s: %w", id, err)
		}
	}
	return rooms, modes, top, nil
}

// closeEvents closes every event of es to holds and returns those it closed.
func closeEvents(ctx context.Context, es Events) ([]string, error) {
	ids, err := es.List(ctx)
	if err != nil {
		return nil, err
	}
	var closed []string
	for _, id := range ids {
		if err := es.Close(ctx, id); err != nil {
			return closed, fmt.Errorf("%s: %w", id, err)
		}
		closed = append(closed, id)
	}
	return closed, nil
}

// wait asks done every interval until it says true, up to within.
func wait(ctx context.Context, every, within time.Duration, done func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(within)
	for {
		ok, err := done(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %s", ErrTimeout, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}
