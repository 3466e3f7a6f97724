// Package gate protects a booking site with Vestibule without code in the
// site: a request passes only with a session cookie of the site's room, and
// everyone else is sent to the waiting room. The same decision (Decide) runs
// in two places: at the edge, as a CloudFront Function in front of the site
// (CloudFrontFunction returns its source), and in Go, as http middleware
// (Middleware) for an origin that is not behind CloudFront. A parity test runs
// the JavaScript in node against Decide over the same table of requests.
//
// # The journey
//
// A visitor without a session asks for a page and gets a 302 to the waiting
// room, WaitingRoomURL?room=<room>&return=<path>. Once admitted, the waiting
// page posts the entry token (form field token) to the site's
// POST /.vestibule/enter, which CloudFront routes to Vestibule: it consumes the
// token and answers 303 to the return path with the session cookie (SetCookie).
// From then on the gate lets the visitor through until the session ends;
// /.vestibule/leave completes the session and clears the cookie (ClearCookie).
// The site can end the session itself with the response header
// "Vestibule-Session: end" (EndHeader): the gate replaces the cookie with a
// receipt (EndCookie), and sends the visitor's next request to
// /.vestibule/leave, which completes it. The gate's two routes, EnterPath and
// LeavePath, always pass, and so do the open paths the operator lists (static
// assets, health checks, robots.txt); /.vestibule itself and other paths
// under it need a session like any page.
//
// # The session cookie
//
// One cookie per room, named "__Host-vestibule-<room>" (RoomCookieName; the
// __Host- prefix makes browsers take it only with Secure, Path=/ and no
// Domain, from the host itself), so a site with rooms by path (Config.Routes)
// holds a session of each; the gate also reads the name every room once
// shared, "__Host-vestibule" (CookieName). On a loopback host over plain
// HTTP, local development, the names start "vestibule" (DevCookieName) and
// the cookie goes without Secure. Its value is
//
//	v1.<kid>.<room>.<seq>.<expiry>.<mac>
//
// whose fields are:
//
//   - v1: the format version; any other value is refused.
//   - kid: the id of the key that signed it, 1–16 characters of [A-Za-z0-9_-]
//     (Key.ID: 8 characters derived from the key).
//   - room: the room id, 1–64 characters of [A-Za-z0-9_-].
//   - seq: the session's sequence number (the grant's), decimal without
//     leading zeros, at most 18 digits; what /.vestibule/leave completes.
//   - expiry: the end of the session, unix seconds, decimal, 1–11 digits; the
//     cookie is refused from that second on.
//   - mac: HMAC-SHA256, under the key named by kid, of everything before the
//     last dot ("v1.<kid>.<room>.<seq>.<expiry>"), base64url without padding
//     (43 characters), compared as text in constant time.
//
// Every character is URL- and cookie-safe, so the value needs no quoting or
// escaping; the longest is 159 characters, and values over MaxCookieLen (256)
// are refused unread. The grammar is one regular expression, the same in Go
// and in the function, so no parser can read a value differently from the
// other.
//
// Why one name with the room inside rather than a name per room: a site is
// guarded by one room, so a second name would buy little; a fixed lower-case
// name does not depend on how any layer treats the case of cookie names
// (room ids are case-sensitive); /.vestibule/leave finds the session without
// knowing the room; and the room must be inside the MAC anyway, since a
// cookie's name is not signed. The cost: two rooms guarding paths of one host
// share the cookie, and a visitor holding a valid session of one enters the
// other only once it has ended (/.vestibule/enter keeps a valid session, so
// that no other site's form can replace it).
//
// # Keys
//
// A KeyRing holds the current key, which signs, and the previous one, which
// only verifies, so that a rotation logs nobody out: cookies signed just
// before it keep working until they expire (sessions last minutes). Keys are
// derived (DeriveKey) from the entry-key secret's AWSCURRENT and AWSPREVIOUS
// versions, so the gate rotates with the entry key and needs no secret of its
// own. The CloudFront Function reads them from the KeyValueStore associated
// with it, which holds KeyRing.KVSEntries: "key:<kid>" → the key as 64 hex
// digits, and "current" → the current kid. See docs/GATE.md.
//
// # Other doors
//
// A site behind another reverse proxy has it ask a forward-auth check about
// each request (ForwardAuth.Check, the API's /api/gate/check/ route): the
// same decision on the request the proxy names in its own headers (Proxy),
// told in the statuses that proxy understands. A site with nothing in front
// runs Middleware before a reverse proxy (vestibule gate serve). The parity
// tables hold the check to Decide row by row, for every proxy.
package gate
