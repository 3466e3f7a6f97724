package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// deleteRoom deletes a room; with --force a room with visitors waiting is
// closed and drained first.
func (c *command) deleteRoom(ctx context.Context, pos []string) error {
	id, cl, err := c.roomClient(ctx, pos, "rooms delete")
	if err != nil {
		return err
	}
	r, err := cl.GetRoom(ctx, id)
	if err != nil {
		return err
	}
	drained := int64(0)
	if r.Stats.Waiting > 0 {
		if !c.force {
			return &operator.Error{Message: fmt.Sprintf("room %s has %s visitors waiting", id, num(r.Stats.Waiting)),
				Hint: "`vestibule rooms delete " + id + " --force` closes the room, drains its queue and deletes it"}
		}
		if r.Config.Mode != room.ModeClosed {
			if _, err := cl.PutRoom(ctx, id, map[string]any{"mode": room.ModeClosed}); err != nil {
				return err
			}
			c.out.Printf("%s: closed\n", id)
		}
		if _, err := cl.Drain(ctx, id); err != nil {
			return err
		}
		drained = r.Stats.Waiting
	}
	d, err := cl.DeleteRoom(ctx, id)
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(d)
	}
	c.out.Printf("%s: deleted (%s waiting drained, %s grants and %s sessions removed)\n",
		id, num(drained), num(d.Admitted), num(d.Active))
	return nil
}

// roomLog prints the room's audit log, oldest first.
func (c *command) roomLog(ctx context.Context, pos []string) error {
	id, cl, err := c.roomClient(ctx, pos, "rooms log")
	if err != nil {
		return err
	}
	entries, err := cl.RoomLog(ctx, id)
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(map[string]any{"room": id, "entries": entries})
	}
	if len(entries) == 0 {
		c.out.Printf("%s: no changes recorded\n", id)
		return nil
	}
	tw := printer.NewTable(c.stdout, 0)
	tw.Println("WHEN\tWHO\tWHAT")
	for _, e := range entries {
		tw.Printf("%s\t%s\t%s\n", e.At.Local().Format("2006-01-02 15:04:05"), e.Who, auditText(e))
	}
	return tw.Flush()
}

// auditText says what an audit entry changed.
func auditText(e room.AuditEntry) string {
	if e.Why == "" {
		return auditWhat(e)
	}
	return auditWhat(e) + " (why: " + e.Why + ")"
}

// auditWhat is what an entry changed, without why.
func auditWhat(e room.AuditEntry) string {
	var parts []string
	for _, ch := range e.Changes {
		parts = append(parts, fmt.Sprintf("%s %s → %s", ch.Setting, auditValue(ch.Old), auditValue(ch.New)))
	}
	what := strings.Join(parts, ", ")
	switch e.Action {
	case "create":
		return "created: " + what
	case "drain":
		return fmt.Sprintf("drained (%s removed)", num(e.Removed))
	case "delete":
		return "deleted"
	case "schedule":
		return "planned " + e.Schedule + ": " + what
	case "unschedule":
		return "cancelled scheduled change " + e.Schedule
	case "scheduled change refused":
		return "scheduled change " + e.Schedule + " refused: " + e.Refused
	case "invite", "revoke invitation", "restore place":
		return e.Action + ": " + what
	}
	if what == "" {
		return e.Action
	}
	return what
}

// auditValue shows a JSON value: a string without its quotes, null as none.
func auditValue(v []byte) string {
	s := string(v)
	switch {
	case s == "null" || s == "":
		return "none"
	case strings.HasPrefix(s, `"`) && !strings.ContainsAny(s[1:len(s)-1], `"\`):
		return s[1 : len(s)-1]
	}
	return s
}
