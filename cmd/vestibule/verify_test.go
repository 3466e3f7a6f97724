package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// verify-draw checks a pre-queue ticket against the room's published seed
// and commitment, and catches a ticket whose draw does not follow from them.
func TestVerifyDraw(t *testing.T) {
	s := stack(t)
	opens := time.Now().Add(1500 * time.Millisecond).UTC()
	id := newRoom(t, s, map[string]any{"opensAt": opens.Format(time.RFC3339Nano)})
	resp, err := http.Post(s.URL()+"/api/rooms/"+id+"/enqueue", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var joined struct{ Ticket, State string }
	json.NewDecoder(resp.Body).Decode(&joined)
	resp.Body.Close()
	if joined.State != "prequeue" || joined.Ticket == "" {
		t.Fatalf("join: %+v", joined)
	}
	_, errs, code := vestibule(t, s, "verify-draw", "--room", id, "--ticket", joined.Ticket)
	if code != 1 || !strings.Contains(errs, "has not opened yet") {
		t.Fatalf("before opening: %d %q", code, errs)
	}
	time.Sleep(time.Until(opens) + 200*time.Millisecond)
	out, errs, code := vestibule(t, s, "verify-draw", "--room", id, "--ticket", joined.Ticket)
	if code != 0 || !strings.Contains(out, "ok: seed") || !strings.Contains(out, "ok: visitor") {
		t.Fatalf("after opening: %d %q %q", code, out, errs)
	}
	// A ticket whose draw claim was changed does not verify.
	parts := strings.Split(joined.Ticket, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	json.Unmarshal(b, &claims)
	claims["draw"] = 0.000001
	b, _ = json.Marshal(claims)
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
	_, errs, code = vestibule(t, s, "verify-draw", "--room", id, "--ticket", forged)
	if code != 1 || !strings.Contains(errs, "MISMATCH") {
		t.Fatalf("forged ticket: %d %q", code, errs)
	}
}
