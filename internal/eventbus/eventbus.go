// Package eventbus takes Vestibule's events downstream: admission events
// (package admission: tick summaries, entries consumed, sessions completed)
// and the booking kit's order events (package orders). Every event is an
// Entry, the fields of an EventBridge PutEvents entry, and goes out one of
// two ways:
//
//   - Log writes each entry as one JSON line. In AWS a function's stdout lands
//     in CloudWatch Logs; a subscription filter (FilterPattern) on the log
//     groups of the functions that emit events hands the lines to the
//     forwarder function (Bus.Forward, functions/forwarder), which runs
//     outside the VPC and puts them on the stack's bus. make dev prints the
//     same lines.
//   - Bus calls PutEvents directly: ten entries and at most 256 KiB per call,
//     entries that failed retried alone, what still fails reported. The call
//     itself is putevents.Client's, the one package here that links the
//     SDK's EventBridge client.
//
// Why the log path: the functions run in isolated subnets without a NAT, so
// PutEvents from them would need an EventBridge interface endpoint (about
// $15 a month for two zones, always on). The log path costs nothing while
// idle: a custom bus, a subscription filter and an idle function are free.
package eventbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// The sources of Vestibule's events. Sources lists them all; the forwarder
// forwards lines of these sources and nothing else.
const (
	SourceAdmission = "vestibule.admission" // admission.tick, admission.entry.consumed, admission.session.completed
	SourceBooking   = "vestibule.booking"   // booking.order.confirmed, booking.order.cancelled
)

// EnvBus is the forwarder function's one variable: the bus it puts events
// on (a name or an ARN). The functions in the VPC do not read it.
const EnvBus = "VESTIBULE_EVENT_BUS"

// EnvLogGroups is the forwarder's list of the log groups it takes events
// from, each with its function: comma-separated function=log-group pairs
// (ParseLogGroups). A subscription payload from any other group is logged
// and dropped, and so is an event of a kind the group's function does not
// emit (Emitters). Unset, every group's lines are taken.
const EnvLogGroups = "VESTIBULE_EVENT_LOG_GROUPS"

// Sources are every source the forwarder forwards.
func Sources() []string { return []string{SourceAdmission, SourceBooking} }

// FilterPattern is the CloudWatch Logs subscription filter pattern that
// matches the event lines Log writes, and no other line a function writes:
// its logger's JSON lines have no "source" field, and Lambda's own lines
// (START, END, REPORT) are not JSON.
func FilterPattern() string {
	var terms []string
	for _, s := range Sources() {
		terms = append(terms, fmt.Sprintf("($.source = %q)", s))
	}
	return "{ " + strings.Join(terms, " || ") + " }"
}

// Limits of one PutEvents call.
const (
	MaxEntries   = 10         // entries per call
	MaxCallBytes = 256 * 1024 // the summed size of a call's entries, as EntrySize counts it
)

// Entry is one event: the fields of a PutEvents entry, and one JSON line of Log.
type Entry struct {
	Source     string          `json:"source"`
	DetailType string          `json:"detail-type"`
	Detail     json.RawMessage `json:"detail"`
}

// NewEntry encodes detail (a struct that marshals to a JSON object).
func NewEntry(source, detailType string, detail any) (Entry, error) {
	b, err := json.Marshal(detail)
	if err != nil {
		return Entry{}, fmt.Errorf("eventbus: encoding %s: %w", detailType, err)
	}
	return Entry{Source: source, DetailType: detailType, Detail: b}, nil
}

// EntrySize is the size EventBridge counts against a call's 256 KiB: the
// UTF-8 bytes of source, detail-type and detail (no time, no resources).
func EntrySize(e Entry) int { return len(e.Source) + len(e.DetailType) + len(e.Detail) }

// Publisher takes entries downstream.
type Publisher interface {
	Publish(ctx context.Context, entries []Entry) error
}

// Log writes each entry as one JSON line to w. It is safe for concurrent
// use; a line is written by one Write call.
type Log struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLog returns the log publisher over w (os.Stdout in a function).
func NewLog(w io.Writer) *Log { return &Log{w: w} }

// Publish writes the entries, one line each.
func (l *Log) Publish(_ context.Context, entries []Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("eventbus: encoding %s: %w", e.DetailType, err)
		}
		if _, err := l.w.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("eventbus: writing %s: %w", e.DetailType, err)
		}
	}
	return nil
}

// Putter makes one PutEvents call: the batch's entries on bus. It returns
// how many entries failed and a result for each entry of the reply, in the
// order of the batch's, or the call's error.
// putevents.Client is EventBridge's; it lives in a package of its own so
// that a program writing events to its log (every function in the VPC)
// links no EventBridge client.
type Putter interface {
	PutEvents(ctx context.Context, bus string, batch []Entry) (failed int, results []Result, err error)
}

// Result is what PutEvents answered for one entry: Failed when the reply
// gave it an ErrorCode, with that code and its ErrorMessage.
type Result struct {
	Failed        bool
	Code, Message string
}

// Bus puts entries on an EventBridge bus.
type Bus struct {
	api      Putter
	bus      string
	attempts int
	backoff  func(retry int) time.Duration
	log      *slog.Logger
	groups   map[string]string // the log groups Forward takes events from, with their functions; nil: any
}

// BusOption changes a Bus.
type BusOption func(*Bus)

// WithAttempts sets how many times an entry is put before it is reported as
// failed (default 4: the first try and three retries of what failed).
func WithAttempts(n int) BusOption { return func(b *Bus) { b.attempts = max(1, n) } }

// WithBackoff sets the wait before retry n (1, 2, …) of the failed entries;
// the default is 100 ms × 2^(n−1). Tests use no wait.
func WithBackoff(f func(retry int) time.Duration) BusOption { return func(b *Bus) { b.backoff = f } }

// WithLogger sets where the forwarder reports what it skipped or could not put.
func WithLogger(l *slog.Logger) BusOption { return func(b *Bus) { b.log = l } }

// WithLogGroups sets the log groups Forward takes events from, each with the
// function that writes it (ParseLogGroups reads them from EnvLogGroups): a
// payload from any other group is logged and dropped (no function may write
// another's log group, and no other group carries events), and so is an
// event of a kind its group's function does not emit (Emitters). None: any
// group, any kind.
func WithLogGroups(functionOf map[string]string) BusOption {
	return func(b *Bus) {
		if len(functionOf) > 0 {
			b.groups = maps.Clone(functionOf)
		}
	}
}

// NewBus returns the publisher putting entries on bus (a name or an ARN)
// through api (putevents.Client).
func NewBus(api Putter, bus string, opts ...BusOption) *Bus {
	b := &Bus{api: api, bus: bus, attempts: 4,
		backoff: func(n int) time.Duration { return 100 * time.Millisecond << (n - 1) },
		log:     slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Failure is an entry PutEvents did not take.
type Failure struct {
	Entry   Entry
	Code    string // PutEvents' ErrorCode, or TooLarge
	Message string
}

// TooLarge is the Failure code of an entry that can never be put: larger
// alone than a call may be.
const TooLarge = "TooLarge"

// PutError reports the entries that were not put after every attempt; the
// others were.
type PutError struct {
	Failed []Failure
	Total  int
}

func (e *PutError) Error() string {
	codes := map[string]int{}
	for _, f := range e.Failed {
		codes[f.Code]++
	}
	var parts []string
	for c, n := range codes {
		parts = append(parts, fmt.Sprintf("%s×%d", c, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("eventbus: %d of %d entries not put: %s", len(e.Failed), e.Total, strings.Join(parts, ", "))
}

// Batches splits entries into PutEvents calls: at most MaxEntries each and
// MaxCallBytes in all, in order. An entry larger alone than MaxCallBytes is
// in no batch; it is returned in tooLarge.
func Batches(entries []Entry) (batches [][]Entry, tooLarge []Entry) {
	var cur []Entry
	size := 0
	for _, e := range entries {
		n := EntrySize(e)
		if n > MaxCallBytes {
			tooLarge = append(tooLarge, e)
			continue
		}
		if len(cur) == MaxEntries || size+n > MaxCallBytes {
			batches = append(batches, cur)
			cur, size = nil, 0
		}
		cur = append(cur, e)
		size += n
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches, tooLarge
}

// Publish puts the entries in batches (Batches). Entries PutEvents refuses
// are put again, alone of their batch, up to the attempts; a failed call
// (network, throttling the SDK gave up on) counts as every entry of it
// failing. It returns nil when every entry was put, else a *PutError naming
// what was not: everything else was put once.
func (b *Bus) Publish(ctx context.Context, entries []Entry) error {
	batches, big := Batches(entries)
	var failed []Failure
	for _, e := range big {
		failed = append(failed, Failure{Entry: e, Code: TooLarge,
			Message: fmt.Sprintf("%d bytes, more than a PutEvents call takes (%d)", EntrySize(e), MaxCallBytes)})
	}
	for _, batch := range batches {
		failed = append(failed, b.putBatch(ctx, batch)...)
	}
	if len(failed) > 0 {
		return &PutError{Failed: failed, Total: len(entries)}
	}
	return nil
}

// putBatch puts one batch, retrying the entries that failed; it returns those
// that failed on the last attempt.
func (b *Bus) putBatch(ctx context.Context, batch []Entry) []Failure {
	pending := batch
	var failed []Failure
	for attempt := 1; attempt <= b.attempts && len(pending) > 0; attempt++ {
		if attempt > 1 {
			if d := b.backoff(attempt - 1); d > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(d):
				}
			}
			if ctx.Err() != nil {
				break
			}
		}
		failed = b.putOnce(ctx, pending)
		pending = pending[:0:0]
		for _, f := range failed {
			pending = append(pending, f.Entry)
		}
	}
	return failed
}

func (b *Bus) putOnce(ctx context.Context, batch []Entry) []Failure {
	all := func(code, msg string) []Failure {
		out := make([]Failure, len(batch))
		for i, e := range batch {
			out[i] = Failure{Entry: e, Code: code, Message: msg}
		}
		return out
	}
	failedCount, results, err := b.api.PutEvents(ctx, b.bus, batch)
	if err != nil {
		return all("CallFailed", err.Error())
	}
	if failedCount == 0 {
		return nil
	}
	// The results are in the order of the request's entries; one with an
	// ErrorCode failed. A reply that does not line up fails the whole batch.
	if len(results) != len(batch) {
		return all("BadReply", fmt.Sprintf("%d results for %d entries", len(results), len(batch)))
	}
	var failed []Failure
	for i, r := range results {
		if r.Failed {
			failed = append(failed, Failure{Entry: batch[i], Code: r.Code, Message: r.Message})
		}
	}
	return failed
}

// ParseLine reads one log line as an entry of a known source, or reports
// why it is not one.
func ParseLine(line string) (Entry, error) {
	var e Entry
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		return Entry{}, fmt.Errorf("not a JSON entry: %w", err)
	}
	known := false
	for _, s := range Sources() {
		known = known || e.Source == s
	}
	switch {
	case !known:
		return Entry{}, fmt.Errorf("source %q is not one of Vestibule's", e.Source)
	case e.DetailType == "":
		return Entry{}, errors.New("no detail-type")
	case len(e.Detail) == 0 || e.Detail[0] != '{':
		return Entry{}, errors.New("detail is not a JSON object")
	}
	return e, nil
}

// Forward is the forwarder function's handler: a CloudWatch Logs
// subscription delivers a batch of the event lines (FilterPattern), and it
// puts them on the bus. Lines that are not entries of a known source (the
// filter should not have sent them) and entries too large ever to be put are
// logged and skipped: retrying would not help. Entries PutEvents refused
// after every attempt fail the invocation, so Lambda retries the whole
// batch (asynchronous invocation: twice): delivery is at least once, and
// the entries of that batch that did go go again. Consumers dedupe on each
// event's key (docs/API.md, "Events").
func (b *Bus) Forward(ctx context.Context, ev events.CloudwatchLogsEvent) error {
	data, err := ev.AWSLogs.Parse()
	if err != nil {
		return fmt.Errorf("eventbus: subscription payload: %w", err)
	}
	if data.MessageType == "CONTROL_MESSAGE" {
		return nil // CloudWatch Logs checking that it can reach the function
	}
	fn, known := b.groups[data.LogGroup]
	if b.groups != nil && !known {
		// Not retried: the same payload would be refused again.
		b.log.LogAttrs(ctx, slog.LevelError, "forwarder: dropped events from a log group it does not take",
			slog.String("log_group", data.LogGroup), slog.Int("lines", len(data.LogEvents)))
		return nil
	}
	var entries []Entry
	for _, l := range data.LogEvents {
		e, err := ParseLine(l.Message)
		if err == nil && known && !emits(fn, KindOf(e)) {
			// Not retried either: no function writes another's log group, so
			// a flaw of fn's wrote this line, not its emitter.
			b.log.LogAttrs(ctx, slog.LevelError, "forwarder: dropped an event its log group's function does not emit",
				slog.String("log_group", data.LogGroup), slog.String("function", fn), slog.String("id", l.ID),
				slog.String("source", e.Source), slog.String("detail_type", e.DetailType))
			continue
		}
		if err != nil {
			b.log.LogAttrs(ctx, slog.LevelWarn, "forwarder: skipped a line", slog.String("log_group", data.LogGroup),
				slog.String("id", l.ID), slog.String("why", err.Error()))
			continue
		}
		entries = append(entries, e)
	}
	err = b.Publish(ctx, entries)
	var pe *PutError
	if !errors.As(err, &pe) {
		if err == nil {
			b.log.LogAttrs(ctx, slog.LevelInfo, "forwarded", slog.String("log_group", data.LogGroup), slog.Int("entries", len(entries)))
		}
		return err
	}
	retry := 0
	for _, f := range pe.Failed {
		b.log.LogAttrs(ctx, slog.LevelError, "forwarder: not put", slog.String("log_group", data.LogGroup),
			slog.String("detail_type", f.Entry.DetailType), slog.String("code", f.Code), slog.String("message", f.Message))
		if f.Code != TooLarge {
			retry++
		}
	}
	if retry == 0 {
		return nil
	}
	return err
}
