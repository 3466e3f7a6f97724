package room

import (
	"encoding/json"
	"errors"
	"time"
)

// ErrCannotDelete is returned by a wrapper whose queue or store cannot
// delete rooms.
var ErrCannotDelete = errors.New("room: this deployment cannot delete rooms")

// AuditEntry is one admin change of a room: who made it, when, and each
// setting's value before and after (JSON values; null for none).
type AuditEntry struct {
	At time.Time `json:"at"`
	// Who is the caller: the IAM principal's ARN in AWS, "admin key" on a
	// local stack, with " (says via the console)" when the call said it came
	// through the console (a claim: the API cannot check it).
	Who string `json:"who"`
	// Action is create, change, drain or delete; schedule, unschedule,
	// scheduled change or scheduled change refused for the room's schedule
	// (Who is then "schedule" for what the ticks applied); "net on", "net off"
	// or "pace" for a change the room made itself (steer.go); for an event of the room's
	// (Event set), "define event", "rebuild event" or "close event" (docs/BOOKING.md).
	Action string `json:"action"`
	// Event is the booking event the entry is about, in its room's log.
	Event   string        `json:"event,omitempty"`
	Changes []AuditChange `json:"changes,omitempty"`
	// Why is why the room changed itself (Who roomevents.SteeredBy: a
	// NetChange's or PaceChange's Why).
	Why string `json:"why,omitempty"`
	// Removed is how many visitors a drain or delete removed.
	Removed int64 `json:"removed,omitempty"`
	// Schedule is the id of the scheduled change the entry is about
	// (ScheduledChange); Refused why it was not applied at its time.
	Schedule string `json:"schedule,omitempty"`
	Refused  string `json:"refused,omitempty"`
}

// AuditChange is one setting's change.
type AuditChange struct {
	Setting string          `json:"setting"`
	Old     json.RawMessage `json:"old"`
	New     json.RawMessage `json:"new"`
}

// AuditKeep is how many entries a room's audit log keeps (the newest).
const AuditKeep = 500
