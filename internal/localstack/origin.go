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
func newOrigin(waitingRoom, self string, credential func(room string) string, originOf func(ctx context.Context, room string) (string, error), log *slog.Logger) http.Handler {
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
			defer resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, io.LimitReader(resp.Body, 64<<10))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/session", forward("/api/consume"))
	mux.HandleFunc("/complete", forward("/api/complete"))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
		originPage.Execute(w, map[string]string{"WaitingRoom": waitingRoom + "/?room=" + DemoAPIRoomID})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

var originPage = template.Must(template.New("origin").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Demo booking site</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem; color: #1a1a1a; }
  .card { border: 1px solid #ccc; border-radius: 8px; padding: 1rem 1.25rem; }
  button { font: inherit; padding: .5rem 1rem; }
  .err { color: #a00000; }
  dt { font-weight: 600; }
</style>
</head>
<body>
<h1>Demo booking site</h1>
<p>This stands for your booking origin. It received the visitor's entry token in the URL fragment and
redeemed it at the waiting room, server to server.</p>
<div class="card" id="out" role="status" aria-live="polite">Checking your entry…</div>
<p><a id="back" href="{{.WaitingRoom}}">Back to the waiting room</a></p>
<script>
  const out = document.getElementById('out');
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  // Drop the token from the address bar and the history at once.
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);

  function show(html, cls) { out.className = 'card ' + (cls || ''); out.innerHTML = html; }
  function esc(s) { return String(s).replace(/[&<>"']/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c])); }
  async function post(path) {
    const r = await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({token})});
    let body = {};
    try { body = await r.json(); } catch (e) {}
    return {status: r.status, body};
  }

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
      if (status === 200) { show('Booking finished. Your place is released for the next visitor.'); out.dataset.state = 'completed'; }
      else { show('Could not finish: ' + esc((body.error || {}).message || status), 'err'); }
    });
  }
  start();
</script>
</body>
</html>
`))
