package localstack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/gateproxy"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The demo site through the other doors (docs/GATE.md, "Doors"): each door
// is its own room, since a room's originUrl is one site's address and the
// doors answer on addresses of their own.
const (
	// ProxyRoomID is the room of the gating proxy's door (vestibule gate
	// serve's code, on DoorOptions.ProxyAddr).
	ProxyRoomID = "demo-proxy"
	// NginxRoomID is the room of the forward-auth door: nginx on
	// DoorOptions.NginxAddr, with the snippet the stack prints.
	NginxRoomID = "demo-nginx"
)

// DoorOptions are where make dev's demo site answers through the other
// doors. Options embeds them.
type DoorOptions struct {
	// PlainSiteAddr is where the demo site answers with no gate at all: the
	// upstream of the other doors; default "127.0.0.1:0".
	PlainSiteAddr string
	// ProxyAddr is the gating proxy's listen address; default "127.0.0.1:0".
	ProxyAddr string
	// NginxAddr is where the printed nginx snippet listens; the stack does
	// not listen there. "" leaves the forward-auth door out (no room, no
	// snippet); its port cannot be 0, since the room's originUrl names it.
	NginxAddr string
}

// startDoors serves the plain demo site and the gating proxy in front of it,
// and puts the doors' rooms as the demo room is put: gated, 5 at a time, 60
// a minute, their origins the doors' addresses.
func (s *Stack) startDoors(ctx context.Context, q settingsPutter, o DoorOptions, base gate.Config, apiURL *url.URL) error {
	for _, a := range []*string{&o.PlainSiteAddr, &o.ProxyAddr} {
		if *a == "" {
			*a = "127.0.0.1:0"
		}
	}
	plainLn, err := net.Listen("tcp", o.PlainSiteAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.PlainSiteAddr, err)
	}
	proxyLn, err := net.Listen("tcp", o.ProxyAddr)
	if err != nil {
		_ = plainLn.Close()
		return fmt.Errorf("listen %s: %w", o.ProxyAddr, err)
	}
	s.plainURL, s.proxyURL = "http://"+loopback(plainLn.Addr()), "http://"+loopback(proxyLn.Addr())
	if o.NginxAddr != "" {
		s.nginxURL = "http://" + o.NginxAddr
	}
	up, _ := url.Parse(s.plainURL)
	cfg := base
	cfg.Room = ProxyRoomID
	p, err := gateproxy.New(gateproxy.Options{Gate: cfg, Upstream: up, API: apiURL})
	if err != nil {
		_ = plainLn.Close()
		_ = proxyLn.Close()
		return fmt.Errorf("localstack: the proxy door: %w", err)
	}
	plain := http.NewServeMux()
	plain.HandleFunc("/robots.txt", robots)
	plain.Handle("/", site(apiURL.Scheme+"://"+apiURL.Host))
	s.serve(plainLn, noReferrer(plain))
	s.serve(proxyLn, noReferrer(p))
	rooms := map[string]string{ProxyRoomID: s.proxyURL}
	if s.nginxURL != "" {
		rooms[NginxRoomID] = s.nginxURL
	}
	for id, origin := range rooms {
		want := room.DefaultConfig()
		want.MaxActive, want.AdmitPerMinute, want.Gate, want.OriginURL = 5, 60, true, origin+"/"
		if err := s.demoRoom(ctx, q, id, want); err != nil {
			return err
		}
	}
	return nil
}

// robots is the demo site's robots.txt, one of its open paths.
func robots(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("User-agent: *\nDisallow: /\n"))
}

// PlainSiteURL is the demo site with no gate: the upstream of the proxy and
// nginx doors.
func (s *Stack) PlainSiteURL() string { return s.plainURL }

// ProxyURL is the demo site through the gating proxy (room demo-proxy).
func (s *Stack) ProxyURL() string { return s.proxyURL }

// NginxURL is the demo site through nginx and forward-auth (room
// demo-nginx), once nginx runs NginxSnippet; "" without Options.NginxAddr.
func (s *Stack) NginxURL() string { return s.nginxURL }

// NginxSnippet is the nginx configuration that puts the demo site behind
// room demo-nginx through forward-auth, as make dev prints it: an http-block
// include ("" without Options.NginxAddr).
func (s *Stack) NginxSnippet() string {
	if s.nginxURL == "" {
		return ""
	}
	return NginxDoor{
		Listen: strings.TrimPrefix(s.nginxURL, "http://"), Site: s.plainURL, API: s.url,
		Room: NginxRoomID, OpenPaths: SiteOpenPaths, WaitingRoom: s.url + "/",
	}.Config()
}

// NginxDoor is an nginx server that guards a site with forward-auth
// (docs/GATE.md, "nginx").
type NginxDoor struct {
	Listen      string   // nginx's listen parameters: "127.0.0.1:8084", "443 ssl"
	ServerName  string   // server_name; "" for none
	Site        string   // the site nginx passes the request to
	API         string   // Vestibule's API, its base URL
	Room        string   // the room that guards the site, or
	Routes      string   // rooms by path (gate.ParseRoutes' form)
	OpenPaths   []string // paths that pass without a session
	WaitingRoom string   // the waiting room's URL
	// OriginSecret is the stack's origin secret, sent to its API with the
	// check and the gate's routes, which then read the site's host from
	// X-Forwarded-Host; "" for make dev, whose API reads Host.
	OriginSecret string
	// Resolver, when set, is the DNS server nginx asks for the API's
	// address each time its answer expires: nginx resolves a name written
	// in proxy_pass once, at start, and API Gateway's addresses change. ""
	// for an API at a fixed address (make dev's).
	Resolver string
}

// queryValue escapes v for a query, leaving the characters a query may
// hold as they are ("/", ":", ",", "*"), so the snippet reads as written.
func queryValue(v string) string {
	return strings.NewReplacer("%2F", "/", "%3A", ":", "%2C", ",", "%2A", "*").Replace(url.QueryEscape(v))
}

// Config is the door's configuration: a map and a server, for nginx's http
// block. Each line is there for a reason the comments give.
func (d NginxDoor) Config() string {
	var q []string
	for _, kv := range [][2]string{{gate.CheckParamRoom, d.Room}, {gate.CheckParamRoutes, d.Routes},
		{gate.CheckParamOpen, strings.Join(d.OpenPaths, ",")}, {gate.CheckParamWaitingRoom, d.WaitingRoom}} {
		if kv[1] != "" {
			q = append(q, kv[0]+"="+queryValue(kv[1]))
		}
	}
	api, resolve := strings.TrimSuffix(d.API, "/"), ""
	if d.Resolver != "" {
		resolve = "    resolver " + d.Resolver + " valid=30s;\n    set $vestibule_api " + api + ";\n"
		api = "$vestibule_api"
	}
	check := api + "/api/gate/check/" + string(gate.ProxyNginx) + "?" + strings.Join(q, "&")
	host := "$host"
	var toAPI, secret string
	if d.OriginSecret == "" {
		// make dev: the API believes the site's Host (it has no origin secret).
		host = "$http_host"
		toAPI = "        proxy_set_header Host $http_host;\n"
	} else {
		secret = "        proxy_set_header X-Vestibule-Origin \"" + d.OriginSecret + "\";\n"
		toAPI = "        proxy_set_header X-Forwarded-Host $host;\n" + secret
		if strings.HasPrefix(api, "https:") {
			secret += "        proxy_ssl_server_name on;\n"
			toAPI += "        proxy_ssl_server_name on;\n"
		}
	}
	name := ""
	if d.ServerName != "" {
		name = "    server_name " + d.ServerName + ";\n"
	}
	return `# Vestibule's forward-auth door (docs/GATE.md, "Forward-auth"): nginx asks
# Vestibule's check about every request (auth_request), and sends the gate's
# routes, /.vestibule/enter, leave and renew, to Vestibule's API.
# For nginx's http block (Debian: /etc/nginx/conf.d/vestibule.conf).

# The site's "Vestibule-Session: end" turns the session cookie into its
# receipt: the check gives the receipt's Set-Cookie with every pass.
map $upstream_http_vestibule_session $vestibule_end {
    "~*(^|,)[ \t]*end[ \t]*(,|$)" $vestibule_receipt;
    default "";
}

server {
    listen ` + d.Listen + `;
` + name + resolve + `
    location / {
        auth_request /.vestibule-check;
        auth_request_set $vestibule_location $upstream_http_location;
        auth_request_set $vestibule_receipt $upstream_http_vestibule_receipt;
        error_page 401 = @vestibule_redirect;
        error_page 403 = @vestibule_refused;
        # No path after the address: the site gets the request line's
        # path as sent, the one the check decided on.
        proxy_pass ` + d.Site + `;
        proxy_hide_header Vestibule-Session;
        add_header Set-Cookie $vestibule_end always;
    }

    location ~ ^/\.vestibule/(enter|leave|renew)$ {
        proxy_pass ` + api + `;
` + toAPI + `    }

    location = /.vestibule-check {
        internal;
        proxy_pass ` + check + `;
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
        proxy_set_header X-Original-Method $request_method;
        proxy_set_header X-Original-URI $request_uri;
        proxy_set_header X-Forwarded-Host ` + host + `;
` + secret + `    }

    # The check's 401 carries the gate's redirect: the waiting room, renew or leave.
    location @vestibule_redirect {
        absolute_redirect off;
        add_header Cache-Control no-store always;
        return 302 $vestibule_location;
    }

    # The check's 403: a path the gate refuses (not canonical), the gate's 400.
    location @vestibule_refused {
        add_header Cache-Control no-store always;
        return 400;
    }
}
`
}
