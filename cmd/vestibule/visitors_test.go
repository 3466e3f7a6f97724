package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// joinAs joins the stack's room as the visitor id given, through the
// engine the stack runs on (its Redis): the API picks ids at random, and a
// test needs one of a given shape.
func joinAs(t *testing.T, id, visitor string) room.Place {
	t.Helper()
	p, err := roomdb.New(redistest.Single(t)).Join(context.Background(), id, visitor, room.JoinProof{})
	if err != nil {
		t.Fatalf("join %s as %s: %v", id, visitor, err)
	}
	return p
}

// A reference the page shows may start with "-" (a visitor id is base64url):
// visitors show and restore take it as printed, without "--", and a mistyped
// flag is said to be taken as an argument.
func TestVisitorReferenceStartingWithADash(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, map[string]any{"mode": "paused"})
	ref := "-ujxphitQ0xWz8vKc5Ysdw"
	joinAs(t, id, ref)
	out, errs, code := vestibule(t, s, "visitors", "show", id, ref)
	if code != 0 || !strings.Contains(out, "waiting at place 1") || !strings.Contains(out, ref) {
		t.Fatalf("visitors show %s %s: %d %q %q", id, ref, code, out, errs)
	}
	// The same with the flags first, and with "--", which still works.
	if out, errs, code = vestibule(t, s, "--json", "visitors", "show", id, ref); code != 0 || !strings.Contains(out, `"state": "waiting"`) {
		t.Fatalf("--json visitors show: %d %q %q", code, out, errs)
	}
	var o, e testkit.Buffer
	if code := run(context.Background(), []string{"--endpoint", s.URL(), "--admin-key", adminKey, "visitors", "show", id, "--", ref}, &o, &e); code != 0 || !strings.Contains(o.String(), ref) {
		t.Fatalf("visitors show ROOM -- REF: %d %q %q", code, o.String(), e.String())
	}
	_, errs, code = vestibule(t, s, "visitors", "restore", id, ref, "--reson", "typo")
	if code != 2 || !strings.Contains(errs, "--reson") || !strings.Contains(errs, "taken as it is") {
		t.Fatalf("a mistyped flag: %d %q", code, errs)
	}
	// A flag the command has is still a flag, wherever it stands.
	if _, errs, code = vestibule(t, s, "visitors", "restore", "--reason", "phone died", id, ref); code != 1 || !strings.Contains(errs, "still waits") {
		t.Fatalf("restore of a waiting place: %d %q", code, errs)
	}
}

// An unknown reference is a visitor the route did not find, not a route the
// endpoint lacks: the command names the room and the reference, and says
// where the reference comes from.
func TestUnknownVisitorReference(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	_, errs, code := vestibule(t, s, "visitors", "show", id, "NOPE")
	if code != 1 || strings.Contains(errs, "admin route") || strings.Contains(errs, "endpoint") ||
		!strings.Contains(errs, "room "+id+" has no visitor with the reference NOPE") || !strings.Contains(errs, "Your reference") {
		t.Fatalf("visitors show of an unknown reference: %d %q", code, errs)
	}
	_, errs, code = vestibule(t, s, "visitors", "restore", id, "NOPE", "--reason", "test")
	if code != 1 || strings.Contains(errs, "admin route") || !strings.Contains(errs, "has no visitor with the reference NOPE") {
		t.Fatalf("visitors restore of an unknown reference: %d %q", code, errs)
	}
}

// Before the opening a pre-queue's order is its draw, secret from everyone
// until then, support included: the lookup says prequeue, without a place.
func TestPrequeueLookupShowsNoPlace(t *testing.T) {
	s := stack(t)
	opens := time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	id := newRoom(t, s, map[string]any{"opensAt": opens})
	for _, ref := range []string{"prequeue-a0123456789abc", "prequeue-b0123456789abc", "prequeue-c0123456789abc"} {
		joinAs(t, id, ref)
		out, errs, code := vestibule(t, s, "visitors", "show", id, ref)
		if code != 0 || !regexp.MustCompile(`(?m)^state\s+prequeue$`).MatchString(out) || strings.Contains(out, "place") {
			t.Fatalf("visitors show of a pre-queued visitor: %d %q %q", code, out, errs)
		}
		if out, _, _ = vestibule(t, s, "visitors", "show", id, ref, "--json"); strings.Contains(out, "position") {
			t.Fatalf("--json: %s", out)
		}
	}
}
