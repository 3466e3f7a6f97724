package queueapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/text"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Invitations and support (docs/API.md, "Invitations", "Support lookup"):
// a join may carry an invitation in its body; the admin routes create,
// show and revoke invitations, look a visitor up by the page's reference and
// restore a lost place.

// DefaultInvitationLife is how long an invitation made without an expiry lasts.
const DefaultInvitationLife = 7 * 24 * time.Hour

// maxReason bounds a restore's reason.
const maxReason = 500

var (
	errInvitationInvalid = &httpapi.Error{Status: http.StatusForbidden, Code: "invitation_invalid",
		Message: "the invitation is invalid, expired or for another room"}
)

func (h *API) invitations() *token.Invitations { return token.NewInvitations(h.o.Origins) }

// joinBody is the optional body of an enqueue.
type joinBody struct {
	Invitation string `json:"invitation"`
}

// joinInvitation reads the invitation an enqueue's body carries (nil: none)
// and checks its signature.
func (h *API) joinInvitation(r *httpapi.Request) (*room.Invitation, error) {
	if len(r.Body) == 0 {
		return nil, nil
	}
	var b joinBody
	if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
		return nil, err
	}
	if b.Invitation == "" {
		return nil, nil
	}
	inv, err := h.invitations().Verify(b.Invitation, r.Room, r.Now)
	if err != nil {
		return nil, errInvitationInvalid
	}
	return &inv, nil
}

// createBody is the body of POST /api/admin/rooms/{room}/invitations.
type createBody struct {
	ID               string `json:"id"`
	Uses             int64  `json:"uses"`
	ExpiresInSeconds int64  `json:"expiresInSeconds"`
	Bypass           bool   `json:"bypass"`
}

// invitationAnswer is a made invitation: the token, and the waiting page's
// link that carries it (relative to the page's origin).
type invitationAnswer struct {
	claims
	Invitation string `json:"invitation"`
	Link       string `json:"link"`
}

// claims is room.Invitation under a name that does not take the answer's
// invitation field.
type claims = room.Invitation

func newInvitationID() string {
	b := make([]byte, 12)
	rand.Read(b) // never fails (crypto/rand, Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// InvitationLink is the waiting page's link for an invitation to a room,
// relative to the page's origin.
func InvitationLink(roomID, invitation string) string {
	return "/?" + url.Values{"room": {roomID}, "invite": {invitation}}.Encode()
}

// createInvitation signs an invitation to the room (the room must exist).
func (h *API) createInvitation(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	b := createBody{Uses: 1, ExpiresInSeconds: int64(DefaultInvitationLife / time.Second)}
	if len(r.Body) > 0 {
		if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
	}
	if b.ID == "" {
		b.ID = newInvitationID()
	}
	if _, err := h.o.Queue.GetConfig(ctx, r.Room); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if b.ExpiresInSeconds < 1 || b.ExpiresInSeconds > int64(room.MaxInvitationLife/time.Second) {
		return events.APIGatewayV2HTTPResponse{}, badInvitation("expiresInSeconds must be 1 to 31622400 (366 days)")
	}
	inv := room.Invitation{ID: b.ID, Room: r.Room, Uses: b.Uses, Bypass: b.Bypass,
		IssuedAt: r.Now.UTC().Truncate(time.Second)}
	inv.ExpiresAt = inv.IssuedAt.Add(time.Duration(b.ExpiresInSeconds) * time.Second)
	s, err := h.invitations().Issue(inv)
	if errors.Is(err, token.ErrInvalid) {
		return events.APIGatewayV2HTTPResponse{}, badInvitation("id must be 1 to 64 of [A-Za-z0-9_-] and uses 1 to 1000000")
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, httpapi.InternalError(err)
	}
	nv, _ := json.Marshal(inv)
	h.record(ctx, r, room.AuditEntry{Action: "invite", Changes: []room.AuditChange{{Setting: "invitation", Old: json.RawMessage("null"), New: nv}}})
	return httpapi.JSON(http.StatusCreated, invitationAnswer{claims: inv, Invitation: s, Link: InvitationLink(r.Room, s)}), nil
}

// query is a query parameter as API Gateway parsed it, else from the raw query.
func query(r *httpapi.Request, name string) string {
	if v := r.Event.QueryStringParameters[name]; v != "" {
		return v
	}
	q, _ := url.ParseQuery(r.Event.RawQueryString)
	return q.Get(name)
}

func badInvitation(msg string) error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: "invalid_invitation", Message: msg}
}

// showInvitation answers what the engine holds of ?id=: uses taken, revocation, log.
func (h *API) showInvitation(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	id := query(r, "id")
	if !room.ValidInvitationID(id) {
		return events.APIGatewayV2HTTPResponse{}, badInvitation("?id= must be an invitation id: 1 to 64 of [A-Za-z0-9_-]")
	}
	st, err := h.o.Queue.Invitation(ctx, r.Room, id)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, st), nil
}

// revokeInvitation revokes {"id"} for good, audited.
func (h *API) revokeInvitation(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	var b struct {
		ID string `json:"id"`
	}
	if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if !room.ValidInvitationID(b.ID) {
		return events.APIGatewayV2HTTPResponse{}, badInvitation("id must be an invitation id: 1 to 64 of [A-Za-z0-9_-]")
	}
	if _, err := h.o.Queue.GetConfig(ctx, r.Room); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	at, err := h.o.Queue.RevokeInvitation(ctx, r.Room, b.ID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	old, _ := json.Marshal(b.ID)
	h.record(ctx, r, room.AuditEntry{Action: "revoke invitation", Changes: []room.AuditChange{{Setting: "invitation", Old: old, New: json.RawMessage("null")}}})
	// An id may be revoked before any use (a booking site's minted
	// invitation never sent out), so an unknown one is no error; the uses
	// seen let the operator notice a mistyped id while revoking a leak.
	st, err := h.o.Queue.Invitation(ctx, r.Room, b.ID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, revokeAnswer{Revocation: room.Revocation{ID: b.ID, RevokedAt: at}, Used: st.Used}), nil
}

// revokeAnswer is a revocation with the uses of the invitation seen so far.
type revokeAnswer struct {
	room.Revocation
	Used int64 `json:"used"`
}

// lookupVisitor answers where the visitor of ?ref= (the page's reference) stands.
func (h *API) lookupVisitor(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	v, err := h.o.Queue.Visitor(ctx, r.Room, query(r, "ref"))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, v), nil
}

// restorePlace gives {"ref"} back a lost place, audited with {"reason"}.
func (h *API) restorePlace(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	var b struct {
		Ref    string `json:"ref"`
		Reason string `json:"reason"`
	}
	if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if b.Reason == "" || utf8.RuneCountInString(b.Reason) > maxReason || !text.Clean(b.Reason, true) {
		return events.APIGatewayV2HTTPResponse{}, &httpapi.Error{Status: http.StatusBadRequest, Code: "missing_reason",
			Message: "reason: why the place is restored, 1 to 500 characters, is required (it goes to the audit log)"}
	}
	v, err := h.o.Queue.RestorePlace(ctx, r.Room, b.Ref)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	old, _ := json.Marshal(map[string]string{"visitor": b.Ref, "state": "lost"})
	nv, _ := json.Marshal(map[string]any{"visitor": b.Ref, "state": v.State, "position": v.Position, "reason": b.Reason})
	h.record(ctx, r, room.AuditEntry{Action: "restore place", Changes: []room.AuditChange{{Setting: "place", Old: old, New: nv}}})
	return httpapi.JSON(http.StatusOK, v), nil
}
