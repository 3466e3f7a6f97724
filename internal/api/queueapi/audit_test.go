package queueapi_test

import (
	"encoding/json"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Each admin change is kept in the room's audit log with its author: the IAM
// principal API Gateway authorised (SigV4), when, and each setting's old and
// new value; it is logged as an "admin change" line too. A PUT that changes
// nothing records nothing; the log survives the room's deletion. A call
// that says it came through the console (X-Vestibule-Console, which any
// holder of the credentials can send) is recorded as saying so, never as a
// fact: bob here sends the header without any console.
func TestAuditTrailIAM(t *testing.T) {
	f := apitest.NewFixture(t, redistest.Single(t))
	var logs strings.Builder
	h := api.New(api.Options{Queue: f.Q, Tickets: f.Tickets, Entries: f.Entries, AdminAuth: api.AdminIAM, DefaultRoom: room.DefaultConfig(),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	as := func(arn, method, path, body string, console bool) apitest.Response {
		t.Helper()
		hdr := map[string]string{}
		if console {
			hdr["X-Vestibule-Console"] = "1"
		}
		ev := apitest.Event(method, path, body, hdr)
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccountID: "123456789012", UserARN: arn},
		}
		return apitest.Send(t, h, ev)
	}
	id := redistest.Room(t)
	alice, bob := "arn:aws:iam::123456789012:user/alice", "arn:aws:sts::123456789012:assumed-role/ops/bob"
	apitest.WantStatus(t, as(alice, "PUT", "/api/admin/rooms/"+id, `{"originUrl":"https://origin.example/","maxActive":5}`, false), 200, "")
	apitest.WantStatus(t, as(bob, "PUT", "/api/admin/rooms/"+id, `{"mode":"paused"}`, true), 200, "")
	apitest.WantStatus(t, as(bob, "PUT", "/api/admin/rooms/"+id, `{"mode":"paused"}`, false), 200, "") // no change
	apitest.WantStatus(t, as(alice, "PUT", "/api/admin/rooms/"+id, `{"maxActive":7,"admitPerMinute":90}`, false), 200, "")
	r := as(bob, "GET", "/api/admin/rooms/"+id+"/log", "", false)
	apitest.WantStatus(t, r, 200, "")
	var out struct{ Entries []room.AuditEntry }
	json.Unmarshal([]byte(r.Body), &out)
	if len(out.Entries) != 3 {
		t.Fatalf("%d entries: %s", len(out.Entries), r.Body)
	}
	e0, e1, e2 := out.Entries[0], out.Entries[1], out.Entries[2]
	if e0.Who != alice || e0.Action != "create" || e1.Who != bob+" (says via the console)" || e2.Who != alice {
		t.Errorf("authors and actions: %+v", out.Entries)
	}
	if len(e1.Changes) != 1 || e1.Changes[0].Setting != "mode" || string(e1.Changes[0].Old) != `"queue"` || string(e1.Changes[0].New) != `"paused"` {
		t.Errorf("the pause: %+v", e1.Changes)
	}
	if len(e2.Changes) != 2 || e2.Changes[0].Setting != "admitPerMinute" || e2.Changes[1].Setting != "maxActive" ||
		string(e2.Changes[1].Old) != "5" || string(e2.Changes[1].New) != "7" {
		t.Errorf("the capacity change: %+v", e2.Changes)
	}
	if e2.At.IsZero() || e2.At.Before(e0.At) {
		t.Errorf("times: %v %v", e0.At, e2.At)
	}
	if !strings.Contains(logs.String(), `"msg":"admin change"`) || !strings.Contains(logs.String(), `"who":"`+bob+` (says via the console)"`) {
		t.Errorf("the change is not logged: %s", logs.String())
	}
	// Deleted, the room's log stays, with who deleted it.
	apitest.WantStatus(t, as(bob, "DELETE", "/api/admin/rooms/"+id, "", false), 200, "")
	apitest.WantStatus(t, as(bob, "GET", "/api/admin/rooms/"+id, "", false), 404, "unknown_room")
	r = as(alice, "GET", "/api/admin/rooms/"+id+"/log", "", false)
	json.Unmarshal([]byte(r.Body), &out)
	if n := len(out.Entries); n != 4 || out.Entries[3].Action != "delete" || out.Entries[3].Who != bob {
		t.Errorf("after the delete: %s", r.Body)
	}
	apitest.WantStatus(t, as(alice, "GET", "/api/admin/rooms/never-was/log", "", false), 404, "unknown_room")
}
