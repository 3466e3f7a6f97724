package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// verifyDraw checks a pre-queue visitor's draw against the room's published
// lottery: the status route's drawSeed must hash to its drawCommitment, and
// room.DrawOf(seed, visitor) must equal the draw the room orders the visitor
// by. It reads public data only, so it needs no credentials: --endpoint (or
// --stack, which reads the endpoint from CloudFormation) and either the
// visitor reference the waiting page shows, whose draw it prints, or the
// ticket. A ticket hides its draw (format 3): the room's answer to a poll as
// that visitor says it from the opening on, with the place; a ticket from an
// older release shows its draw claim, which is checked too.
func (c *command) verifyDraw(ctx context.Context, pos []string) error {
	if len(pos) != 0 || c.room == "" || (c.ticket == "") == (c.visitor == "") {
		return usageError("verify-draw takes --room ROOM and either --ticket TICKET or --visitor REFERENCE (the waiting page shows it)")
	}
	var claims struct {
		Sub  string
		Draw float64 // 0: the ticket hides it, or a --visitor
	}
	if c.ticket != "" {
		var err error
		if claims, err = ticketClaims(c.ticket); err != nil {
			return err
		}
	} else {
		claims.Sub = c.visitor
	}
	cl, err := c.publicClient(ctx)
	if err != nil {
		return err
	}
	st, err := cl.Status(ctx, c.room)
	if err != nil {
		return err
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
	if claims.Draw != 0 && got != claims.Draw {
		return fmt.Errorf("MISMATCH: visitor %s: the seed gives draw %v, the ticket says %v", claims.Sub, got, claims.Draw)
	}
	var p placeAnswer
	if c.ticket != "" {
		p = c.place(ctx, cl, c.ticket)
		if p.Draw != nil && *p.Draw != got {
			return fmt.Errorf("MISMATCH: visitor %s: the seed gives draw %v, the room orders them by %v", claims.Sub, got, *p.Draw)
		}
		if p.Draw == nil && claims.Draw == 0 && p.State != "admitted" {
			return fmt.Errorf("visitor %s: the room does not say the draw it holds (state %q): the ticket joined no pre-queue, or the place is gone", claims.Sub, p.State)
		}
	}
	c.out.Printf("ok: seed %s matches commitment %s\n", st.DrawSeed, st.DrawCommitment)
	switch {
	case p.Draw != nil:
		c.out.Printf("ok: visitor %s draw %v (%.6f), as the room orders them\n", claims.Sub, got, got)
	case claims.Draw != 0:
		c.out.Printf("ok: visitor %s draw %v (%.6f), as the ticket says\n", claims.Sub, got, got)
	default:
		c.out.Printf("visitor %s: the seed gives draw %v (%.6f); the waiting page shows the draw the room orders them by: they must match\n", claims.Sub, got, got)
	}
	// A draw is uniform in [0, 1) and the lowest goes first: it is the share
	// of the pre-queue expected ahead.
	c.out.Printf("draw %.6f: about %d%% of the pre-queue drew lower and went ahead\n", got, int(got*100))
	if line := p.String(); line != "" {
		c.out.Println(line)
	}
	return nil
}

// publicClient is a client of the deployment's public routes: the endpoint
// with no credentials, or with --stack the endpoint its outputs name.
func (c *command) publicClient(ctx context.Context) (*operator.Client, error) {
	t := c.g.target
	if t.Endpoint != "" && t.Stack != "" {
		return nil, usageError("--endpoint and --stack both name the deployment: pass only one of them")
	}
	if t.Stack != "" {
		return c.client(ctx)
	}
	if t.Endpoint == "" {
		return nil, usageError("verify-draw needs --endpoint URL (the waiting room's API, e.g. the stack's ApiUrl output)")
	}
	cl := &operator.Client{Endpoint: t.Endpoint}
	if _, err := cl.URL(""); err != nil {
		return nil, err
	}
	return cl, nil
}

// placeAnswer is what a poll as the visitor says: the state, the place and,
// from the opening, the draw the room orders the visitor by.
type placeAnswer struct {
	State    string   `json:"state"`
	Position int64    `json:"position"`
	Waiting  int64    `json:"waiting"`
	Draw     *float64 `json:"draw"`
}

// String is the place as a line: in line, admitted, or gone; "" when the
// room did not say.
func (p placeAnswer) String() string {
	switch {
	case p.State == "waiting" && p.Position > 0:
		return fmt.Sprintf("place: %s of %s waiting now", num(p.Position), num(p.Waiting))
	case p.State == "admitted":
		return "place: admitted (their turn came)"
	case p.State != "":
		return "place: " + p.State
	}
	return ""
}

// place asks the room where the ticket's visitor stands (one poll as that
// visitor); the zero answer when the room does not say.
func (c *command) place(ctx context.Context, cl *operator.Client, ticket string) placeAnswer {
	var p placeAnswer
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cl.Endpoint, "/")+"/api/rooms/"+url.PathEscape(c.room)+"/poll", nil)
	if err != nil {
		return p
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(ticket))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return p
	}
	defer func() { _ = resp.Body.Close() }() // a body read: closing it cannot lose anything
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil {
		return placeAnswer{}
	}
	return p
}

// ticketClaims reads a ticket's visitor and draw without checking its
// signature (the draw is 0 when the ticket hides it: format 3).
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
