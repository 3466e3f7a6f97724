package localstack_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// make dev prints the admission events as the functions write them: a tick
// that admitted the visitor, the consume and the complete of the origin.
func TestStackAdmissionEvents(t *testing.T) {
	static := t.TempDir()
	os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644)
	out := &testkit.Buffer{}
	s, err := localstack.Start(context.Background(), localstack.Options{
		StaticDir: static, KeyDir: t.TempDir(), TickInterval: 50 * time.Millisecond, Events: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code, _, e := testkit.CallJSON(t, "POST", s.URL()+"/api/rooms/demo-api/enqueue", "", "")
	ticket, _ := e["ticket"].(string)
	if code != 200 || ticket == "" {
		t.Fatalf("enqueue: %d %v", code, e)
	}
	var tok string
	for range 50 {
		time.Sleep(pollpolicy.MinInterval)
		if _, _, p := testkit.CallJSON(t, "GET", s.URL()+"/api/rooms/demo-api/poll", ticket, ""); p["entryToken"] != nil {
			tok = p["entryToken"].(string)
			break
		}
	}
	if tok == "" {
		t.Fatal("not admitted")
	}
	body := `{"token":"` + tok + `"}`
	if code, _, r := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/session", "", body); code != 200 {
		t.Fatalf("origin session: %d %v", code, r)
	}
	if code, _, r := testkit.CallJSON(t, "POST", s.ManualOriginURL()+"/complete", "", body); code != 200 {
		t.Fatalf("complete: %d %v", code, r)
	}

	// The tick's event is written by the loop after its script returns, so a
	// visitor can see the grant, consume and complete before it is out: the
	// test waits for it, with a deadline.
	var tick roomevents.TickEvent
	var consumed roomevents.ConsumedEvent
	var completed roomevents.CompletedEvent
	read := func() {
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			en, err := eventbus.ParseLine(line)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			switch en.DetailType {
			case roomevents.TypeTick:
				var d roomevents.TickEvent
				json.Unmarshal(en.Detail, &d)
				if d.Room == "demo-api" && d.Admitted > 0 {
					tick = d
				}
			case roomevents.TypeConsumed:
				json.Unmarshal(en.Detail, &consumed)
			case roomevents.TypeCompleted:
				json.Unmarshal(en.Detail, &completed)
			}
		}
	}
	testkit.WaitFor(10*time.Second, func() bool {
		read()
		return tick.Admitted > 0 && completed.Room != ""
	})
	if tick.Admitted != 1 || tick.FirstSeq == 0 || tick.FirstSeq != tick.LastSeq {
		t.Fatalf("no tick event admitting the visitor in:\n%s", out)
	}
	if consumed.Room != "demo-api" || consumed.Seq != tick.FirstSeq || completed.Room != "demo-api" || completed.Seq != tick.FirstSeq {
		t.Fatalf("consume %+v, complete %+v of seq %d in:\n%s", consumed, completed, tick.FirstSeq, out)
	}
}
