package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/token"
)

// newOrigin is the hand-integration example origin (the demo-api room's):
// a booking site that redeems entry tokens itself, without the edge gate. Its
// page reads the entry token from the
// URL fragment (#token=…: a fragment never reaches a server, a log or a
// Referer header), removes it from the address bar, and posts it to the
// site's own backend, which redeems it at the waiting room's POST /api/consume
// server to server — the integration docs/API.md describes — presenting the
// room's origin credential. A real origin holds its one room's credential; the
// demo stands for the origin of every local room whose originUrl is the demo
// origin (self), so it asks for the credential of the room the token names,
// and redeems nothing for a room that sends its visitors elsewhere.
//
// Once in, the page is a seat picker of the demo event (picker, seats.go):
// consume's answer carries the visitor's bookingSession, which the page keeps
// in memory and sends to the backend's /seats, /hold, /extend and /confirm.
func newOrigin(waitingRoom, self string, credential func(room string) string, originOf func(ctx context.Context, room string) (string, error), picker *seatPicker, log *slog.Logger) http.Handler {
	client := &http.Client{Timeout: 5 * time.Second}
	forward := func(route string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", "POST")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			var in struct {
				Token string `json:"token"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, 8<<10)).Decode(&in); err != nil || in.Token == "" {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"code": "bad_json", "message": `send {"token": "..."}`}})
				return
			}
			body, _ := json.Marshal(in)
			req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, waitingRoom+route, bytes.NewReader(body))
			if err != nil {
				writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]string{"code": "internal", "message": "bad request"}})
				return
			}
			req.Header.Set("Content-Type", "application/json")
			// Which room's credential: the waiting room verifies the token itself.
			peeked, _ := token.Peek(in.Token)
			if origin, err := originOf(r.Context(), peeked.Room); err != nil || !strings.HasPrefix(origin, self+"/") {
				writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]string{"code": "not_this_origin", "message": "this entry is for another site"}})
				return
			}
			req.Header.Set("Authorization", "Bearer "+credential(peeked.Room))
			resp, err := client.Do(req)
			if err != nil {
				log.Error("demo origin: waiting room unreachable", "route", route, "error", err.Error())
				writeJSON(w, http.StatusBadGateway, map[string]any{"error": map[string]string{"code": "unavailable", "message": "waiting room unreachable"}})
				return
			}
			defer func() { _ = resp.Body.Close() }()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, io.LimitReader(resp.Body, 64<<10))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/session", forward("/api/consume"))
	mux.HandleFunc("/complete", forward("/api/complete"))
	picker.routes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
		_ = originPage.Execute(w, map[string]string{"WaitingRoom": waitingRoom + "/?room=" + DemoAPIRoomID, "Event": DemoEventID})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var originPage = template.Must(template.New("origin").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
` + demoStyle + `  .err { color: #a00000; }
  dt { font-weight: 600; }
  #map { display: grid; grid-template-columns: repeat(4, 1fr); gap: .5rem; margin: 1rem 0; }
  #map button { padding: .75rem 0; border-radius: 6px; border: 2px solid #2b6cb0; background: #fff; color: #1a1a1a; }
  #map button[data-state="held"] { border-color: #b7791f; background: #fefcbf; }
  #map button[data-state="sold"] { border-color: #777; background: #e2e2e2; text-decoration: line-through; }
  #map button[data-state="mine"] { border-color: #276749; background: #c6f6d5; font-weight: 600; }
  #map button:disabled { cursor: not-allowed; }
</style>
</head>
<body>
<main>
<h1>Demo booking site</h1>
<p>This stands for your booking origin. It received the visitor's entry token in the URL fragment and
redeemed it at the waiting room, server to server.</p>
<div class="card" id="out" role="status" aria-live="polite">Checking your entry…</div>
<section id="picker" hidden aria-labelledby="picker-title">
  <h2 id="picker-title">Pick a seat</h2>
  <p>Demo event <code>{{.Event}}</code>: a held seat is yours for a few minutes; confirm it to book it.</p>
  <div id="map" role="group" aria-label="Seats"></div>
  <div id="hold" hidden><p>Seat <strong id="hold-seat"></strong> is held for you for
    <strong id="countdown" aria-live="off"></strong>.</p>
    <p id="extended" hidden></p>
    <button id="confirm" type="button">Confirm booking</button>
    <button id="extend" type="button">More time</button></div>
  <div id="msg" role="alert"></div>
  <div id="order" class="card" hidden></div>
</section>
<p><a id="back" href="{{.WaitingRoom}}">Back to the waiting room</a></p>
</main>
<script>
  const out = document.getElementById('out');
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  // Drop the token from the address bar and the history at once.
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);

  function show(html, cls) { out.className = 'card ' + (cls || ''); out.innerHTML = html; }
  function esc(s) { return String(s).replace(/[&<>"']/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c])); }
  async function post(path, body) {
    const r = await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body || {token})});
    let b = {};
    try { b = await r.json(); } catch (e) {}
    return {status: r.status, body: b};
  }

  // The seat picker. The booking session stays in this page's memory only;
  // the site's backend makes every call to the waiting room.
  const picker = document.getElementById('picker'), map = document.getElementById('map');
  const msg = document.getElementById('msg'), holdBox = document.getElementById('hold');
  const orderBox = document.getElementById('order');
  const extended = document.getElementById('extended'), extendButton = document.getElementById('extend');
  let bookingSession = '', hold = null, timer = 0;
  const mine = new Set();
  function say(text, code) { msg.textContent = text; msg.className = code ? 'err' : ''; msg.dataset.code = code || ''; }

  async function loadSeats() {
    const r = await fetch('/seats', {cache: 'no-store'});
    if (!r.ok) { say('The seat map is not available (' + r.status + ').', 'unavailable'); return; }
    const view = await r.json();
    map.replaceChildren();
    for (const id of Object.keys(view.seats || {}).sort()) {
      const b = document.createElement('button');
      b.type = 'button'; b.id = 'seat-' + id; b.textContent = id;
      const st = mine.has(id) ? 'mine' : view.seats[id];
      b.dataset.state = st;
      b.disabled = st !== 'available' || hold !== null;
      b.setAttribute('aria-label', 'Seat ' + id + ': ' + st);
      b.addEventListener('click', () => holdSeat(id));
      map.appendChild(b);
    }
    picker.dataset.state = picker.dataset.state || 'map';
  }

  async function holdSeat(id) {
    say('Holding ' + id + '…');
    const {status, body} = await post('/hold', {bookingSession, seat: id});
    if (status !== 201) {
      const e = body.error || {};
      const text = {seat_taken: 'Seat ' + id + ' was just taken by someone else. Pick another one.',
        session_limit: 'You already hold or bought as many seats as one visitor may.',
        session_ended: 'Your booking session has ended.'}[e.code] || ('Could not hold the seat (' + status + '): ' + (e.message || ''));
      say(text, e.code || 'error');
      await loadSeats();
      return;
    }
    hold = body; mine.add(id);
    say('');
    extended.hidden = true; extendButton.disabled = false;
    document.getElementById('hold-seat').textContent = id;
    holdBox.hidden = false;
    picker.dataset.state = 'held';
    tick(); timer = setInterval(tick, 1000);
    await loadSeats();
  }

  function tick() {
    const left = Math.max(0, Math.round((new Date(hold.expiresAt) - Date.now()) / 1000));
    document.getElementById('countdown').textContent = Math.floor(left / 60) + ':' + String(left % 60).padStart(2, '0');
    if (left === 0) {
      clearInterval(timer); holdBox.hidden = true;
      for (const s of hold.seats || []) mine.delete(s);
      hold = null; picker.dataset.state = 'map';
      say('Your hold ran out; the seat is free again.', 'hold_expired');
      loadSeats();
    }
  }

  // More time for the hold (the backend extends it with the origin
  // credential). Each extension is numbered, so a retry never extends twice.
  extendButton.addEventListener('click', async () => {
    if (!hold) return;
    const n = (hold.extensions || 0) + 1, held = hold;
    const {status, body} = await post('/extend', {bookingSession, hold: held.token, extension: n});
    if (hold !== held) return;
    if (status !== 200) {
      const e = body.error || {};
      if (e.code === 'extension_limit') extendButton.disabled = true;
      say(e.code === 'extension_limit' ? 'No more time can be added to this hold.' :
        'Could not extend the hold (' + status + ' ' + (e.code || '') + '): ' + (e.message || ''), e.code || 'error');
      return;
    }
    hold.expiresAt = body.expiresAt; hold.extensions = body.extensions;
    say('');
    extended.hidden = false; extended.dataset.extensions = String(body.extensions);
    extended.textContent = 'Extended (' + body.extensions + (body.extensions === 1 ? ' time' : ' times') +
      '): held until ' + new Date(body.expiresAt).toLocaleTimeString() + '.';
    tick();
  });

  document.getElementById('confirm').addEventListener('click', async () => {
    if (!hold) return;
    say('Confirming…');
    const {status, body} = await post('/confirm', {bookingSession, hold: hold.token});
    clearInterval(timer); holdBox.hidden = true;
    if (status !== 201) {
      const e = body.error || {};
      say('Could not confirm (' + status + ' ' + (e.code || '') + '): ' + (e.message || ''), e.code || 'error');
      for (const s of hold.seats || []) mine.delete(s);
      hold = null; picker.dataset.state = 'map';
      await loadSeats();
      return;
    }
    hold = null;
    say('');
    orderBox.hidden = false;
    orderBox.innerHTML = '<p><strong>Booked.</strong></p><dl><dt>Order</dt><dd id="order-id">' + esc(body.order) +
      '</dd><dt>Seats</dt><dd id="order-seats">' + esc((body.seats || []).join(', ')) + '</dd></dl>';
    picker.dataset.state = 'ordered';
    await loadSeats();
  });

  async function start() {
    if (!token) { show('No entry token. Join the queue in the waiting room first.', 'err'); return; }
    const {status, body} = await post('/session');
    if (status !== 200) {
      const e = body.error || {};
      show('Entry refused (' + status + ' ' + esc(e.code || '') + '): ' + esc(e.message || ''), 'err');
      out.dataset.state = 'refused';
      return;
    }
    show('<p><strong>You are in.</strong> Your booking session is open.</p>' +
      '<dl><dt>Room</dt><dd id="room">' + esc(body.room) + '</dd>' +
      '<dt>Visitor</dt><dd id="visitor">' + esc(body.visitor) + '</dd>' +
      '<dt>Session ends</dt><dd id="expires">' + esc(new Date(body.sessionExpiresAt).toLocaleString()) + '</dd></dl>' +
      '<button id="finish" type="button">Finish booking</button>');
    out.dataset.state = 'session';
    document.getElementById('finish').addEventListener('click', async () => {
      const {status, body} = await post('/complete');
      if (status === 200) {
        show('Booking finished. Your place is released for the next visitor.'); out.dataset.state = 'completed';
        picker.hidden = true; clearInterval(timer);
      }
      else { show('Could not finish: ' + esc((body.error || {}).message || status), 'err'); }
    });
    // The seat picker sells the demo event, named after its room.
    if (body.room === {{.Event}} && body.bookingSession) {
      bookingSession = body.bookingSession;
      picker.hidden = false;
      await loadSeats();
    }
  }
  start();
</script>
</body>
</html>
`))
