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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/vestibule-dev/vestibule/internal/operator"
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
	public := c.public
	if public == "" && c.g.target.Stack != "" {
		if public, err = stackOutput(ctx, c.g.target, waitingRoomOutput); err != nil {
			return err
		}
	}
	if public == "" {
		public = admin.Endpoint // a local stack serves both
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	return runSmoke(ctx, admin, strings.TrimSuffix(public, "/"), timeout, c.stdout)
}

// stackOutput reads one output of a stack.
func stackOutput(ctx context.Context, t operator.Target, key string) (string, error) {
	var opts []func(*config.LoadOptions) error
	if t.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(t.Profile))
	}
	if t.Region != "" {
		opts = append(opts, config.WithRegion(t.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return "", fmt.Errorf("loading the AWS configuration: %w", err)
	}
	out, err := cloudformation.NewFromConfig(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(t.Stack)})
	if err != nil {
		return "", fmt.Errorf("describing the stack %q: %w", t.Stack, err)
	}
	for _, s := range out.Stacks {
		for _, o := range s.Outputs {
			if aws.ToString(o.OutputKey) == key {
				return aws.ToString(o.OutputValue), nil
			}
		}
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
	id := "smoke-" + hex.EncodeToString(b)
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(out, "%6.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	httpc := &http.Client{Timeout: 15 * time.Second}
	call := func(method, path, bearer string, body []byte, into any) (int, error) {
		req, err := http.NewRequestWithContext(ctx, method, public+path, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode/100 != 2 {
			return resp.StatusCode, fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(raw)))
		}
		if into != nil {
			if err := json.Unmarshal(raw, into); err != nil {
				return resp.StatusCode, fmt.Errorf("%s %s: not the JSON expected: %w", method, path, err)
			}
		}
		return resp.StatusCode, nil
	}

	// 1. The throwaway room: one slot, a token a second, no join challenge.
	if _, err := admin.PutRoom(ctx, id, map[string]any{
		"mode": "queue", "maxActive": 1, "admitPerMinute": 60, "originUrl": smokeOrigin, "joinChallengeBits": 0,
	}); err != nil {
		return fmt.Errorf("smoke: creating the room %s: %w", id, err)
	}
	step("room %s created (admin PUT)", id)
	defer func() {
		// However the journey went, the room is closed, emptied and deleted.
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer ccancel()
		_, cerr := admin.PutRoom(cctx, id, map[string]any{"mode": "closed"})
		if cerr == nil {
			if _, cerr = admin.Drain(cctx, id); errors.Is(cerr, operator.ErrNotSupported) {
				cerr = nil // an older deployment: the closed room keeps its one visitor's record
			}
		}
		if cerr != nil {
			err = errors.Join(err, fmt.Errorf("smoke: closing the room %s: %w", id, cerr))
			return
		}
		if _, derr := admin.DeleteRoom(cctx, id); errors.Is(derr, operator.ErrNotSupported) {
			step("room %s closed and drained (this deployment cannot delete rooms: it stays listed, closed)", id)
			return
		} else if derr != nil {
			err = errors.Join(err, fmt.Errorf("smoke: deleting the room %s: %w", id, derr))
			return
		}
		step("room %s closed, drained and deleted", id)
	}()
	info, err := admin.GetRoom(ctx, id)
	if err != nil {
		return fmt.Errorf("smoke: reading the room's origin credential: %w", err)
	}
	if info.OriginCredential == "" {
		return fmt.Errorf("smoke: the admin API gave no origin credential for %s", id)
	}

	// 2. A visitor joins and polls until admitted.
	var p place
	if _, err := call(http.MethodPost, "/api/rooms/"+id+"/enqueue", "", nil, &p); err != nil {
		return fmt.Errorf("smoke: join: %w", err)
	}
	if p.Ticket == "" {
		return fmt.Errorf("smoke: join: no ticket (state %q)", p.State)
	}
	step("joined: %s", p.State)
	for p.State != "admitted" {
		if p.State != "waiting" {
			return fmt.Errorf("smoke: the visitor is %q, want waiting or admitted", p.State)
		}
		wait := min(max(time.Duration(p.PollAfterMs)*time.Millisecond, 500*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
			return fmt.Errorf("smoke: not admitted within %s: is admit running? (its AdmitNotRunning alarm)", timeout)
		case <-time.After(wait):
		}
		if _, err := call(http.MethodGet, "/api/rooms/"+id+"/poll", p.Ticket, nil, &p); err != nil {
			return fmt.Errorf("smoke: poll: %w", err)
		}
	}
	if p.EntryToken == "" {
		return errors.New("smoke: admitted without an entry token")
	}
	step("admitted, with an entry token")

	// 3. The origin consumes the token, then completes the session.
	token, _ := json.Marshal(map[string]string{"token": p.EntryToken})
	var session struct {
		SessionExpiresAt string `json:"sessionExpiresAt"`
	}
	if _, err := call(http.MethodPost, "/api/consume", info.OriginCredential, token, &session); err != nil {
		return fmt.Errorf("smoke: consume: %w", err)
	}
	step("consumed: session until %s", session.SessionExpiresAt)
	var done struct {
		Completed bool `json:"completed"`
	}
	if _, err := call(http.MethodPost, "/api/complete", info.OriginCredential, token, &done); err != nil {
		return fmt.Errorf("smoke: complete: %w", err)
	}
	if !done.Completed {
		return errors.New("smoke: complete did not say completed")
	}
	step("completed: the slot is free again")
	return nil
}
