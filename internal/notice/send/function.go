package send

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// TickType is the detail-type of the events the function is sent: a tick
// of one room (roomevents.TypeTick), whose detail counts the notices due.
const TickType = "admission.tick"

// tickDetail is what the function reads of a tick's detail.
type tickDetail struct {
	Room    string `json:"room"`
	Notices int64  `json:"notices"`
}

// Function is the notify function: for each tick event that counts notices
// due, it sends the room's (Run). It needs no Redis: Queue is the API's
// admin routes.
type Function struct {
	Queue  Queue
	Sender Notifier
	Clock  func() time.Time // nil: time.Now
	Log    *slog.Logger     // nil: discard
}

// Handle handles one EventBridge event. An event of another kind, or one
// that counts no notice, is skipped. A take that fails is an error, so
// Lambda runs the event again; what a send does is in Redis (acked, or due
// again at its retry), so the next tick's event runs it.
func (f *Function) Handle(ctx context.Context, ev events.CloudWatchEvent) error {
	var d tickDetail
	if ev.DetailType != TickType || json.Unmarshal(ev.Detail, &d) != nil || d.Notices <= 0 {
		return nil
	}
	if !room.ValidRoomID(d.Room) {
		return nil
	}
	clock, log := f.Clock, f.Log
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r, err := Run(ctx, f.Queue, f.Sender, d.Room, clock, log)
	log.LogAttrs(ctx, slog.LevelInfo, "notices", slog.String("room", d.Room), slog.Int("sent", r.Sent),
		slog.Int("gone", r.Gone), slog.Int("retry", r.Retry), slog.Int("push", r.Push), slog.Int("email", r.Email))
	if err != nil {
		return fmt.Errorf("notify: room %s: %w", d.Room, err)
	}
	return nil
}

// SigV4 authorises the admin calls of the function as API Gateway's IAM
// authorisation wants: signed for execute-api with the function role's
// credentials.
func SigV4(creds aws.CredentialsProvider, region string) func(ctx context.Context, req *http.Request, body []byte) error {
	signer := v4.NewSigner()
	return func(ctx context.Context, req *http.Request, body []byte) error {
		c, err := creds.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("notify: credentials: %w", err)
		}
		sum := sha256.Sum256(body)
		return signer.SignHTTP(ctx, c, req, hex.EncodeToString(sum[:]), "execute-api", region, time.Now())
	}
}

// AdminKey authorises the admin calls with make dev's admin key.
func AdminKey(key string) func(ctx context.Context, req *http.Request, body []byte) error {
	return func(_ context.Context, req *http.Request, _ []byte) error {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(key))
		return nil
	}
}
