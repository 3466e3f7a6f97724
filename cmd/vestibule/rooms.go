package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The modes the mode commands set. resume and open both go back to queue:
// the mode a room was in before it was paused or closed is not kept, and
// queue is the safe one (rooms set ROOM mode=auto for the other).
var verbModes = map[string]room.Mode{
	"pause":  room.ModePaused,
	"resume": room.ModeQueue,
	"close":  room.ModeClosed,
	"open":   room.ModeQueue,
}

func (c *command) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	c.out.Printf("%s\n", b)
	return c.out.Err()
}

// num formats an integer with thousands separators.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func (c *command) list(ctx context.Context, pos []string) error {
	if len(pos) != 0 {
		return usageError("rooms list takes no arguments")
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	rooms, err := cl.ListRooms(ctx)
	if err != nil {
		return err
	}
	if c.g.json {
		for i := range rooms {
			rooms[i].OriginCredential = ""
		}
		return c.printJSON(map[string]any{"rooms": rooms})
	}
	if len(rooms) == 0 {
		c.out.Println("no rooms yet: `vestibule rooms set ROOM --create originUrl=https://…` creates one")
		return nil
	}
	// The busiest first (waiting, admitted and active), then by name.
	busy := func(r operator.RoomInfo) int64 { return r.Stats.Waiting + r.Stats.Admitted + r.Stats.Active }
	slices.SortStableFunc(rooms, func(a, b operator.RoomInfo) int {
		if c := cmp.Compare(busy(b), busy(a)); c != 0 {
			return c
		}
		return strings.Compare(a.Room, b.Room)
	})
	// Numbers align right; the room and mode columns are padded to one
	// width so that they read left-aligned.
	wr, wm := len("ROOM"), len("MODE")
	for i, r := range rooms {
		if r.Error != nil {
			// The room could not be read: its error where the mode goes.
			rooms[i].Config.Mode = room.Mode("error: " + r.Error.Code)
		}
		wr, wm = max(wr, len(r.Room)), max(wm, len(rooms[i].Config.Mode))
	}
	tw := printer.NewTable(c.stdout, tabwriter.AlignRight)
	tw.Printf("%-*s\t%-*s\tWAITING\tADMITTED\tACTIVE\tMAX ACTIVE\tADMITTED/MIN\tRATE/MIN\t\n", wr, "ROOM", wm, "MODE")
	for _, r := range rooms {
		tw.Printf("%-*s\t%-*s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", wr, r.Room, wm, r.Config.Mode, num(r.Stats.Waiting), num(r.Stats.Admitted),
			num(r.Stats.Active), num(r.Config.MaxActive), num(r.Stats.AdmittedLastMinute), num(r.Config.AdmitPerMinute))
	}
	return tw.Flush()
}

// settingValues gives each setting's value as text, in Settings order.
func settingValues(cfg room.Config) ([]string, map[string]string) {
	b, _ := json.Marshal(cfg)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m) // a Config marshals to an object
	var names []string
	vals := map[string]string{}
	for _, s := range operator.Settings() {
		names = append(names, s.Name)
		v, ok := m[s.Name]
		switch {
		case !ok || string(v) == "null":
			vals[s.Name] = "none"
		case strings.HasPrefix(string(v), `"`):
			var str string
			_ = json.Unmarshal(v, &str) // a JSON string, as the prefix says
			vals[s.Name] = str
		default:
			vals[s.Name] = string(v)
		}
	}
	return names, vals
}

func (c *command) get(ctx context.Context, pos []string) error {
	id, cl, err := c.roomClient(ctx, pos, "rooms get")
	if err != nil {
		return err
	}
	r, err := cl.GetRoom(ctx, id)
	if err != nil {
		return err
	}
	if !c.credential {
		r.OriginCredential = ""
	}
	if c.g.json {
		return c.printJSON(r)
	}
	tw := printer.NewTable(c.stdout, 0)
	tw.Printf("room\t%s\n\nsettings\n", r.Room)
	names, vals := settingValues(r.Config)
	for _, n := range names {
		tw.Printf("  %s\t%s\n", n, vals[n])
	}
	st := r.Stats
	tw.Printf("\nfigures\n")
	tw.Printf("  waiting\t%s\n", num(st.Waiting))
	tw.Printf("  admitted\t%s\t(granted, not yet at the origin)\n", num(st.Admitted))
	tw.Printf("  active\t%s / %s\t(sessions at the origin / maxActive)\n", num(st.Active), num(r.Config.MaxActive))
	tw.Printf("  admittedLastMinute\t%s / %s\t(admitPerMinute)\n", num(st.AdmittedLastMinute), num(r.Config.AdmitPerMinute))
	tw.Printf("  evicted\t%s\n", num(st.Evicted))
	tw.Printf("  consumed\t%s\n", num(st.Consumed))
	tw.Printf("  replaysRefused\t%s\n", num(st.ReplaysRefused))
	if r.OriginCredential != "" {
		tw.Printf("\noriginCredential\t%s\n", r.OriginCredential)
	}
	return tw.Flush()
}

// changes prints what a PUT changed, setting by setting.
func (c *command) changes(id string, before, after room.Config, created bool) error {
	if c.g.json {
		return c.printJSON(map[string]any{"room": id, "config": after})
	}
	if created {
		// A new room has no old values: its settings as stored.
		c.out.Printf("%s: created\n", id)
		names, cur := settingValues(after)
		for _, n := range names {
			c.out.Printf("%s: %s %s\n", id, n, cur[n])
		}
		return nil
	}
	names, old := settingValues(before)
	_, cur := settingValues(after)
	same := true
	for _, n := range names {
		if old[n] != cur[n] {
			c.out.Printf("%s: %s %s → %s\n", id, n, old[n], cur[n])
			same = false
		}
	}
	if same && !created {
		c.out.Printf("%s: unchanged\n", id)
	}
	return nil
}

func (c *command) set(ctx context.Context, pos []string) error {
	if len(pos) < 2 {
		return usageError("rooms set takes a room id and at least one key=value, e.g. rooms set demo maxActive=500")
	}
	id := pos[0]
	settings, err := operator.ParseSettings(pos[1:])
	if err != nil {
		return err
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	before, err := cl.GetRoom(ctx, id)
	created := false
	switch {
	case errors.Is(err, operator.ErrUnknownRoom) && c.create:
		created = true
	case errors.Is(err, operator.ErrUnknownRoom):
		return &operator.Error{Message: fmt.Sprintf("there is no room %q here", id),
			Hint: "`vestibule rooms list` shows the rooms; add --create to create it (with originUrl=https://…)"}
	case err != nil:
		return err
	}
	after, err := cl.PutRoom(ctx, id, settings)
	if err != nil {
		return err
	}
	return c.changes(id, before.Config, after, created)
}

func (c *command) mode(ctx context.Context, verb string, pos []string) error {
	id, cl, err := c.roomClient(ctx, pos, "rooms "+verb)
	if err != nil {
		return err
	}
	before, err := cl.GetRoom(ctx, id) // never create a room by pausing a typo
	if err != nil {
		return err
	}
	after, err := cl.PutRoom(ctx, id, map[string]any{"mode": verbModes[verb]})
	if err != nil {
		return err
	}
	return c.changes(id, before.Config, after, false)
}

func (c *command) drain(ctx context.Context, pos []string) error {
	id, cl, err := c.roomClient(ctx, pos, "rooms drain")
	if err != nil {
		return err
	}
	out, err := cl.Drain(ctx, id)
	if err != nil {
		return err
	}
	if c.g.json {
		c.out.Printf("%s\n", out)
		return c.out.Err()
	}
	var res struct {
		Removed int64 `json:"removed"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("drain: unexpected answer: %w", err)
	}
	c.out.Printf("%s: drained, %d removed from the queue\n", id, res.Removed)
	return nil
}

func (c *command) settings(_ context.Context, pos []string) error {
	if len(pos) != 0 {
		return usageError("rooms settings takes no arguments")
	}
	return printSettings(c.stdout)
}

func printSettings(w io.Writer) error {
	tw := printer.NewTable(w, 0)
	tw.Println("SETTING\tTYPE")
	for _, s := range operator.Settings() {
		tw.Printf("%s\t%s\n", s.Name, s.Type)
	}
	tw.Println("\ndocs/ENGINE.md gives each one's meaning, range and default.")
	return tw.Flush()
}
