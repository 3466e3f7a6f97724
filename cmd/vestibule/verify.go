package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// verifyDraw checks a pre-queue ticket's draw against the room's published
// lottery: the status route's drawSeed must hash to its drawCommitment, and
// room.DrawOf(seed, the ticket's sub) must equal the ticket's draw claim. The
// ticket is read unverified: its signature is the deployment's secret, and
// the check needs only its claims.
func (c *command) verifyDraw(ctx context.Context, pos []string) error {
	if len(pos) != 0 || c.room == "" || c.ticket == "" {
		return usageError("verify-draw takes --room ROOM and --ticket TICKET")
	}
	claims, err := ticketClaims(c.ticket)
	if err != nil {
		return err
	}
	if claims.Draw == 0 {
		return errors.New("the ticket has no draw: it did not join a pre-queue")
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	resp, b, err := cl.Do(ctx, http.MethodGet, "/api/rooms/"+url.PathEscape(c.room)+"/status", nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status of %s: %d %s", c.room, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var st struct {
		DrawCommitment string `json:"drawCommitment"`
		DrawSeed       string `json:"drawSeed"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("status of %s: %w", c.room, err)
	}
	switch {
	case st.DrawCommitment == "":
		return fmt.Errorf("%s publishes no lottery commitment (no opening time)", c.room)
	case st.DrawSeed == "":
		return fmt.Errorf("%s has not opened yet: commitment %s, seed not published", c.room, st.DrawCommitment)
	case room.DrawCommitment(st.DrawSeed) != st.DrawCommitment:
		return fmt.Errorf("MISMATCH: SHA-256 of the seed %s is not the commitment %s", st.DrawSeed, st.DrawCommitment)
	}
	got := room.DrawOf(st.DrawSeed, claims.Sub)
	if got != claims.Draw {
		return fmt.Errorf("MISMATCH: visitor %s: the seed gives draw %v, the ticket says %v", claims.Sub, got, claims.Draw)
	}
	fmt.Fprintf(c.stdout, "ok: seed %s matches commitment %s\nok: visitor %s draw %v\n",
		st.DrawSeed, st.DrawCommitment, claims.Sub, got)
	return nil
}

// ticketClaims reads a ticket's visitor and draw without checking its
// signature (format 2, or a format 1 JWT from before).
func ticketClaims(tok string) (struct {
	Sub  string
	Draw float64
}, error) {
	var cl struct {
		Sub  string
		Draw float64
	}
	tk, ok := token.PeekTicket(strings.TrimSpace(tok))
	if !ok || tk.Visitor == "" {
		return cl, usageError("--ticket is not a ticket")
	}
	cl.Sub, cl.Draw = tk.Visitor, tk.Draw
	return cl, nil
}
