// The waiting room's HTTP API, same origin only: the ticket never leaves for
// another host. Every failure becomes an ApiError whose status says what to do
// (0 = network, 429/5xx = retry later, other 4xx = the request itself is wrong).

export class ApiError extends Error {
  constructor(status, code, message, retryAfterMs, body) {
    super(message || code);
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
    this.body = body || null; // the whole error answer (challenge_required carries the challenge)
  }
  get retryable() { return this.status === 0 || this.status === 429 || this.status >= 500; }
}

const TIMEOUT_MS = 10000;

function retryAfter(h) {
  if (!h) return 0;
  const s = Number(h);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const d = Date.parse(h);
  return Number.isFinite(d) ? Math.max(0, d - Date.now()) : 0;
}

async function call(method, path, ticket, extra, credentials, cache, sent) {
  const headers = { Accept: 'application/json', ...extra };
  if (sent) headers['Content-Type'] = 'application/json';
  if (ticket) headers.Authorization = 'Bearer ' + ticket;
  let res;
  try {
    res = await fetch(path, {
      method, headers, body: sent, cache: cache || 'no-store', credentials: credentials || 'omit', referrerPolicy: 'no-referrer',
      signal: AbortSignal.timeout ? AbortSignal.timeout(TIMEOUT_MS) : undefined,
    });
  } catch (e) {
    throw new ApiError(0, 'network', String(e && e.message || e), 0);
  }
  let body = null;
  try { body = await res.json(); } catch { /* empty or not JSON */ }
  if (!res.ok) {
    const err = body && body.error || {};
    throw new ApiError(res.status, err.code || 'http_' + res.status, err.message || '', retryAfter(res.headers.get('Retry-After')), body);
  }
  if (!body || typeof body !== 'object') throw new ApiError(502, 'bad_body', 'response is not JSON', 0);
  // The server's clock, so a countdown is right on a device whose clock is off.
  const date = Date.parse(res.headers.get('Date') || '');
  body.clockSkewMs = Number.isFinite(date) ? date - Date.now() : 0;
  return body;
}

const base = room => '/api/rooms/' + encodeURIComponent(room);

// Enqueue sends this site's cookies (only a WAF challenge token, where the
// deployment puts one on joins) and, when it has one, a join challenge's proof.
// An invitation (an invite link's) goes in the body.
export const enqueue = (room, ticket, proof, invitation) => call('POST', base(room) + '/enqueue', ticket,
  proof ? { 'X-Vestibule-Challenge': proof.challenge, 'X-Vestibule-Solution': proof.solution } : {}, 'same-origin',
  undefined, invitation ? JSON.stringify({ invitation }) : undefined);
export const poll = (room, ticket) => call('GET', base(room) + '/poll', ticket);
export const leave = (room, ticket) => call('POST', base(room) + '/leave', ticket);
// A notice of the turn (notice.js): a push subscription or an email address.
export const notify = (room, ticket, body) => call('POST', base(room) + '/notify', ticket, {}, undefined, undefined, JSON.stringify(body));
export const withdraw = (room, ticket) => call('DELETE', base(room) + '/notify', ticket);
// The status is public and cached a second at the edge: read with the
// browser's default cache mode, so no request carries a no-cache header that
// could send it past the edge's cache to the API.
export const status = room => call('GET', base(room) + '/status', '', {}, 'omit', 'default');
