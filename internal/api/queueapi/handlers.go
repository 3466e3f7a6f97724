package queueapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// placeResponse is the answer of enqueue and poll.
type placeResponse struct {
	Room        string     `json:"room"`
	Ticket      string     `json:"ticket,omitempty"`
	State       room.State `json:"state"`
	Position    int64      `json:"position"`
	Waiting     int64      `json:"waiting"`
	EtaSeconds  *int64     `json:"etaSeconds"` // null when no admission rate is known
	PollAfterMs int64      `json:"pollAfterMs"`
	// RatePerMinute is, while waiting, the pace behind EtaSeconds: what the
	// room admits a minute for this visitor (room.Place.RatePerMinute, never
	// above admitPerMinute): the page counts the place down at it between polls.
	RatePerMinute *float64   `json:"ratePerMinute,omitempty"`
	OpensAt       *time.Time `json:"opensAt,omitempty"`
	// Draw is the visitor's pre-queue draw, the one the room orders them by,
	// once the opening has revealed the seed: the page checks it against
	// the seed (docs/PAGE.md). Never before the opening.
	Draw *float64 `json:"draw,omitempty"`
	// Set when admitted.
	EntryToken     string     `json:"entryToken,omitempty"`
	OriginURL      string     `json:"originUrl,omitempty"`
	GrantExpiresAt *time.Time `json:"grantExpiresAt,omitempty"`
	Active         bool       `json:"active,omitempty"` // the entry was already used; a session runs
	// PageVersion names the room's page setting (room.PageVersion): the page
	// re-reads the status, which carries the page, when it changes. Absent
	// from a closed room's answer to a visitor without a ticket.
	PageVersion string `json:"pageVersion,omitempty"`
	// EnterURL is set when admitted in a gated room: the page posts the entry
	// token there (a form with token and return) instead of going to OriginURL.
	EnterURL string `json:"enterUrl,omitempty"`
	// Notices is the offer of notices of the visitor's turn (a push, an
	// email), in enqueue's answer to a visitor in the queue of a room that
	// offers them (notifiedClaimTTLSeconds); the same for every place, so in
	// a pre-queue it says nothing of the draw. Polls never carry it.
	Notices *notice.Offer `json:"notices,omitempty"`
	// Notify says whether the place holds a notice registration (docs/ENGINE.md,
	// "Notices"), when the engine knows: the page signs up again when it finds
	// its place restored without one after a loss of Redis.
	Notify *bool `json:"notify,omitempty"`
}

// drawSecret says whether, at now, the room's pre-queue draw is still secret:
// the room has an opening and it has not come. Until then no answer may
// depend on a visitor's draw (TestPrequeueAnswersHideTheDraw).
func drawSecret(cfg room.Config, now time.Time) bool {
	return cfg.OpensAt != nil && now.Before(*cfg.OpensAt)
}

// newVisitorID is the visitor's identity: random, made here, never taken from
// the client, so nobody can claim someone else's place or lottery draw.
func newVisitorID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand, Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (h *API) enqueue(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	// A valid ticket of this room whose place still stands gets that place
	// back: a refresh and a second tab are safe. It is a poll of that place,
	// under the same minimum interval as any poll. Any other ticket (another
	// room's, expired, garbage, or one whose place is gone: served, left,
	// evicted) is ignored: the visitor joins afresh under a new id and pays the
	// join limit like anyone else. A visitor id is made here and given to one
	// Enqueue only, so it never holds a second place, nor a second draw.
	if t, s, err := h.requestTicket(r); err == nil {
		p, err := h.o.Queue.Poll(ctx, t)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if p.State != room.StateExpired {
			return h.answer(r, p, s, false, true)
		}
	}
	// A join challenge's proof, when the page sends one (the room says whether
	// it asks for one: the enqueue script checks the work and spends the proof).
	var proof room.JoinProof
	if v := r.Header(challenge.HeaderChallenge); v != "" {
		p, err := h.o.Challenges.Verify(v, r.Header(challenge.HeaderSolution), r.Room, r.Now)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, errChallengeInvalid
		}
		proof = room.JoinProof{Bits: p.Bits, Nonce: p.Nonce, Until: p.ExpiresAt}
	}
	// The per-address join limit is checked in the join's own script (one round trip).
	proof.Client = r.ClientAddress()
	inv, err := h.joinInvitation(r) // invitations.go
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	proof.Invitation = inv
	p, err := h.o.Queue.Join(ctx, r.Room, newVisitorID(), proof)
	var ce *room.ChallengeError
	if errors.As(err, &ce) {
		// The refusal carries the challenge to solve: no extra round trip.
		var b challengeBody
		b.Error.Code, b.Error.Message = "challenge_required", "solve the join challenge, then join with its solution"
		// Its nonce says where the proof is spent, and in a room whose joins
		// are spread takes it to the arrival shard that counts this client's.
		b.Challenge = h.o.Challenges.IssueFor(r.Room, ce.Bits, r.Now, ce.NoncePrefix(), ce.Accepts)
		return httpapi.JSON(http.StatusForbidden, b), nil
	}
	if errors.Is(err, room.ErrClosed) {
		return httpapi.JSON(http.StatusOK, placeResponse{
			Room: r.Room, State: room.StateClosed,
			// No place: try again after the hold (the budget of this answer).
			PollAfterMs: pollpolicy.After(pollpolicy.Input{State: room.StateClosed, PollWithin: pollpolicy.HoldPollAfter,
				Jitter: h.o.Jitter()}).Milliseconds(),
		}), nil
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	t, err := h.o.Tickets.Issue(p.Ticket, r.Now, TicketTTL)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, httpapi.InternalError(err)
	}
	return h.answer(r, p, t, true, true)
}

// challengeBody is a 403 challenge_required: the error, and the challenge.
type challengeBody struct {
	httpapi.ErrorBody
	Challenge challenge.Challenge `json:"challenge"`
}

func (h *API) poll(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	t, s, err := h.requestTicket(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	p, err := h.o.Queue.Poll(ctx, t)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return h.placeResponse(r, p, s)
}

func (h *API) placeResponse(r *httpapi.Request, p room.Place, ticket string) (events.APIGatewayV2HTTPResponse, error) {
	return h.answer(r, p, ticket, false, false)
}

// answer is placeResponse; join says it answers a fresh join (the poll
// policy spreads a joining crowd's first far polls over the whole budget),
// enqueue that it answers the enqueue route (which offers notices).
func (h *API) answer(r *httpapi.Request, p room.Place, ticket string, join, enqueue bool) (events.APIGatewayV2HTTPResponse, error) {
	rate := p.RatePerMinute
	if rate <= 0 {
		rate = float64(p.Config.AdmitPerMinute)
	}
	out := placeResponse{
		Room: r.Room, Ticket: ticket, State: p.State,
		Position: p.Position, Waiting: p.Waiting, OpensAt: p.Config.OpensAt,
		PageVersion: room.PageVersion(p.Config.Page),
	}
	if d := p.Ticket.Draw; d > 0 && !drawSecret(p.Config, r.Now) {
		out.Draw = &d
	}
	in := pollpolicy.Input{
		State: p.State, Position: p.Position, RatePerMinute: rate,
		AdmitPerMinute: float64(p.Config.AdmitPerMinute),
		ClaimTTL:       time.Duration(p.Config.ClaimTTLSeconds) * time.Second,
		PollWithin:     p.PollWithin, Join: join,
		TickInterval: h.o.TickInterval, Jitter: h.o.Jitter(),
	}
	inQueue := p.State != room.StateAdmitted && p.State != room.StateExpired
	if enqueue && h.o.Notices != nil && p.Config.NotifiedClaimTTLSeconds > 0 && inQueue {
		o := *h.o.Notices
		o.KeepSeconds = p.Config.NotifiedClaimTTLSeconds
		out.Notices = &o
	}
	if inQueue && p.Config.NotifiedClaimTTLSeconds > 0 {
		out.Notify = p.Notice
	}
	switch p.State {
	case room.StateWaiting:
		out.EtaSeconds = pollpolicy.ETASeconds(p.Position, rate)
		out.RatePerMinute = &rate
	case room.StateClosed:
		// Not shown, but the told poll is bounded by it (the room may open
		// again); before a pre-queue's opening it is the draw's rank, secret.
		if !drawSecret(p.Config, r.Now) {
			in.Position = p.OpeningRank
		}
	case room.StatePrequeue:
		if p.Config.OpensAt != nil {
			in.UntilOpen = p.Config.OpensAt.Sub(r.Now)
		}
		// The place at the opening is the draw's rank: nothing answered before
		// the opening depends on it (not the told poll either, which is spread
		// over the claim window after the opening as for a place not known).
		// The page learns its place from the seed the status reveals then
		// (docs/PAGE.md).
	case room.StateAdmitted:
		zero := int64(0)
		out.EtaSeconds = &zero
		out.OriginURL = p.Config.OriginURL
		if p.Active {
			out.Active = true
			break
		}
		deadline := p.GrantDeadline
		out.GrantExpiresAt = &deadline
		tok, err := h.o.Entries.Issue(token.EntryClaims{
			Room: p.Ticket.Room, Visitor: p.Ticket.Visitor, Seq: p.Ticket.Seq,
			Audience: p.Config.OriginURL, IssuedAt: r.Now, NotBefore: r.Now, Expiry: p.GrantDeadline,
		})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, httpapi.InternalError(err)
		}
		out.EntryToken = tok
		if p.Config.Gate {
			out.EnterURL = enterURL(p.Config.OriginURL)
		}
	}
	out.PollAfterMs = pollpolicy.After(in).Milliseconds()
	return placeJSONResponse(&out), nil
}

func (h *API) leave(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	t, _, err := h.requestTicket(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if err := h.o.Queue.Leave(ctx, t); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, map[string]any{"room": r.Room, "left": true}), nil
}

func (h *API) status(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	cfg, st, err := h.o.Queue.Status(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	// The same pace as the place replies', so status and enqueue agree.
	rate := st.PacePerMinute
	if rate <= 0 {
		rate = float64(cfg.AdmitPerMinute)
	}
	out := room.PublicStatus{
		Room: r.Room, Mode: cfg.Mode, Waiting: st.Waiting, Active: st.Active, Admitted: st.Admitted,
		MaxActive: cfg.MaxActive, AdmitPerMinute: cfg.AdmitPerMinute, ClaimTTLSeconds: cfg.ClaimTTLSeconds, RatePerMinute: rate,
		EtaSeconds: pollpolicy.ETASeconds(st.Waiting+1, rate), OpensAt: cfg.OpensAt,
		Page: cfg.Page, PageVersion: room.PageVersion(cfg.Page),
		Net: st.Net, NetWhy: st.NetWhy, PaceWhy: st.PaceWhy, Climb: st.Climb,
	}
	if cfg.OpensAt != nil && st.DrawSeed != "" {
		out.DrawCommitment = room.DrawCommitment(st.DrawSeed)
		if !r.Now.Before(*cfg.OpensAt) {
			out.DrawSeed = st.DrawSeed
		}
	}
	resp := httpapi.JSON(http.StatusOK, out)
	// Public and the same for everyone: CloudFront absorbs the crowd.
	resp.Headers["Cache-Control"] = "public, max-age=1"
	return resp, nil
}

// tokenBody is the body of consume and complete.
type tokenBody struct {
	Token string `json:"token"`
}

func (h *API) entryToken(r *httpapi.Request) (string, error) {
	var b tokenBody
	if err := httpapi.DecodeJSON(r.Body, &b); err != nil {
		return "", err
	}
	if b.Token == "" {
		return "", errMissingToken
	}
	return b.Token, nil
}

// redeemClaims are the claims of the entry token in the body of consume
// (allowExpired false) or complete (true), verified (roomhttp.VerifyEntry), once the
// caller has shown itself to be the origin of the token's room (roomhttp.FromOrigin).
func (h *API) redeemClaims(r *httpapi.Request, allowExpired bool) (token.EntryClaims, error) {
	s, err := h.entryToken(r)
	if err != nil {
		return token.EntryClaims{}, err
	}
	c, err := roomhttp.VerifyEntry(h.o.Entries, r, s, allowExpired)
	if err != nil {
		return token.EntryClaims{}, err
	}
	if err := roomhttp.FromOrigin(h.o.Origins, r, c.Room); err != nil {
		return token.EntryClaims{}, err
	}
	return c, nil
}

type consumeResponse struct {
	Room             string    `json:"room"`
	Visitor          string    `json:"visitor"`
	SessionExpiresAt time.Time `json:"sessionExpiresAt"`
	// BookingSession authorises the visitor's holds on the room's events
	// (POST /api/events/{event}/holds): the origin hands it to its page.
	BookingSession string `json:"bookingSession,omitempty"`
	// Session is the booking session's id, 'room:seq': what confirm and release name.
	Session string `json:"session,omitempty"`
}

func (h *API) consume(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.redeemClaims(r, false)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	load, loaded, err := originLoad(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	sess, err := h.o.Queue.Consume(ctx, c.Room, c.Seq, c.Audience)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, roomhttp.RedeemError(err)
	}
	if loaded {
		h.reportLoad(ctx, c.Room, load)
	}
	resp := consumeResponse{Room: c.Room, Visitor: c.Visitor, SessionExpiresAt: sess.ExpiresAt.UTC(),
		BookingSession: h.bookingSession(ctx, c, sess)}
	if resp.BookingSession != "" {
		resp.Session = bookingSessionID(c)
	}
	return httpapi.JSON(http.StatusOK, resp), nil
}

func (h *API) complete(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.redeemClaims(r, true)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	load, loaded, err := originLoad(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	err = h.o.Queue.Complete(ctx, c.Room, c.Seq, c.Audience)
	h.endHolds(ctx, c.Room, c.Seq, err) // the session's holds go with it (Options.EndHolds)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, roomhttp.RedeemError(err)
	}
	if loaded {
		h.reportLoad(ctx, c.Room, load)
	}
	return httpapi.JSON(http.StatusOK, map[string]any{"room": c.Room, "visitor": c.Visitor, "completed": true}), nil
}

func (h *API) jwks(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	b, err := h.o.Entries.JWKS()
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, httpapi.InternalError(err)
	}
	resp := httpapi.JSON(http.StatusOK, nil)
	resp.Body = string(b)
	resp.Headers["Content-Type"] = "application/jwk-set+json"
	// Keys rotate by kid with overlap, so a few minutes of caching is safe.
	resp.Headers["Cache-Control"] = "public, max-age=300"
	return resp, nil
}

type roomInfo struct {
	Room   string      `json:"room"`
	Config room.Config `json:"config"`
	Stats  room.Stats  `json:"stats"`
	// Error, in the list of rooms only, says why this room could not be read
	// (its code and message, as the room's own routes answer): its config and
	// stats are then empty. One room that cannot be read hides no other.
	Error *roomError `json:"error,omitempty"`
	// OriginCredential is what the room's origin presents to consume and
	// complete; only the admin routes show it.
	OriginCredential string `json:"originCredential,omitempty"`
}

func (h *API) credential(roomID string) string {
	if h.o.Origins == nil {
		return ""
	}
	return h.o.Origins.Credential(roomID)
}

func (h *API) putRoom(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	// Fields the body leaves out keep the room's current value, or for a new
	// room the deployment's default: an admin can change one setting live.
	base, err := h.o.Queue.GetConfig(ctx, r.Room)
	if errors.Is(err, room.ErrUnknownRoom) || errors.Is(err, room.ErrNotRestorable) {
		// A room whose stored settings cannot be read is PUT afresh over the
		// defaults: this is how an operator brings it back.
		base, err = h.o.DefaultRoom, nil
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	// A page in the body replaces the whole page; decoding writes through
	// the pointer, so give it a copy rather than the default's or the cache's.
	if base.Page != nil {
		page := *base.Page
		base.Page = &page
	}
	if err := httpapi.DecodeJSON(r.Body, &base); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	// The engine validates (an invalid config is 400 invalid_config, httpapi.ToError).
	cfg, err := h.o.Queue.PutConfig(ctx, r.Room, base)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, map[string]any{"room": r.Room, "config": cfg, "originCredential": h.credential(r.Room)}), nil
}

func (h *API) info(ctx context.Context, id string) (roomInfo, error) {
	cfg, st, err := h.o.Queue.Status(ctx, id)
	if err != nil {
		return roomInfo{}, err
	}
	return roomInfo{Room: id, Config: cfg, Stats: st, OriginCredential: h.credential(id)}, nil
}

func (h *API) getRoom(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	info, err := h.info(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, info), nil
}

func (h *API) listRooms(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	ids, err := h.o.Queue.Rooms(ctx)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	out := struct {
		Rooms []roomInfo `json:"rooms"`
	}{Rooms: []roomInfo{}}
	var failed error
	for _, id := range ids {
		info, err := h.info(ctx, id)
		if errors.Is(err, room.ErrUnknownRoom) {
			continue // removed between the two reads
		}
		if err != nil {
			// Listed with its error: one room that cannot be read (its durable
			// record unreadable, its shard down) hides no other.
			e := httpapi.ToError(err, roomhttp.Answers)
			if e.Cause != nil {
				h.o.Logger.LogAttrs(ctx, slog.LevelError, "list rooms", slog.String("room", id), slog.String("error", e.Cause.Error()))
			}
			info = roomInfo{Room: id, Error: &roomError{Code: e.Code, Message: e.Message}}
			if failed == nil {
				failed = err
			}
		}
		out.Rooms = append(out.Rooms, info)
	}
	if failed != nil && !slices.ContainsFunc(out.Rooms, func(i roomInfo) bool { return i.Error == nil || i.Error.Code != "unavailable" }) {
		// Not one room could be read, each for Redis: an outage, answered as one.
		return events.APIGatewayV2HTTPResponse{}, failed
	}
	return httpapi.JSON(http.StatusOK, out), nil
}

// roomError is why one room of the list could not be read.
type roomError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// drainRoom empties a closed room's queue (Engine.Drain): the waiting
// visitors' places are gone (they poll "expired"); grants and sessions stay.
func (h *API) drainRoom(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	n, err := h.o.Queue.Drain(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, struct {
		Room    string `json:"room"`
		Removed int64  `json:"removed"`
	}{r.Room, n}), nil
}

// claimRegion gives the room to the region of the functions that answer (a
// failover, docs/OPERATING.md "A region's outage"): the old region's late
// writes are fenced out of it from then on. Kept in the room's audit log.
func (h *API) claimRegion(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.o.Queue.ClaimRegion(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if c.Previous != c.Region {
		h.record(ctx, r, room.AuditEntry{Action: "claim region"})
	}
	return httpapi.JSON(http.StatusOK, struct {
		Room string `json:"room"`
		room.RegionClaim
	}{r.Room, c}), nil
}

// roomHistory answers the room's last hour, a point a minute, as the
// admission ticks recorded it (Engine.History), for the console's charts.
func (h *API) roomHistory(ctx context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	if _, err := h.o.Queue.GetConfig(ctx, r.Room); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	pts, err := h.o.Queue.History(ctx, r.Room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(http.StatusOK, struct {
		Room   string              `json:"room"`
		Points []room.HistoryPoint `json:"points"`
	}{r.Room, pts}), nil
}

// enterURL is where the waiting page posts a gated room's entry token: the
// path /.vestibule/enter at the root of the origin's host (the gate guards the
// whole host, whatever path originUrl names).
func enterURL(originURL string) string {
	u, err := url.Parse(originURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + gate.VestibulePrefix + "enter"
}

// bookingSession is the booking session token of a session consume just
// opened. The consume happened whatever this returns, so a failure (which
// only a key misconfiguration can cause) leaves the field out and is logged.
func (h *API) bookingSession(ctx context.Context, c token.EntryClaims, sess room.Session) string {
	if h.o.Sessions == nil {
		return ""
	}
	s, err := h.o.Sessions.Issue(token.BookingSession{Room: c.Room, Seq: c.Seq, Ends: sess.ExpiresAt}, h.o.Clock())
	if err != nil {
		h.o.Logger.LogAttrs(ctx, slog.LevelError, "booking session not issued", slog.String("room", c.Room), slog.String("error", err.Error()))
		return ""
	}
	return s
}

// bookingSessionID is the id of the booking session of an entry, 'room:seq'
// (consume answers it as session: what confirm and release name).
func bookingSessionID(c token.EntryClaims) string {
	return booking.RoomSession{Room: c.Room, Seq: c.Seq}.ID()
}
