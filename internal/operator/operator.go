// Package operator is the admin API's client for the people who run a
// waiting room: the vestibule command (cmd/vestibule) and its console are
// built on it. A Client calls the admin routes of one deployment, either a
// local stack (make dev) with its bearer admin key, or a stack in AWS with
// every call signed with SigV4 for execute-api from the standard AWS
// credential chain. Errors say what went wrong and what to do about it.
package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// maxResponse bounds what the client reads of an answer.
const maxResponse = 4 << 20

// Authorizer adds credentials to an admin request. body is the request's
// exact body (nil for none): SigV4 signs its hash.
type Authorizer interface {
	Authorize(ctx context.Context, req *http.Request, body []byte) error
	// Kind names the scheme for messages: "admin key" or "AWS SigV4".
	Kind() string
}

// Client calls the admin routes of one deployment.
type Client struct {
	// Endpoint is the API's base URL: a local stack's URL
	// (http://localhost:8080) or the stack's ApiUrl output; the admin
	// routes are under its path + "/api/admin/".
	Endpoint string
	// Auth adds the credentials to each call.
	Auth Authorizer
	// HTTP is the client used; nil means one with a 15 s timeout.
	HTTP *http.Client
	// Header is added to every request (before it is signed).
	Header http.Header
}

// RoomInfo is a room as the admin routes show it.
type RoomInfo struct {
	Room             string      `json:"room"`
	Config           room.Config `json:"config"`
	Stats            room.Stats  `json:"stats"`
	OriginCredential string      `json:"originCredential,omitempty"`
	// Error, in a list of rooms, says why this room could not be read (its
	// config and stats are then empty): one bad room hides no other.
	Error *RoomError `json:"error,omitempty"`
}

// RoomError is why one room of a list could not be read: the API's error
// code (room_unrestorable: its durable record is unreadable) and message.
type RoomError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error is an admin call that failed, with what to do about it.
type Error struct {
	Status  int    // HTTP status; 0 when the endpoint could not be reached
	Code    string // the API's error code, e.g. unknown_room; "" when there is none
	Message string // what went wrong
	Hint    string // what to do; may be empty
	Err     error  // the underlying error, if any
}

// Error gives the message and, on a second line, the hint.
func (e *Error) Error() string {
	s := e.Message
	if e.Hint != "" {
		s += "\n  " + e.Hint
	}
	return s
}

// Unwrap gives the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ErrUnknownRoom is matched (errors.Is) by an Error about a room that does
// not exist.
var ErrUnknownRoom = errors.New("unknown room")

// ErrNotSupported is matched (errors.Is) by an Error about a route this
// deployment does not have yet (drain).
var ErrNotSupported = errors.New("not supported by this deployment")

// Is lets errors.Is(err, ErrUnknownRoom) and errors.Is(err, ErrNotSupported) work.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnknownRoom:
		return e.Code == "unknown_room"
	case ErrNotSupported:
		return e.Code == "not_supported"
	}
	return false
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 15 * time.Second}
}

// URL is the full URL of an API path such as /api/admin/rooms (with a
// query after "?" when it has one).
func (c *Client) URL(path string) (string, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &Error{Message: fmt.Sprintf("the endpoint %q is not an http(s) URL", c.Endpoint),
			Hint: "pass --endpoint https://… (the stack's ApiUrl output) or --stack NAME"}
	}
	path, query, _ := strings.Cut(path, "?")
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery, u.Fragment = query, ""
	return u.String(), nil
}

// Do sends one authorised request to path (e.g. /api/admin/rooms/demo) and
// returns the answer whatever its status. Only a failure to build, sign or
// send the request is an error.
func (c *Client) Do(ctx context.Context, method, path string, body []byte) (*http.Response, []byte, error) {
	u, err := c.URL(path)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, &Error{Message: "bad request: " + err.Error(), Err: err}
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "vestibule-cli")
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if c.Auth != nil {
		if err := c.Auth.Authorize(ctx, req, body); err != nil {
			return nil, nil, err
		}
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, &Error{Message: fmt.Sprintf("cannot reach %s: %v", c.Endpoint, unwrapURL(err)), Err: err,
			Hint: "check the endpoint (--endpoint, or --stack and --region), your network, and that the deployment is up (make dev for a local one)"}
	}
	defer func() { _ = resp.Body.Close() }() // a body read: closing it cannot lose anything
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, nil, &Error{Message: fmt.Sprintf("reading the answer of %s: %v", c.Endpoint, err), Err: err}
	}
	return resp, b, nil
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// call sends a request and decodes a 2xx JSON answer into out, or turns any
// other answer into an *Error.
func (c *Client) call(ctx context.Context, method, path string, body []byte, roomID string, out any) error {
	resp, b, err := c.Do(ctx, method, path, body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return c.problem(resp.StatusCode, b, roomID)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &Error{Status: resp.StatusCode, Message: fmt.Sprintf("%s answered with something that is not the admin API's JSON (%v)", c.Endpoint, err),
			Hint: "is the endpoint the API's URL (the stack's ApiUrl output, or the local stack's URL)?"}
	}
	return nil
}

// apiProblem is the API's error body, {"error":{"code","message"}}; API
// Gateway's own errors are {"message":"…"}.
type apiProblem struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

// problem turns a non-2xx answer into an Error with advice.
func (c *Client) problem(status int, body []byte, roomID string) *Error {
	var p apiProblem
	_ = json.Unmarshal(body, &p) // a body that is not the API's JSON leaves p empty: the status speaks
	e := &Error{Status: status, Code: p.Error.Code, Message: p.Error.Message}
	if e.Message == "" {
		e.Message = p.Message
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	kind := "none"
	if c.Auth != nil {
		kind = c.Auth.Kind()
	}
	switch {
	case status == http.StatusNotFound && e.Code == "unknown_room":
		e.Message = fmt.Sprintf("there is no room %q here", roomID)
		e.Hint = "`vestibule rooms list` shows the rooms; `vestibule rooms set ROOM --create …` creates one"
	case status == http.StatusNotFound && e.Code != "" && e.Code != "unknown_route":
		// The route is there and answered with its own code: what it was
		// asked for is not (a visitor, a scheduled change).
		e.Message = fmt.Sprintf("%s (404 %s)", e.Message, e.Code)
	case status == http.StatusNotFound:
		e.Message = fmt.Sprintf("%s has no such admin route (404 %s)", c.Endpoint, e.Message)
		e.Hint = "is the endpoint the API's URL (the stack's ApiUrl output, or the local stack's URL)?"
	case status == http.StatusUnauthorized && kind == KindAdminKey:
		e.Message = "the admin key was refused (401)"
		e.Hint = "pass the key the local stack printed at start (--admin-key or VESTIBULE_ADMIN_KEY)"
	case status == http.StatusUnauthorized:
		e.Message = "the endpoint wants an admin key (401): it is a local stack, not an IAM-authorised one"
		e.Hint = "pass the key the local stack printed at start (--admin-key or VESTIBULE_ADMIN_KEY)"
	case status == http.StatusForbidden:
		e.Message = fmt.Sprintf("AWS refused the signed request (403: %s)", e.Message)
		e.Hint = "your AWS identity needs the IAM permission execute-api:Invoke on the admin routes " +
			"(arn:aws:execute-api:REGION:ACCOUNT:API-ID/*/*/api/admin/*); also check that --region is the API's region, that the endpoint is the API's own URL (the stack's ApiUrl output, not CloudFront's), and that your credentials have not expired"
	case status == http.StatusConflict && e.Code == "room_not_empty":
		e.Message = fmt.Sprintf("room %s still has visitors: %s", roomID, e.Message)
		e.Hint = "`vestibule rooms delete ROOM --force` closes the room, drains its queue and deletes it"
	case status == http.StatusNotImplemented:
		e.Message = "this deployment cannot do that: " + e.Message
	case status == http.StatusBadRequest:
		e.Message = "the deployment refused the request: " + strings.TrimPrefix(e.Message, "room: ")
		e.Hint = "docs/ENGINE.md lists every setting with its range"
	case status == http.StatusServiceUnavailable:
		e.Message = "the deployment's Redis is unavailable (503): " + e.Message
		e.Hint = "try again in a moment; the stack's alarms and dashboard show what is wrong"
	case status == http.StatusTooManyRequests:
		e.Message = "too many requests (429): " + e.Message
		e.Hint = "wait a moment and try again"
	default:
		e.Message = fmt.Sprintf("the deployment answered %d: %s", status, e.Message)
	}
	return e
}

func roomPath(id string) (string, error) {
	if !room.ValidRoomID(id) {
		return "", &Error{Code: "invalid_room", Message: fmt.Sprintf("%q is not a room id", id),
			Hint: "a room id is 1 to 64 of A-Z a-z 0-9 _ -"}
	}
	return "/api/admin/rooms/" + id, nil
}

// ListRooms returns every room with its settings and figures.
func (c *Client) ListRooms(ctx context.Context) ([]RoomInfo, error) {
	var out struct {
		Rooms []RoomInfo `json:"rooms"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/admin/rooms", nil, "", &out); err != nil {
		return nil, err
	}
	return out.Rooms, nil
}

// GetRoom returns one room's settings and figures.
func (c *Client) GetRoom(ctx context.Context, id string) (RoomInfo, error) {
	p, err := roomPath(id)
	if err != nil {
		return RoomInfo{}, err
	}
	var out RoomInfo
	err = c.call(ctx, http.MethodGet, p, nil, id, &out)
	return out, err
}

// PutRoom changes the given settings of a room (JSON names, e.g.
// "maxActive"), leaving the others as they are; a room that does not exist
// is created with the deployment's defaults for the rest. It returns the
// room's settings as stored.
func (c *Client) PutRoom(ctx context.Context, id string, settings map[string]any) (room.Config, error) {
	p, err := roomPath(id)
	if err != nil {
		return room.Config{}, err
	}
	body, err := json.Marshal(settings)
	if err != nil {
		return room.Config{}, &Error{Message: "encoding the settings: " + err.Error(), Err: err}
	}
	if limit := routes.AdminPutRoom.BodyLimit(); len(body) > limit {
		return room.Config{}, &Error{Message: fmt.Sprintf("the settings are %d bytes; the API takes at most %d", len(body), limit)}
	}
	var out RoomInfo
	err = c.call(ctx, http.MethodPut, p, body, id, &out)
	return out.Config, err
}

// DrainPath is the route of the drain operation, relative to a room's admin path.
const DrainPath = "/drain"

// Drain asks the deployment to drain a room: POST
// /api/admin/rooms/{room}/drain. A deployment without that route answers
// an Error matching ErrNotSupported.
func (c *Client) Drain(ctx context.Context, id string) (json.RawMessage, error) {
	p, err := roomPath(id)
	if err != nil {
		return nil, err
	}
	resp, b, err := c.Do(ctx, http.MethodPost, p+DrainPath, []byte("{}"))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return json.RawMessage(b), nil
	}
	e := c.problem(resp.StatusCode, b, id)
	// The API answers an unknown path 404 unknown_route (API Gateway: 404
	// "Not Found"), and a known path with another method 405.
	if (resp.StatusCode == http.StatusNotFound && e.Code != "unknown_room") || resp.StatusCode == http.StatusMethodNotAllowed {
		return nil, &Error{Status: resp.StatusCode, Code: "not_supported",
			Message: "this deployment does not support drain yet (POST /api/admin/rooms/{room}/drain is not one of its routes)",
			Hint:    "to stop a room meanwhile: `vestibule rooms close ROOM` refuses new arrivals and admits nobody"}
	}
	return nil, e
}
