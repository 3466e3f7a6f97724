// Notices of the visitor's turn (docs/PAGE.md, "Notices"): in a room that
// offers them, "Notify me" signs the visitor up for a web push where the
// browser has one (a service worker, /notice-sw.js, shows it even with the
// page closed), or for an email everywhere else; the visitor can stop it.
// The page bundles only a hook (main.js): this module is its own bundle,
// /notice.js, loaded when an enqueue answer carries the offer, and its texts
// other than English are lang/notice/<tag>.json, fetched then. It imports
// only what keeps no state (the API's calls, the ticket's reading): what it
// shares with the page (the language, the elements) comes in start's hooks,
// so it adds nothing to the page's first load.
import * as calls from './api.js';
import { ticketRef } from './ticket.js';

const SW = '/notice-sw.js';

// English; the other languages' tables are lang/notice/<tag>.json, with the
// same keys and {placeholders} (notice.test.js).
export const texts = {
  noticeOnPush: "We'll tell you with a notification when it's your turn, even if you close this page. Your turn is then kept for {minutes} minutes.",
  noticeOnEmail: "We'll email {email} when it's your turn. Your turn is then kept for {minutes} minutes: open the link in this browser.",
  noticeEmailAsk: "This browser can't get notifications from this page. Give an email address and we'll write when it's your turn.",
  noticeEmailLabel: 'Email address',
  noticeEmailSend: 'Email me',
  noticeStop: 'Stop notifying me',
  noticeStopped: "You won't be told of your turn. Keep this page open.",
  noticeBadEmail: "That doesn't look like an email address.",
  noticeTooMany: 'Too many requests for notices from here. Try again in a few minutes.',
  noticeFailed: "We couldn't set up the notice. Try again in a moment.",
  noticeLost: 'We lost the address you gave after a fault on our side. Give it again to be told of your turn.',
};

let h = null;      // the page's hooks
let offer = null;  // the room's offer: {push, vapid, email, keepSeconds}
let table = null;  // the texts of the page's language
let mode = '';     // '' (the button), 'form' (asking an email), 'busy'
let note = '';     // a line to show once: a refusal, a loss, a stop
let okAt = 0;      // when the last sign-up succeeded (local ms)

// local is localStorage as the page keeps it (JSON), or nothing when the
// browser keeps none.
const local = {
  get(k) { try { return JSON.parse(localStorage.getItem(k)); } catch { return null; } },
  set(k, v) { try { localStorage.setItem(k, JSON.stringify(v)); } catch { /* kept for nothing */ } },
  del(k) { try { localStorage.removeItem(k); } catch { /* nothing kept */ } },
};

// start takes what the module needs of the page (hooks): room, lang() (the
// page's language), $ (an element by id), body (the page's <body>),
// render() (the page again), on(el, ev, f); a test may give api {notify,
// withdraw} and storage {get, set, del} too. The ticket and what this
// browser signed up for are in localStorage, under the page's keys.
export async function start(hooks) {
  const ticket = () => ((hooks.storage || local).get('vestibule:ticket:' + hooks.room) || {}).ticket || '';
  h = {
    api: { notify: b => calls.notify(hooks.room, ticket(), b), withdraw: () => calls.withdraw(hooks.room, ticket()) },
    storage: local, visitor: () => (ticketRef(ticket()) || {}).visitor || '', key: 'vestibule:notice:' + hooks.room,
    ...hooks,
  };
  await language(h.lang());
  h.on(h.$('notice-form'), 'submit', e => { e.preventDefault(); email(); });
  h.on(h.$('notice-stop'), 'click', stop);
  translate();
}

function translate() {
  const els = [h.$('notice-stop'), ...h.$('notice-form').querySelectorAll('[data-notice-i18n]')];
  for (const el of els) el.textContent = t(el.dataset.noticeI18n);
}

// language loads the texts of lang (English is here).
export async function language(lang) {
  table = texts;
  if (lang && lang !== 'en') {
    try {
      const r = await (h && h.fetch || fetch)('/lang/notice/' + encodeURIComponent(lang) + '.json', { cache: 'default' });
      if (r.ok) table = { ...texts, ...await r.json() };
    } catch { /* English */ }
  }
  if (h) translate();
}

function t(key, vars) {
  let s = (table && table[key]) || texts[key] || key;
  for (const [k, v] of Object.entries(vars || {})) s = s.split('{' + k + '}').join(String(v));
  return s;
}

// setOffer keeps the offer of an enqueue answer (the same for every place:
// in a pre-queue it tells nothing of the draw).
export function setOffer(o) {
  offer = o && typeof o === 'object' && (o.push || o.email) ? o : null;
}

export const offered = () => !!offer;

// The registration as this browser made it, for this ticket's visitor:
// {visitor, kind: 'push'|'email', to}.
function held() {
  const s = h.storage.get(h.key);
  return s && s.visitor && s.visitor === h.visitor() ? s : null;
}

// canPush says whether this browser gets pushes for the page: a service
// worker, the Push API and notifications, in a secure context.
function canPush() {
  return !!(offer && offer.push) && typeof navigator === 'object' && 'serviceWorker' in navigator &&
    typeof PushManager === 'function' && typeof Notification === 'function' && globalThis.isSecureContext !== false;
}

// seen reads a place answer the page asked for at sentAt: a place in the
// queue that the server says holds no notice, while this browser signed up
// before the question, lost it (a total loss of Redis takes it with the
// place's state): a push subscription is given again by itself, an email
// must be asked for again.
export function seen(r, sentAt) {
  const s = held();
  if (!s || r.notify !== false || sentAt < okAt || mode === 'busy') return;
  h.storage.del(h.key);
  if (s.kind === 'push' && canPush() && Notification.permission === 'granted') {
    push(false).catch(() => { note = t('noticeLost'); h.render(); });
    return;
  }
  note = t('noticeLost');
  mode = offer && offer.email ? 'form' : '';
  h.render();
}

// forget drops what this browser keeps of a notice when the visit ends
// (admitted, left, expired): the server deleted the address with the place.
export function forget() {
  h.storage.del(h.key);
  mode = '';
  note = '';
}

// render shows the button, the form, the line and "stop" for the view's state.
export function render(state) {
  const waits = ['waiting', 'paused', 'prequeue'].includes(state);
  const s = waits ? held() : null;
  const minutes = Math.round((offer && offer.keepSeconds || 0) / 60);
  const form = h.$('notice-form');
  h.$('notify').hidden = !waits || !!s || mode !== '';
  form.hidden = !waits || !!s || mode !== 'form';
  h.$('notice-stop').hidden = !waits || !s;
  let line = note;
  if (waits && s) line = s.kind === 'push' ? t('noticeOnPush', { minutes }) : t('noticeOnEmail', { email: s.to, minutes });
  else if (waits && mode === 'form' && !note) line = t('noticeEmailAsk');
  const el = h.$('notify-note');
  el.textContent = waits ? line : '';
  el.hidden = !waits || !line;
  h.body.dataset.notice = waits && s ? s.kind : mode === 'form' ? 'form' : '';
}

// ask is the press of "Notify me": a push where the browser can, else the
// email form.
export async function ask() {
  note = '';
  if (canPush()) {
    mode = 'busy';
    h.render();
    try {
      await push(true);
      return;
    } catch { /* refused or failed: the email, when offered */ }
  }
  mode = offer && offer.email ? 'form' : '';
  if (!mode) note = t('noticeFailed');
  h.render();
  if (mode === 'form') h.$('notice-email').focus();
  else h.$('notify-note').focus();
}

// push asks the permission, registers the service worker, subscribes with
// the offer's key and signs up with the subscription; focus moves the
// keyboard to the line that says so (not when it signs up again by itself).
async function push(focus) {
  try {
    if (await Notification.requestPermission() !== 'granted') throw new Error('notifications refused');
    const reg = await navigator.serviceWorker.register(SW, { scope: '/' });
    const key = bytes(offer.push);
    let sub = await reg.pushManager.getSubscription();
    if (sub && !sameKey(sub, key)) {
      await sub.unsubscribe();
      sub = null;
    }
    sub = sub || await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    await signUp({ push: sub.toJSON(), vapid: offer.vapid, lang: h.lang() }, { kind: 'push', to: '' });
  } finally {
    if (mode === 'busy') mode = '';
  }
  h.render();
  if (focus) h.$('notify-note').focus();
}

function sameKey(sub, key) {
  const k = sub.options && sub.options.applicationServerKey;
  if (!k) return true;
  const a = new Uint8Array(k);
  return a.length === key.length && a.every((x, i) => x === key[i]);
}

function bytes(b64url) {
  const s = atob(b64url.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(s, c => c.charCodeAt(0));
}

// email signs up with the form's address.
async function email() {
  const input = h.$('notice-email');
  const to = input.value.trim();
  if (!to || !input.checkValidity()) {
    note = t('noticeBadEmail');
    h.render();
    input.focus();
    return;
  }
  mode = 'busy';
  note = '';
  h.render();
  try {
    await signUp({ email: to, lang: h.lang() }, { kind: 'email', to });
    mode = '';
    input.value = '';
    h.render();
    h.$('notify-note').focus();
  } catch (e) {
    mode = 'form';
    note = e && e.status === 400 ? t('noticeBadEmail') : e && e.status === 429 ? t('noticeTooMany') : t('noticeFailed');
    h.render();
    input.focus();
  }
}

async function signUp(body, kept) {
  await h.api.notify(body);
  okAt = Date.now();
  h.storage.set(h.key, { visitor: h.visitor(), ...kept });
}

// stop withdraws the notice: the server deletes the address; a push
// subscription is dropped too.
async function stop() {
  const s = held();
  h.storage.del(h.key);
  note = t('noticeStopped');
  mode = '';
  h.render();
  h.$('notify-note').focus();
  try { await h.api.withdraw(); } catch { /* the next poll says notify: false; nothing is kept past the place anyway */ }
  if (s && s.kind === 'push' && typeof navigator === 'object' && 'serviceWorker' in navigator) {
    try {
      const reg = await navigator.serviceWorker.getRegistration('/');
      const sub = reg && await reg.pushManager.getSubscription();
      if (sub) await sub.unsubscribe();
    } catch { /* nothing to drop */ }
  }
}
