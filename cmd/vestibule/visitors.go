package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/printer"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// visitorShow is the support lookup: the visitor whose reference (the one
// the waiting page shows) is given.
func (c *command) visitorShow(ctx context.Context, pos []string) error {
	id, ref, err := roomAndArg(pos, "visitors show", "the visitor's reference (the one the waiting page shows)")
	if err != nil {
		return err
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	v, err := cl.Visitor(ctx, id, ref)
	if err != nil {
		return err
	}
	return c.printVisitor(v)
}

// visitorRestore gives a lost place back, with the reason for the audit log.
func (c *command) visitorRestore(ctx context.Context, pos []string) error {
	id, ref, err := roomAndArg(pos, "visitors restore", "the visitor's reference")
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.inv.reason) == "" {
		return usageError("visitors restore needs --reason: why the place is restored (it goes to the audit log)")
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	v, err := cl.RestorePlace(ctx, id, ref, c.inv.reason)
	if err != nil {
		return err
	}
	return c.printVisitor(v)
}

func (c *command) printVisitor(v room.VisitorState) error {
	if c.g.json {
		return c.printJSON(v)
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04:05")
	}
	state := string(v.State)
	if v.Position > 0 {
		state += " at place " + strconv.FormatInt(v.Position, 10)
	}
	if v.Bypass {
		state += " (bypass)"
	}
	tw := printer.NewTable(c.stdout, 0)
	tw.Printf("room\t%s\n", v.Room)
	tw.Printf("visitor\t%s (sequence %d)\n", v.Visitor, v.Seq)
	tw.Printf("state\t%s\n", state)
	tw.Printf("joined\t%s\n", v.JoinedAt.Local().Format("2006-01-02 15:04:05"))
	tw.Printf("last poll\t%s\n", at(v.LastPoll))
	tw.Printf("admitted\t%s\n", at(v.AdmittedAt))
	tw.Printf("claim deadline\t%s\n", at(v.ClaimDeadline))
	consumed := "no"
	if v.Consumed {
		consumed = "yes"
	}
	tw.Printf("consumed\t%s\n", consumed)
	tw.Printf("session end\t%s\n", at(v.SessionEnd))
	return tw.Flush()
}
