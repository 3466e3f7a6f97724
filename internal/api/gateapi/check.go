package gateapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
)

// errUnknownProxy is a check URL that names no proxy the check answers.
var errUnknownProxy = &httpapi.Error{Status: http.StatusNotFound, Code: "unknown_route",
	Message: "no check for this proxy: /api/gate/check/ is followed by nginx, ingress-nginx, traefik or envoy"}

// gateCheck is ANY /api/gate/check/{proxy}, the forward-auth check a reverse
// proxy in front of a site asks about each request (docs/GATE.md,
// "Forward-auth"): {proxy} names the proxy's protocol (gate.Proxies), and for
// Envoy the original path follows it. It answers gate.ForwardAuth.Check: 200
// when the request passes, the gate's redirect or refusal in the statuses the
// proxy understands, Cache-Control: no-store always. It reads no state: the
// session is in the cookie, the settings in the check URL (Envoy: in its
// headers), so it costs no Redis call. Errors are JSON: 400 bad_check for a
// check it cannot answer (a proxy header missing, settings that are not a
// gate's), 404 for an unknown proxy or a deployment without gate keys.
func (h *API) gateCheck(_ context.Context, r *httpapi.Request) (events.APIGatewayV2HTTPResponse, error) {
	none := events.APIGatewayV2HTTPResponse{}
	if h.o.Cookies == nil {
		return none, errNoGate
	}
	name, rest, sub := strings.Cut(r.Path.Rest, "/")
	p := gate.Proxy(name)
	if !slices.Contains(gate.Proxies, p) || sub && p != gate.ProxyEnvoy {
		return none, errUnknownProxy
	}
	c := gate.CheckRequest{Proxy: p, Method: r.Event.RequestContext.HTTP.Method, RawQuery: r.Event.RawQueryString, Header: http.Header{}}
	if sub {
		c.Path = "/" + rest
	}
	for k, v := range r.Event.Headers {
		c.Header.Set(k, v)
	}
	if len(r.Event.Cookies) > 0 {
		// Payload 2.0 takes the Cookie header apart.
		c.Header.Set("Cookie", strings.Join(r.Event.Cookies, "; "))
	}
	a, err := gate.ForwardAuth{Keys: h.o.Cookies.Keys}.Check(c, r.Now)
	if errors.Is(err, gate.ErrCheck) {
		return none, &httpapi.Error{Status: http.StatusBadRequest, Code: "bad_check", Message: strings.TrimPrefix(err.Error(), "gate: bad check request: ")}
	} else if err != nil {
		return none, httpapi.InternalError(err)
	}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: a.Status, Headers: map[string]string{"X-Content-Type-Options": "nosniff"}, Body: a.Body}
	for k := range a.Header {
		resp.Headers[k] = a.Header.Get(k)
	}
	return resp, nil
}
