package operator

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// ConsoleHeader is the header the console's page sends with every admin
// call. A browser cannot add it to a cross-site request without a CORS
// preflight, which the console never grants, so other sites cannot drive the
// console's proxy.
const ConsoleHeader = "X-Vestibule-Console"

// ConsoleCSP is the console's Content-Security-Policy: its own scripts,
// styles and API only; no inline script.
const ConsoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ConsoleCookie is the cookie that carries a console run's secret
// (HttpOnly, SameSite=Strict); ConsoleSecretParam is the query parameter of
// the address `vestibule console` prints, which sets it.
const (
	ConsoleCookie      = "vestibule_console"
	ConsoleSecretParam = "secret"
)

// NewConsoleSecret is a fresh secret for one run of the console: 130 random
// bits (crypto/rand.Text).
func NewConsoleSecret() string { return rand.Text() }

// Console serves the operator's console on the operator's machine: the page
// and its files from files (console.html at "/"), and /api/admin/* proxied
// to the client's deployment with the client's credentials added, so the
// browser never holds them. /console-target.json tells the page where it
// points. Only requests whose Host is a loopback name (no DNS rebinding),
// whose Origin, if any, is the console's own, which carry ConsoleHeader and
// the run's secret in ConsoleCookie reach the deployment; only the admin
// routes are forwarded. The secret is given once, in the address the command
// prints (/?secret=…): that request sets the cookie and is sent on to the
// same address without it. Any local process can reach 127.0.0.1; only one
// that knows the secret gets through.
func Console(c *Client, files fs.FS, secret string) http.Handler {
	mux := http.NewServeMux()
	static := http.FileServerFS(files)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Has(ConsoleSecretParam) {
			if sameSecret(q.Get(ConsoleSecretParam), secret) {
				http.SetCookie(w, &http.Cookie{Name: ConsoleCookie, Value: secret, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			}
			// Out of the address bar (and what the page shows), right or not.
			q.Del(ConsoleSecretParam)
			to := "/"
			if len(q) > 0 {
				to += "?" + q.Encode()
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		}
		http.ServeFileFS(w, r, files, "console.html")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			consoleError(w, http.StatusMethodNotAllowed, "method_not_allowed", "the console's files are read-only")
			return
		}
		static.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /console-target.json", func(w http.ResponseWriter, r *http.Request) {
		kind := ""
		if c.Auth != nil {
			kind = c.Auth.Kind()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"endpoint": c.Endpoint, "auth": kind}) // a failed write: the browser is gone
	})
	mux.HandleFunc("GET "+ConsoleSettingsPath, ConsoleSettings)
	// Admin calls say they come from the console, for the audit log.
	viaConsole := *c
	viaConsole.Header = http.Header{ConsoleHeader: {"1"}}
	mux.HandleFunc("/api/admin/", func(w http.ResponseWriter, r *http.Request) { proxy(&viaConsole, w, r) })
	// A room's public status (the pace and wait of someone joining now, the
	// pre-queue's commitment and seed), forwarded without credentials.
	mux.HandleFunc("GET /api/rooms/{room}/status", func(w http.ResponseWriter, r *http.Request) {
		proxy(&Client{Endpoint: c.Endpoint, HTTP: c.HTTP}, w, r)
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		consoleError(w, http.StatusNotFound, "unknown_route", "the console forwards the admin routes only")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ConsoleCSP)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		if !loopbackHost(r.Host) {
			consoleError(w, http.StatusForbidden, "forbidden", "the console answers on 127.0.0.1 or localhost only")
			return
		}
		if needsSecret(r.URL.Path) {
			ck, err := r.Cookie(ConsoleCookie)
			if err != nil || !sameSecret(ck.Value, secret) {
				consoleError(w, http.StatusForbidden, "console_secret",
					"this console wants its secret: open the address `vestibule console` printed (it carries the secret of this run)")
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// ConsoleSettingsPath is where the console reads the room settings it
// edits, with their limits (ConsoleSettings).
const ConsoleSettingsPath = "/console-settings.json"

// ConsoleSetting is one row of room.Settings as the console's page reads it:
// the kind of control it gets and the limits the API checks.
type ConsoleSetting struct {
	Name    string           `json:"name"`
	Doc     string           `json:"doc"`
	Kind    string           `json:"kind"` // number, choice, url, time, boolean, page, text, color, list
	Min     *int64           `json:"min,omitempty"`
	Max     *int64           `json:"max,omitempty"`
	MaxLen  int64            `json:"maxLength,omitempty"`
	Pattern string           `json:"pattern,omitempty"`
	Choices []string         `json:"choices,omitempty"`
	Default any              `json:"default"`
	Parts   []ConsoleSetting `json:"parts,omitempty"`
}

// consoleSettings converts rows of the settings table for the console.
func consoleSettings(rows []room.Setting) []ConsoleSetting {
	var out []ConsoleSetting
	for _, r := range rows {
		cs := ConsoleSetting{Name: r.Name, Doc: r.Doc, MaxLen: r.MaxLen, Pattern: r.Pattern, Choices: r.Choices,
			Default: r.Default, Parts: consoleSettings(r.Parts)}
		switch d := r.Default.(type) {
		case int64:
			cs.Kind, cs.Min, cs.Max = "number", &r.Min, &r.Max
		case bool:
			cs.Kind = "boolean"
		case *time.Time:
			cs.Kind = "time"
		case *room.Page:
			cs.Kind = "page"
		case []string:
			cs.Kind = "list" // of URLs, one a line
		case room.Mode:
			cs.Kind, cs.Default = "choice", string(d)
		case string:
			switch {
			case r.Pattern != "":
				cs.Kind = "color"
			case strings.HasSuffix(r.Name, "Url"):
				cs.Kind = "url"
			default:
				cs.Kind = "text"
			}
		}
		out = append(out, cs)
	}
	return out
}

// ConsoleSettings answers the room settings from the settings table
// (room.Settings), in its order, for the console's forms: their limits are
// the API's, from the one table that checks them.
func ConsoleSettings(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"settings": consoleSettings(room.Settings())}) // a failed write: the browser is gone
}

// needsSecret reports whether a path is one only the console's own page may
// use: what is forwarded to the deployment and what tells where it points.
// The page's files are the same for everyone.
func needsSecret(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/console-target.json"
}

// sameSecret compares a secret given with the run's, in constant time; an
// empty run secret matches nothing.
func sameSecret(given, secret string) bool {
	return secret != "" && subtle.ConstantTimeCompare([]byte(given), []byte(secret)) == 1
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// adminRoute is the route of the table (routes.All) that method and path name, when it
// is one the console passes on: an admin route of a room, or a room's public status.
func adminRoute(method, path string) (routes.Route, bool) {
	for _, rt := range routes.All {
		if (rt.Admin || rt == routes.RoomStatus) && rt.Method == method && matchPath(rt.Path, path) {
			return rt, true
		}
	}
	return routes.Route{}, false
}

func matchPath(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if ps[i] == "{room}" {
			if !room.ValidRoomID(xs[i]) {
				return false
			}
		} else if ps[i] != xs[i] {
			return false
		}
	}
	return true
}

func proxy(c *Client, w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(ConsoleHeader) == "" {
		consoleError(w, http.StatusForbidden, "forbidden", "admin calls through the console need the "+ConsoleHeader+" header")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		consoleError(w, http.StatusForbidden, "forbidden", "cross-origin admin calls are refused")
		return
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		consoleError(w, http.StatusForbidden, "forbidden", "cross-site admin calls are refused")
		return
	}
	path := r.URL.Path
	if r.URL.RawQuery != "" {
		q, ok := lookupQuery(r.Method, path, r.URL.Query()) // console_lookup.go
		if !ok {
			path = "" // a query on any other route: refused below
		}
		path += "?" + q
	}
	rt, ok := adminRoute(r.Method, r.URL.Path)
	if !ok || strings.HasPrefix(path, "?") {
		consoleError(w, http.StatusNotFound, "unknown_route", "not an admin route")
		return
	}
	var body []byte
	if r.Method != http.MethodGet {
		b, err := io.ReadAll(io.LimitReader(r.Body, int64(rt.BodyLimit())+1))
		if err != nil {
			consoleError(w, http.StatusBadRequest, "bad_request", "reading the body: "+err.Error())
			return
		}
		if len(b) > rt.BodyLimit() {
			consoleError(w, http.StatusRequestEntityTooLarge, "too_large", "the body is larger than the API takes")
			return
		}
		body = b
	}
	resp, b, err := c.Do(r.Context(), r.Method, path, body)
	if err != nil {
		consoleError(w, http.StatusBadGateway, "upstream", err.Error())
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(b) // a failed write: the browser is gone
}

func consoleError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e.Error.Code, e.Error.Message = code, msg
	_ = json.NewEncoder(w).Encode(e) // a failed write: the browser is gone
}
