// Vestibule's edge gate: a CloudFront Function (runtime cloudfront-js-2.0) on
// the distribution in front of a booking site, associated at viewer request
// and at viewer response. At viewer request it makes exactly the decisions of
// gate.Decide (gate/decide.go), and the parity test (gate/parity_test.go) runs
// this file in node against that Go function:
//
//   1. the gate's routes, /.vestibule/enter, /.vestibule/leave and
//      /.vestibule/renew, pass;
//   2. an open path passes ("/x" exact, "/x/*" prefix);
//   3. a path no route matches passes; the route with the longest prefix
//      that matches (at a segment boundary, in any case; on equal prefixes,
//      the one that names the host) gives the room (gate.Config.RoomFor); on
//      a host no route names, a path that a named host's routes give another
//      room (or none) gets a 400 (gate's roomOf);
//   4. a request with a valid session cookie of the room, named
//      "__Host-vestibule-<room>" or "__Host-vestibule", passes (of the
//      cookies of the grammar, room and an unexpired session, the first three
//      have their MAC checked), except a GET navigation past the session's
//      time to renew: a 302 to /.vestibule/renew?return=…;
//   5. a request with a receipt of an ended session ("end." + the session's
//      cookie) gets a 302 to /.vestibule/leave, which completes it;
//   6. anything else gets a 302 to the room's waiting room, with the path to
//      return to.
//
// At viewer response it removes the header "vestibule-session" that the site
// may send, and when its value is "end" and the request carried a valid
// session, replaces the session cookie with its receipt (gate's endWriter).
//
// Do not deploy this file as it is: gate.CloudFrontFunction fills in CONFIG
// (the line below is replaced whole) and drops comment lines and indentation.
// The cookie keys come from the KeyValueStore associated with the function:
// "key:<kid>" holds the HMAC key as 64 hex digits (gate.KeyRing.KVSEntries).
// Only ES features of CloudFront's runtime are used; no export (CloudFront
// calls handler by name).
import cf from 'cloudfront';
import crypto from 'crypto';

const CONFIG = {"wait":"http://localhost:8080/?room=","routes":[{"h":"","p":"/","r":"demo"}],"hosts":[],"open":["/favicon.ico","/robots.txt","/static/*"]};

const kvs = cf.kvs();
const COOKIE = '__Host-vestibule';
const RECEIPT = 'end.';
const END_HEADER = 'vestibule-session';
// At most this many cookies of that name are read (gate.MaxCookieValues), and
// the MACs of at most this many candidates checked (gate.MaxCookieCandidates).
const VALUES = 32;
const CANDIDATES = 3;
const MAX_COOKIE = 256;
const MAX_RETURN = 1024;
// v1.<kid>.<room>.<seq>.<expiry>[.<renew>.<start>].<mac>; groups: kid, room,
// expiry, renew (undefined without), mac.
const FORMAT = /^v1\.([A-Za-z0-9_-]{1,16})\.([A-Za-z0-9_-]{1,64})\.(?:0|[1-9][0-9]{0,17})\.([1-9][0-9]{0,10})(?:\.([1-9][0-9]{0,10})\.[1-9][0-9]{0,10})?\.([A-Za-z0-9_-]{43})$/;
const HEX_KEY = /^[0-9a-f]{64}$/;
// A canonical path (gate.Canonical): path characters but ";" and escapes; no
// "//" or dot-segment; no escape of a byte that RAW says may stand as itself.
const CANON = /^\/(?:[A-Za-z0-9\-._~!$&'()*+,=:@\/]|%[0-9A-Fa-f]{2})*$/;
const DOTS = /\/\/|\/\.\.?(?:\/|$)/;
const RAW = /[A-Za-z0-9\-._~!$&'()*+,;=:@\/\\%]/;
const BAD = { statusCode: 400, statusDescription: 'Bad Request', headers: { 'cache-control': { value: 'no-store' } } };
const RETURN_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@\/?%]*$/;

async function handler(event) {
    if (event.response) {
        return respond(event.request, event.response);
    }
    const req = event.request;
    const path = req.uri;
    if (!canonical(path)) {
        return BAD;
    }
    if (path === '/.vestibule/enter' || path === '/.vestibule/leave' || path === '/.vestibule/renew' || isOpen(path)) {
        return req;
    }
    const host = hostOf(req);
    const room = roomFor(host, path);
    if (misdirected(host, path, room)) {
        return BAD;
    }
    if (room === null) {
        return req;
    }
    const s = await session(req, room);
    if (s.value && !(s.renew && s.renew <= Math.floor(Date.now() / 1000) && req.method === 'GET' && navigation(req.headers || {}))) {
        return req;
    }
    let to = CONFIG.wait + encodeURIComponent(room) + '&return=' + encodeURIComponent(returnPath(req));
    if (s.value) {
        to = '/.vestibule/renew?return=' + encodeURIComponent(returnPath(req));
    } else if (s.receipt) {
        to = '/.vestibule/leave';
    }
    return {
        statusCode: 302,
        statusDescription: 'Found',
        headers: {
            'location': { value: to },
            'cache-control': { value: 'no-store' }
        }
    };
}

// navigation is gate.Navigation: sec-fetch-mode "navigate", or without that
// header an accept naming text/html. Only a navigation is sent to renew.
function navigation(h) {
    if (h['sec-fetch-mode']) {
        return h['sec-fetch-mode'].value === 'navigate';
    }
    return !!h.accept && String(h.accept.value).indexOf('text/html') >= 0;
}

// canonical is gate.Canonical.
function canonical(p) {
    if (!CANON.test(p) || DOTS.test(p)) {
        return false;
    }
    const esc = /%([0-9A-Fa-f]{2})/g;
    let m;
    while ((m = esc.exec(p)) !== null) {
        const b = parseInt(m[1], 16);
        if (b < 128 && RAW.test(String.fromCharCode(b))) {
            return false;
        }
    }
    return true;
}

function hostOf(req) {
    return req.headers && req.headers.host ? String(req.headers.host.value) : '';
}

function normalHost(host) {
    return host.toLowerCase().replace(/:[0-9]*$/, '').replace(/\.$/, '');
}

// misdirected is gate's Config.roomOf: on a host no route names (CONFIG.hosts
// are those the routes name), a path that the routes of a named host give
// another room than room (or none) is refused.
function misdirected(host, path, room) {
    const hosts = CONFIG.hosts;
    if (hosts.indexOf(normalHost(host)) >= 0) {
        return false;
    }
    for (let i = 0; i < hosts.length; i++) {
        if (roomFor(hosts[i], path) !== room) {
            return true;
        }
    }
    return false;
}

// roomFor is gate.Config.RoomFor: the room of the route with the longest
// prefix that path is under at a segment boundary, in any case (CONFIG's
// prefixes are in lower case; on equal prefixes, the one naming host), or
// null when none matches.
function roomFor(host, path) {
    host = normalHost(host);
    path = path.toLowerCase();
    let best = null;
    let bestLen = -1;
    for (let i = 0; i < CONFIG.routes.length; i++) {
        const r = CONFIG.routes[i];
        const p = r.p;
        if (r.h !== '' && r.h !== host) {
            continue;
        }
        if (p !== '/' && !(path.indexOf(p) === 0 && (path.length === p.length || path.charAt(p.length) === '/'))) {
            continue;
        }
        const n = 2 * p.length + (r.h !== '' ? 1 : 0);
        if (n > bestLen) {
            best = r.r;
            bestLen = n;
        }
    }
    return best;
}

// session finds the request's session of room as gate's findSession does:
// value is the cookie that holds a valid session ('' if none) and name its
// name, receipt whether a receipt of an unexpired session of the room came
// instead. The room's own name is read first, then the shared one.
async function session(req, room) {
    const out = { value: '', name: '', expiry: 0, renew: 0, receipt: false };
    const names = [COOKIE + '-' + room, COOKIE];
    let seen = 0;
    let checked = 0;
    for (let n = 0; n < names.length; n++) {
        const c = req.cookies ? req.cookies[names[n]] : undefined;
        if (!c) {
            continue;
        }
        const values = c.multiValue || [c];
        for (let i = 0; i < values.length && seen < VALUES; i++, seen++) {
            const v = values[i].value;
            if (typeof v === 'string' && v.indexOf(RECEIPT) === 0) {
                if (parse(v.slice(RECEIPT.length), room)) {
                    out.receipt = true;
                }
                continue;
            }
            const m = parse(v, room);
            if (!m || checked === CANDIDATES) {
                continue;
            }
            checked++;
            if (await valid(v, m)) {
                out.value = v;
                out.name = names[n];
                out.expiry = Number(m[3]);
                out.renew = m[4] ? Number(m[4]) : 0;
                return out;
            }
        }
    }
    return out;
}

// respond is the viewer-response side: the site's "vestibule-session: end"
// replaces a valid session cookie with its receipt; the header never reaches
// the browser.
async function respond(req, res) {
    const h = res.headers && res.headers[END_HEADER];
    if (!h) {
        return res;
    }
    delete res.headers[END_HEADER];
    const values = h.multiValue || [h];
    let end = false;
    for (let i = 0; i < values.length; i++) {
        end = end || String(values[i].value).replace(/^[ \t]+|[ \t]+$/g, '').toLowerCase() === 'end';
    }
    if (!end) {
        return res;
    }
    const room = roomFor(hostOf(req), req.uri);
    if (room === null) {
        return res;
    }
    const s = await session(req, room);
    if (!s.value) {
        return res;
    }
    const maxAge = s.expiry - Math.floor(Date.now() / 1000);
    res.cookies = res.cookies || {};
    res.cookies[s.name] = {
        value: RECEIPT + s.value,
        attributes: 'Path=/; Expires=' + new Date(s.expiry * 1000).toUTCString() + '; Max-Age=' + maxAge + '; HttpOnly; Secure; SameSite=Lax'
    };
    return res;
}

function isOpen(path) {
    const open = CONFIG.open;
    for (let i = 0; i < open.length; i++) {
        const p = open[i];
        if (p.charAt(p.length - 1) === '*' ? path.indexOf(p.slice(0, -1)) === 0 : path === p) {
            return true;
        }
    }
    return false;
}

// parse makes gate.Verify's checks that need no key: size, grammar, room,
// expiry. It returns the match, or null.
function parse(v, room) {
    if (typeof v !== 'string' || v.length > MAX_COOKIE) {
        return null;
    }
    const m = FORMAT.exec(v);
    if (!m || m[2] !== room || Number(m[3]) <= Math.floor(Date.now() / 1000)) {
        return null;
    }
    return m;
}

// valid makes the checks that need the key, of a value parse accepted (m):
// the key named by its kid, and the MAC, compared in constant time.
async function valid(v, m) {
    let hex;
    try {
        hex = await kvs.get('key:' + m[1]);
    } catch (e) {
        // No such key (unknown or dropped kid), or the store failed: refuse.
        return false;
    }
    if (typeof hex !== 'string' || !HEX_KEY.test(hex)) {
        return false;
    }
    const want = crypto.createHmac('sha256', Buffer.from(hex, 'hex')).update(v.slice(0, v.length - 44)).digest('base64url');
    const got = m[5];
    let diff = want.length ^ got.length;
    for (let i = 0; i < got.length; i++) {
        diff |= want.charCodeAt(i) ^ got.charCodeAt(i);
    }
    return diff === 0;
}

// returnPath is gate's returnPath: "/" but for GET and HEAD; else the path and
// the query rebuilt from CloudFront's parsed query string as sorted name=value
// pairs; "/" unless it starts with exactly one "/", holds only RFC 3986 path
// and query characters and is at most MAX_RETURN long.
function returnPath(req) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
        return '/';
    }
    let t = req.uri;
    const qs = req.querystring || {};
    const pairs = [];
    for (const name in qs) {
        const values = qs[name].multiValue || [qs[name]];
        for (let i = 0; i < values.length; i++) {
            pairs.push(name + '=' + values[i].value);
        }
    }
    if (pairs.length > 0) {
        t += '?' + pairs.sort().join('&');
    }
    if (t.length > MAX_RETURN || t.charAt(0) !== '/' || t.charAt(1) === '/' || !RETURN_CHARS.test(t)) {
        return '/';
    }
    return t;
}
