// Package functions_test builds every Lambda function for this machine, runs
// each under the AWS Lambda Runtime Interface Emulator (aws-lambda-rie, what
// `make deps-rie` installs) and invokes it with the real event JSON in
// testdata/events: the binaries that deploy, exercised as Lambdas.
package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/rie"
	"github.com/vestibule-dev/vestibule/internal/testkit"
	"github.com/vestibule-dev/vestibule/internal/token"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// functions are the seven functions TestLambdasUnderEmulator builds and runs:
// those behind the API, and admit. The Makefile's FUNCTIONS also lists
// gatekeys and keysync (their logic is tested in internal/gatekeys and
// internal/keysync), forwarder (TestForwarderUnderEmulator) and notify
// (TestNotifyUnderEmulator).
var functions = []string{"enqueue", "poll", "status", "consume", "admin", "admit", "booking"}

func findRIE(t *testing.T) string {
	p, err := rie.Find()
	if err == nil {
		return p
	}
	testkit.Missing(t, fmt.Sprintf("the Lambda emulator (%v)", err), "run `make deps-rie`")
	return ""
}

// lambda is one function running under the emulator.
type lambda struct{ *rie.Emulator }

func startLambda(t *testing.T, emulator, bin string, env []string) *lambda {
	t.Helper()
	e, err := rie.Start(emulator, bin, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		if t.Failed() {
			t.Logf("%s output:\n%s", e.Name, e.Output())
		}
	})
	return &lambda{e}
}

// invoke sends an event and returns the function's raw result.
func (l *lambda) invoke(t *testing.T, event []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := l.Invoke(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// http invokes an API function with an event file, after replacing
// placeholders, and decodes the API Gateway response and its JSON body.
func (l *lambda) http(t *testing.T, file string, repl ...string) (events.APIGatewayV2HTTPResponse, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "events", file))
	if err != nil {
		t.Fatal(err)
	}
	ev := strings.NewReplacer(repl...).Replace(string(raw))
	var resp events.APIGatewayV2HTTPResponse
	out := l.invoke(t, []byte(ev))
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s: not an API Gateway response: %s", file, out)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatalf("%s: body is not JSON: %q", file, resp.Body)
	}
	return resp, body
}

func want(t *testing.T, file string, resp events.APIGatewayV2HTTPResponse, body map[string]any, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status %d %v, want %d", file, resp.StatusCode, body, status)
	}
}

func TestLambdasUnderEmulator(t *testing.T) {
	emulator := findRIE(t)
	if testing.Short() {
		t.Skip("builds seven binaries")
	}
	bin := t.TempDir()
	args := []string{"build", "-tags", "lambda.norpc", "-trimpath", "-o", bin + string(os.PathSeparator)}
	for _, f := range functions {
		args = append(args, "./"+f)
	}
	build := exec.Command("go", args...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	keyDir := t.TempDir()
	if _, err := token.LoadLocal(keyDir); err != nil { // create the keys once, before seven processes read them
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "REDIS_URL", "REDIS_CLUSTER", "REDIS_CA_FILE", "TICKET_SECRET_ARN", "ENTRY_KEY_SECRET_ARN", "LOG_LEVEL", "ADMIN_AUTH":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		// A server of its own: the admit function ticks every room it holds.
		"REDIS_URL=redis://"+redistest.Own(t).Options().Addr,
		"VESTIBULE_KEY_DIR="+keyDir,
		"ADMIN_AUTH=iam", // the admin events carry API Gateway's IAM authorizer context
		"AWS_REGION=eu-west-1",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=5", // admit ticks until a little before this
	)
	fn := map[string]*lambda{}
	for _, f := range functions {
		fn[f] = startLambda(t, emulator, filepath.Join(bin, f), env)
	}

	id := redistest.Room(t)
	room := []string{"rie-demo", id}
	with := func(kv ...string) []string { return append(append([]string{}, room...), kv...) }

	// Admin: create the room (IAM-authorized event), read it, list rooms.
	resp, body := fn["admin"].http(t, "admin-put-room.json", room...)
	want(t, "admin-put-room.json", resp, body, 200)
	origin, _ := body["originCredential"].(string)
	if origin == "" {
		t.Fatalf("admin put: no originCredential: %v", body)
	}
	resp, body = fn["admin"].http(t, "admin-get-room.json", room...)
	want(t, "admin-get-room.json", resp, body, 200)
	if cfg, _ := body["config"].(map[string]any); cfg["maxActive"] != float64(1) {
		t.Fatalf("admin get: %v", body)
	}
	resp, body = fn["admin"].http(t, "admin-list-rooms.json", room...)
	want(t, "admin-list-rooms.json", resp, body, 200)
	if !strings.Contains(resp.Body, id) {
		t.Fatalf("admin list lacks the room: %s", resp.Body)
	}
	// The same admin event without the authorizer block is refused.
	resp, _ = fn["admin"].http(t, "admin-list-rooms.json", `"authorizer"`, `"notAuthorizer"`)
	want(t, "admin-list-rooms.json without IAM", resp, nil, 401)

	// A poll without a ticket is refused. Made first, it also starts the poll
	// function's process, so that the start (over a second on a busy machine)
	// does not fall between the join and the poll that must come too soon.
	resp, body = fn["poll"].http(t, "poll.json", room...) // the placeholder is no ticket
	want(t, "poll.json with a bad ticket", resp, body, 401)

	// A visitor joins and polls.
	resp, body = fn["enqueue"].http(t, "enqueue.json", room...)
	want(t, "enqueue.json", resp, body, 200)
	ticket, _ := body["ticket"].(string)
	if ticket == "" || body["state"] != "waiting" || body["position"] != float64(1) {
		t.Fatalf("enqueue: %v", body)
	}
	// A poll sooner than the engine's floor after the last heartbeat is refused
	// with 429 and Retry-After; the page waits pollAfterMs, so do as it does.
	resp, body = fn["poll"].http(t, "poll.json", with("TICKET", ticket)...)
	want(t, "poll.json too soon", resp, body, 429)
	if resp.Headers["Retry-After"] == "" {
		t.Fatalf("429 without Retry-After: %v", resp.Headers)
	}
	time.Sleep(pollpolicy.MinInterval + 100*time.Millisecond)
	resp, body = fn["poll"].http(t, "poll.json", with("TICKET", ticket)...)
	want(t, "poll.json", resp, body, 200)
	if body["state"] != "waiting" {
		t.Fatalf("poll: %v", body)
	}

	// The scheduled admit ticks for ~2.5 s of its 5 s and admits the visitor.
	raw, err := os.ReadFile("../testdata/events/admit-scheduled.json")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct{ Ticks, RoomTicks, Errors, Admitted int }
	if err := json.Unmarshal(fn["admit"].invoke(t, raw), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Ticks < 2 || sum.Errors != 0 || sum.Admitted < 1 {
		t.Fatalf("admit summary %+v", sum)
	}
	// Its tick that admitted the visitor went out as an admission event line.
	tickLine := `{"source":"vestibule.admission","detail-type":"admission.tick","detail":{"room":"` + id + `",`
	if out := settled(fn["admit"], tickLine); !strings.Contains(out, tickLine) || !strings.Contains(out, `"admitted":1,`) {
		t.Fatalf("admit output has no admission.tick line for the room:\n%s", out)
	}

	resp, body = fn["poll"].http(t, "poll.json", with("TICKET", ticket)...)
	entry, _ := body["entryToken"].(string)
	if resp.StatusCode != 200 || body["state"] != "admitted" || entry == "" || body["originUrl"] != "https://booking.example.com/" {
		t.Fatalf("poll after admit: %d %v", resp.StatusCode, body)
	}

	// The booking origin consumes the token once; the replay is refused; then completes.
	resp, body = fn["consume"].http(t, "consume.json", "ENTRY_TOKEN", entry)
	want(t, "consume.json without the origin credential", resp, body, 401)
	resp, body = fn["consume"].http(t, "consume.json", "ENTRY_TOKEN", entry, "ORIGIN_CREDENTIAL", origin)
	want(t, "consume.json", resp, body, 200)
	if body["room"] != id || body["visitor"] == "" || body["sessionExpiresAt"] == nil {
		t.Fatalf("consume: %v", body)
	}
	bookingSession, _ := body["bookingSession"].(string)
	if bookingSession == "" {
		t.Fatalf("consume: no bookingSession: %v", body)
	}
	resp, body = fn["consume"].http(t, "consume.json", "ENTRY_TOKEN", entry, "ORIGIN_CREDENTIAL", origin)
	want(t, "consume.json replay", resp, body, 409)

	// The booking kit: the admin defines an event named after the room, the
	// visitor holds a seat with the booking session, the origin confirms, and
	// the order event goes out as a JSON line on the function's stdout (no
	// BOOKING_EVENT_BUS: what a CloudWatch Logs subscription forwards).
	resp, body = fn["booking"].http(t, "booking-put-event.json", room...)
	want(t, "booking-put-event.json", resp, body, 200)
	resp, body = fn["booking"].http(t, "booking-hold.json", with("BOOKING_SESSION", bookingSession)...)
	want(t, "booking-hold.json", resp, body, 201)
	hold, _ := body["token"].(string)
	session, _ := body["session"].(string)
	resp, body = fn["booking"].http(t, "booking-hold.json", with("BOOKING_SESSION", entry)...)
	want(t, "booking-hold.json with an entry token", resp, body, 401)
	confirm := with("HOLD_TOKEN", hold, "SESSION_ID", session)
	resp, body = fn["booking"].http(t, "booking-confirm.json", confirm...)
	want(t, "booking-confirm.json without the origin credential", resp, body, 401)
	resp, body = fn["booking"].http(t, "booking-confirm.json", append(confirm, "ORIGIN_CREDENTIAL", origin)...)
	want(t, "booking-confirm.json", resp, body, 201)
	if body["order"] != hold || body["type"] != "booking.order.confirmed" {
		t.Fatalf("confirm: %v", body)
	}
	resp, body = fn["booking"].http(t, "booking-confirm.json", append(confirm, "ORIGIN_CREDENTIAL", origin)...)
	want(t, "booking-confirm.json retried", resp, body, 200)
	if resp.Headers["Idempotent-Replayed"] != "true" || body["order"] != hold {
		t.Fatalf("confirm retried: %v %v", resp.Headers, body)
	}
	line := `{"source":"vestibule.booking","detail-type":"booking.order.confirmed","detail":{"type":"booking.order.confirmed","event":"` + id + `","order":"` + hold + `"`
	if out := settled(fn["booking"], line); strings.Count(out, line) != 1 {
		t.Fatalf("booking output has %d order lines, want 1:\n%s", strings.Count(out, line), out)
	}
	resp, body = fn["consume"].http(t, "complete.json", "ENTRY_TOKEN", entry, "ORIGIN_CREDENTIAL", origin)
	want(t, "complete.json", resp, body, 200)
	// One consumed and one completed event (the replay emitted nothing).
	for _, typ := range []string{"admission.entry.consumed", "admission.session.completed"} {
		line := `{"source":"vestibule.admission","detail-type":"` + typ + `","detail":{"room":"` + id + `",`
		if out := settled(fn["consume"], line); strings.Count(out, line) != 1 {
			t.Fatalf("consume output has %d %s lines, want 1:\n%s", strings.Count(out, line), typ, out)
		}
	}

	// Public reads.
	resp, body = fn["status"].http(t, "status.json", room...)
	want(t, "status.json", resp, body, 200)
	if resp.Headers["Cache-Control"] != "public, max-age=1" || body["room"] != id || body["maxActive"] != float64(1) {
		t.Fatalf("status: %v %v", resp.Headers, body)
	}
	resp, body = fn["status"].http(t, "jwks.json")
	want(t, "jwks.json", resp, body, 200)
	if keys, _ := body["keys"].([]any); len(keys) == 0 {
		t.Fatalf("jwks: %v", body)
	}

	// A second visitor joins and leaves; the place is then gone.
	_, body = fn["enqueue"].http(t, "enqueue.json", room...)
	second, _ := body["ticket"].(string)
	resp, body = fn["poll"].http(t, "leave.json", with("TICKET", second)...)
	want(t, "leave.json", resp, body, 200)
	if _, body = fn["poll"].http(t, "poll.json", with("TICKET", second)...); body["state"] != "expired" {
		t.Fatalf("poll after leave: %v", body)
	}

	// Each function serves the routes the stack sends it, and no other.
	servesItsRoutes(t, fn)
}

// settled is what fn printed once line appears in it (or after 5 s): the
// emulator copies the function's stdout asynchronously, so a line printed
// before a response may be read a moment after it.
func settled(fn interface{ Output() string }, line string) string {
	testkit.WaitFor(5*time.Second, func() bool { return strings.Contains(fn.Output(), line) })
	return fn.Output()
}
