package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// parseAt reads --at: an RFC 3339 time, or +DURATION from now (+15m, +2h).
func parseAt(s string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutPrefix(s, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			return time.Time{}, usageError(fmt.Sprintf("--at %s: want +DURATION such as +15m, or an RFC 3339 time", s))
		}
		return now.Add(dur), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usageError(fmt.Sprintf("--at %s: want an RFC 3339 time such as 2026-12-01T10:05:00+01:00, or +15m", s))
	}
	return t, nil
}

// schedule plans a change (with --at and key=value pairs) or, with the room
// alone, lists the room's schedule.
func (c *command) schedule(ctx context.Context, pos []string) error {
	if len(pos) == 0 {
		return usageError("rooms schedule takes a room id, then --at TIME and key=value… to plan a change")
	}
	id, pairs := pos[0], pos[1:]
	if c.at == "" && len(pairs) == 0 {
		return c.listSchedule(ctx, id)
	}
	if c.at == "" || len(pairs) == 0 {
		return usageError("rooms schedule ROOM --at TIME key=value…: both the time and at least one setting")
	}
	at, err := parseAt(c.at, time.Now())
	if err != nil {
		return err
	}
	settings, err := operator.ParseSettings(pairs)
	if err != nil {
		return err
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	ch, err := cl.Plan(ctx, id, at, settings)
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(map[string]any{"room": id, "change": ch})
	}
	c.out.Printf("%s: planned %s for %s: %s\n", id, ch.ID, ch.At.Local().Format(time.RFC3339), string(ch.Settings))
	return nil
}

func (c *command) listSchedule(ctx context.Context, id string) error {
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	cs, err := cl.Schedule(ctx, id)
	if err != nil {
		return err
	}
	if c.g.json {
		if cs == nil {
			cs = []room.ScheduledChange{}
		}
		return c.printJSON(map[string]any{"room": id, "changes": cs})
	}
	if len(cs) == 0 {
		c.out.Printf("%s: nothing scheduled\n", id)
		return nil
	}
	tw := printer.NewTable(c.stdout, 0)
	tw.Println("ID\tAT\tSETTINGS\tSTATE")
	for _, ch := range cs {
		state := "planned by " + ch.CreatedBy
		if ch.Refused != "" {
			state = "REFUSED: " + ch.Refused
		}
		tw.Printf("%s\t%s\t%s\t%s\n", ch.ID, ch.At.Local().Format("2006-01-02 15:04:05"), string(ch.Settings), state)
	}
	return tw.Flush()
}

// unschedule cancels a scheduled change.
func (c *command) unschedule(ctx context.Context, pos []string) error {
	if len(pos) != 2 {
		return usageError("rooms unschedule takes a room id and a change id (rooms schedule ROOM lists them)")
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	ch, err := cl.Unplan(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(map[string]any{"room": pos[0], "cancelled": ch})
	}
	c.out.Printf("%s: cancelled %s (%s at %s)\n", pos[0], ch.ID, string(ch.Settings), ch.At.Local().Format(time.RFC3339))
	return nil
}
