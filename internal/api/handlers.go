package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/challenge"
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
	RatePerMinute *float64 `json:"ratePerMinute,omitempty"`
	// AheadShare is, in the pre-queue, the share of the line ahead of the
	// visitor as it stands ((place at the opening − 1) ÷ waiting): at the
	// opening the page places itself at about AheadShare × the status's
	// waiting + 1 without asking (docs/PAGE.md).
	AheadShare *float64   `json:"aheadShare,omitempty"`
	OpensAt    *time.Time `json:"opensAt,omitempty"`
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
}

// newVisitorID is the visitor's identity: random, made here, never taken from
// the client, so nobody can claim someone else's place or lottery draw.
func newVisitorID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand, Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (h *Handler) enqueue(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
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
			return h.placeResponse(r, p, s)
		}
	}
	// A join challenge's proof, when the page sends one (the room says whether
	// it asks for one: the enqueue script checks the work and spends the proof).
	var proof room.JoinProof
	if v := r.header(challenge.HeaderChallenge); v != "" {
		p, err := h.o.Challenges.Verify(v, r.header(challenge.HeaderSolution), r.room, r.now)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, errChallengeInvalid
		}
		proof = room.JoinProof{Bits: p.Bits, Nonce: p.Nonce, Until: p.ExpiresAt}
	}
	// The per-address join limit is checked in the join's own script (one round trip).
	proof.Client = r.clientAddress()
	p, err := h.o.Queue.Join(ctx, r.room, newVisitorID(), proof)
	var ce *room.ChallengeError
	if errors.As(err, &ce) {
		// The refusal carries the challenge to solve: no extra round trip.
		var b challengeBody
		b.Error.Code, b.Error.Message = "challenge_required", "solve the join challenge, then join with its solution"
		// Its nonce says where the proof is spent, and in a room whose joins
		// are spread takes it to the arrival shard that counts this client's.
		b.Challenge = h.o.Challenges.IssueFor(r.room, ce.Bits, r.now, ce.NoncePrefix(), ce.Accepts)
		return jsonResponse(http.StatusForbidden, b), nil
	}
	if errors.Is(err, room.ErrClosed) {
		return jsonResponse(http.StatusOK, placeResponse{
			Room: r.room, State: room.StateClosed,
			// No place: try again after the hold (the budget of this answer).
			PollAfterMs: pollpolicy.After(pollpolicy.Input{State: room.StateClosed, PollWithin: pollpolicy.HoldPollAfter,
				Jitter: h.o.Jitter()}).Milliseconds(),
		}), nil
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	t, err := h.o.Tickets.Issue(p.Ticket, r.now, TicketTTL)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, internalError(err)
	}
	return h.joinResponse(r, p, t, true)
}

// challengeBody is a 403 challenge_required: the error, and the challenge.
type challengeBody struct {
	errorBody
	Challenge challenge.Challenge `json:"challenge"`
}

func (h *Handler) poll(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
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

func (h *Handler) placeResponse(r *request, p room.Place, ticket string) (events.APIGatewayV2HTTPResponse, error) {
	return h.joinResponse(r, p, ticket, false)
}

// joinResponse is placeResponse; join says it answers a fresh join (the poll
// policy spreads a joining crowd's first far polls over the whole budget).
func (h *Handler) joinResponse(r *request, p room.Place, ticket string, join bool) (events.APIGatewayV2HTTPResponse, error) {
	rate := p.RatePerMinute
	if rate <= 0 {
		rate = float64(p.Config.AdmitPerMinute)
	}
	out := placeResponse{
		Room: r.room, Ticket: ticket, State: p.State,
		Position: p.Position, Waiting: p.Waiting, OpensAt: p.Config.OpensAt,
		PageVersion: room.PageVersion(p.Config.Page),
	}
	in := pollpolicy.Input{
		State: p.State, Position: p.Position, RatePerMinute: rate,
		AdmitPerMinute: float64(p.Config.AdmitPerMinute),
		ClaimTTL:       time.Duration(p.Config.ClaimTTLSeconds) * time.Second,
		PollWithin:     p.PollWithin, Join: join,
		TickInterval: h.o.TickInterval, Jitter: h.o.Jitter(),
	}
	switch p.State {
	case room.StateWaiting:
		out.EtaSeconds = pollpolicy.ETASeconds(p.Position, rate)
		out.RatePerMinute = &rate
	case room.StateClosed:
		// Not shown, but the told poll is bounded by it (the room may open again).
		in.Position = p.OpeningRank
	case room.StatePrequeue:
		if p.Config.OpensAt != nil {
			in.UntilOpen = p.Config.OpensAt.Sub(r.now)
		}
		// The place at the opening spreads the opening's polls; it is not shown,
		// but the share of the line ahead lets the page place itself when it opens.
		in.Position = p.OpeningRank
		if p.OpeningRank > 0 && p.Waiting > 0 {
			share := math.Round(float64(p.OpeningRank-1)/float64(p.Waiting)*1e4) / 1e4
			out.AheadShare = &share
		}
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
			Audience: p.Config.OriginURL, IssuedAt: r.now, NotBefore: r.now, Expiry: p.GrantDeadline,
		})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, internalError(err)
		}
		out.EntryToken = tok
		if p.Config.Gate {
			out.EnterURL = enterURL(p.Config.OriginURL)
		}
	}
	out.PollAfterMs = pollpolicy.After(in).Milliseconds()
	return placeJSONResponse(&out), nil
}

func (h *Handler) leave(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	t, _, err := h.requestTicket(r)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if err := h.o.Queue.Leave(ctx, t); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, map[string]any{"room": r.room, "left": true}), nil
}

type statusResponse struct {
	Room           string    `json:"room"`
	Mode           room.Mode `json:"mode"`
	Waiting        int64     `json:"waiting"`
	Active         int64     `json:"active"`
	Admitted       int64     `json:"admitted"`
	MaxActive      int64     `json:"maxActive"`
	AdmitPerMinute int64     `json:"admitPerMinute"`
	// RatePerMinute is the pace for someone joining now (room.Stats.PacePerMinute):
	// what enqueue would tell them; the page counts down at it (docs/PAGE.md).
	RatePerMinute float64 `json:"ratePerMinute"`
	EtaSeconds    *int64  `json:"etaSeconds"` // for someone joining now; null when unknown
	// OpensAt is the opening of a pre-queue, when the room has one.
	OpensAt *time.Time `json:"opensAt,omitempty"`
	// Page is how the waiting page presents the room; absent: its own texts.
	Page *room.Page `json:"page,omitempty"`
	// PageVersion is room.PageVersion of Page, as poll replies carry it.
	PageVersion string `json:"pageVersion"`
	// DrawCommitment is room.DrawCommitment of the pre-queue lottery's seed,
	// for a room with an opening time; DrawSeed is the seed, once it opened
	// (docs/ENGINE.md, "Auditable lottery").
	DrawCommitment string `json:"drawCommitment,omitempty"`
	DrawSeed       string `json:"drawSeed,omitempty"`
}

func (h *Handler) status(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	cfg, st, err := h.o.Queue.Status(ctx, r.room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	// The same pace as the place replies', so status and enqueue agree.
	rate := st.PacePerMinute
	if rate <= 0 {
		rate = float64(cfg.AdmitPerMinute)
	}
	out := statusResponse{
		Room: r.room, Mode: cfg.Mode, Waiting: st.Waiting, Active: st.Active, Admitted: st.Admitted,
		MaxActive: cfg.MaxActive, AdmitPerMinute: cfg.AdmitPerMinute, RatePerMinute: rate,
		EtaSeconds: pollpolicy.ETASeconds(st.Waiting+1, rate), OpensAt: cfg.OpensAt,
		Page: cfg.Page, PageVersion: room.PageVersion(cfg.Page),
	}
	if cfg.OpensAt != nil && st.DrawSeed != "" {
		out.DrawCommitment = room.DrawCommitment(st.DrawSeed)
		if !r.now.Before(*cfg.OpensAt) {
			out.DrawSeed = st.DrawSeed
		}
	}
	resp := jsonResponse(http.StatusOK, out)
	// Public and the same for everyone: CloudFront absorbs the crowd.
	resp.Headers["Cache-Control"] = "public, max-age=1"
	return resp, nil
}

// tokenBody is the body of consume and complete.
type tokenBody struct {
	Token string `json:"token"`
}

func (h *Handler) entryToken(r *request) (string, error) {
	var b tokenBody
	if err := decodeJSON(r.body, &b); err != nil {
		return "", err
	}
	if b.Token == "" {
		return "", errMissingToken
	}
	return b.Token, nil
}

// fromOrigin checks that the caller is the room's origin: it presents the
// room's origin credential. Checked after the token, whose room it needs.
func (h *Handler) fromOrigin(r *request, roomID string) error {
	s, ok := r.bearer()
	if !ok || h.o.Origins == nil || !h.o.Origins.Check(roomID, s) {
		return errNotOrigin
	}
	return nil
}

// verifyEntry checks an entry token's signature, typ, issuer, key and time.
// With allowExpired, a token past its claim window still passes (complete
// comes after the window, during the session): the rest is still checked at
// the token's own start time (token.Entries.VerifyPastExpiry), and the engine
// decides whether the session still runs. The engine also checks, in the same
// script as the grant, that the token's audience is the room's current origin
// (see redeemError).
func (h *Handler) verifyEntry(r *request, s string, allowExpired bool) (token.EntryClaims, error) {
	if allowExpired {
		c, err := h.o.Entries.VerifyPastExpiry(s, r.now)
		if err != nil {
			return c, errInvalidToken
		}
		return c, nil
	}
	c, err := h.o.Entries.Verify(s, r.now)
	switch {
	case errors.Is(err, token.ErrExpired):
		return c, errTokenExpired
	case err != nil:
		return c, errInvalidToken
	}
	return c, nil
}

// redeemClaims are the claims of the entry token in the body of consume
// (allowExpired false) or complete (true), verified (verifyEntry), once the
// caller has shown itself to be the origin of the token's room (fromOrigin).
func (h *Handler) redeemClaims(r *request, allowExpired bool) (token.EntryClaims, error) {
	s, err := h.entryToken(r)
	if err != nil {
		return token.EntryClaims{}, err
	}
	c, err := h.verifyEntry(r, s, allowExpired)
	if err != nil {
		return token.EntryClaims{}, err
	}
	if err := h.fromOrigin(r, c.Room); err != nil {
		return token.EntryClaims{}, err
	}
	return c, nil
}

// redeemError is consume's and complete's error from the engine: a token for
// a room that no longer exists is an invalid token, not an unknown room.
func redeemError(err error) error {
	if errors.Is(err, room.ErrUnknownRoom) {
		return errInvalidToken
	}
	return err
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

func (h *Handler) consume(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.redeemClaims(r, false)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	sess, err := h.o.Queue.Consume(ctx, c.Room, c.Seq, c.Audience)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, redeemError(err)
	}
	resp := consumeResponse{Room: c.Room, Visitor: c.Visitor, SessionExpiresAt: sess.ExpiresAt.UTC(),
		BookingSession: h.bookingSession(ctx, c, sess)}
	if resp.BookingSession != "" {
		resp.Session = bookingSessionID(c)
	}
	return jsonResponse(http.StatusOK, resp), nil
}

func (h *Handler) complete(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.redeemClaims(r, true)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	err = h.o.Queue.Complete(ctx, c.Room, c.Seq, c.Audience)
	h.endHolds(ctx, c.Room, c.Seq, err) // the session's holds go with it (booking.go)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, redeemError(err)
	}
	return jsonResponse(http.StatusOK, map[string]any{"room": c.Room, "visitor": c.Visitor, "completed": true}), nil
}

func (h *Handler) jwks(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	b, err := h.o.Entries.JWKS()
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, internalError(err)
	}
	resp := jsonResponse(http.StatusOK, nil)
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

func (h *Handler) credential(roomID string) string {
	if h.o.Origins == nil {
		return ""
	}
	return h.o.Origins.Credential(roomID)
}

func (h *Handler) putRoom(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	// Fields the body leaves out keep the room's current value, or for a new
	// room the deployment's default: an admin can change one setting live.
	base, err := h.o.Queue.GetConfig(ctx, r.room)
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
	if err := decodeJSON(r.body, &base); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	// The engine validates (an invalid config is 400 invalid_config, toAPIError).
	cfg, err := h.o.Queue.PutConfig(ctx, r.room, base)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, map[string]any{"room": r.room, "config": cfg, "originCredential": h.credential(r.room)}), nil
}

func (h *Handler) info(ctx context.Context, id string) (roomInfo, error) {
	cfg, st, err := h.o.Queue.Status(ctx, id)
	if err != nil {
		return roomInfo{}, err
	}
	return roomInfo{Room: id, Config: cfg, Stats: st, OriginCredential: h.credential(id)}, nil
}

func (h *Handler) getRoom(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	info, err := h.info(ctx, r.room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, info), nil
}

func (h *Handler) listRooms(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
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
			e := toAPIError(err)
			if e.cause != nil {
				h.o.Logger.LogAttrs(ctx, slog.LevelError, "list rooms", slog.String("room", id), slog.String("error", e.cause.Error()))
			}
			info = roomInfo{Room: id, Error: &roomError{Code: e.code, Message: e.message}}
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
	return jsonResponse(http.StatusOK, out), nil
}

// roomError is why one room of the list could not be read.
type roomError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// drainRoom empties a closed room's queue (room.Queue.Drain): the waiting
// visitors' places are gone (they poll "expired"); grants and sessions stay.
func (h *Handler) drainRoom(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	n, err := h.o.Queue.Drain(ctx, r.room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, struct {
		Room    string `json:"room"`
		Removed int64  `json:"removed"`
	}{r.room, n}), nil
}

// roomHistory answers the room's last hour, a point a minute, as the
// admission ticks recorded it (room.Queue.History), for the console's charts.
func (h *Handler) roomHistory(ctx context.Context, r *request) (events.APIGatewayV2HTTPResponse, error) {
	if _, err := h.o.Queue.GetConfig(ctx, r.room); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	pts, err := h.o.Queue.History(ctx, r.room)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, struct {
		Room   string              `json:"room"`
		Points []room.HistoryPoint `json:"points"`
	}{r.room, pts}), nil
}

// decodeJSON decodes exactly one JSON object, refusing unknown fields so that
// a typo in a setting is an error rather than silently ignored. A setting
// that decodes itself strictly (room.Page) reports its own *room.FieldError,
// which stays an invalid_config naming the field.
func decodeJSON(body []byte, v any) error {
	if k, ok := duplicateKey(body); ok {
		// encoding/json would take the last of them: what the caller meant
		// is not known, so nothing is taken.
		if len(k) > 64 {
			k = k[:64]
		}
		return &apiError{status: http.StatusBadRequest, code: "bad_json", message: fmt.Sprintf("request body is not the expected JSON: duplicate key %q", k)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var fe *room.FieldError
		if errors.As(err, &fe) {
			return fe
		}
		return &apiError{status: http.StatusBadRequest, code: "bad_json", message: "request body is not the expected JSON: " + jsonProblem(err)}
	}
	if dec.More() {
		return errBadJSON
	}
	return nil
}

// duplicateKey returns the first key that an object in body gives twice, as
// decoded (so "a" and "\u0061" are the same key). A body that is not JSON has
// none: the decoder reports that.
func duplicateKey(body []byte) (string, bool) {
	type object struct {
		keys    map[string]bool
		wantKey bool
	}
	var open []*object // nil for an array
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	// value marks the end of a value in the innermost container.
	value := func() {
		if n := len(open); n > 0 && open[n-1] != nil {
			open[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		top := (*object)(nil)
		if n := len(open); n > 0 {
			top = open[n-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				open = append(open, &object{keys: map[string]bool{}, wantKey: true})
			case '[':
				open = append(open, nil)
			default:
				open = open[:len(open)-1]
				value()
			}
		case string:
			if top != nil && top.wantKey {
				if top.keys[t] {
					return t, true
				}
				top.keys[t] = true
				top.wantKey = false
				continue
			}
			value()
		default:
			value()
		}
	}
}

// jsonProblem describes a decoding error without echoing the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "syntax error"
	case errors.As(err, &te):
		if te.Field == "" {
			return "wrong type"
		}
		return "wrong type for " + te.Field
	case errors.Is(err, io.EOF):
		return "empty body"
	default:
		// Unknown-field errors name the field; that is what the caller needs.
		msg := err.Error()
		if len(msg) > 120 {
			msg = msg[:120]
		}
		return msg
	}
}

func internalError(err error) *apiError {
	return &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error", cause: err}
}
