package static

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/cadence"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestWatch runs the unit tests of js/watch.js (js/watch.test.js: what a
// status answer changes on the waiting page) under node's test runner, with
// the cadence's rule and some of its read intervals as the server knows them
// (internal/cadence, which the simulator and the quotas count by): a page
// whose constants drift from them fails.
func TestWatch(t *testing.T) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	type read struct{ Remaining, U, Want float64 }
	var reads []read
	for _, r := range []time.Duration{0, 30 * time.Second, 5 * time.Minute, 11 * time.Minute, 3 * time.Hour} {
		for _, u := range []float64{0, 0.5, 0.9} {
			reads = append(reads, read{ms(r), u, ms(cadence.ReadInterval(r, u))})
		}
	}
	b, err := json.Marshal(map[string]any{
		"SHOWN_FLOOR_MS": ms(cadence.ShownFloor), "SHOWN_SHARE": cadence.ShownShare,
		"SHOWN_CAP_MS": ms(cadence.ShownCap), "WAIT_TRUST": cadence.WaitTrust,
		"READ_MARGIN_MS": ms(cadence.ReadMargin), "READ_SPREAD_MS": ms(cadence.ReadSpread),
		"reads": reads,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CADENCE", string(b))
	nodeTest(t, "watch.test.js", "watch.js", "estimate.js")
}

// TestEstimate runs the unit tests of js/estimate.js (js/estimate.test.js:
// the place and the line's count between polls).
func TestEstimate(t *testing.T) {
	nodeTest(t, "estimate.test.js", "estimate.js")
}

// TestDraw runs the unit tests of js/draw.js (js/draw.test.js: the draw and
// the commitment the page computes, and its check of the lottery) against
// the server's own formula: room.DrawOf and room.DrawCommitment.
func TestDraw(t *testing.T) {
	seed, visitor := "3f9c1e0a7b6d5c4e3f2a1b0c9d8e7f60", "hG3k2cQ_visitor-id0123"
	t.Setenv("DRAW_SEED", seed)
	t.Setenv("DRAW_VISITOR", visitor)
	t.Setenv("DRAW_WANT", strconv.FormatFloat(room.DrawOf(seed, visitor), 'g', -1, 64))
	t.Setenv("DRAW_COMMITMENT", room.DrawCommitment(seed))
	nodeTest(t, "draw.test.js", "draw.js")
}

// TestI18n runs the unit tests of js/i18n.js (js/i18n.test.js: every text
// translated in every language with its placeholders, how a language is
// chosen, the direction) and of brand.js's choice of a room's text.
func TestI18n(t *testing.T) {
	nodeTest(t, "i18n.test.js", "i18n.js", "brand.js")
}

// nodeTest runs js/<test> under node's test runner, with the modules it
// imports. The modules are ES modules: they are copied beside a package.json
// that says so, as the page's sources need no package.json of their own.
// Skipped without node, except in CI, where `make test` installs it (esbuild
// needs it).
func nodeTest(t *testing.T, test string, modules ...string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.Missing(t, "node (to run js/"+test+")", "install node (make deps-esbuild needs it too)")
	}
	// The modules in <tmp>/js, the language tables in <tmp>/lang, as in static/.
	root := t.TempDir()
	dir := filepath.Join(root, "js")
	if err := os.CopyFS(filepath.Join(root, "lang"), os.DirFS("lang")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"package.json": `{"type": "module"}`}
	for _, name := range append([]string{test}, modules...) {
		b, err := os.ReadFile(filepath.Join("js", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(node, "--test", "--test-reporter=tap", filepath.Join(dir, test)).CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	// THEN every test ran and passed (a file whose tests were all skipped, or
	// that defined none, would exit 0 too).
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindSubmatch(out)
	fail := regexp.MustCompile(`(?m)^# fail (\d+)$`).FindSubmatch(out)
	if pass == nil || string(pass[1]) == "0" || fail == nil || string(fail[1]) != "0" {
		t.Fatalf("node --test did not pass every test:\n%s", out)
	}
	t.Logf("js/%s: %s tests pass", test, pass[1])
}

// TestNoticeTexts runs the unit tests of js/notice.js (js/notice.test.js:
// the notices' texts in every language with their placeholders; the email
// form, what the page keeps, and a notice lost with Redis asked again).
func TestNoticeTexts(t *testing.T) {
	nodeTest(t, "notice.test.js", "notice.js", "i18n.js", "api.js", "ticket.js")
}
