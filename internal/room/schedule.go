package room

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// ScheduledChange is a change of a room's settings planned for a time
// (docs/OPERATING.md, "Scheduled changes"): at At the admission ticks apply
// Settings as an admin PUT would (validation, fences, the durable write, the
// audit log), and remove it. A change that is no longer valid at its time is
// kept with Refused set, shown until an operator cancels it.
type ScheduledChange struct {
	ID string    `json:"id"` // 16 hex digits, chosen by the server
	At time.Time `json:"at"` // when to apply it
	// Settings is a JSON object of settings, as in the body of a PUT: each
	// one given is set, the others keep their value at the time.
	Settings  json.RawMessage `json:"settings"`
	CreatedBy string          `json:"createdBy"` // who planned it, as the audit log names callers
	CreatedAt time.Time       `json:"createdAt"`
	// Refused is why the change could not be applied at its time; RefusedAt
	// when. Empty while it is planned.
	Refused   string     `json:"refused,omitempty"`
	RefusedAt *time.Time `json:"refusedAt,omitempty"`
}

// The audit log's actions of a room's schedule (AuditEntry.Action): a
// change planned, cancelled, applied at its time by the ticks, and refused
// then (kept in the schedule, with the reason).
const (
	ActionSchedule        = "schedule"
	ActionUnschedule      = "unschedule"
	ActionScheduleApplied = "scheduled change"
	ActionScheduleRefused = "scheduled change refused"
)

// ScheduleKeep is how many changes a room's schedule holds at most.
const ScheduleKeep = 100

// Errors of the schedule, for errors.Is.
var (
	ErrUnknownChange = errors.New("room: no such scheduled change")
	ErrScheduleFull  = errors.New("room: the room's schedule is full")
	// ErrChangeBusy: the change is being applied at this instant; try again.
	ErrChangeBusy = errors.New("room: the scheduled change is being applied")
	// ErrLeaseLost: the lease on a scheduled change ran out, or another
	// process holds it now; its holder applied or removed nothing.
	ErrLeaseLost = errors.New("room: the lease on the scheduled change is lost")
)

// SortSchedule orders changes by time, then in the order they were planned
// (CreatedAt), then by id: changes due at one instant apply in that order,
// so the one planned last has the last word.
func SortSchedule(cs []ScheduledChange) {
	slices.SortFunc(cs, func(a, b ScheduledChange) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.ID), []byte(b.ID))
	})
}

// SettingChanges lists the settings whose JSON differs between two configs
// (nil: none, every value null), by name: the changes an audit entry records.
func SettingChanges(before, after *Config) []AuditChange {
	return changes(before, after, nil)
}

// PlannedChanges lists what a change of settings (a JSON object, as a
// ScheduledChange's Settings) sets, from before to after: every setting it
// names, even one it sets to the value it has (a resume planned while the
// room is open), and any other whose JSON differs. An audit entry of a
// scheduled change so always says what the change sets.
func PlannedChanges(before, after *Config, settings json.RawMessage) []AuditChange {
	var named map[string]json.RawMessage
	_ = json.Unmarshal(settings, &named) // not an object: no names, the differences alone
	return changes(before, after, named)
}

// configFields is a config's JSON object, by setting (none for nil).
func configFields(c *Config) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if c != nil {
		// A Config always marshals, and its JSON is an object: neither
		// error can happen, so both are dropped.
		b, _ := json.Marshal(c)
		_ = json.Unmarshal(b, &m)
	}
	return m
}

// changes lists the settings whose JSON differs between before and after,
// and those named (a settings object's keys, which are the settings' JSON
// names: ApplySettings takes no other) whatever their values, by name.
func changes(before, after *Config, named map[string]json.RawMessage) []AuditChange {
	old, cur := configFields(before), configFields(after)
	keep := map[string]bool{}
	for k := range named {
		keep[k] = true
	}
	var names []string
	for _, m := range []map[string]json.RawMessage{old, cur} {
		for k := range m {
			names = append(names, k)
		}
	}
	for k := range keep {
		names = append(names, k) // one left out of both (none: null)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	null := json.RawMessage("null")
	var out []AuditChange
	for _, k := range names {
		o, n := old[k], cur[k]
		if o == nil {
			o = null
		}
		if n == nil {
			n = null
		}
		if keep[k] || !bytes.Equal(o, n) {
			out = append(out, AuditChange{Setting: k, Old: o, New: n})
		}
	}
	return out
}

// ApplySettings decodes a JSON object of settings onto cfg, as a PUT's body
// is (a page given replaces the whole page), refusing a name that is no
// setting. It does not validate the result.
func ApplySettings(cfg Config, settings json.RawMessage) (Config, error) {
	if cfg.Page != nil {
		page := *cfg.Page
		cfg.Page = &page
	}
	// A list given is decoded into the slice it replaces: a copy, so the
	// caller's config keeps its own.
	cfg.OIDCRedirectURIs = slices.Clone(cfg.OIDCRedirectURIs)
	d := json.NewDecoder(bytes.NewReader(settings))
	d.DisallowUnknownFields()
	if err := d.Decode(&cfg); err != nil {
		return Config{}, &FieldError{Field: "settings", Reason: err.Error()}
	}
	return cfg, nil
}
