package eventbus_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/eventbus/putevents"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// putEventsServer speaks EventBridge's PutEvents (JSON 1.1 over HTTP) and
// records what it was sent. fail decides, per entry, the error code to
// answer ("" puts it); status, when set, answers the whole call with it.
type putEventsServer struct {
	mu     sync.Mutex
	calls  [][]sentEntry
	put    []sentEntry
	fail   func(e sentEntry, call int) string
	status int
}

type sentEntry struct {
	Source       string
	DetailType   string
	Detail       string
	EventBusName string
}

func (s *putEventsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		http.Error(w, "not a signed PutEvents call", http.StatusBadRequest)
		return
	}
	var in struct{ Entries []sentEntry }
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	call := len(s.calls)
	s.calls = append(s.calls, in.Entries)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if s.status != 0 {
		w.WriteHeader(s.status)
		fmt.Fprint(w, `{"__type":"InternalException","message":"try again"}`)
		return
	}
	type result struct {
		EventId      string `json:",omitempty"`
		ErrorCode    string `json:",omitempty"`
		ErrorMessage string `json:",omitempty"`
	}
	out := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	for i, e := range in.Entries {
		code := ""
		if s.fail != nil {
			code = s.fail(e, call)
		}
		if code != "" {
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: code, ErrorMessage: "refused in the test"})
			continue
		}
		s.put = append(s.put, e)
		out.Entries = append(out.Entries, result{EventId: fmt.Sprintf("id-%d-%d", call, i)})
	}
	json.NewEncoder(w).Encode(out)
}

func newBus(t *testing.T, srv *putEventsServer, opts ...eventbus.BusOption) *eventbus.Bus {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	client := eventbridge.New(eventbridge.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(hs.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 1, // the SDK's own retries off: the test counts calls
	})
	return eventbus.NewBus(putevents.Client(client), "vestibule-events", append([]eventbus.BusOption{eventbus.WithBackoff(func(int) time.Duration { return 0 })}, opts...)...)
}

func entry(t *testing.T, i int, pad int) eventbus.Entry {
	t.Helper()
	e, err := eventbus.NewEntry(eventbus.SourceAdmission, "admission.tick", map[string]any{"room": "r", "n": i, "pad": strings.Repeat("x", pad)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func n(t *testing.T, e sentEntry) int {
	t.Helper()
	var d struct{ N int }
	if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
		t.Fatal(err)
	}
	return d.N
}

// Calls carry at most ten entries and 256 KiB; every entry is put once, in order.
func TestPublishBatches(t *testing.T) {
	srv := &putEventsServer{}
	bus := newBus(t, srv)
	var entries []eventbus.Entry
	for i := range 23 {
		entries = append(entries, entry(t, i, 10))
	}
	// Three entries of 100 KiB: two fit in one call, the third starts the next.
	for i := 23; i < 26; i++ {
		entries = append(entries, entry(t, i, 100*1024))
	}
	if err := bus.Publish(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, c := range srv.calls {
		sizes = append(sizes, len(c))
		total := 0
		for _, e := range c {
			total += len(e.Source) + len(e.DetailType) + len(e.Detail)
		}
		if total > eventbus.MaxCallBytes {
			t.Errorf("a call of %d bytes", total)
		}
	}
	if fmt.Sprint(sizes) != "[10 10 5 1]" {
		t.Errorf("calls of %v entries, want [10 10 5 1]", sizes)
	}
	if len(srv.put) != 26 {
		t.Fatalf("%d entries put, want 26", len(srv.put))
	}
	for i, e := range srv.put {
		if n(t, e) != i || e.EventBusName != "vestibule-events" || e.Source != eventbus.SourceAdmission || e.DetailType != "admission.tick" {
			t.Fatalf("entry %d put as %+v", i, e)
		}
	}
}

// Entries PutEvents refuses are put again alone; those that went are not sent twice.
func TestPublishRetriesOnlyFailedEntries(t *testing.T) {
	srv := &putEventsServer{fail: func(e sentEntry, call int) string {
		if call == 0 && strings.Contains(e.Detail, `"n":3,`) || call < 2 && strings.Contains(e.Detail, `"n":7,`) {
			return "ThrottlingException"
		}
		return ""
	}}
	bus := newBus(t, srv)
	var entries []eventbus.Entry
	for i := range 10 {
		entries = append(entries, entry(t, i, 1))
	}
	if err := bus.Publish(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	if len(srv.calls) != 3 || len(srv.calls[1]) != 2 || len(srv.calls[2]) != 1 || n(t, srv.calls[2][0]) != 7 {
		t.Fatalf("calls %+v: want 10 entries, then the 2 refused, then the 1 still refused", srv.calls)
	}
	seen := map[int]int{}
	for _, e := range srv.put {
		seen[n(t, e)]++
	}
	for i := range 10 {
		if seen[i] != 1 {
			t.Errorf("entry %d put %d times", i, seen[i])
		}
	}
}

// An entry refused on every attempt is reported with its code; the others went once.
func TestPublishReportsWhatStillFails(t *testing.T) {
	srv := &putEventsServer{fail: func(e sentEntry, _ int) string {
		if strings.Contains(e.Detail, `"n":1,`) {
			return "InternalFailure"
		}
		return ""
	}}
	bus := newBus(t, srv, eventbus.WithAttempts(3))
	err := bus.Publish(context.Background(), []eventbus.Entry{entry(t, 0, 1), entry(t, 1, 1), entry(t, 2, 1), entry(t, 3, 300*1024)})
	var pe *eventbus.PutError
	if !errors.As(err, &pe) || len(pe.Failed) != 2 || pe.Total != 4 {
		t.Fatalf("error %v, want 2 of 4 not put", err)
	}
	if !strings.Contains(err.Error(), "InternalFailure×1") || !strings.Contains(err.Error(), eventbus.TooLarge+"×1") {
		t.Errorf("error %q names neither code", err)
	}
	if len(srv.calls) != 3 || len(srv.put) != 2 {
		t.Errorf("%d calls, %d put: want 3 attempts and the 2 good entries put once", len(srv.calls), len(srv.put))
	}
}

// A failed call (the service answers 500) fails every entry of it.
func TestPublishCallFails(t *testing.T) {
	srv := &putEventsServer{status: http.StatusInternalServerError}
	bus := newBus(t, srv, eventbus.WithAttempts(2))
	err := bus.Publish(context.Background(), []eventbus.Entry{entry(t, 0, 1)})
	var pe *eventbus.PutError
	if !errors.As(err, &pe) || len(pe.Failed) != 1 || pe.Failed[0].Code != "CallFailed" || len(srv.calls) != 2 {
		t.Fatalf("error %v after %d calls", err, len(srv.calls))
	}
}

// subscription is a CloudWatch Logs subscription event: the batch gzipped
// and base64-encoded, as Lambda receives it.
func subscription(t *testing.T, data events.CloudwatchLogsData) events.CloudwatchLogsEvent {
	t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(raw)
	w.Close()
	return events.CloudwatchLogsEvent{AWSLogs: events.CloudwatchLogsRawData{Data: base64.StdEncoding.EncodeToString(gz.Bytes())}}
}

// The forwarder puts the event lines of a subscription batch on the bus and
// skips every other line.
func TestForward(t *testing.T) {
	var lines bytes.Buffer
	log := eventbus.NewLog(&lines)
	order, _ := eventbus.NewEntry(eventbus.SourceBooking, "booking.order.confirmed", map[string]any{"event": "concert", "order": "1"})
	if err := log.Publish(context.Background(), []eventbus.Entry{entry(t, 0, 1), order}); err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimSpace(lines.String()), "\n")
	data := events.CloudwatchLogsData{MessageType: "DATA_MESSAGE", LogGroup: "/aws/lambda/admit", LogEvents: []events.CloudwatchLogsLogEvent{
		{ID: "1", Message: `{"time":"2026-11-26T09:26:07Z","level":"INFO","msg":"admit","ticks":3}`},
		{ID: "2", Message: ls[0] + "\n"},
		{ID: "3", Message: "not json"},
		{ID: "4", Message: `{"source":"vestibule.elsewhere","detail-type":"x","detail":{}}`},
		{ID: "5", Message: `{"source":"vestibule.admission","detail-type":"admission.tick","detail":[1]}`},
		{ID: "6", Message: ls[1]},
	}}
	srv := &putEventsServer{}
	bus := newBus(t, srv)
	if err := bus.Forward(context.Background(), subscription(t, data)); err != nil {
		t.Fatal(err)
	}
	if len(srv.calls) != 1 || len(srv.put) != 2 || srv.put[0].DetailType != "admission.tick" || srv.put[1].Source != eventbus.SourceBooking {
		t.Fatalf("put %+v", srv.put)
	}
	// A control message (CloudWatch Logs checking the destination) puts nothing.
	if err := bus.Forward(context.Background(), subscription(t, events.CloudwatchLogsData{MessageType: "CONTROL_MESSAGE",
		LogEvents: []events.CloudwatchLogsLogEvent{{ID: "1", Message: "CWL CONTROL MESSAGE: Checking health of destination Lambda."}}})); err != nil || len(srv.calls) != 1 {
		t.Fatalf("control message: %v, %d calls", err, len(srv.calls))
	}
	if err := bus.Forward(context.Background(), events.CloudwatchLogsEvent{}); err == nil {
		t.Fatal("an unreadable payload is no error")
	}
}

// A forwarder given its log groups drops a payload from any other group:
// events are taken only from where the functions that emit them write.
func TestForwardTakesOnlyItsLogGroups(t *testing.T) {
	line, _ := json.Marshal(entry(t, 0, 1))
	payload := func(group string) events.CloudwatchLogsEvent {
		return subscription(t, events.CloudwatchLogsData{MessageType: "DATA_MESSAGE", LogGroup: group,
			LogEvents: []events.CloudwatchLogsLogEvent{{ID: "1", Message: string(line)}}})
	}
	srv := &putEventsServer{}
	groups, err := eventbus.ParseLogGroups("admit=/vst/admit, enqueue=/vst/enqueue,")
	if err != nil {
		t.Fatal(err)
	}
	bus := newBus(t, srv, eventbus.WithLogGroups(groups))
	if err := bus.Forward(context.Background(), payload("/vst/status")); err != nil || len(srv.put) != 0 {
		t.Fatalf("from another group: %v, put %+v; want nothing put and no retry", err, srv.put)
	}
	if err := bus.Forward(context.Background(), payload("/vst/enqueue")); err != nil || len(srv.put) != 1 {
		t.Fatalf("from its group: %v, put %+v; want the entry put", err, srv.put)
	}
}

// TestForwardTakesOnlyTheKindsOfItsGroupsFunction: of a log group it takes,
// the forwarder puts only the kinds of event the group's function emits, so
// a flaw in one function (a line it writes that looks like an event) forges
// none of another's: an order confirmed from the enqueue function's group,
// an entry consumed from the booking function's. Before, any event of any
// subscribed group went on the bus.
func TestForwardTakesOnlyTheKindsOfItsGroupsFunction(t *testing.T) {
	line := func(source, detailType string) events.CloudwatchLogsLogEvent {
		e, err := eventbus.NewEntry(source, detailType, map[string]any{"room": "r"})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(e)
		return events.CloudwatchLogsLogEvent{ID: detailType, Message: string(b)}
	}
	groups, err := eventbus.ParseLogGroups("enqueue=/vst/enqueue,booking=/vst/booking,consume=/vst/consume")
	if err != nil {
		t.Fatal(err)
	}
	srv := &putEventsServer{}
	var logs testkit.Buffer
	bus := newBus(t, srv, eventbus.WithLogGroups(groups), eventbus.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	for group, lines := range map[string][]events.CloudwatchLogsLogEvent{
		"/vst/enqueue": {line(eventbus.SourceAdmission, eventbus.TypeTick), line(eventbus.SourceBooking, "booking.order.confirmed")},
		"/vst/booking": {line(eventbus.SourceAdmission, eventbus.TypeConsumed), line(eventbus.SourceBooking, "booking.order.confirmed")},
		"/vst/consume": {line(eventbus.SourceAdmission, eventbus.TypeTick), line(eventbus.SourceAdmission, eventbus.TypeCompleted)},
	} {
		data := events.CloudwatchLogsData{MessageType: "DATA_MESSAGE", LogGroup: group, LogEvents: lines}
		if err := bus.Forward(context.Background(), subscription(t, data)); err != nil {
			t.Fatalf("%s: %v (a forged line is no reason to retry the batch)", group, err)
		}
	}
	var put []string
	for _, e := range srv.put {
		put = append(put, e.DetailType)
	}
	slices.Sort(put)
	if want := []string{eventbus.TypeTick, eventbus.TypeCompleted, "booking.order.confirmed"}; !slices.Equal(put, slices.Sorted(slices.Values(want))) {
		t.Fatalf("put %v, want only %v: each from a function that emits it", put, want)
	}
	if n := strings.Count(logs.String(), "forwarder: dropped an event its log group's function does not emit"); n != 3 {
		t.Fatalf("%d drops logged, want 3:\n%s", n, logs.String())
	}
}

// Every function of the stack that emits events is in Emitters once, and
// the forwarder's variable names each with its log group.
func TestParseLogGroups(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range eventbus.Emitters() {
		if seen[e.Function] || len(e.Kinds) == 0 {
			t.Errorf("emitter %s twice, or with no kind", e.Function)
		}
		seen[e.Function] = true
	}
	if got, err := eventbus.ParseLogGroups(""); err != nil || len(got) != 0 {
		t.Errorf("unset: %v %v", got, err)
	}
	for _, bad := range []string{"/vst/admit", "status=/vst/status", "admit=", "admit=/g,poll=/g"} {
		if _, err := eventbus.ParseLogGroups(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Entries still refused fail the invocation, so Lambda retries the batch;
// an entry that can never be put does not.
func TestForwardFailsTheBatchOnlyForRetryableFailures(t *testing.T) {
	srv := &putEventsServer{fail: func(sentEntry, int) string { return "InternalFailure" }}
	bus := newBus(t, srv, eventbus.WithAttempts(2))
	line, _ := json.Marshal(entry(t, 0, 1))
	data := events.CloudwatchLogsData{MessageType: "DATA_MESSAGE", LogGroup: "g", LogEvents: []events.CloudwatchLogsLogEvent{{ID: "1", Message: string(line)}}}
	if err := bus.Forward(context.Background(), subscription(t, data)); err == nil {
		t.Fatal("a refused entry is no error: Lambda would not retry the batch")
	}
	big, _ := json.Marshal(entry(t, 1, 300*1024))
	data.LogEvents = []events.CloudwatchLogsLogEvent{{ID: "2", Message: string(big)}}
	calls := len(srv.calls)
	if err := bus.Forward(context.Background(), subscription(t, data)); err != nil || len(srv.calls) != calls {
		t.Fatalf("an entry too large to put: %v after %d calls; want it skipped and reported", err, len(srv.calls)-calls)
	}
}

// The filter pattern names every source, and only the lines Log writes have
// a source field.
func TestFilterPattern(t *testing.T) {
	p := eventbus.FilterPattern()
	if p != `{ ($.source = "vestibule.admission") || ($.source = "vestibule.booking") }` {
		t.Errorf("pattern %s", p)
	}
}
