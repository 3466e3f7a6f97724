package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/admission"
	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/durable"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// An S3 stand-in that enforces a function's synthesized IAM policy: what the functions' code
// writes and reads is checked against what their roles allow, with the code running, not a
// list of what it is thought to do.

// standInBucket is the settings bucket's name in the stand-in; the template's bucket ARN is
// read as arn:aws:s3:::standInBucket.
const standInBucket = "settings"

// iamStatement is one statement of a role's policy, its resources resolved to ARNs of the
// stand-in's bucket (statements on other resources are left out).
type iamStatement struct {
	Allow     bool
	Actions   []string
	Resources []string
	Condition map[string]any
}

// settingsPolicy is the statements of the function's role that name the settings bucket.
func settingsPolicy(t *testing.T, f fixture, function string) []iamStatement {
	t.Helper()
	bucket := settingsBucket(t, f)
	arn := `{"Fn::GetAtt":["` + bucket + `","Arn"]}`
	r, ok := f.ours(t)[function]
	if !ok {
		t.Fatalf("no function %s", function)
	}
	role := props(r)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	var out []iamStatement
	for _, st := range s3Statements(f, role) {
		s := iamStatement{Allow: st["Effect"] == "Allow"}
		for _, a := range listOf(st["Action"]) {
			s.Actions = append(s.Actions, a.(string))
		}
		for _, res := range listOf(st["Resource"]) {
			b, _ := json.Marshal(res)
			switch r := string(b); {
			case r == arn:
				s.Resources = append(s.Resources, "arn:aws:s3:::"+standInBucket)
			case strings.HasPrefix(r, `{"Fn::Join":["",[`+arn+`,"/`):
				path := strings.TrimSuffix(strings.TrimPrefix(r, `{"Fn::Join":["",[`+arn+`,"/`), `"]]}`)
				s.Resources = append(s.Resources, "arn:aws:s3:::"+standInBucket+"/"+path)
			}
		}
		s.Condition, _ = st["Condition"].(map[string]any)
		if len(s.Resources) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func listOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// iamPattern turns an IAM pattern (* and ?) into an anchored regexp.
func iamPattern(p string) *regexp.Regexp {
	q := regexp.QuoteMeta(p)
	q = strings.ReplaceAll(q, `\*`, ".*")
	q = strings.ReplaceAll(q, `\?`, ".")
	return regexp.MustCompile("^" + q + "$")
}

// matches reports whether s applies to the action on the resource, with the request's
// condition keys ctx. A condition it cannot evaluate never matches.
func (s iamStatement) matches(action, resource string, ctx map[string]string) bool {
	if !slices.ContainsFunc(s.Actions, func(a string) bool { return iamPattern(a).MatchString(action) }) {
		return false
	}
	if !slices.ContainsFunc(s.Resources, func(r string) bool { return iamPattern(r).MatchString(resource) }) {
		return false
	}
	for op, keys := range s.Condition {
		for key, want := range keys.(map[string]any) {
			got, ok := ctx[key]
			if !ok {
				return false
			}
			var hit bool
			for _, w := range listOf(want) {
				switch op {
				case "StringEquals":
					hit = hit || got == w
				case "StringLike":
					hit = hit || iamPattern(fmt.Sprint(w)).MatchString(got)
				}
			}
			if !hit {
				return false
			}
		}
	}
	return true
}

// allows evaluates a policy as IAM does: an explicit Deny wins, then any Allow.
func allows(policy []iamStatement, action, resource string, ctx map[string]string) bool {
	allowed := false
	for _, s := range policy {
		if s.matches(action, resource, ctx) {
			if !s.Allow {
				return false
			}
			allowed = true
		}
	}
	return allowed
}

// s3Call is one request a function made of the stand-in.
type s3Call struct {
	Function, Action, Key string
	Allowed               bool
	Note                  string
}

// s3Guard serves S3 for one function: it answers 403 AccessDenied to what the function's
// policy does not allow, and a GetObject of a missing key with 404 only when the policy allows
// s3:ListBucket on the bucket (S3's documented behaviour; a ListBucket grant conditioned on
// s3:prefix is not counted, since the condition has no value for a GetObject). Every request
// is recorded.
type s3Guard struct {
	function string
	policy   []iamStatement
	next     http.Handler
	mu       *sync.Mutex
	calls    *[]s3Call
}

func (g *s3Guard) record(c s3Call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	*g.calls = append(*g.calls, c)
}

func (g *s3Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != standInBucket {
		denied(w)
		return
	}
	resource := "arn:aws:s3:::" + bucket + "/" + key
	ctx := map[string]string{}
	var action string
	switch {
	case key == "" && r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
		action, resource = "s3:ListBucket", "arn:aws:s3:::"+bucket
		ctx["s3:prefix"] = r.URL.Query().Get("prefix")
		key = r.URL.Query().Get("prefix")
	case key != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		action = "s3:GetObject"
	case key != "" && r.Method == http.MethodPut:
		action = "s3:PutObject"
	case key != "" && r.Method == http.MethodDelete:
		action = "s3:DeleteObject"
	default:
		action = r.Method + " " + r.URL.String()
	}
	c := s3Call{Function: g.function, Action: action, Key: key, Allowed: allows(g.policy, action, resource, ctx)}
	if !c.Allowed {
		g.record(c)
		denied(w)
		return
	}
	if action != "s3:GetObject" {
		g.record(c)
		g.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	g.next.ServeHTTP(rec, r)
	if rec.Code == http.StatusNotFound && !allows(g.policy, "s3:ListBucket", "arn:aws:s3:::"+bucket, map[string]string{}) {
		c.Allowed, c.Note = false, "missing key answered 403: no s3:ListBucket on the bucket"
		g.record(c)
		denied(w)
		return
	}
	g.record(c)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = io.Copy(w, rec.Body)
}

func denied(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
}

func standInClient(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// routedTo is the function API Gateway sends a request to, from the route table.
func routedTo(t *testing.T, method, path string) string {
	t.Helper()
	for _, r := range routes.All {
		if r.Method != method {
			continue
		}
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(r.Path), "[^/]+") + "$")
		if re.MatchString(path) {
			return r.Function
		}
	}
	t.Fatalf("no route serves %s %s", method, path)
	return ""
}

// grantsWorld is every function of the stack, each built as its main builds it, over one
// Redis and one S3 stand-in that enforces its own role's policy.
type grantsWorld struct {
	t        *testing.T
	rdb      redis.UniversalClient
	clk      *testkit.Clock
	handlers map[string]*api.Handler
	queues   map[string]*durable.Queue
	mu       sync.Mutex
	calls    []s3Call
}

func newGrantsWorld(t *testing.T, f fixture) *grantsWorld {
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	w := &grantsWorld{t: t, rdb: redis.NewClient(&redis.Options{Addr: srv.Addr}),
		clk:      testkit.FixedClock(time.Now().Truncate(time.Second)),
		handlers: map[string]*api.Handler{}, queues: map[string]*durable.Queue{}}
	backend := gofakes3.New(s3mem.New()).Server()
	setup := httptest.NewServer(backend)
	t.Cleanup(setup.Close)
	if _, err := standInClient(setup.URL).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(standInBucket)}); err != nil {
		t.Fatal(err)
	}
	cfg, keys, err := apiapp.Ephemeral("vestibule")
	if err != nil {
		t.Fatal(err)
	}
	cfg.AdminKey = apitest.AdminKey
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, fn := range stack.Functions {
		guard := httptest.NewServer(&s3Guard{function: fn.Name, policy: settingsPolicy(t, f, fn.Name), next: backend, mu: &w.mu, calls: &w.calls})
		t.Cleanup(guard.Close)
		core, err := app.New(cfg, app.Options{Clock: w.clk.Now, Redis: w.rdb, Logger: quiet,
			Store: durable.NewS3(standInClient(guard.URL), standInBucket)})
		if err != nil {
			t.Fatal(err)
		}
		w.queues[fn.Name] = core.Queue
		w.handlers[fn.Name] = apiapp.NewHandler(core.Queue, keys, cfg, apiapp.Options{Clock: w.clk.Now, Logger: quiet, Booking: core.Booking})
	}
	return w
}

// send has the function the route table names handle the request, and checks the status.
func (w *grantsWorld) send(method, path, body string, headers map[string]string, want int) apitest.Response {
	w.t.Helper()
	fn := routedTo(w.t, method, path)
	r := apitest.Send(w.t, w.handlers[fn], apitest.Event(method, path, body, headers))
	if r.StatusCode != want {
		w.t.Errorf("%s %s (function %s): %d %s, want %d", method, path, fn, r.StatusCode, r.Body, want)
	}
	return r
}

func (w *grantsWorld) admin(method, path, body string, want int) apitest.Response {
	w.t.Helper()
	return w.send(method, path, body, apitest.Bearer(apitest.AdminKey), want)
}

// TestFunctionsWriteOnlyWhatTheirRolesAllow runs a room and an event through their life, a
// loss of Redis and their deletion, each request in the function the route table gives it
// (admit's ticks in admit), against an S3 stand-in that enforces each function's synthesized
// policy. It fails on any request a role refuses (a 503 in AWS, or a head never recorded), on
// a missing key answered 403 instead of 404, and on a write grant that no code path used.
func TestFunctionsWriteOnlyWhatTheirRolesAllow(t *testing.T) {
	// GIVEN every function over one Redis and an S3 that enforces its role's policy
	w := newGrantsWorld(t, defaultStack(t))
	id := redistest.Room(t)
	ctx := context.Background()

	// WHEN an admin creates a room and an event for it
	w.admin("PUT", "/api/admin/rooms/"+id, `{"mode":"queue","maxActive":10,"admitPerMinute":600,"originUrl":"https://origin.example/"}`, 200)
	w.admin("PUT", "/api/admin/events/"+id, `{"room":"`+id+`","seats":["A1","A2"],"sessionLimit":1}`, 200)
	w.admin("GET", "/api/admin/rooms", "", 200)
	// and visitors join; each request-driven tick that admits records the head
	v1 := w.send("POST", "/api/rooms/"+id+"/enqueue", "", nil, 200)
	w.clk.Advance(2 * time.Second)
	v2 := w.send("POST", "/api/rooms/"+id+"/enqueue", "", nil, 200) // its tick admits v1
	w.clk.Advance(2 * time.Second)
	w.send("GET", "/api/rooms/"+id+"/poll", "", apitest.Bearer(apitest.Str(v2.JSON, "ticket")), 200) // admits v2
	w.send("POST", "/api/rooms/"+id+"/enqueue", "", nil, 200)
	w.send("GET", "/api/rooms/"+id+"/status", "", nil, 200)
	w.send("GET", "/api/jwks.json", "", nil, 200)
	// and admit's tick admits the third
	w.clk.Advance(2 * time.Second)
	if _, err := w.queues[stack.Admit].Tick(ctx, id); err != nil {
		t.Fatalf("admit's tick: %v", err)
	}
	w.send("POST", "/api/rooms/"+id+"/leave", "", apitest.Bearer(apitest.Str(v1.JSON, "ticket")), 200)
	// and an admin makes an invitation and revokes it
	w.admin("POST", "/api/admin/rooms/"+id+"/invitations", `{"id":"presale-1","uses":2}`, 201)
	w.admin("POST", "/api/admin/rooms/"+id+"/invitations/revoke", `{"id":"presale-1"}`, 200)
	// and an admin plans two changes and cancels one; admit applies the other at its time
	at := w.clk.Now().Add(90 * time.Second).UTC().Format(time.RFC3339)
	w.admin("POST", "/api/admin/rooms/"+id+"/schedule", `{"at":"`+at+`","settings":{"admitPerMinute":1200}}`, 200)
	later := w.admin("POST", "/api/admin/rooms/"+id+"/schedule", `{"at":"`+w.clk.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`","settings":{"mode":"closed"}}`, 200)
	w.admin("POST", "/api/admin/rooms/"+id+"/schedule/cancel", `{"id":"`+apitest.Str(later.JSON["change"].(map[string]any), "id")+`"}`, 200)
	w.admin("GET", "/api/admin/rooms/"+id+"/schedule", "", 200)
	w.clk.Advance(2 * time.Minute)
	if n := admission.ApplySchedules(ctx, w.queues[stack.Admit], nil); n != 1 {
		t.Errorf("admit applied %d scheduled changes, want 1", n)
	}
	// and an hour later admit archives the room's completed hour, which the report reads
	w.clk.Advance(time.Hour)
	if _, err := w.queues[stack.Admit].Tick(ctx, id); err != nil {
		t.Fatalf("admit's tick: %v", err)
	}
	admission.ArchiveHistories(ctx, w.queues[stack.Admit], nil)
	w.admin("GET", "/api/admin/rooms/"+id+"/report", "", 200)
	// and Redis loses everything: the room and the event come back from the bucket
	if err := w.rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	w.clk.Advance(2 * time.Second)
	w.send("GET", "/api/rooms/"+id+"/status", "", nil, 200)
	w.admin("GET", "/api/admin/events/"+id, "", 200)
	// and a room nobody created is unknown (a missing key, not a refused read)
	w.send("GET", "/api/rooms/"+id+"x/status", "", nil, 404)
	// and the admin deletes the room
	w.admin("DELETE", "/api/admin/rooms/"+id, "", 200)

	// THEN no function made a request its role refuses
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.calls {
		if !c.Allowed {
			t.Errorf("%s: %s %s refused by its role %s", c.Function, c.Action, c.Key, c.Note)
		}
	}
	// and every write each role allows is one its code made
	f := defaultStack(t)
	for _, fn := range stack.Functions {
		for _, s := range settingsPolicy(t, f, fn.Name) {
			if !s.Allow || !slices.Contains(s.Actions, "s3:PutObject") {
				continue
			}
			for _, res := range s.Resources {
				used := slices.ContainsFunc(w.calls, func(c s3Call) bool {
					return c.Function == fn.Name && c.Action == "s3:PutObject" && c.Allowed &&
						iamPattern(res).MatchString("arn:aws:s3:::"+standInBucket+"/"+c.Key)
				})
				if !used {
					t.Errorf("%s may write %s, which none of its code paths did", fn.Name, res)
				}
			}
		}
	}
	if len(w.calls) == 0 {
		t.Fatal("no S3 request reached the stand-in")
	}
}
