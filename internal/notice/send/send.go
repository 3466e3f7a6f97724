package send

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Mailer is the part of the SES v2 client a Sender uses (*sesv2.Client fits).
type Mailer interface {
	SendEmail(ctx context.Context, in *sesv2.SendEmailInput, opts ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

var _ Mailer = (*sesv2.Client)(nil)

// Sender sends notices: it opens the sealed address, writes the message and
// sends it by push or email. It never logs nor returns an address.
type Sender struct {
	Opener *notice.Opener
	// Page is the site's waiting page (the link's base, NOTICE_PAGE_URL).
	Page string
	// HTTP posts push messages (nil: a client with SendTimeout).
	HTTP webpush.HTTPClient
	// Mail sends email through SES with From, the team's verified sender; nil:
	// no email (an email notice then fails for good).
	Mail Mailer
	From string
	// Policy is what push endpoints the sender posts to (checked again:
	// nothing but a push service's endpoint is ever called).
	Policy notice.Policy
}

// SendTimeout bounds one send: a slow push service or SES is tried again
// later (Retry), never waited on past it.
const SendTimeout = 10 * time.Second

// Channel names how a notice went out, for counts and logs.
type Channel string

// The channels.
const (
	ChannelPush  Channel = "push"
	ChannelEmail Channel = "email"
)

// Sent is what one send did: its outcome, the channel, and for a log the
// push service's status or SES's error code (never the address).
type Sent struct {
	Outcome room.NoticeOutcome
	Channel Channel
	Status  int    // the push service's HTTP status, 0 for none
	Code    string // SES's error code, or what failed
}

// Send sends the notice n of roomID (page setting p) at now.
func (s *Sender) Send(ctx context.Context, roomID string, p *room.Page, n room.DueNotice, now time.Time) Sent {
	a, err := s.Opener.Open(roomID, n.Seq, n.Sealed)
	if err != nil {
		// Not ours (a rotated-out key) or altered: it will never open.
		return Sent{Outcome: room.NoticeGone, Code: "sealed"}
	}
	m := notice.Compose(s.Page, roomID, p, a.Lang, n.Deadline, now)
	ctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	if a.Push != nil {
		return s.push(ctx, a, m, n.Deadline.Sub(now))
	}
	return s.email(ctx, a, m)
}

func (s *Sender) push(ctx context.Context, a notice.Address, m notice.Message, ttl time.Duration) Sent {
	out := Sent{Channel: ChannelPush}
	if s.Policy.CheckPush(a.Push) != nil {
		return Sent{Outcome: room.NoticeGone, Channel: ChannelPush, Code: "endpoint"}
	}
	priv, pub, err := s.Opener.VAPIDFor(a.VAPID)
	if err != nil {
		out.Outcome, out.Code = room.NoticeRetry, "vapid"
		return out
	}
	payload, _ := json.Marshal(m)
	sub := &webpush.Subscription{Endpoint: a.Push.Endpoint}
	sub.Keys.P256dh, sub.Keys.Auth = a.Push.Keys.P256dh, a.Push.Keys.Auth
	client := s.HTTP
	if client == nil {
		client = &http.Client{Timeout: SendTimeout}
	}
	subscriber := s.From
	if subscriber == "" {
		subscriber = s.Page
	}
	res, err := webpush.SendNotificationWithContext(ctx, payload, sub, &webpush.Options{
		HTTPClient: client, Subscriber: subscriber, VAPIDPublicKey: pub, VAPIDPrivateKey: priv,
		TTL: max(1, int(ttl/time.Second)), Urgency: webpush.UrgencyHigh, Topic: "vestibule-turn",
	})
	if err != nil {
		out.Outcome, out.Code = room.NoticeRetry, "network"
		return out
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	out.Status = res.StatusCode
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		out.Outcome = room.NoticeSent
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
		// The subscription expired or was withdrawn (RFC 8030 section 7.3).
		out.Outcome = room.NoticeGone
	case res.StatusCode == http.StatusBadRequest || res.StatusCode == http.StatusRequestEntityTooLarge:
		out.Outcome = room.NoticeGone // the same request would be refused again
	default:
		out.Outcome = room.NoticeRetry // 429, 5xx, and a VAPID refusal a deploy may mend
	}
	return out
}

func (s *Sender) email(ctx context.Context, a notice.Address, m notice.Message) Sent {
	out := Sent{Channel: ChannelEmail}
	if s.Mail == nil || s.From == "" {
		out.Outcome, out.Code = room.NoticeGone, "no-mail"
		return out
	}
	content := func(v string) *types.Content {
		return &types.Content{Data: aws.String(v), Charset: aws.String("UTF-8")}
	}
	_, err := s.Mail.SendEmail(ctx, &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(s.From),
		Destination:      &types.Destination{ToAddresses: []string{a.Email}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: content(m.Subject),
			Body:    &types.Body{Text: content(m.Text), Html: content(m.HTML)},
		}},
	})
	if err == nil {
		out.Outcome = room.NoticeSent
		return out
	}
	out.Outcome, out.Code = mailOutcome(err)
	return out
}

// mailOutcome sorts an SES error: a message SES refuses for what it is
// (a bad address, a rejected message) is refused for good; throttling, a
// paused account and SES's own faults are tried again.
func mailOutcome(err error) (room.NoticeOutcome, string) {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return room.NoticeRetry, "network"
	}
	code := ae.ErrorCode()
	var rejected *types.MessageRejected
	var bad *types.BadRequestException
	if errors.As(err, &rejected) || errors.As(err, &bad) {
		return room.NoticeGone, code
	}
	return room.NoticeRetry, code
}

// RetryAt is when a notice that failed for now is tried again: a tenth of
// what is left of the claim window, between 5 s and a minute, so a notice is
// tried about ten times before its turn runs out.
func RetryAt(now, deadline time.Time) time.Time {
	return now.Add(min(time.Minute, max(5*time.Second, deadline.Sub(now)/10)))
}

// String is a send for a log line: outcome, channel, status or code.
func (s Sent) String() string {
	return fmt.Sprintf("%s %s %d %s", s.Outcome, s.Channel, s.Status, s.Code)
}
