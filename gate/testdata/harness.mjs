// The parity harness: runs the deployable gate function (CloudFrontFunction's
// output plus one appended line, "export { handler };") over the cases of
// gate/parity_test.go and prints what it decided, and the KeyValueStore reads
// and HMACs each case cost, as JSON on stdout.
//
//   node harness.mjs <dir>
//
// <dir> holds gate.mjs (the function), passthrough.mjs (a trivial function
// returning the request, for the timing baseline), node_modules/cloudfront
// (cloudfront-stub.mjs) and input.json:
//
//   {"kvs": {name: value}, "now": ms, "cases": [{"name", "method", "target", "cookie", "headers", "response"}],
//    "bench": {"iterations": n, "cases": [{"name", "method", "target", "cookie"}]}}
//
// The events are built as CloudFront builds them for a viewer request, from
// the raw request target and Cookie header: uri is the path as sent;
// querystring and cookies are objects of {value}, with multiValue listing
// every value when a name repeats. A case with "response" ({header name:
// [values]}, names in lower case) is a viewer-response event for that request,
// whose response carries those headers; the harness prints the headers and
// cookies the function's answer holds.
import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.argv[2];
const input = JSON.parse(readFileSync(join(dir, 'input.json'), 'utf8'));
// "now" (ms, 0 for none) fixes the function's clock at the instant the Go
// side decides at, so a verdict or a Max-Age never depends on how long node
// took to start.
if (input.now) {
    Date.now = () => input.now;
}
globalThis.__vestibuleKVS = { entries: input.kvs, reads: 0 };

// Every HMAC the function sets up is counted (the function's 'crypto' is
// this same module object), so that a case's cost is counted, not timed.
let hmacs = 0;
const createHmac = crypto.createHmac;
crypto.createHmac = function (...args) {
    hmacs++;
    return createHmac.apply(this, args);
};

const gate = await import(pathToFileURL(join(dir, 'gate.mjs')).href);
const passthrough = await import(pathToFileURL(join(dir, 'passthrough.mjs')).href);

function trim(s) {
    return s.replace(/^[ \t]+|[ \t]+$/g, '');
}

// add puts one value under name as CloudFront does: {value} for the first,
// then multiValue with all of them.
function add(obj, name, value) {
    const o = obj[name];
    if (o === undefined) {
        obj[name] = { value };
        return;
    }
    if (!o.multiValue) {
        o.multiValue = [{ value: o.value }];
    }
    o.multiValue.push({ value });
}

function event(c) {
    const q = c.target.indexOf('?');
    const uri = q < 0 ? c.target : c.target.slice(0, q);
    const querystring = Object.create(null);
    if (q >= 0) {
        for (const part of c.target.slice(q + 1).split('&')) {
            if (part === '') continue;
            const i = part.indexOf('=');
            add(querystring, i < 0 ? part : part.slice(0, i), i < 0 ? '' : part.slice(i + 1));
        }
    }
    const cookies = Object.create(null);
    for (const part of (c.cookie || '').split(';')) {
        const i = part.indexOf('=');
        if (i < 0) continue;
        add(cookies, trim(part.slice(0, i)), trim(part.slice(i + 1)));
    }
    const ev = {
        version: '1.0',
        context: { eventType: 'viewer-request', distributionId: 'EDFDVBD6EXAMPLE', requestId: 'parity' },
        viewer: { ip: '192.0.2.1' },
        request: {
            method: c.method,
            uri,
            querystring,
            headers: { host: { value: 'booking.example.com' } },
            cookies
        }
    };
    // The case's own request headers (names in lower case), as CloudFront
    // gives them: {value}.
    for (const name of Object.keys(c.headers || {})) {
        ev.request.headers[name] = { value: c.headers[name] };
    }
    if (c.response) {
        ev.context.eventType = 'viewer-response';
        const headers = Object.create(null);
        for (const name of Object.keys(c.response)) {
            for (const v of c.response[name]) add(headers, name, v);
        }
        headers['content-type'] = { value: 'text/html' };
        ev.response = { statusCode: 200, statusDescription: 'OK', headers, cookies: Object.create(null) };
    }
    return ev;
}

// responseOutcome is what a viewer-response answer holds: its headers (the
// values of each) and its cookies (value and attributes).
function responseOutcome(ev, res) {
    if (res !== ev.response) {
        return { pass: false, status: -1, location: 'unexpected result: ' + JSON.stringify(res) };
    }
    const headers = {};
    for (const name of Object.keys(res.headers || {})) {
        const h = res.headers[name];
        headers[name] = (h.multiValue || [h]).map((x) => x.value);
    }
    const cookies = {};
    for (const name of Object.keys(res.cookies || {})) {
        cookies[name] = { value: res.cookies[name].value, attributes: res.cookies[name].attributes || '' };
    }
    return { pass: true, status: res.statusCode, location: '', headers, cookies };
}

function outcome(ev, res) {
    if (res === ev.request) {
        return { pass: true, status: 0, location: '', cacheControl: '' };
    }
    if (res && typeof res.statusCode === 'number') {
        const h = res.headers || {};
        return {
            pass: false,
            status: res.statusCode,
            location: h.location ? h.location.value : '',
            cacheControl: h['cache-control'] ? h['cache-control'].value : ''
        };
    }
    return { pass: false, status: -1, location: 'unexpected result: ' + JSON.stringify(res), cacheControl: '' };
}

const results = [];
for (const c of input.cases) {
    const store = globalThis.__vestibuleKVS;
    store.reads = 0;
    hmacs = 0;
    const ev = event(c);
    let r;
    try {
        r = c.response ? responseOutcome(ev, await gate.handler(ev)) : outcome(ev, await gate.handler(ev));
    } catch (e) {
        r = { pass: false, status: -1, location: 'threw: ' + e, cacheControl: '' };
    }
    r.name = c.name;
    r.kvsReads = store.reads;
    r.hmacs = hmacs;
    results.push(r);
}

// time runs fn over a fresh event of c n times and returns nanoseconds per call.
async function time(fn, c, n) {
    const events = [];
    for (let i = 0; i < n; i++) events.push(event(c));
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await fn(events[i]);
    return Number(process.hrtime.bigint() - start) / n;
}

const bench = [];
if (input.bench && input.bench.iterations > 0) {
    const n = input.bench.iterations;
    for (const c of input.bench.cases) {
        // Warm up both, then alternate the measured runs so drift hits both,
        // and keep the best run of each: the least disturbed by GC and by
        // other work on the machine.
        await time(gate.handler, c, n / 10);
        await time(passthrough.handler, c, n / 10);
        let g = Infinity, p = Infinity;
        for (let round = 0; round < 5; round++) {
            g = Math.min(g, await time(gate.handler, c, n));
            p = Math.min(p, await time(passthrough.handler, c, n));
        }
        bench.push({ name: c.name, gateNs: g, passthroughNs: p });
    }
}

process.stdout.write(JSON.stringify({ node: process.version, results, bench }) + '\n');
