package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/browsertest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// joinAs joins the stack's room as the visitor id given, through the
// engine the stack runs on (its Redis): the API picks ids at random, and a
// test needs one of a given shape.
func joinAs(t *testing.T, rdb redis.UniversalClient, id, visitor string) room.Place {
	t.Helper()
	p, err := roomdb.New(rdb).Join(context.Background(), id, visitor, room.JoinProof{})
	if err != nil {
		t.Fatalf("join %s as %s: %v", id, visitor, err)
	}
	return p
}

// A reference the page shows may start with "-" (a visitor id is base64url):
// visitors show and restore take it as printed, without "--", and a mistyped
// flag is said to be taken as an argument.
func TestVisitorReferenceStartingWithADash(t *testing.T) {
	s, rdb := stackRedis(t)
	id := newRoom(t, s, map[string]any{"mode": "paused"})
	ref := "-ujxphitQ0xWz8vKc5Ysdw"
	joinAs(t, rdb, id, ref)
	out, errs, code := vestibule(t, s, "visitors", "show", id, ref)
	if code != 0 || !strings.Contains(out, "waiting at place 1") || !strings.Contains(out, ref) {
		t.Fatalf("visitors show %s %s: %d %q %q", id, ref, code, out, errs)
	}
	// The same with the flags first, and with "--", which still works.
	if out, errs, code = vestibule(t, s, "--json", "visitors", "show", id, ref); code != 0 || !strings.Contains(out, `"state": "waiting"`) {
		t.Fatalf("--json visitors show: %d %q %q", code, out, errs)
	}
	var o, e testkit.Buffer
	if code := run(context.Background(), []string{"--endpoint", s.URL(), "--admin-key", adminKey, "visitors", "show", id, "--", ref}, &o, &e); code != 0 || !strings.Contains(o.String(), ref) {
		t.Fatalf("visitors show ROOM -- REF: %d %q %q", code, o.String(), e.String())
	}
	_, errs, code = vestibule(t, s, "visitors", "restore", id, ref, "--reson", "typo")
	if code != 2 || !strings.Contains(errs, "--reson") || !strings.Contains(errs, "taken as it is") {
		t.Fatalf("a mistyped flag: %d %q", code, errs)
	}
	// A flag the command has is still a flag, wherever it stands.
	if _, errs, code = vestibule(t, s, "visitors", "restore", "--reason", "phone died", id, ref); code != 1 || !strings.Contains(errs, "still waits") {
		t.Fatalf("restore of a waiting place: %d %q", code, errs)
	}
}

// An unknown reference is a visitor the route did not find, not a route the
// endpoint lacks: the command names the room and the reference, and says
// where the reference comes from.
func TestUnknownVisitorReference(t *testing.T) {
	s := stack(t)
	id := newRoom(t, s, nil)
	_, errs, code := vestibule(t, s, "visitors", "show", id, "NOPE")
	if code != 1 || strings.Contains(errs, "admin route") || strings.Contains(errs, "endpoint") ||
		!strings.Contains(errs, "room "+id+" has no visitor with the reference NOPE") || !strings.Contains(errs, "Your reference") {
		t.Fatalf("visitors show of an unknown reference: %d %q", code, errs)
	}
	_, errs, code = vestibule(t, s, "visitors", "restore", id, "NOPE", "--reason", "test")
	if code != 1 || strings.Contains(errs, "admin route") || !strings.Contains(errs, "has no visitor with the reference NOPE") {
		t.Fatalf("visitors restore of an unknown reference: %d %q", code, errs)
	}
}

// Before the opening a pre-queue's order is its draw, secret from everyone
// until then, support included: the lookup says prequeue, without a place.
func TestPrequeueLookupShowsNoPlace(t *testing.T) {
	s, rdb := stackRedis(t)
	opens := time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	id := newRoom(t, s, map[string]any{"opensAt": opens})
	for _, ref := range []string{"prequeue-a0123456789abc", "prequeue-b0123456789abc", "prequeue-c0123456789abc"} {
		joinAs(t, rdb, id, ref)
		out, errs, code := vestibule(t, s, "visitors", "show", id, ref)
		if code != 0 || !regexp.MustCompile(`(?m)^state\s+prequeue$`).MatchString(out) || strings.Contains(out, "place") {
			t.Fatalf("visitors show of a pre-queued visitor: %d %q %q", code, out, errs)
		}
		if out, _, _ = vestibule(t, s, "visitors", "show", id, ref, "--json"); strings.Contains(out, "position") {
			t.Fatalf("--json: %s", out)
		}
	}
}

// visitors show says what OPERATING.md promises of a visitor the queue has
// let go: an active one's admission and last poll, an evicted one's last
// poll. The stack's clock stands still but where the test moves it.
func TestVisitorsShowKeepsTheTrail(t *testing.T) {
	clock := testkit.FixedClock(time.Now().UTC().Truncate(time.Second))
	s, rdb := stackAtRedis(t, clock)
	id := newRoom(t, s, map[string]any{"mode": "paused", "maxActive": 1})
	t0 := clock.Now()
	in, out := "-ActiveVisitor0123456w", "EvictedVisitor0123456w"
	eng := roomdb.New(rdb, roomdb.WithClock(clock.Now))
	p, err := eng.Join(context.Background(), id, in, room.JoinProof{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Join(context.Background(), id, out, room.JoinProof{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Minute) // the evicted one is silent from its join on
	if _, err := eng.Poll(context.Background(), p.Ticket); err != nil {
		t.Fatal(err)
	}
	lastPoll := clock.Now()
	clock.Advance(time.Second)
	if code, m := admin(t, s, "PUT", id, map[string]any{"mode": "queue"}); code != 200 {
		t.Fatalf("resume: %d %v", code, m)
	}
	show := func(ref string) string {
		out, errs, code := vestibule(t, s, "visitors", "show", id, ref)
		if code != 0 {
			t.Fatalf("visitors show %s: %d %q", ref, code, errs)
		}
		return out
	}
	// line is the lookup's row of name, with its value.
	line := func(name, value string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + name + `\s+` + regexp.QuoteMeta(value) + `$`)
	}
	var shown string
	if !testkit.WaitFor(30*time.Second, func() bool { shown = show(in); return line("state", "admitted").MatchString(shown) }) {
		t.Fatalf("never admitted:\n%s", shown)
	}
	admittedAt := clock.Now()
	if _, err := eng.Consume(context.Background(), id, p.Ticket.Seq, s.OriginURL()+"/"); err != nil {
		t.Fatal(err)
	}
	local := func(at time.Time) string { return at.Local().Format("2006-01-02 15:04:05") }
	shown = show(in)
	for _, want := range []*regexp.Regexp{line("state", "active"), line("last poll", local(lastPoll)),
		line("admitted", local(admittedAt)), line("consumed", "yes")} {
		if !want.MatchString(shown) {
			t.Errorf("the active visitor's lookup lacks %s:\n%s", want, shown)
		}
	}
	shown = show(out)
	for _, want := range []*regexp.Regexp{line("state", "lost"), line("last poll", local(t0))} {
		if !want.MatchString(shown) {
			t.Errorf("the evicted visitor's lookup lacks %s:\n%s", want, shown)
		}
	}

	// The console's lookup shows the same: a time, not "–", for each.
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(startConsole(t, s)+"&every=0.3")); err != nil {
		t.Fatal(err)
	}
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, id)
	waitJS(t, ctx, card+` !== null`, 10*time.Second)
	browsertest.Eval[bool](t, ctx, card+`.querySelector('details.support').open = true`)
	for _, c := range []struct{ ref, state, want string }{
		{in, "active", `/ · last poll [^–]/.test(s) && / · admitted [^–]/.test(s)`},
		{out, "lost", `/ · last poll [^–]/.test(s)`},
	} {
		input := fmt.Sprintf(`[data-room=%q] [data-support="ref"]`, id)
		if err := chromedp.Do(ctx, chromedp.SetValue(input, c.ref),
			chromedp.Click(fmt.Sprintf(`[data-room=%q] .support-form button`, id))); err != nil {
			t.Fatal(err)
		}
		text := card + `.querySelector('[data-field="support"]').textContent`
		waitJS(t, ctx, card+`.dataset.support === "`+c.state+`" && `+text+`.startsWith("`+c.ref+`:")`, 10*time.Second)
		if !browsertest.Eval[bool](t, ctx, `(s => `+c.want+`)(`+text+`)`) {
			t.Errorf("the console's lookup of %s: %q", c.ref, browsertest.Eval[string](t, ctx, text))
		}
	}
}

// OPERATING.md's "Support lookup" shows what visitors show prints: its
// example has the command's rows, in order, and the section says what each
// row is.
func TestLookupDocMatchesTheCommand(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATING.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, _, _ := strings.Cut(string(doc)[strings.Index(string(doc), "## Support lookup"):], "\n## ")
	_, example, ok := strings.Cut(section, "vestibule visitors show spring-tour")
	example, _, _ = strings.Cut(example, "```")
	if !ok {
		t.Fatal(`no "vestibule visitors show" example in OPERATING.md's "Support lookup"`)
	}
	row := regexp.MustCompile(`(?m)^#? ?(\S+(?: \S+)?)  +\S`)
	names := func(s string) []string {
		var out []string
		for _, m := range row.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		return out
	}
	s, rdb := stackRedis(t)
	id := newRoom(t, s, map[string]any{"mode": "paused"})
	joinAs(t, rdb, id, "doc-visitor-0123456789")
	out, errs, code := vestibule(t, s, "visitors", "show", id, "doc-visitor-0123456789")
	if code != 0 {
		t.Fatalf("visitors show: %d %q", code, errs)
	}
	printed, documented := names(out), names(example)
	if strings.Join(printed, ",") != strings.Join(documented, ",") {
		t.Errorf("visitors show prints the rows %q; OPERATING.md's example shows %q", printed, documented)
	}
	for _, name := range printed[2:] { // room and visitor need no words
		if !strings.Contains(section, "- `"+name+"`:") {
			t.Errorf("OPERATING.md's \"Support lookup\" does not say what %q is", name)
		}
	}
}
