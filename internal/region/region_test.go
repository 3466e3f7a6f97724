package region_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vestibule-dev/vestibule/internal/region"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// world records every call of the three parts, in order.
type world struct {
	calls    []string
	promoted bool
	moved    bool
	modes    map[string]room.Mode
	events   []string
	failOn   string
}

func (w *world) note(s string) error {
	w.calls = append(w.calls, s)
	if s == w.failOn {
		return errors.New("refused: " + s)
	}
	return nil
}

type cache struct{ *world }

func (c cache) Promote(context.Context) error {
	c.promoted = true
	return c.note("promote")
}
func (c cache) Promoted(context.Context) (bool, error) { return c.promoted, nil }

type name struct{ *world }

func (n name) Point(context.Context) error {
	n.moved = true
	return n.note("point")
}
func (n name) Moved(context.Context) (bool, error) { return n.moved, nil }

type rooms struct{ *world }

func (r rooms) List(context.Context) ([]string, error) {
	ids := make([]string, 0, len(r.modes))
	for id := range r.modes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}
func (r rooms) Claim(_ context.Context, id string) (int64, error) { return 1, r.note("claim " + id) }
func (r rooms) Mode(_ context.Context, id string) (room.Mode, error) {
	return r.modes[id], nil
}
func (r rooms) SetMode(_ context.Context, id string, m room.Mode) error {
	r.modes[id] = m
	return r.note(fmt.Sprintf("%s %s", id, m))
}

type events struct{ *world }

func (e events) List(context.Context) ([]string, error) { return e.events, nil }
func (e events) Close(_ context.Context, id string) error {
	return e.note("close " + id)
}

func newWorld() *world {
	return &world{modes: map[string]room.Mode{"a": room.ModeQueue, "b": room.ModePaused, "c": room.ModeClosed, "d": room.ModeAuto},
		events: []string{"a", "gala"}}
}

func plan(w *world) region.Plan {
	return region.Plan{Cache: cache{w}, Name: name{w}, Rooms: rooms{w}, Events: events{w}, Every: 1}
}

// The steps in order: promote, then each room claimed before it is paused,
// each booking event closed to holds while the rooms are paused (the
// standby's copy lost the old region's last writes: rebuilt from the
// origin's record before it sells again), the name moved only once every
// room is fenced and every event closed, and the rooms back in their modes
// (a paused or closed room left as it was).
func TestFailoverOrder(t *testing.T) {
	w := newWorld()
	rep, err := region.Failover(context.Background(), plan(w))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"promote", "claim a", "a paused", "claim b", "claim c", "claim d", "d paused", "close a", "close gala",
		"point", "a queue", "d auto"}
	if diff := cmp.Diff(want, w.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if rep.Rooms != 4 || rep.Epoch != 1 || len(rep.Steps) != 6 || !slices.Equal(rep.Closed, w.events) {
		t.Errorf("report: %+v", rep)
	}
	for id, m := range map[string]room.Mode{"a": room.ModeQueue, "b": room.ModePaused, "c": room.ModeClosed, "d": room.ModeAuto} {
		if w.modes[id] != m {
			t.Errorf("room %s resumed %s, want %s", id, w.modes[id], m)
		}
	}

	// Run again (a failover that stopped half way): no second promotion.
	w.calls = nil
	if _, err := region.Failover(context.Background(), plan(w)); err != nil || slices.Contains(w.calls, "promote") {
		t.Errorf("again: %v %v", w.calls, err)
	}
}

// A step that fails stops the failover there: a claim refused moves no name.
func TestFailoverStopsAtAFailure(t *testing.T) {
	w := newWorld()
	w.failOn = "claim c"
	if _, err := region.Failover(context.Background(), plan(w)); err == nil {
		t.Fatal("no error")
	}
	if slices.Contains(w.calls, "point") {
		t.Errorf("the name moved though a room was not fenced: %v", w.calls)
	}
}

// An event that cannot be closed stops the failover before the name moves:
// the standby would sell its lost seats again.
func TestFailoverStopsWhenAnEventStaysOpen(t *testing.T) {
	w := newWorld()
	w.failOn = "close gala"
	rep, err := region.Failover(context.Background(), plan(w))
	if err == nil || !strings.Contains(err.Error(), "gala") {
		t.Fatalf("error %v, want one naming gala", err)
	}
	if slices.Contains(w.calls, "point") || slices.Contains(w.calls, "a queue") {
		t.Errorf("the name moved or a room resumed though an event stayed open: %v", w.calls)
	}
	if !slices.Equal(rep.Closed, []string{"a"}) {
		t.Errorf("report: closed %v, want [a]", rep.Closed)
	}
}

// Without a booking kit (Events nil) the failover runs as before.
func TestFailoverWithoutEvents(t *testing.T) {
	w := newWorld()
	p := plan(w)
	p.Events = nil
	if _, err := region.Failover(context.Background(), p); err != nil || slices.ContainsFunc(w.calls, func(c string) bool { return strings.HasPrefix(c, "close") }) {
		t.Fatalf("%v, %v", w.calls, err)
	}
}
