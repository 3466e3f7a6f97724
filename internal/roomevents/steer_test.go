package roomevents_test

import (
	"context"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/eventbus"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/roomevents"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// The room's own changes are events and audit entries made by the room
// itself: the net's switch (on for a full room, off after the calm spell) and
// each back-off of the pace the origin's load leads.
func TestSteeringIsAuditedAndEmitted(t *testing.T) {
	clk := testkit.FixedClock(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	rdb := redistest.Single(t)
	eng := roomdb.New(rdb, roomdb.WithClock(clk.Now))
	out := &lines{t: t}
	em := roomevents.Emit(eng, eventbus.NewLog(&out.buf), clk.Now, nil)
	ctx := context.Background()
	cfg := room.DefaultConfig()
	cfg.OriginURL, cfg.Mode, cfg.MaxActive, cfg.CalmSeconds = "https://origin.example/", room.ModeAuto, 1, 10
	cfg.AdmitPerMinute, cfg.AdmitPerMinuteMin = 600, 60
	id := redistest.Room(t)
	if _, err := eng.PutConfig(ctx, id, cfg); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	for _, v := range []string{"a", "b"} {
		if _, err := em.Join(ctx, id, v, room.JoinProof{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := em.ReportLoad(ctx, id, 0.95); err != nil {
		t.Fatal(err)
	}
	if _, err := em.Tick(ctx, id); err != nil {
		t.Fatal(err)
	}
	var nets []roomevents.NetEvent
	var paces []roomevents.PaceEvent
	for _, en := range out.next() {
		switch en.DetailType {
		case roomevents.TypeNet:
			nets = append(nets, detail[roomevents.NetEvent](t, en, roomevents.TypeNet))
		case roomevents.TypePace:
			paces = append(paces, detail[roomevents.PaceEvent](t, en, roomevents.TypePace))
		}
	}
	if len(nets) != 1 || !nets[0].On || nets[0].Why != "full" || !nets[0].At.Equal(clk.Now()) {
		t.Errorf("net events %+v, want one: on for full at %v", nets, clk.Now())
	}
	if len(paces) != 1 || paces[0].Why != "backoff" || paces[0].FromPerMinute != 600 || paces[0].ToPerMinute != 450 {
		t.Errorf("pace events %+v, want one: a back-off from 600 (a new room's start) to 450", paces)
	}
	log, err := eng.Audit(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range log {
		if a.Who != roomevents.SteeredBy {
			t.Errorf("audit entry by %q, want %q", a.Who, roomevents.SteeredBy)
		}
		actions = append(actions, a.Action+" ("+a.Why+")")
	}
	if len(actions) != 2 || actions[0] != "net on (full)" || actions[1] != "pace (backoff)" {
		t.Errorf("audit log %v, want net on (full), pace (backoff)", actions)
	}
}
