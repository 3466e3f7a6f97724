package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
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
)

// busServer speaks EventBridge's PutEvents, as the forwarder's SDK client
// reaches it through AWS_ENDPOINT_URL_EVENTBRIDGE; refuse makes it refuse
// every entry.
type busServer struct {
	mu     sync.Mutex
	calls  int
	put    []map[string]string
	refuse bool
}

func (s *busServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ Entries []map[string]string }
	b, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") ||
		json.Unmarshal(b, &in) != nil {
		http.Error(w, "not a signed PutEvents call", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	var results []string
	failed := 0
	for i, e := range in.Entries {
		if s.refuse {
			failed++
			results = append(results, `{"ErrorCode":"InternalFailure","ErrorMessage":"refused in the test"}`)
			continue
		}
		s.put = append(s.put, e)
		results = append(results, fmt.Sprintf(`{"EventId":"%d-%d"}`, s.calls, i))
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fmt.Fprintf(w, `{"FailedEntryCount":%d,"Entries":[%s]}`, failed, strings.Join(results, ","))
}

// The forwarder binary under the emulator: a CloudWatch Logs subscription
// event (testdata/events/forwarder-logs.json, the base64 gzipped awslogs
// payload of three event lines from the admit function's log group, each of
// a kind admit emits) becomes one PutEvents call of three entries on the
// configured bus. When the bus
// keeps refusing an entry, the invocation fails, so Lambda retries the batch.
func TestForwarderUnderEmulator(t *testing.T) {
	emulator := findRIE(t)
	bin := filepath.Join(t.TempDir(), "forwarder")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin, "./forwarder")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := &busServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			continue // no credentials or endpoints of the machine's
		}
		env = append(env, kv)
	}
	env = append(env, "AWS_REGION=eu-west-1", "AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=secret",
		"AWS_ENDPOINT_URL_EVENTBRIDGE="+hs.URL, "AWS_EC2_METADATA_DISABLED=true",
		"VESTIBULE_EVENT_BUS=arn:aws:events:eu-west-1:123456789012:event-bus/Vestibule-events",
		// As the stack sets it: each group with its function, whose kinds of event alone go on.
		"VESTIBULE_EVENT_LOG_GROUPS=admit=/aws/lambda/Vestibule-AdmitFunction,consume=/aws/lambda/Vestibule-ConsumeFunction")
	fwd := startLambda(t, emulator, bin, env)

	raw, err := os.ReadFile("../testdata/events/forwarder-logs.json")
	if err != nil {
		t.Fatal(err)
	}
	if out := fwd.invoke(t, raw); string(out) != "null" {
		t.Fatalf("forwarder answered %s", out)
	}
	srv.mu.Lock()
	calls, put := srv.calls, srv.put
	srv.mu.Unlock()
	if calls != 1 || len(put) != 3 {
		t.Fatalf("%d calls putting %d entries, want 1 call of 3", calls, len(put))
	}
	for i, want := range [][2]string{{"vestibule.admission", "admission.tick"}, {"vestibule.admission", "admission.tick"},
		{"vestibule.booking", "booking.order.confirmed"}} {
		e := put[i]
		if e["Source"] != want[0] || e["DetailType"] != want[1] || !strings.HasSuffix(e["EventBusName"], "event-bus/Vestibule-events") ||
			!json.Valid([]byte(e["Detail"])) {
			t.Errorf("entry %d: %v", i, e)
		}
	}
	if !strings.Contains(put[0]["Detail"], `"firstSeq":1795660415000001`) {
		t.Errorf("the tick's detail lost its fields: %s", put[0]["Detail"])
	}

	srv.mu.Lock()
	srv.refuse, srv.calls = true, 0
	srv.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := fwd.Invoke(ctx, raw)
	if err == nil {
		t.Fatalf("refused entries: the invocation succeeded with %s", out)
	}
	var fail struct{ ErrorMessage, ErrorType string }
	if json.Unmarshal(out, &fail) != nil || !strings.Contains(fail.ErrorMessage, "3 of 3 entries not put: InternalFailure×3") {
		t.Fatalf("refused entries: the forwarder answered %s, want an error naming them", out)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.calls != 4 {
		t.Errorf("%d PutEvents calls for a refused batch, want 4 (the first and three retries)", srv.calls)
	}
}
