// Package roomhttp is what the room's two products over HTTP share
// (api/queueapi, the waiting room, and api/gateapi, the edge gate's pages):
// the answers to the room engine's errors and the checks of entry tokens and
// origin credentials. api/httpapi, under every product, knows no domain.
package roomhttp

import (
	"errors"
	"math"
	"net/http"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Answers are the answers to the room engine's errors (httpapi.ToError), in
// order.
var Answers = httpapi.Answers{
	{Err: room.ErrInvalidRoom, Status: http.StatusBadRequest, Code: "invalid_room", Message: "invalid room id"},
	{Err: room.ErrInvalidConfig, Status: http.StatusBadRequest, Code: "invalid_config"},
	{Err: room.ErrUnknownRoom, Status: http.StatusNotFound, Code: "unknown_room", Message: "no such room"},
	// Not a Redis outage (no RedisErrors metric): an operator PUTs the room again.
	{Err: room.ErrNotRestorable, Status: http.StatusServiceUnavailable, Code: "room_unrestorable",
		Message: "the room's stored settings cannot be read; an operator must PUT the room again"},
	{Err: room.ErrNoRegion, Status: http.StatusConflict, Code: "no_region", Message: "this deployment's functions write for no region: it has no standby to fail over to"},
	{Err: room.ErrNotClosed, Status: http.StatusConflict, Code: "room_not_closed", Message: "only a closed room can be drained"},
	{Err: room.ErrClosed, Status: http.StatusConflict, Code: "room_closed", Message: "the room is closed"},
	{Err: room.ErrAlreadyConsumed, Status: http.StatusConflict, Code: "already_consumed", Message: "this entry was already used"},
	{Err: room.ErrGrantExpired, Status: http.StatusGone, Code: "grant_expired", Message: "the entry expired before it was used"},
	{Err: room.ErrWrongAudience, Status: http.StatusUnauthorized, Code: "invalid_token", Message: "entry token is for another origin"},
	{Err: room.ErrUnknownGrant, Status: http.StatusUnauthorized, Code: "unknown_grant", Message: "no such entry"},
	{Err: room.ErrInvitationRequired, Status: http.StatusForbidden, Code: "invitation_required", Message: "this room admits invited visitors only"},
	{Err: room.ErrInvitationInvalid, Status: http.StatusForbidden, Code: "invitation_invalid", Message: "the invitation is invalid, expired or for another room"},
	{Err: room.ErrInvitationRevoked, Status: http.StatusForbidden, Code: "invitation_revoked", Message: "the invitation was revoked"},
	{Err: room.ErrInvitationUsedUp, Status: http.StatusForbidden, Code: "invitation_used", Message: "every use of the invitation was taken"},
	{Err: room.ErrUnknownVisitor, Status: http.StatusNotFound, Code: "unknown_visitor", Message: "no visitor who joined today or yesterday has that reference"},
	{Err: room.ErrPlaceStands, Status: http.StatusConflict, Code: "place_not_lost", Message: "the visitor still waits, holds a grant or a session, or was served: nothing to restore"},
	{Err: room.ErrChallengeSpent, Status: http.StatusForbidden, Code: "challenge_used", Message: "this join challenge was used already; solve a new one"},
	{Err: room.ErrRateLimited, Status: http.StatusTooManyRequests, Code: "rate_limited", Message: "too many requests, retry later",
		Detail: func(e *httpapi.Error, err error) {
			e.RetryAfter = httpapi.RetryAfterSeconds
			var re *room.RetryError
			if errors.As(err, &re) {
				e.RetryAfter = max(1, int(math.Ceil(re.After.Seconds())))
			}
		}},
}
