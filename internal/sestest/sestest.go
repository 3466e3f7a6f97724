// Package sestest is a stand-in of Amazon SES's v2 API on loopback, for
// tests: the real SDK client (sesv2) sends SendEmail to it over HTTP, signed
// as to AWS, and the stand-in keeps each message (from, to, subject, text,
// HTML) for the test to read, or refuses it as SES would.
package sestest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
)

// Server is the stand-in.
type Server struct {
	URL string

	mu     sync.Mutex
	mails  []Mail
	refuse map[string]string // recipient -> the error type SES answers
}

// Mail is one message SES took.
type Mail struct {
	From, To, Subject, Text, HTML string
	Charset                       string
}

// Start serves the stand-in until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{refuse: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Client is an SES v2 client of the stand-in, with static credentials.
func (s *Server) Client() *sesv2.Client {
	return sesv2.New(sesv2.Options{Region: "eu-west-1", BaseEndpoint: aws.String(s.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

// Refuse makes SES answer a message to to with the error errType
// (MessageRejected, TooManyRequestsException…).
func (s *Server) Refuse(to, errType string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[to] = errType
}

// Mails are the messages taken so far.
func (s *Server) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

type content struct {
	Data    string
	Charset string
}

type sendEmail struct {
	FromEmailAddress string
	Destination      struct{ ToAddresses []string }
	Content          struct {
		Simple *struct {
			Subject content
			Body    struct{ Text, Html *content }
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v2/email/outbound-emails" {
		s.fail(w, http.StatusNotFound, "NotFoundException", "no such operation")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		s.fail(w, http.StatusForbidden, "AccessDeniedException", "unsigned request")
		return
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var in sendEmail
	if err := json.Unmarshal(b, &in); err != nil || in.Content.Simple == nil || len(in.Destination.ToAddresses) != 1 {
		s.fail(w, http.StatusBadRequest, "BadRequestException", "not a simple message to one address")
		return
	}
	to := in.Destination.ToAddresses[0]
	s.mu.Lock()
	refuse := s.refuse[to]
	s.mu.Unlock()
	switch refuse {
	case "":
	case "MessageRejected", "BadRequestException":
		s.fail(w, http.StatusBadRequest, refuse, "refused")
		return
	default:
		s.fail(w, http.StatusTooManyRequests, refuse, "slow down")
		return
	}
	m := Mail{From: in.FromEmailAddress, To: to, Subject: in.Content.Simple.Subject.Data, Charset: in.Content.Simple.Subject.Charset}
	if t := in.Content.Simple.Body.Text; t != nil {
		m.Text = t.Data
	}
	if h := in.Content.Simple.Body.Html; h != nil {
		m.HTML = h.Data
	}
	s.mu.Lock()
	s.mails = append(s.mails, m)
	n := len(s.mails)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"MessageId":"stand-in-%d"}`, n)
}

func (s *Server) fail(w http.ResponseWriter, status int, errType, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", errType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
