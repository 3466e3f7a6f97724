package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// awsEnv gives the test static AWS credentials through the environment and
// nothing else: no shared files, no instance metadata, no network.
func awsEnv(t *testing.T, region string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTESTEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", region)
}

// verifier is an API Gateway stand-in that checks each request's SigV4
// signature by signing the request it received again with the SDK's signer
// and the same credentials, and comparing.
type verifier struct {
	t      *testing.T
	region string
	mu     sync.Mutex
	seen   []string // "METHOD path: ok" or the reason it failed
}

func (v *verifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	verdict := v.check(r, body)
	v.mu.Lock()
	v.seen = append(v.seen, r.Method+" "+r.URL.Path+": "+verdict)
	v.mu.Unlock()
	if verdict != "ok" {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"message":"`+verdict+`"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.Method {
	case http.MethodGet:
		io.WriteString(w, `{"room":"demo","config":{"maxActive":5,"mode":"queue"},"stats":{"waiting":3}}`)
	default:
		io.WriteString(w, `{"room":"demo","config":{"maxActive":500,"mode":"queue"}}`)
	}
}

func (v *verifier) check(r *http.Request, body []byte) string {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") {
		return "not AWS4-HMAC-SHA256: " + auth
	}
	scope := "/" + v.region + "/" + SigningService + "/aws4_request"
	if !strings.Contains(auth, "Credential=AKIDTESTEXAMPLE/") || !strings.Contains(auth, scope+",") {
		return "wrong credential scope: " + auth
	}
	_, signed, _ := strings.Cut(auth, "SignedHeaders=")
	signed, _, _ = strings.Cut(signed, ",")
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "no X-Amz-Date"
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), strings.NewReader(string(body)))
	again.ContentLength = r.ContentLength
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: "AKIDTESTEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), SigningService, v.region, when); err != nil {
		return "re-signing: " + err.Error()
	}
	if got, want := auth, again.Header.Get("Authorization"); got != want {
		return "signature mismatch: got " + got + " want " + want
	}
	return "ok"
}

// An endpoint without an admin key gets every call signed with SigV4 for
// execute-api, over the exact body, from the standard chain (here the
// environment), for the region of the environment.
func TestSigV4(t *testing.T) {
	awsEnv(t, "eu-west-1")
	v := &verifier{t: t, region: "eu-west-1"}
	srv := httptest.NewServer(v)
	defer srv.Close()
	ctx := context.Background()
	c, err := Connect(ctx, Target{Endpoint: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Auth.Kind() != KindSigV4 {
		t.Fatalf("auth %s", c.Auth.Kind())
	}
	r, err := c.GetRoom(ctx, "demo")
	if err != nil || r.Stats.Waiting != 3 {
		t.Fatalf("get: %+v %v (server saw %v)", r, err, v.seen)
	}
	cfg, err := c.PutRoom(ctx, "demo", map[string]any{"maxActive": 500, "admitPerMinute": 3000})
	if err != nil || cfg.MaxActive != 500 {
		t.Fatalf("put: %+v %v (server saw %v)", cfg, err, v.seen)
	}
	want := []string{"GET /api/admin/rooms/demo: ok", "PUT /api/admin/rooms/demo: ok"}
	if strings.Join(v.seen, "|") != strings.Join(want, "|") {
		t.Fatalf("server saw %q, want %q", v.seen, want)
	}

	// A signature for another region is refused (the check is real), and
	// the 403 names the IAM permission.
	awsEnv(t, "us-east-1")
	c, err = Connect(ctx, Target{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetRoom(ctx, "demo")
	if err == nil || !strings.Contains(err.Error(), "execute-api:Invoke") || !strings.Contains(err.Error(), "403") {
		t.Fatalf("wrong region: %v", err)
	}
}

// The region of an execute-api host beats the profile's.
func TestRegionFromHost(t *testing.T) {
	awsEnv(t, "us-east-1")
	c, err := Connect(context.Background(), Target{Endpoint: "https://abc123def4.execute-api.ap-northeast-2.amazonaws.com/"})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Auth.(SigV4).Region; r != "ap-northeast-2" {
		t.Fatalf("region %s", r)
	}
}

// No credentials anywhere: the error says how to provide them.
func TestNoCredentials(t *testing.T) {
	awsEnv(t, "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Connect(ctx, Target{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListRooms(ctx)
	if err == nil || !strings.Contains(err.Error(), "no AWS credentials") || !strings.Contains(err.Error(), "aws sso login") {
		t.Fatalf("no credentials: %v", err)
	}
}

// --stack reads the endpoint from the stack's ApiUrl output, asking a local
// server that poses as CloudFormation (AWS_ENDPOINT_URL_CLOUDFORMATION).
func TestStackEndpoint(t *testing.T) {
	awsEnv(t, "eu-west-1")
	var mu sync.Mutex
	var asked []string
	cf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		asked = append(asked, r.Form.Get("Action")+" "+r.Form.Get("StackName"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		if r.Form.Get("StackName") != "Vestibule" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id `+r.Form.Get("StackName")+` does not exist</Message></Error><RequestId>1</RequestId></ErrorResponse>`)
			return
		}
		io.WriteString(w, `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">
<DescribeStacksResult><Stacks><member>
<StackName>Vestibule</StackName><StackStatus>CREATE_COMPLETE</StackStatus><CreationTime>2026-11-01T10:00:00Z</CreationTime>
<Outputs>
<member><OutputKey>WaitingRoomUrl</OutputKey><OutputValue>https://d111.cloudfront.net/</OutputValue></member>
<member><OutputKey>ApiUrl</OutputKey><OutputValue>https://abc123def4.execute-api.eu-west-1.amazonaws.com/</OutputValue></member>
</Outputs>
</member></Stacks></DescribeStacksResult>
<ResponseMetadata><RequestId>2</RequestId></ResponseMetadata>
</DescribeStacksResponse>`)
	}))
	defer cf.Close()
	t.Setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", cf.URL)
	ctx := context.Background()
	c, err := Connect(ctx, Target{Stack: "Vestibule"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoint != "https://abc123def4.execute-api.eu-west-1.amazonaws.com/" || c.Auth.Kind() != KindSigV4 {
		t.Fatalf("endpoint %s auth %s", c.Endpoint, c.Auth.Kind())
	}
	_, err = Connect(ctx, Target{Stack: "Nope"})
	if err == nil || !strings.Contains(err.Error(), `there is no stack "Nope"`) {
		t.Fatalf("missing stack: %v", err)
	}
	if strings.Join(asked, "|") != "DescribeStacks Vestibule|DescribeStacks Nope" {
		t.Fatalf("asked %q", asked)
	}
}

func TestParseSettings(t *testing.T) {
	got, err := ParseSettings([]string{"maxActive=500", "admitPerMinute=3_000", "mode=paused", "opensAt=2026-12-01T10:00:00Z", "originUrl=https://x.example/a=b"})
	if err != nil {
		t.Fatal(err)
	}
	if got["maxActive"] != int64(500) || got["admitPerMinute"] != int64(3000) || got["mode"] != "paused" ||
		got["originUrl"] != "https://x.example/a=b" || got["opensAt"].(time.Time).Day() != 1 {
		t.Fatalf("%#v", got)
	}
	if got, err := ParseSettings([]string{"opensAt=none"}); err != nil || got["opensAt"] != nil {
		t.Fatalf("clear opensAt: %v %v", got, err)
	}
	// The page is an object setting, given as JSON (or none to clear it).
	page := `{"title":{"en":"Spring concert","ko":"봄 콘서트"},"accentColor":"#b3261e"}`
	if got, err := ParseSettings([]string{"page=" + page}); err != nil || string(got["page"].(json.RawMessage)) != page {
		t.Fatalf("page: %v %v", got, err)
	}
	if got, err := ParseSettings([]string{"page=none"}); err != nil || got["page"] != nil {
		t.Fatalf("clear page: %v %v", got, err)
	}
	// The redirect URIs are a list, comma-separated (or none to clear it).
	if got, err := ParseSettings([]string{"oidcRedirectUris=https://a.example/cb, https://b.example/cb?x=1"}); err != nil ||
		!slices.Equal(got["oidcRedirectUris"].([]string), []string{"https://a.example/cb", "https://b.example/cb?x=1"}) {
		t.Fatalf("oidcRedirectUris: %v %v", got, err)
	}
	if got, err := ParseSettings([]string{"oidcRedirectUris=none"}); err != nil || got["oidcRedirectUris"] != nil {
		t.Fatalf("clear oidcRedirectUris: %v %v", got, err)
	}
	for in, want := range map[string]string{
		"maxActiv=5":       `unknown setting "maxActiv"`,
		"MaxActive=5":      "did you mean maxActive?",
		"maxActive=5.5":    "must be a whole number",
		"maxActive":        "is not key=value",
		"opensAt=tomorrow": "RFC 3339",
		"page=title":       "a JSON object",
	} {
		_, err := ParseSettings([]string{in})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if _, err := ParseSettings([]string{"maxActive=1", "maxActive=2"}); err == nil {
		t.Error("a repeated key was taken")
	}
}

func TestSparkline(t *testing.T) {
	for _, c := range []struct {
		in    []int64
		width int
		want  string
	}{
		{nil, 10, ""},
		{[]int64{0, 0}, 10, "▁▁"},
		{[]int64{0, 1, 2, 3, 4, 5, 6, 7}, 10, "▁▂▃▄▅▆▇█"},
		{[]int64{7, 0, 7}, 2, "▁█"},
		{[]int64{5, 10}, 0, "▄█"},
	} {
		if got := Sparkline(c.in, c.width); got != c.want {
			t.Errorf("Sparkline(%v, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

// The console's proxy forwards admin routes only, only from its own page:
// a loopback Host, its header, its run's secret, no foreign Origin.
func TestConsoleGuards(t *testing.T) {
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		if strings.HasPrefix(r.URL.Path, "/api/admin/") && r.Header.Get(ConsoleHeader) == "" {
			t.Errorf("%s %s reached the deployment without %s (the audit log's \"via the console\")", r.Method, r.URL.Path, ConsoleHeader)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"rooms":[]}`)
	}))
	defer up.Close()
	h := Console(&Client{Endpoint: up.URL, Auth: BearerKey("k")}, emptyFS{}, "s3cret")
	for _, c := range []struct {
		method, path, host, origin string
		header                     bool
		want                       int
	}{
		{"GET", "/api/admin/rooms", "127.0.0.1:1", "", true, 200},
		{"GET", "/api/admin/rooms/demo", "localhost:1", "http://localhost:1", true, 200},
		{"PUT", "/api/admin/rooms/demo", "[::1]:1", "", true, 200},
		{"POST", "/api/admin/rooms/demo/drain", "127.0.0.1:1", "", true, 200},
		{"GET", "/api/admin/rooms", "127.0.0.1:1", "", false, 403},
		{"GET", "/api/admin/rooms", "evil.example:1", "", true, 403},
		{"GET", "/api/admin/rooms", "127.0.0.1:1", "https://evil.example", true, 403},
		{"DELETE", "/api/admin/rooms/demo", "127.0.0.1:1", "", true, 200},
		{"PATCH", "/api/admin/rooms/demo", "127.0.0.1:1", "", true, 404},
		{"POST", "/api/rooms/demo/enqueue", "127.0.0.1:1", "", true, 404},
		{"GET", "/api/rooms/demo/status", "127.0.0.1:1", "", true, 200},
		{"GET", "/api/rooms/demo/status", "127.0.0.1:1", "", false, 403},
		{"GET", "/api/admin/rooms/a%7Bb", "127.0.0.1:1", "", true, 404},
	} {
		req := httptest.NewRequest(c.method, "http://x"+c.path, strings.NewReader("{}"))
		req.Host = c.host
		req.AddCookie(&http.Cookie{Name: ConsoleCookie, Value: "s3cret"})
		if c.header {
			req.Header.Set(ConsoleHeader, "1")
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%s %s host %s origin %q header %v: %d, want %d: %s", c.method, c.path, c.host, c.origin, c.header, w.Code, c.want, w.Body)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("CSP %q", csp)
		}
	}
	want := "GET /api/admin/rooms Bearer k|GET /api/admin/rooms/demo Bearer k|PUT /api/admin/rooms/demo Bearer k|POST /api/admin/rooms/demo/drain Bearer k|DELETE /api/admin/rooms/demo Bearer k|GET /api/rooms/demo/status "
	if strings.Join(got, "|") != want {
		t.Fatalf("upstream saw %q", got)
	}
}

// Any process on the machine can reach 127.0.0.1 and send the console's
// header: without the run's secret (the cookie the printed address sets)
// nothing reaches the deployment, nor says where it is. The address with the
// secret sets it HttpOnly and SameSite=Strict and sends the browser on without
// it; a wrong secret sets nothing.
func TestConsoleWantsItsSecret(t *testing.T) {
	reached := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"rooms":[]}`)
	}))
	defer up.Close()
	h := Console(&Client{Endpoint: up.URL, Auth: BearerKey("k")}, emptyFS{}, "s3cret")
	do := func(method, path, cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://127.0.0.1:1"+path, nil)
		req.Header.Set(ConsoleHeader, "1")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: ConsoleCookie, Value: cookie})
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for _, c := range []struct{ method, path, cookie string }{
		{"GET", "/api/admin/rooms", ""},
		{"GET", "/api/admin/rooms", "s3cre"},
		{"GET", "/api/admin/rooms", "s3cret2"},
		{"DELETE", "/api/admin/rooms/demo", ""},
		{"PUT", "/api/admin/rooms/demo", "wrong"},
		{"GET", "/api/rooms/demo/status", ""},
		{"GET", "/console-target.json", ""},
	} {
		w := do(c.method, c.path, c.cookie)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `"console_secret"`) {
			t.Errorf("%s %s with cookie %q: %d %s, want 403 console_secret", c.method, c.path, c.cookie, w.Code, w.Body)
		}
	}
	if reached != 0 {
		t.Fatalf("%d calls without the secret reached the deployment", reached)
	}
	if w := do("GET", "/api/admin/rooms", "s3cret"); w.Code != http.StatusOK || reached != 1 {
		t.Errorf("with the secret: %d, reached %d", w.Code, reached)
	}

	w := do("GET", "/?secret=s3cret&every=0.3", "")
	if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || loc != "/?every=0.3" {
		t.Errorf("the printed address: %d to %q, want 303 to /?every=0.3", w.Code, loc)
	}
	cks := w.Result().Cookies()
	if len(cks) != 1 || cks[0].Name != ConsoleCookie || cks[0].Value != "s3cret" || !cks[0].HttpOnly ||
		cks[0].SameSite != http.SameSiteStrictMode || cks[0].Path != "/" {
		t.Errorf("the cookie it sets: %+v", cks)
	}
	w = do("GET", "/?secret=guess", "")
	if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || loc != "/" || len(w.Result().Cookies()) != 0 {
		t.Errorf("a wrong secret: %d to %q, cookies %v", w.Code, loc, w.Result().Cookies())
	}
	if a, b := NewConsoleSecret(), NewConsoleSecret(); a == b || len(a) < 26 {
		t.Error("console secrets repeat or are short")
	}
}

// An unreachable endpoint says so, and what to check.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := &Client{Endpoint: url, Auth: BearerKey("k")}
	_, err := c.ListRooms(context.Background())
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "cannot reach") || e.Hint == "" {
		t.Fatalf("%v", err)
	}
}

// emptyFS is a file system with no files.
type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) { return nil, fs.ErrNotExist }

// A local stack's URL without an admin key, on a machine without AWS
// settings: the error asks for the admin key, not for an AWS region.
func TestLocalEndpointWantsAdminKey(t *testing.T) {
	awsEnv(t, "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	for _, ep := range []string{"http://localhost:9200", "http://127.0.0.1:8080/", "http://[::1]:8080"} {
		_, err := Connect(context.Background(), Target{Endpoint: ep})
		if err == nil || !strings.Contains(err.Error(), "pass --admin-key") || strings.Contains(err.Error(), "region") {
			t.Errorf("%s without a key: %v", ep, err)
		}
	}
}

// /console-settings.json is the settings table, row for row in its order,
// each with a control kind and the table's limits.
func TestConsoleSettingsAreTheTable(t *testing.T) {
	w := httptest.NewRecorder()
	ConsoleSettings(w, httptest.NewRequest("GET", ConsoleSettingsPath, nil))
	var got struct{ Settings []ConsoleSetting }
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("%d %v: %s", w.Code, err, w.Body)
	}
	rows := room.Settings()
	if len(got.Settings) != len(rows) {
		t.Fatalf("%d settings served, the table has %d", len(got.Settings), len(rows))
	}
	kinds := map[string]string{"oidcRedirectUris": "list", "maxActive": "number", "mode": "choice", "originUrl": "url", "opensAt": "time", "page": "page", "gate": "boolean"}
	for i, r := range rows {
		s := got.Settings[i]
		if s.Name != r.Name || s.Kind == "" || (kinds[r.Name] != "" && s.Kind != kinds[r.Name]) {
			t.Errorf("row %d: %+v for %s", i, s, r.Name)
		}
		if r.Numeric && (s.Min == nil || s.Max == nil || *s.Min != r.Min || *s.Max != r.Max) {
			t.Errorf("%s: range %v..%v, want %d..%d", r.Name, s.Min, s.Max, r.Min, r.Max)
		}
		if s.MaxLen != r.MaxLen || len(s.Parts) != len(r.Parts) {
			t.Errorf("%s: maxLength %d, %d parts; the table says %d, %d", r.Name, s.MaxLen, len(s.Parts), r.MaxLen, len(r.Parts))
		}
		for j, p := range r.Parts {
			if sp := s.Parts[j]; sp.Name != p.Name || sp.MaxLen != p.MaxLen || sp.Pattern != p.Pattern {
				t.Errorf("page.%s: %+v", p.Name, sp)
			}
		}
	}
}

// The console and the client take the body the route's own limit allows
// (routes.Route.BodyLimit), no more and no less: a body at the limit reaches
// the deployment, one byte over is refused before it is sent.
func TestBodyLimitIsTheRoutes(t *testing.T) {
	reached := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"room":"demo","config":{}}`)
	}))
	defer up.Close()
	c := &Client{Endpoint: up.URL, Auth: BearerKey("k")}
	h := Console(c, emptyFS{}, "s3cret")
	limit := routes.AdminPutRoom.BodyLimit()
	for _, n := range []int{limit, limit + 1} {
		req := httptest.NewRequest("PUT", "http://x/api/admin/rooms/demo", strings.NewReader(strings.Repeat(" ", n)))
		req.Host = "127.0.0.1:1"
		req.AddCookie(&http.Cookie{Name: ConsoleCookie, Value: "s3cret"})
		req.Header.Set(ConsoleHeader, "1")
		w := httptest.NewRecorder()
		before := reached
		h.ServeHTTP(w, req)
		if over := n > limit; over != (w.Code == http.StatusRequestEntityTooLarge) || over == (reached > before) {
			t.Errorf("console, a body of %d bytes (limit %d): %d, reached the deployment %v: %s", n, limit, w.Code, reached > before, w.Body)
		}
	}
	// the client refuses settings over the limit without sending them
	before := reached
	_, err := c.PutRoom(context.Background(), "demo", map[string]any{"pad": strings.Repeat("x", limit)})
	if err == nil || reached != before || !strings.Contains(err.Error(), "at most") {
		t.Errorf("client, settings over %d bytes: %v, reached the deployment %v", limit, err, reached != before)
	}
}
