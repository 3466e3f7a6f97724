package queueapi

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/room"
)

func TestPlaceJSONIsEncodingJSONs(t *testing.T) {
	eta, zero, neg := int64(123), int64(0), int64(-5)
	pace, slow, share, tiny := 600.0, 0.5, 0.1234, 1e-7
	yes, no := true, false
	opens := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	grant := time.Date(2026, 11, 26, 10, 2, 3, 456789000, time.FixedZone("", 3600))
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, out := range []placeResponse{
		{},
		{Room: "demo", Ticket: "AgAQ-_x", State: room.StateWaiting, Position: 42, Waiting: 1000, EtaSeconds: &eta, PollAfterMs: 2250, RatePerMinute: &pace, PageVersion: "a1b2c3d4e5f6"},
		{Room: "demo", State: room.StateClosed, PollAfterMs: 30000},
		{Room: "demo", State: room.StateWaiting, Position: 7, EtaSeconds: &eta, RatePerMinute: &slow},
		{Room: "demo", Ticket: "t", State: room.StatePrequeue, OpensAt: &opens},
		{Room: "demo", Ticket: "t", State: room.StateWaiting, Position: 3, OpensAt: &opens, Draw: &tiny},
		{Room: "demo", Ticket: "t", State: room.StateWaiting, Position: 3, Draw: &share},
		{Room: "demo", State: room.StateWaiting, Position: 3, RatePerMinute: &share},
		{Room: "demo", Ticket: "t", State: room.StateWaiting, RatePerMinute: &tiny},
		{Room: "demo", Ticket: "t", State: room.StatePrequeue, OpensAt: &opens, Position: 0, Waiting: math.MaxInt64, EtaSeconds: &neg},
		{Room: "demo", Ticket: "t", State: room.StateAdmitted, EtaSeconds: &zero, EntryToken: "eyJ.a.b", OriginURL: "https://shop.example/?a=1&b=<2>",
			GrantExpiresAt: &grant, EnterURL: "https://shop.example/.vestibule/enter", PageVersion: "x"},
		{Room: "demo", State: room.StateAdmitted, Active: true, OriginURL: "https://shop.example/é\u2028\"\\\x01"},
		{Room: "demo", OpensAt: &far},
		{Room: "r", Position: math.MinInt64},
		{Room: "demo", Ticket: "t", State: room.StateWaiting, Notices: &notice.Offer{Push: "BPk-x_1", VAPID: "abc", Email: true}},
		{Room: "demo", Ticket: "t", State: room.StatePrequeue, Notices: &notice.Offer{Email: true}},
		{Room: "demo", Ticket: "t", State: room.StatePaused, Notices: &notice.Offer{Push: "BPk", VAPID: "a"}},
		{Room: "demo", Ticket: "t", State: room.StatePaused, Notices: &notice.Offer{}},
		{Room: "demo", Ticket: "t", State: room.StatePaused, Notices: &notice.Offer{VAPID: "a<b"}},
		{Room: "demo", Ticket: "t", State: room.StateWaiting, Notices: &notice.Offer{Email: true, KeepSeconds: 600}, Notify: &yes},
		{Room: "demo", Ticket: "t", State: room.StateWaiting, Notices: &notice.Offer{KeepSeconds: -1}, Notify: &no},
		{Room: "demo", Ticket: "t", State: room.StateWaiting, Notify: &no},
	} {
		want, err := json.Marshal(out)
		if err != nil {
			want = nil
		}
		got := placeJSONResponse(&out).Body
		ref := httpapi.JSON(200, out)
		if got != ref.Body || (err == nil && got != string(want)) {
			t.Errorf("%+v:\n got %s\nwant %s", out, got, want)
		}
	}
}

// FuzzPlaceJSON: any strings and numbers are written as json.Marshal writes them.
func FuzzPlaceJSON(f *testing.F) {
	f.Add("demo", "ticket", "waiting", int64(1), int64(2), int64(3), true, "https://x/", "v", int64(1700000000), true)
	f.Add("<&>", "\x00\xff", "é", int64(-1), int64(0), int64(0), false, "\u2028", "", int64(-62135596801), false)
	f.Fuzz(func(t *testing.T, roomID, ticket, state string, pos, waiting, eta int64, hasEta bool, origin, page string, unix int64, active bool) {
		tm := time.Unix(unix, unix%1e9).UTC()
		out := placeResponse{Room: roomID, Ticket: ticket, State: room.State(state), Position: pos, Waiting: waiting,
			PollAfterMs: eta / 2, OriginURL: origin, EntryToken: ticket, PageVersion: page, EnterURL: origin, Active: active,
			OpensAt: &tm, GrantExpiresAt: &tm}
		if hasEta {
			out.EtaSeconds = &eta
		}
		if got, want := placeJSONResponse(&out).Body, httpapi.JSON(200, out).Body; got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}
