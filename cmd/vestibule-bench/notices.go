package main

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/notice/send"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The notices' figures (docs/BENCHMARKS.md, "Notices"): how many notices the notify
// function's sender sends a second, by web push (RFC 8291's encryption, RFC 8292's VAPID
// signature, the POST) and by email (the SES v2 client's request), each to a loopback server
// that answers at once, as many at a time as a run sends (send.Parallel); and what a million
// notices cost, from what a send took here and the network time of a real push service or SES.

// What the notices' cost model assumes beside the measured figures.
const (
	priceSESEmail       = 0.10 / 1000 // SES, per email sent (outbound, no attachment)
	priceDataOutGB      = 0.09        // Lambda's data to the internet, per GB (first 10 TB)
	noticeRemoteSeconds = 0.100       // a push service's or SES's answer, over the internet (an estimate)
	noticeAPISeconds    = 0.030       // one admin call (take, ack) through API Gateway (an estimate)
	noticeMemoryGB      = 0.256       // the notify function's memory (infra/stack NewNotify)
	noticePushBytes     = 4096        // a push's body: webpush-go pads every record to 4 KB
	// Per notice at worst: one run (the tick that granted it, alone), one take and one ack
	// through the API (two admin calls, each a Lambda call of lambdaBilledSeconds), and a log
	// line of each (the notify line and the admin calls' request lines, about 250 B each).
	noticeLogBytes = 3 * 250
)

func benchNotices(ctx context.Context, d time.Duration) ([]Row, error) {
	keys, err := notice.FromSecret([]byte("bench-notice-secret-0123456789abcdefghij"))
	if err != nil {
		return nil, err
	}
	sealer, err := notice.NewSealer(keys.Public())
	if err != nil {
		return nil, err
	}
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v2/email/outbound-emails" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"MessageId":"bench"}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer ok.Close()
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	push := notice.Address{Push: &notice.Subscription{Endpoint: ok.URL + "/push/1"}, Lang: "en", VAPID: keys.Public().VAPIDID}
	push.Push.Keys.P256dh = base64.RawURLEncoding.EncodeToString(ua.PublicKey().Bytes())
	push.Push.Keys.Auth = base64.RawURLEncoding.EncodeToString(make([]byte, 16))
	mail := notice.Address{Email: "visitor@example.com", Lang: "en"}
	s := &send.Sender{Opener: notice.NewOpener(keys), Page: "https://wait.example/", From: "turns@example.com",
		Policy: notice.Policy{Push: true, Email: true, PushHosts: []string{ok.URL}},
		HTTP:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: send.Parallel}},
		Mail: sesv2.New(sesv2.Options{Region: "us-east-1", BaseEndpoint: aws.String(ok.URL),
			Credentials: credentials.NewStaticCredentialsProvider("bench", "bench", "")})}
	page := &room.Page{Title: room.Text{All: "Spring Concert"}, AccentColor: "#f2a900"}
	rate := func(a notice.Address) (float64, float64, error) {
		sealed, err := sealer.Seal("bench", 1, a)
		if err != nil {
			return 0, 0, err
		}
		n := room.DueNotice{Seq: 1, Sealed: sealed, Deadline: time.Now().Add(10 * time.Minute)}
		var sent, failed atomic.Int64
		var busy atomic.Int64 // ns of sends, summed over the senders: a send's own time
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for range send.Parallel {
			wg.Go(func() {
				for time.Now().Before(stop) && ctx.Err() == nil {
					t0 := time.Now()
					if r := s.Send(ctx, "bench", page, n, t0); r.Outcome == room.NoticeSent {
						sent.Add(1)
					} else {
						failed.Add(1)
					}
					busy.Add(int64(time.Since(t0)))
				}
			})
		}
		wg.Wait()
		if failed.Load() > 0 || sent.Load() == 0 {
			return 0, 0, fmt.Errorf("notices: %d sent, %d failed", sent.Load(), failed.Load())
		}
		return float64(sent.Load()) / d.Seconds(), time.Duration(busy.Load() / sent.Load()).Seconds(), nil
	}
	pushRate, pushEach, err := rate(push)
	if err != nil {
		return nil, err
	}
	mailRate, mailEach, err := rate(mail)
	if err != nil {
		return nil, err
	}
	perMillion := func(each float64, extra float64) float64 {
		const million = 1e6
		notify := million*priceLambdaRequest + million*(each+noticeRemoteSeconds+2*noticeAPISeconds)*noticeMemoryGB*priceLambdaARMGBSecond
		admin := 2 * million * (priceAPIGatewayHTTPRequest + priceLambdaRequest + lambdaBilledSeconds*lambdaMemoryGB*priceLambdaARMGBSecond)
		logs := million * noticeLogBytes / 1e9 * priceLogsGB
		return notify + admin + logs + extra
	}
	pushCost := perMillion(pushEach, 1e6*noticePushBytes/1e9*priceDataOutGB)
	mailCost := perMillion(mailEach, 1e6*priceSESEmail)
	logf("notices: push %.0f a second (%.2f ms each), email %.0f a second (%.2f ms each)", pushRate, pushEach*1000, mailRate, mailEach*1000)
	return []Row{
		row(fmt.Sprintf("push notices sent a second (RFC 8291 encryption, VAPID signature, %d at once, loopback push service)", send.Parallel),
			pushRate, "/s", 0, nil),
		row(fmt.Sprintf("email notices sent a second (SES v2 client, %d at once, loopback SES)", send.Parallel), mailRate, "/s", 0, nil),
		row("cost of a million push notices (notify, its take and ack through the API, logs, data out)", pushCost, "$", 0, nil),
		row("cost of a million email notices (the same, and SES at $0.10 per 1,000)", mailCost, "$", 0, nil),
	}, nil
}
