package gate_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/vestibule-dev/vestibule/gate"
)

// A Go booking site guards its pages with the gate: without a session cookie
// of the room a visitor is sent to the waiting room, with the page to come
// back to; with one, the page is served and knows the session.
func ExampleGate_Middleware() {
	// In a deployment the keys come from the entry-key secret (gate.DeriveKey);
	// here, a fixed one.
	key, _ := gate.NewKey(bytes.Repeat([]byte{1}, gate.KeySize))
	cfg := gate.Config{
		Room:           "demo",
		WaitingRoomURL: "https://queue.example.com/",
		OpenPaths:      []string{"/static/*", "/robots.txt"},
		Keys:           gate.KeyRing{Current: key},
	}
	g, err := gate.New(cfg)
	if err != nil { // a bad configuration: the site must not start
		fmt.Println(err)
		return
	}
	site := g.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := gate.SessionFromContext(r.Context())
		fmt.Fprintf(w, "booking page, session %d", s.Seq)
	}))

	get := func(target, cookie string) {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if cookie != "" {
			r.Header.Set("Cookie", cookie)
		}
		w := httptest.NewRecorder()
		site.ServeHTTP(w, r)
		if loc := w.Header().Get("Location"); loc != "" {
			fmt.Println(w.Code, loc)
			return
		}
		fmt.Println(w.Code, w.Body.String())
	}

	get("/tickets?show=42", "")
	get("/static/site.css", "")

	// What /.vestibule/enter will set once the entry token is consumed.
	session := gate.Session{Room: "demo", Seq: 7, Expires: time.Now().Add(10 * time.Minute)}
	get("/tickets?show=42", gate.CookieName+"="+gate.Sign(key, session))
	// Output:
	// 302 https://queue.example.com/?room=demo&return=%2Ftickets%3Fshow%3D42
	// 200 booking page, session 0
	// 200 booking page, session 7
}
