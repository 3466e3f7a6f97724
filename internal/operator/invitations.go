package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// NewInvitation is what an operator asks of an invitation (POST
// /api/admin/rooms/{room}/invitations); zero fields take the deployment's defaults.
type NewInvitation struct {
	ID               string `json:"id,omitempty"`
	Uses             int64  `json:"uses,omitempty"`
	ExpiresInSeconds int64  `json:"expiresInSeconds,omitempty"`
	Bypass           bool   `json:"bypass,omitempty"`
}

// MadeInvitation is the deployment's answer: the invitation's claims, the
// signed invitation and the waiting page's link, relative to its origin.
type MadeInvitation struct {
	room.Invitation
	Token string `json:"invitation"`
	Link  string `json:"link"`
}

// UnmarshalJSON reads the answer, whose "invitation" is the token while the
// claims sit beside it.
func (m *MadeInvitation) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &m.Invitation); err != nil {
		return err
	}
	var t struct {
		Token string `json:"invitation"`
		Link  string `json:"link"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	m.Token, m.Link = t.Token, t.Link
	return nil
}

// CreateInvitation makes an invitation to a room.
func (c *Client) CreateInvitation(ctx context.Context, id string, n NewInvitation) (MadeInvitation, error) {
	p, err := roomPath(id)
	if err != nil {
		return MadeInvitation{}, err
	}
	b, _ := json.Marshal(n) // plain fields: cannot fail
	var out MadeInvitation
	err = c.call(ctx, http.MethodPost, p+"/invitations", b, id, &out)
	return out, err
}

// Invitation reads what a room holds of an invitation: uses, revocation, log.
func (c *Client) Invitation(ctx context.Context, id, inv string) (room.InvitationState, error) {
	p, err := roomPath(id)
	if err != nil {
		return room.InvitationState{}, err
	}
	var out room.InvitationState
	err = c.call(ctx, http.MethodGet, p+"/invitations?id="+url.QueryEscape(inv), nil, id, &out)
	return out, err
}

// Revoked is a revocation as the deployment answers it: with the uses of
// the invitation it had seen (0 for an id never used, or mistyped).
type Revoked struct {
	room.Revocation
	Used int64 `json:"used"`
}

// RevokeInvitation revokes an invitation of a room.
func (c *Client) RevokeInvitation(ctx context.Context, id, inv string) (Revoked, error) {
	p, err := roomPath(id)
	if err != nil {
		return Revoked{}, err
	}
	b, _ := json.Marshal(map[string]string{"id": inv})
	var out Revoked
	err = c.call(ctx, http.MethodPost, p+"/invitations/revoke", b, id, &out)
	return out, err
}

// Visitor looks a visitor up by the reference the waiting page shows.
func (c *Client) Visitor(ctx context.Context, id, ref string) (room.VisitorState, error) {
	p, err := roomPath(id)
	if err != nil {
		return room.VisitorState{}, err
	}
	var out room.VisitorState
	err = c.call(ctx, http.MethodGet, p+"/visitors?ref="+url.QueryEscape(ref), nil, id, &out)
	return out, unknownVisitor(err, id, ref)
}

// unknownVisitor says which reference a lookup or restore did not find.
func unknownVisitor(err error, id, ref string) error {
	var e *Error
	if errors.As(err, &e) && e.Code == "unknown_visitor" {
		e.Message = fmt.Sprintf("room %s has no visitor with the reference %s (404 unknown_visitor)", id, ref)
		e.Hint = "check it against the page's line \"Your reference, if you write to support\" (or \"Your lottery reference\"); " +
			"a visitor is known until the end of the day after the one they joined on (UTC)"
	}
	return err
}

// RestorePlace gives a visitor a lost place back; reason goes to the audit log.
func (c *Client) RestorePlace(ctx context.Context, id, ref, reason string) (room.VisitorState, error) {
	p, err := roomPath(id)
	if err != nil {
		return room.VisitorState{}, err
	}
	b, _ := json.Marshal(map[string]string{"ref": ref, "reason": reason})
	var out room.VisitorState
	err = c.call(ctx, http.MethodPost, p+"/visitors/restore", b, id, &out)
	return out, unknownVisitor(err, id, ref)
}
