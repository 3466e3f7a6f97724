package functions_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/notice/send"
	"github.com/vestibule-dev/vestibule/internal/pushtest"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/sestest"
)

// secretsServer speaks Secrets Manager's GetSecretValue for one secret, as
// the function's SDK client reaches it through
// AWS_ENDPOINT_URL_SECRETS_MANAGER: AWSCURRENT is the value; AWSPREVIOUS
// is not found (a secret never rotated).
type secretsServer struct {
	arn, value string
}

func (s secretsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ SecretId, VersionStage string }
	b, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") ||
		json.Unmarshal(b, &in) != nil || in.SecretId != s.arn {
		http.Error(w, "not a signed GetSecretValue call of the secret", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if in.VersionStage != "AWSCURRENT" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"ResourceNotFoundException","Message":"no version of that stage"}`)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ARN": s.arn, "Name": "vestibule/notice", "SecretString": s.value,
		"VersionId": "v1", "VersionStages": []string{"AWSCURRENT"}})
}

// adminServer stands in for the API's two notice routes the function calls
// (internal/api/noticeapi serves them): it checks that each call is signed
// for execute-api, as API Gateway's IAM authorisation would, and answers
// from the engine.
type adminServer struct {
	q send.EngineQueue

	mu    sync.Mutex
	calls []string
}

func (s *adminServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/admin/rooms/")
	id, verb, _ := strings.Cut(rest, "/notices/")
	auth := r.Header.Get("Authorization")
	if !ok || r.Method != http.MethodPost || !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") ||
		!strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") {
		http.Error(w, `{"error":"forbidden"}`, http.StatusForbidden)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, verb)
	s.mu.Unlock()
	ctx := r.Context()
	switch verb {
	case "take":
		var in notice.TakeRequest
		if json.NewDecoder(r.Body).Decode(&in) != nil {
			http.Error(w, `{"error":"bad_request"}`, http.StatusBadRequest)
			return
		}
		b, err := s.q.Take(ctx, id, in.Most, time.Duration(in.LeaseMs)*time.Millisecond)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"room": id, "notices": b.Notices, "page": b.Page})
	case "ack":
		var in notice.AckRequest
		if json.NewDecoder(r.Body).Decode(&in) != nil {
			http.Error(w, `{"error":"bad_request"}`, http.StatusBadRequest)
			return
		}
		var retryAt time.Time
		if in.RetryAt != nil {
			retryAt = *in.RetryAt
		}
		err := s.q.Ack(ctx, id, in.Seq, in.Outcome, retryAt)
		switch {
		case errors.Is(err, room.ErrNoNotice):
			http.Error(w, `{"error":"unknown_notice"}`, http.StatusNotFound)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			_, _ = io.WriteString(w, `{}`)
		}
	default:
		http.NotFound(w, r)
	}
}

// The notify binary under the emulator: the admission.tick event the
// stack's rule sends it (testdata/events/notify-tick.json, three notices
// due) makes it read the notice secret from Secrets Manager, take the
// room's due notices through the admin route (signed for execute-api),
// open each address with the secret's key and send: a web push to the push
// stand-in (which checks the VAPID signature and decrypts), an email to
// the SES stand-in, and nothing to a subscription that expired (410), which
// is acked gone. Redis then holds no address of the room (each goes once
// sent or refused), and the room's counts say two sent and one failed. A tick event that counts no notice
// calls nothing.
func TestNotifyUnderEmulator(t *testing.T) {
	emulator := findRIE(t)
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "notify")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin, "./notify")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	const secret = "rie-notice-secret-0123456789abcdefghijklmnopqrstuvwxyz"
	const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:vestibule/notice-AbCdEf"
	k, err := notice.FromSecret([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := notice.NewSealer(k.Public())
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	rdb := redistest.Single(t)
	eng := roomdb.New(rdb)
	id := redistest.Room(t)
	cfg := room.DefaultConfig()
	cfg.OriginURL, cfg.MaxActive, cfg.NotifiedClaimTTLSeconds = "https://shop.example/", 3, 600
	cfg.Page = &room.Page{Title: room.Text{All: "Spring concert"}}
	if _, err := eng.PutConfig(ctx, id, cfg); err != nil {
		t.Fatal(err)
	}
	push, ses := pushtest.Start(t), sestest.Start(t)
	live, expired := push.Subscribe(t, k.Public().VAPID), push.Subscribe(t, k.Public().VAPID)
	push.SetStatus(expired, http.StatusGone)
	pushAt := func(sub *pushtest.Subscription, lang string) notice.Address {
		a := notice.Address{Push: &notice.Subscription{Endpoint: sub.Endpoint}, Lang: lang, VAPID: k.Public().VAPIDID}
		a.Push.Keys.P256dh, a.Push.Keys.Auth = sub.P256dh, sub.Auth
		return a
	}
	for i, a := range []notice.Address{pushAt(live, "fr"), {Email: "ada@example.com", Lang: "de"}, pushAt(expired, "en")} {
		j, err := eng.Enqueue(ctx, id, "visitor-"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := sealer.Seal(id, j.Ticket.Seq, a)
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.RegisterNotice(ctx, j.Ticket, room.NoticeSignup{Sealed: sealed, Network: "n" + string(rune('a'+i)),
			Address: "a" + string(rune('a'+i)), Expires: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past the join's second, so the tick grants
	if r, err := eng.Tick(ctx, id); err != nil || r.Notices != 3 {
		t.Fatalf("the grant's tick: %+v, %v", r, err)
	}

	api := &adminServer{q: send.EngineQueue{Engine: eng}}
	apiSrv, smSrv := httptest.NewServer(api), httptest.NewServer(secretsServer{arn: arn, value: secret})
	defer apiSrv.Close()
	defer smSrv.Close()
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "NOTICE_") || k == "REDIS_URL" {
			continue // no credentials, endpoints or Redis of the machine's: the function needs none
		}
		env = append(env, kv)
	}
	env = append(env, "AWS_REGION=eu-west-1", "AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=secret", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+smSrv.URL, "AWS_ENDPOINT_URL_SESV2="+ses.URL,
		"NOTICE_SECRET_ARN="+arn, "NOTICE_API_URL="+apiSrv.URL, "NOTICE_PAGE_URL=https://wait.example/",
		"NOTICE_FROM=turns@example.com", "NOTICE_PUSH_HOSTS="+push.URL)
	fn := startLambda(t, emulator, bin, env)

	raw, err := os.ReadFile("../testdata/events/notify-tick.json")
	if err != nil {
		t.Fatal(err)
	}
	quiet := strings.Replace(strings.ReplaceAll(string(raw), "rie-demo", id), `"notices": 3`, `"notices": 0`, 1)
	if out := fn.invoke(t, []byte(quiet)); string(out) != "null" {
		t.Fatalf("a tick without notices: the function answered %s", out)
	}
	if len(api.calls) != 0 {
		t.Fatalf("a tick without notices made the calls %v", api.calls)
	}
	if out := fn.invoke(t, []byte(strings.ReplaceAll(string(raw), "rie-demo", id))); string(out) != "null" {
		t.Fatalf("the function answered %s", out)
	}

	ms := push.Messages()
	if len(ms) != 1 || ms[0].Endpoint != live.Endpoint {
		t.Fatalf("the push stand-in took %+v, want one message to the live subscription", ms)
	}
	var m notice.Message
	if err := json.Unmarshal(ms[0].Payload, &m); err != nil || m.Lang != "fr" || !strings.Contains(m.Body, "Spring concert") ||
		!strings.HasPrefix(m.URL, "https://wait.example/?") || !strings.Contains(m.URL, "room="+id) {
		t.Errorf("push payload %q: %+v, %v", ms[0].Payload, m, err)
	}
	if ms[0].TTL <= 0 || ms[0].TTL > 600 {
		t.Errorf("push TTL %d s, want within the notified window", ms[0].TTL)
	}
	mails := ses.Mails()
	if len(mails) != 1 || mails[0].To != "ada@example.com" || mails[0].From != "turns@example.com" ||
		!strings.Contains(mails[0].Text, "room="+id) || !strings.Contains(mails[0].HTML, "Spring concert") {
		t.Fatalf("the SES stand-in took %+v", mails)
	}
	api.mu.Lock()
	calls := strings.Join(api.calls, " ")
	api.mu.Unlock()
	if !strings.HasPrefix(calls, "take ack ack ack") {
		t.Errorf("admin calls %q, want a take and three acks", calls)
	}
	st, err := eng.Stats(ctx, id)
	if err != nil || st.NoticesSent != 2 || st.NoticesFailed != 1 || st.NoticesHeld != 0 {
		t.Errorf("stats after the sends: %+v, %v (want 2 sent, 1 failed, no address held)", st, err)
	}
	if due, err := eng.TakeNotices(ctx, id, 10, time.Second); err != nil || len(due) != 0 {
		t.Errorf("notices still due: %+v, %v", due, err)
	}
	if out := fn.Output(); strings.Contains(out, "ada@example.com") || strings.Contains(out, live.Endpoint) {
		t.Errorf("the function logged an address:\n%s", out)
	}
}
