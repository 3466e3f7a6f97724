package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
)

// vestibule smoke: after a deploy, one visitor's whole journey through a throwaway room — join,
// wait for the admission, consume the entry token as the origin would, complete — then the room
// closed, drained and deleted. The public calls go where visitors' go (the stack's WaitingRoomUrl, through
// CloudFront, which adds the origin header the API requires); the admin calls are signed as every
// admin call. A step that fails says which, and the room is closed all the same.

// waitingRoomOutput is the stack output of the waiting room's URL.
const waitingRoomOutput = "WaitingRoomUrl"

// smokeOrigin is the throwaway room's originUrl: never visited, only the audience of its tokens.
const smokeOrigin = "https://smoke.vestibule.invalid/"

// smoke runs `vestibule smoke`.
func (c *command) smoke(ctx context.Context, pos []string) error {
	if len(pos) > 0 {
		return usageError("smoke takes no arguments: --stack NAME (or --endpoint URL --admin-key KEY)")
	}
	admin, err := c.client(ctx)
	if err != nil {
		return err
	}
	public, err := c.publicEndpoint(ctx, admin)
	if err != nil {
		return err
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	return runSmoke(ctx, admin, public, timeout, c.stdout)
}

// publicEndpoint is the URL visitors reach the room at, without a trailing
// slash: --public, else the stack's waiting-room output, else the API's own
// endpoint (a local stack serves the page and the API both).
func (c *command) publicEndpoint(ctx context.Context, api *operator.Client) (string, error) {
	public := c.public
	if public == "" && c.g.target.Stack != "" {
		var err error
		if public, err = stackOutput(ctx, c.g.target, waitingRoomOutput); err != nil {
			return "", err
		}
	}
	if public == "" {
		public = api.Endpoint
	}
	return strings.TrimSuffix(public, "/"), nil
}

// stackOutput reads one output of a stack.
func stackOutput(ctx context.Context, t operator.Target, key string) (string, error) {
	cfg, err := operator.LoadAWS(ctx, t.Profile, t.Region)
	if err != nil {
		return "", err
	}
	outputs, err := operator.ReadStackOutputs(ctx, cloudformation.NewFromConfig(cfg), t.Stack)
	if err != nil {
		return "", err
	}
	if v, ok := outputs[key]; ok {
		return v, nil
	}
	return "", fmt.Errorf("the stack %q has no %s output (or pass --public URL)", t.Stack, key)
}

// place is the part of an enqueue or poll answer the smoke test follows.
type place struct {
	Ticket      string `json:"ticket"`
	State       string `json:"state"`
	PollAfterMs int    `json:"pollAfterMs"`
	EntryToken  string `json:"entryToken"`
}

// runSmoke walks one visitor through a throwaway room and closes it.
func runSmoke(ctx context.Context, admin *operator.Client, public string, timeout time.Duration, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := make([]byte, 4)
	rand.Read(b)
	s := &smokeRun{admin: admin, public: public, timeout: timeout, out: printer.New(out),
		id: "smoke-" + hex.EncodeToString(b), start: time.Now(), httpc: &http.Client{Timeout: 15 * time.Second}}

	// 1. The throwaway room: one slot, a token a second, no join challenge.
	if err := s.createRoom(ctx); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.removeRoom(ctx), s.out.Err()) }()
	info, err := admin.GetRoom(ctx, s.id)
	if err != nil {
		return fmt.Errorf("smoke: reading the room's origin credential: %w", err)
	}
	if info.OriginCredential == "" {
		return fmt.Errorf("smoke: the admin API gave no origin credential for %s", s.id)
	}
	// 2. A visitor joins and polls until admitted.
	p, err := s.admitted(ctx)
	if err != nil {
		return err
	}
	// 3. The origin consumes the token, then completes the session.
	return s.consumeAndComplete(ctx, p.EntryToken, info.OriginCredential)
}

// smokeRun is one run of the smoke test: its throwaway room, and where it reports.
type smokeRun struct {
	admin   *operator.Client
	public  string // the visitors' base URL
	httpc   *http.Client
	timeout time.Duration
	id      string // the throwaway room
	start   time.Time
	out     *printer.Printer
}

// step prints a step done, with the time since the start.
func (s *smokeRun) step(format string, args ...any) {
	s.out.Printf("%6.1fs  %s\n", time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
}

// call makes a public call (bearer and body optional) and decodes a 2xx answer into into.
func (s *smokeRun) call(ctx context.Context, method, path, bearer string, body []byte, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, s.public+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.httpc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // a body read: closing it cannot lose anything
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			return fmt.Errorf("%s %s: not the JSON expected: %w", method, path, err)
		}
	}
	return nil
}

// createRoom creates the throwaway room: one slot, a token a second, no join challenge.
func (s *smokeRun) createRoom(ctx context.Context) error {
	if _, err := s.admin.PutRoom(ctx, s.id, map[string]any{
		"mode": "queue", "maxActive": 1, "admitPerMinute": 60, "originUrl": smokeOrigin, "joinChallengeBits": 0,
	}); err != nil {
		return fmt.Errorf("smoke: creating the room %s: %w", s.id, err)
	}
	s.step("room %s created (admin PUT)", s.id)
	return nil
}

// removeRoom closes, empties and deletes the room, however the journey went.
func (s *smokeRun) removeRoom(ctx context.Context) error {
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer ccancel()
	_, cerr := s.admin.PutRoom(cctx, s.id, map[string]any{"mode": "closed"})
	if cerr == nil {
		if _, cerr = s.admin.Drain(cctx, s.id); errors.Is(cerr, operator.ErrNotSupported) {
			cerr = nil // an older deployment: the closed room keeps its one visitor's record
		}
	}
	if cerr != nil {
		return fmt.Errorf("smoke: closing the room %s: %w", s.id, cerr)
	}
	if _, derr := s.admin.DeleteRoom(cctx, s.id); errors.Is(derr, operator.ErrNotSupported) {
		s.step("room %s closed and drained (this deployment cannot delete rooms: it stays listed, closed)", s.id)
		return nil
	} else if derr != nil {
		return fmt.Errorf("smoke: deleting the room %s: %w", s.id, derr)
	}
	s.step("room %s closed, drained and deleted", s.id)
	return nil
}

// admitted joins the room as a visitor and polls until admitted, with an entry token.
func (s *smokeRun) admitted(ctx context.Context) (place, error) {
	var p place
	if err := s.call(ctx, http.MethodPost, "/api/rooms/"+s.id+"/enqueue", "", nil, &p); err != nil {
		return p, fmt.Errorf("smoke: join: %w", err)
	}
	if p.Ticket == "" {
		return p, fmt.Errorf("smoke: join: no ticket (state %q)", p.State)
	}
	s.step("joined: %s", p.State)
	for p.State != "admitted" {
		if p.State != "waiting" {
			return p, fmt.Errorf("smoke: the visitor is %q, want waiting or admitted", p.State)
		}
		wait := min(max(time.Duration(p.PollAfterMs)*time.Millisecond, 500*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
			return p, fmt.Errorf("smoke: not admitted within %s: is admit running? (its AdmitNotRunning alarm)", s.timeout)
		case <-time.After(wait):
		}
		if err := s.call(ctx, http.MethodGet, "/api/rooms/"+s.id+"/poll", p.Ticket, nil, &p); err != nil {
			return p, fmt.Errorf("smoke: poll: %w", err)
		}
	}
	if p.EntryToken == "" {
		return p, errors.New("smoke: admitted without an entry token")
	}
	s.step("admitted, with an entry token")
	return p, nil
}

// consumeAndComplete consumes the entry token as the origin would, then completes the session.
func (s *smokeRun) consumeAndComplete(ctx context.Context, entryToken, credential string) error {
	token, _ := json.Marshal(map[string]string{"token": entryToken})
	var session struct {
		SessionExpiresAt string `json:"sessionExpiresAt"`
	}
	if err := s.call(ctx, http.MethodPost, "/api/consume", credential, token, &session); err != nil {
		return fmt.Errorf("smoke: consume: %w", err)
	}
	s.step("consumed: session until %s", session.SessionExpiresAt)
	var done struct {
		Completed bool `json:"completed"`
	}
	if err := s.call(ctx, http.MethodPost, "/api/complete", credential, token, &done); err != nil {
		return fmt.Errorf("smoke: complete: %w", err)
	}
	if !done.Completed {
		return errors.New("smoke: complete did not say completed")
	}
	s.step("completed: the slot is free again")
	return nil
}
