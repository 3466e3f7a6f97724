// Vestibule's edge gate: a CloudFront Function (runtime cloudfront-js-2.0,
// viewer request) on the distribution in front of a booking site. It makes
// exactly the decisions of gate.Decide (gate/decide.go), and the parity test
// (gate/parity_test.go) runs this file in node against that Go function:
//
//   1. a path under /.vestibule/ passes (Vestibule's enter and leave routes);
//   2. an open path passes ("/x" exact, "/x/*" prefix);
//   3. a request with a valid "vestibule" session cookie of the room passes;
//   4. anything else gets a 302 to the waiting room, with the path to return to.
//
// Steps 1 and 2 never match a path holding "..", "\", "%2e" or "%5c".
//
// Do not deploy this file as it is: gate.CloudFrontFunction fills in CONFIG
// (the line below is replaced whole) and drops comment lines and indentation.
// The cookie keys come from the KeyValueStore associated with the function:
// "key:<kid>" holds the HMAC key as 64 hex digits (gate.KeyRing.KVSEntries).
// Only ES features of CloudFront's runtime are used; no export (CloudFront
// calls handler by name).
import cf from 'cloudfront';
import crypto from 'crypto';

const CONFIG = {"room":"demo","redirect":"http://localhost:8080/?room=demo&return=","open":["/favicon.ico","/robots.txt","/static/*"]};

const kvs = cf.kvs();
const COOKIE = 'vestibule';
// At most this many cookies of that name are tried (gate.MaxCookieCandidates).
const CANDIDATES = 3;
const MAX_COOKIE = 256;
const MAX_RETURN = 1024;
// v1.<kid>.<room>.<seq>.<expiry>.<mac>; groups: kid, room, expiry, mac.
const FORMAT = /^v1\.([A-Za-z0-9_-]{1,16})\.([A-Za-z0-9_-]{1,64})\.(?:0|[1-9][0-9]{0,17})\.([1-9][0-9]{0,10})\.([A-Za-z0-9_-]{43})$/;
const HEX_KEY = /^[0-9a-f]{64}$/;
const TRAVERSAL = /\.\.|\\|%2e|%5c/i;
const RETURN_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@\/?%]*$/;

async function handler(event) {
    const req = event.request;
    const path = req.uri;
    if (!TRAVERSAL.test(path) && (path === '/.vestibule' || path.indexOf('/.vestibule/') === 0 || isOpen(path))) {
        return req;
    }
    const c = req.cookies ? req.cookies[COOKIE] : undefined;
    if (c) {
        const values = c.multiValue || [c];
        for (let i = 0; i < values.length && i < CANDIDATES; i++) {
            if (await valid(values[i].value)) {
                return req;
            }
        }
    }
    return {
        statusCode: 302,
        statusDescription: 'Found',
        headers: {
            'location': { value: CONFIG.redirect + encodeURIComponent(returnPath(req)) },
            'cache-control': { value: 'no-store' }
        }
    };
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

// valid checks one cookie value as gate.Verify does: size, grammar, room,
// expiry, then the key named by its kid and the MAC, compared in constant time.
async function valid(v) {
    if (typeof v !== 'string' || v.length > MAX_COOKIE) {
        return false;
    }
    const m = FORMAT.exec(v);
    if (!m || m[2] !== CONFIG.room || Number(m[3]) <= Math.floor(Date.now() / 1000)) {
        return false;
    }
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
    const got = m[4];
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
