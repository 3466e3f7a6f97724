package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
)

// invitationFlags are the flags of invitations create and visitors restore.
type invitationFlags struct {
	uses    int64
	expires string
	bypass  bool
	id      string
	reason  string
}

// bindInvitations registers the flags of an invitations or visitors command.
func (c *command) bindInvitations(cmd string, fs *flag.FlagSet) runFunc {
	switch cmd {
	case "invitations create":
		fs.Int64Var(&c.inv.uses, "uses", 1, "how many joins it admits")
		fs.StringVar(&c.inv.expires, "expires", "7d", "how long it is valid: 90m, 48h, 30d")
		fs.BoolVar(&c.inv.bypass, "bypass", false, "its holder skips the line (still within maxActive)")
		fs.StringVar(&c.inv.id, "id", "", "its id (default: a random one)")
		fs.StringVar(&c.public, "public", "", "the waiting page's base URL (default: the stack's WaitingRoomUrl output, or --endpoint)")
		return c.invitationCreate
	case "invitations show":
		return c.invitationShow
	case "invitations revoke":
		return c.invitationRevoke
	case "visitors show":
		return c.visitorShow
	}
	fs.StringVar(&c.inv.reason, "reason", "", "why the place is restored (required; kept in the audit log)")
	return c.visitorRestore
}

// parseExpiry reads --expires: a Go duration, or whole days as "30d".
func parseExpiry(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 {
			return 0, usageError(fmt.Sprintf("--expires %q: days must be a whole number above 0", s))
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, usageError(fmt.Sprintf("--expires %q: a duration of at least 1s (90m, 48h) or days (30d)", s))
	}
	return d, nil
}

// roomAndArg checks that pos is a room id and one more word (what).
func roomAndArg(pos []string, cmd, what string) (string, string, error) {
	if len(pos) != 2 {
		msg := fmt.Sprintf("%s needs ROOM and %s", cmd, what)
		if len(pos) > 2 {
			// A mistyped flag lands here: it is taken as an argument (refCommands).
			msg += fmt.Sprintf(", not %d arguments (%s): an argument that starts with - and is no flag of the command is taken as it is",
				len(pos), strings.Join(pos, " "))
		}
		return "", "", usageError(msg)
	}
	return pos[0], pos[1], nil
}

func (c *command) invitationCreate(ctx context.Context, pos []string) error {
	id, cl, err := c.roomClient(ctx, pos, "invitations create")
	if err != nil {
		return err
	}
	life, err := parseExpiry(c.inv.expires)
	if err != nil {
		return err
	}
	made, err := cl.CreateInvitation(ctx, id, operator.NewInvitation{ID: c.inv.id, Uses: c.inv.uses,
		ExpiresInSeconds: int64(life / time.Second), Bypass: c.inv.bypass})
	if err != nil {
		return err
	}
	public, err := c.publicEndpoint(ctx, cl)
	if err != nil {
		return err
	}
	link := public + made.Link
	if c.g.json {
		return c.printJSON(map[string]any{"invitation": made.Invitation, "token": made.Token, "link": link})
	}
	kind := "invitation"
	if made.Bypass {
		kind = "bypass invitation"
	}
	c.out.Printf("%s %s to %s: %d use(s), valid until %s\n%s\n", kind, made.ID, id, made.Uses,
		made.ExpiresAt.Local().Format("2006-01-02 15:04"), link)
	return nil
}

func (c *command) invitationShow(ctx context.Context, pos []string) error {
	id, inv, err := roomAndArg(pos, "invitations show", "the invitation's ID")
	if err != nil {
		return err
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	st, err := cl.Invitation(ctx, id, inv)
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(st)
	}
	c.out.Printf("invitation %s of %s: %d use(s) taken\n", st.ID, id, st.Used)
	if st.RevokedAt != nil {
		c.out.Printf("revoked %s\n", st.RevokedAt.Local().Format("2006-01-02 15:04:05"))
	}
	tw := printer.NewTable(c.stdout, 0)
	tw.Println("WHEN\tUSE\tVISITOR")
	for _, u := range st.Log {
		n := strconv.FormatInt(u.Use, 10)
		if u.Returned {
			n = "given back"
		}
		tw.Printf("%s\t%s\t%s\n", u.At.Local().Format("2006-01-02 15:04:05"), n, u.Visitor)
	}
	return tw.Flush()
}

func (c *command) invitationRevoke(ctx context.Context, pos []string) error {
	id, inv, err := roomAndArg(pos, "invitations revoke", "the invitation's ID")
	if err != nil {
		return err
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	r, err := cl.RevokeInvitation(ctx, id, inv)
	if err != nil {
		return err
	}
	if c.g.json {
		return c.printJSON(r)
	}
	c.out.Printf("invitation %s of %s revoked (%s)", r.ID, id, r.RevokedAt.Local().Format("2006-01-02 15:04:05"))
	if r.Used == 0 {
		// Revoking an id before its first use is allowed (a minted link not
		// sent yet), so this is no error; but a typo must not pass unseen.
		c.out.Printf("; no use of it seen yet: if you meant a link that was used, check the id (`vestibule invitations show %s ID` lists one's uses)\n", id)
		return nil
	}
	c.out.Printf("; %d use(s) taken before\n", r.Used)
	return nil
}
