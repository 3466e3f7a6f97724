// The waiting page. One tab per room (the leader, see tabs.js) joins the line
// and polls when the server says; every tab renders the same view. The ticket
// lives in localStorage, so a refresh or a second tab keeps the place.
import * as api from './api.js';
import { solve } from './solve.js';
import { coordinate } from './tabs.js';
import * as i18n from './i18n.js';
import { t } from './i18n.js';
import { etaRange, count, countdown, clock, dateTime, bucket, progress } from './format.js';
import { pickText, accent, safeLogo } from './brand.js';
import { estimate, isClimb, climbAfter, climbPace } from './estimate.js';
import * as turn from './turn.js';
import * as watch from './watch.js';
import { ticketRef } from './ticket.js';
import { drawOf, check } from './draw.js';
import * as oidc from './oidc.js';

const ROOM_RE = /^[A-Za-z0-9_-]{1,64}$/;
const MOVE_DELAY_MS = 1500;        // long enough to read "It's your turn"
const COUNT_EVERY_MS = 1000;       // the position counts down between polls this often
const HOLD_MARGIN_MS = 15000;      // a hidden tab holds its turn until this long before the grant expires
const ANNOUNCE_EVERY_MS = 30000;   // progress is read out at most this often
const BACKOFF_BASE_MS = 1000;
const BACKOFF_CAP_MS = 30000;
const CLOSED_RETRY_MS = 30000;
const ENDED_KEEP_MS = 10 * 60000;  // a finished visit is shown, not restarted, for this long
const PAGE_WAIT_MS = 2000;         // a new state waits at most this long for the room's new page
const ENDED = ['admitted', 'left', 'expired', 'ended'];

const $ = id => document.getElementById(id);
const body = document.body;
const room = roomFromURL();
// An invitation link's invitation (?invite=), sent with each fresh join.
const invitation = new URLSearchParams(location.search).get('invite') || '';

function roomFromURL() {
  const q = new URLSearchParams(location.search).get('room');
  if (q) return q;
  const m = location.pathname.match(/^\/(?:r|rooms)\/([^/]+)\/?$/);
  return m ? decodeURIComponent(m[1]) : '';
}

// Storage that survives a browser with localStorage switched off (the place
// is then kept for this page only).
const memory = new Map();
const storage = {
  get(k) { try { return JSON.parse(localStorage.getItem(k)); } catch { return memory.get(k) ?? null; } },
  set(k, v) { memory.set(k, v); try { localStorage.setItem(k, JSON.stringify(v)); } catch { /* memory only */ } },
  del(k) { memory.delete(k); try { localStorage.removeItem(k); } catch { /* memory only */ } },
};
const TICKET = 'vestibule:ticket:' + room; // {ticket, start}
const VIEW = 'vestibule:view:' + room;     // the last view, for followers and refreshes
const PAGE = 'vestibule:page:' + room;     // {page, version}: the room's page setting, as last read
const LOTTERY = 'vestibule:lottery:' + room; // {visitor, commitment, draw}: the pre-queue's lottery, as this visitor saw it

// The room's page setting (title, message, logo, accent) and its version, as
// the status route gave them; a refresh or a new tab shows the stored one at once.
let brand = storage.get(PAGE) || { page: null, version: '' };

// ---- rendering (every tab) ----

let view = { state: 'loading' };
let said = { state: null, bucket: 0, at: 0, message: '' };
let tickTimer = 0;
let shown = null;      // the last estimate shown (estimate.js): between polls it only goes down
// The climb the last status read showed while the pace climbs ({climb, at}),
// or null: a poll reply's place is counted down on it (estimate.js).
let climbSeen = null;
const CLIMB_FRESH_MS = 120000; // a climb read longer ago than this may have ended
let docTitle = { title: '', brand: '' };

function show(el, on) { el.hidden = !on; }

// setText shows a picked page text ({text, lang}) as text, never as markup,
// marked with its language when it has one.
function setText(el, picked) {
  el.textContent = picked.text;
  if (picked.lang) el.lang = picked.lang;
  else el.removeAttribute('lang');
}

// renderBrand applies the room's page setting: the title heads the page in
// place of the room id, the message follows the lead (a closed room's replaces
// it), the logo loads, and the accent colours the primary button, the bar and
// the card's edge with black or white text on it. It returns the title shown.
function renderBrand(s) {
  const p = (!['noroom', 'unknown'].includes(s) && brand.page) || {};
  const prefs = i18n.preferred();
  const title = pickText(p.title, prefs);
  const message = pickText(p.message, prefs);
  const top = document.querySelector('.top');
  top.classList.toggle('branded', !!title);
  if (title) setText($('room-name'), title);
  else {
    $('room-name').textContent = room && s !== 'noroom' ? t('room', { room }) : '';
    $('room-name').removeAttribute('lang');
  }
  const closedMessage = s === 'closed' && !!message;
  if (closedMessage) setText($('lead'), message);
  else $('lead').removeAttribute('lang');
  show($('message'), !!message && !closedMessage && s !== 'loading');
  if (message && !closedMessage) setText($('message'), message);
  else $('message').textContent = '';

  const img = $('logo');
  const logo = safeLogo(p.logoUrl);
  if (logo) {
    if (img.getAttribute('src') !== logo) { img.hidden = true; img.src = logo; } // shown once it loads
    img.alt = title ? '' : t('logo'); // beside the title the logo adds nothing to read out
  } else {
    img.hidden = true;
    img.removeAttribute('src');
  }

  const root = document.documentElement;
  const a = accent(p.accentColor);
  if (a) {
    root.style.setProperty('--brand', a.color);
    root.style.setProperty('--brand-text', a.text);
    root.dataset.accent = a.color;
  } else {
    root.style.removeProperty('--brand');
    root.style.removeProperty('--brand-text');
    delete root.dataset.accent;
  }
  body.dataset.pageVersion = brand.version || '';
  return { title, closedMessage };
}

function render(v) {
  view = v;
  const s = v.state;
  body.dataset.state = s;
  body.dataset.reconnecting = v.reconnecting ? '1' : '0';
  const titles = {
    loading: 'loading', waiting: 'waitingTitle', prequeue: 'prequeueTitle', paused: 'pausedTitle',
    closed: 'closedTitle', expired: 'expiredTitle', left: 'leftTitle', admitted: 'admittedTitle',
    ended: 'endedTitle', unknown: 'unknownRoom', noroom: 'noRoom', error: 'errorTitle', uninvited: 'uninvitedTitle',
  };
  const leads = {
    waiting: 'waitingLead', prequeue: 'prequeueLead', paused: 'pausedLead', closed: 'closedLead',
    expired: 'expiredLead', left: 'leftLead', unknown: 'unknownRoomLead', noroom: 'noRoomLead', error: 'errorLead',
    admitted: v.moving ? 'admittedLead' : 'admittedOther', ended: 'endedLead',
    uninvited: v.reason === 'invitation_required' ? 'uninvitedLead' : 'inviteRefusedLead',
  };
  $('title').textContent = t(titles[s] || 'loading');
  $('lead').textContent = leads[s] ? t(leads[s]) : '';
  const branded = renderBrand(s);

  const inLine = s === 'waiting' || s === 'paused';
  show($('place'), inLine);
  docTitle = { title: $('title').textContent, brand: branded.title ? branded.title.text : '' };
  const counting = renderPlace(v);

  show($('countdown-box'), s === 'prequeue' && v.opensAt > 0);
  clearTimeout(tickTimer);
  clearInterval(tickTimer);
  if (s === 'prequeue' && v.opensAt > 0) {
    // The countdown to the opening (by the server's clock), ticking when the
    // shown second changes; from the opening on it says the line is opening
    // instead of sitting on 00:00, until the place is known.
    const tick = () => {
      const left = v.opensAt - (Date.now() + (v.skew || 0));
      const opening = left <= 0;
      $('countdown').textContent = opening ? t('openingNow') : countdown(left);
      $('countdown').classList.toggle('opening', opening);
      show($('opens-in'), !opening);
      $('opens-at').textContent = opening ? t('findingPlace') : t('opensAt', { time: dateTime(v.opensAt) });
      if (!opening) tickTimer = setTimeout(tick, (left % 1000 || 1000) + 20);
    };
    tick();
  } else if (counting && !v.heldAt) {
    // Between polls the place counts down by itself; nothing is sent, and the
    // live region is not touched (announce() speaks at polls only).
    tickTimer = setInterval(() => renderPlace(view), COUNT_EVERY_MS);
  }

  renderLottery(v);
  renderSupportRef(v);
  show($('notice'), !!v.reconnecting);
  $('notice').textContent = v.reconnecting ? t('reconnecting') : '';

  show($('leave'), ['waiting', 'paused', 'prequeue'].includes(s));
  show($('rejoin'), ['expired', 'left', 'ended'].includes(s) || (s === 'admitted' && !v.moving));
  show($('go'), s === 'admitted' && !!v.moving && !!target);
  if (target && s === 'admitted') $('go').href = target;
  renderNotify(s);
  announce(v, branded.closedMessage ? $('lead').textContent : '');
}

// lotteryOf is the lottery this visitor joined (LOTTERY), when it is the
// ticket's: its visitor id is the reference the page shows.
function lotteryOf() {
  const lot = storage.get(LOTTERY);
  const saved = storage.get(TICKET);
  const ref = saved && ticketRef(saved.ticket);
  return lot && ref && lot.visitor === ref.visitor ? lot : null;
}

// renderLottery shows a pre-queue visitor the lottery's reference: before the
// opening the visitor id (the draw is secret until then), after it the draw
// too, a button that checks the lottery in the page (draw.js) and the
// command that checks it from anywhere, as printed.
function renderLottery(v) {
  const lot = lotteryOf();
  const on = !!lot && ['prequeue', 'waiting', 'paused', 'closed'].includes(v.state);
  show($('lottery'), on);
  const before = on && v.state === 'prequeue';
  show($('draw-check'), on && !before);
  if (!on) { $('draw-ref').textContent = ''; $('draw-result').textContent = ''; return; }
  const draw = typeof lot.draw === 'number' ? lot.draw : typeof v.roomDraw === 'number' ? v.roomDraw : null;
  $('draw-ref').textContent = before ? t('drawRefBefore', { visitor: lot.visitor }) : t('drawRef', {
    visitor: lot.visitor, draw: draw === null ? '–' : draw.toFixed(6),
    command: 'vestibule verify-draw --endpoint ' + location.origin + ' --room ' + room + ' --visitor ' + lot.visitor,
  });
  if (before) $('draw-result').textContent = '';
}

// renderSupportRef shows the reference a visitor gives support (their
// ticket's visitor id: `vestibule visitors show ROOM REF`) while they hold a
// place or a turn; a pre-queue's lottery line shows the same id instead.
function renderSupportRef(v) {
  const saved = storage.get(TICKET);
  const ref = saved && ticketRef(saved.ticket);
  const on = !!ref && !lotteryOf() && ['waiting', 'paused', 'closed', 'admitted'].includes(v.state);
  show($('support-ref'), on);
  $('support-ref').textContent = on ? t('supportRef', { visitor: ref.visitor }) : '';
}

// checkDraw runs the lottery's check in the page: the seed the status reveals
// against the commitment kept from before the opening, and the draw the room
// orders the visitor by against the seed's (draw.js).
async function checkDraw() {
  const lot = lotteryOf();
  if (!lot) return;
  const out = $('draw-result');
  let r;
  try {
    r = await check(lot.commitment || '', await api.status(room), lot.visitor, typeof view.roomDraw === 'number' ? view.roomDraw : null);
  } catch {
    out.textContent = t('drawWait');
    return;
  }
  if (r.draw !== null) storage.set(LOTTERY, { ...lot, draw: r.draw });
  const wait = r.problems.includes('notOpen') || r.problems.includes('noDraw');
  out.textContent = r.ok ? t('drawOk') : wait ? t('drawWait') : t('drawBad', { what: r.problems.join(', ') });
  body.dataset.drawCheck = r.ok ? 'ok' : wait ? 'wait' : 'failed';
  render(view);
}

// renderPlace shows the place in line, the people ahead, the wait and the
// bar, counted down from the last reply between polls (estimate.js), with the
// tab's title; it says whether the numbers are being counted down.
function renderPlace(v) {
  const s = v.state;
  const e = estimate(v, Date.now(), shown);
  shown = e.counting ? e : null;
  // The place is unknown between the opening of a pre-queue and the poll
  // that gives it, when the page could not estimate it (watch.js).
  const known = !v.placing && e.position > 0;
  if (s === 'waiting' || s === 'paused') {
    const pos = e.position;
    show($('approx'), known && (e.counting || !!v.approx));
    $('position').textContent = known ? count(pos) : '–';
    $('ahead').textContent = known ? count(Math.max(0, pos - 1)) : '–';
    $('waiting').textContent = count(known ? Math.max(e.waiting, pos) : v.waiting);
    $('eta').textContent = s === 'waiting' && known ? etaRange(e.etaSeconds) : '–';
    show($('place-note'), !!v.placing);
    $('place-note').textContent = v.placing ? t('findingPlace') : '';
    const p = known ? progress(v.start, pos) : 0;
    $('bar-fill').style.width = (p * 100).toFixed(1) + '%';
    $('bar').setAttribute('aria-valuenow', String(Math.round(p * 100)));
    $('bar').setAttribute('aria-label', t('position'));
  }
  body.dataset.counting = e.counting ? '1' : '0';
  const perMinute = e.ratePerSecond * 60;
  $('updated').textContent = !v.at || ENDED.includes(s) ? ''
    : e.counting ? t(perMinute >= 1 ? 'updatedCounting' : 'updatedCountingSlow',
      { time: clock(v.at), rate: count(perMinute >= 10 ? Math.round(perMinute) : Math.round(perMinute * 10) / 10) })
    : t('updated', { time: clock(v.at) });
  // The tab's title: the place while waiting; a star when the turn is this
  // tab's, so a visitor sees it on a tab in the background.
  const title = s === 'admitted' && v.moving
    ? '★ ' + docTitle.title + (docTitle.brand ? ' — ' + docTitle.brand : '')
    : (s === 'waiting' && known ? '(' + count(e.position) + ') ' : '') + docTitle.title + (docTitle.brand ? ' · ' + docTitle.brand : '');
  if (document.title !== title) document.title = title;
  return e.counting;
}

// notices is the notices' module (notice.js: a bundle of its own, loaded
// when an enqueue answer offers them: the view keeps the offer, so every tab
// offers it); null until then.
let notices = null;
let noticesLoading = false;
let lastAnswer = null; // {r, sentAt}: the last place answer, which notice.js reads once it is here
function noticesFor(v) {
  if (notices) { if (v.notices) notices.setOffer(v.notices); return; }
  if (!v.notices || noticesLoading) return;
  noticesLoading = true;
  import(new URL('./notice.js', import.meta.url).href).then(async m => {
    await m.start({ room, lang: i18n.current, $, body, render: () => render(view), on: (el, ev, f) => el.addEventListener(ev, f) });
    notices = m;
    if (lastAnswer) m.seen(lastAnswer.r, lastAnswer.sentAt);
    render(view);
  }).catch(() => { noticesLoading = false; });
}

// renderNotify offers the "notify me" button while the visitor waits and the
// browser has not been asked yet; once allowed, it says a notification will come.
// In a room that offers notices of the turn (a push, an email), notice.js does.
let notifyAsked = false;
function renderNotify(s) {
  noticesFor(view);
  if (notices) {
    notices.setOffer(view.notices);
    if (notices.offered()) { notices.render(s); return; }
  }
  const waits = ['waiting', 'paused', 'prequeue'].includes(s);
  const p = turn.permission();
  show($('notify'), waits && p === 'default');
  const note = waits && p === 'granted' ? t('notifyOn') : waits && p === 'denied' && notifyAsked ? t('notifyBlocked') : '';
  $('notify-note').textContent = note;
  show($('notify-note'), !!note);
}

async function askNotify() {
  if (notices && notices.offered()) { notices.ask(); return; }
  const hadFocus = document.activeElement === $('notify');
  notifyAsked = true;
  await turn.askPermission();
  render(view);
  // The button is gone; keep the keyboard's place on what replaced it.
  if (hadFocus && !$('notify-note').hidden) $('notify-note').focus();
}

// EXPLAINED are the states whose lead says what happened and what to do: a
// screen reader hears it with the title.
const EXPLAINED = ['uninvited', 'unknown', 'noroom', 'error'];

// announce tells screen readers about state changes at once, and about
// progress when the position enters a new round-number band, at most every
// ANNOUNCE_EVERY_MS, so a fast poll does not become a stream of speech.
function announce(v, closedMessage) {
  const now = Date.now();
  let msg = '';
  if (v.state === 'loading') return;
  // A place the page estimated (watch.js) is said as "about", and only with
  // a change of state; progress is said with the places replies give.
  const estimated = !!(v.approx || v.placing);
  const opensIn = v.opensAt - (now + (v.skew || 0));
  const sentence = () => v.state === 'waiting'
    ? v.placing ? t('findingPlace')
      : t(v.approx ? 'sayPositionAbout' : 'sayPosition', { n: count(v.position), eta: etaRange(v.etaSeconds) })
    : v.state === 'prequeue' && v.opensAt > 0 ? (opensIn > 0 ? t('sayPrequeue', { eta: countdown(opensIn) }) : t('openingNow')) : '';
  if (v.state !== said.state) {
    // The title the page heads the state with (render), then what changes:
    // the place, the countdown, the room's message, or, where the lead is
    // the news (an invitation-only room, a refused invitation, a room that
    // is not there), the lead.
    const why = EXPLAINED.includes(v.state) ? $('lead').textContent : '';
    msg = [$('title').textContent, sentence() || closedMessage || why].filter(Boolean).join('. ');
  } else if (v.state === 'waiting' && !estimated && (said.estimated ||
      (bucket(v.position) !== said.bucket && now - said.at >= ANNOUNCE_EVERY_MS))) {
    msg = sentence(); // the first place a reply gives after an estimate is said at once
  } else if (v.state === 'closed' && closedMessage && closedMessage !== said.message) {
    msg = closedMessage; // the room's message changed while the visitor waits
  }
  if (!msg) return;
  $('announce').textContent = msg;
  said = { state: v.state, bucket: bucket(v.position), at: now, message: closedMessage, estimated };
}

// applyLanguage shows the page in i18n.current(): <html lang> and dir (right
// to left for such a language), the static texts, the switch, then the view.
function applyLanguage() {
  const root = document.documentElement;
  root.lang = i18n.current();
  root.dir = i18n.dir(i18n.current());
  for (const el of document.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  $('lang').value = i18n.current();
  if (notices) notices.language(i18n.current()).then(() => render(view));
  render(view);
}

// langSwitch fills the language switch: each language named in itself.
function langSwitch() {
  const sel = $('lang');
  for (const [code, name] of Object.entries(i18n.LANGUAGES)) {
    const o = document.createElement('option');
    o.value = code;
    o.lang = code;
    o.textContent = name;
    sel.append(o);
  }
  // The table of the language picked is fetched first (the page carries
  // English alone); meanwhile the page stays as it is.
  sel.addEventListener('change', async () => {
    const l = sel.value;
    await i18n.load(l);
    if (sel.value !== l) return; // another was picked meanwhile
    i18n.set(l);
    applyLanguage();
  });
}

// ---- the leader: joins, polls, backs off ----

let coord = null;
let timer = 0;
let epoch = 0;         // bumped to drop answers that arrive after leave/rejoin
let failures = 0;
let join = true;       // the next request is enqueue (it restores the place when a ticket exists)
let nextAt = 0;
let target = '';       // where an admitted visitor goes, with the entry token
let requests = 0;

function publish(v) {
  const { moving, ...shared } = v;
  storage.set(VIEW, shared);
  if (coord) coord.post({ type: 'view', view: shared });
  render(v);
  watchOn();
}

// moved marks the stored view of an admitted visitor as taken to the site, so
// that the waiting page, opened again (the site's "leave", the gate when the
// session ends), says the visit has ended instead of "in another tab".
function moved() {
  const v = storage.get(VIEW);
  if (v && v.state === 'admitted') storage.set(VIEW, { ...v, moved: true });
}

// ended is the view a page that has just opened shows for the stored one:
// the visit is over when the turn was taken to the site. A tab that was open
// while it happened keeps saying the turn is used in another tab.
function ended(v) {
  return v && v.state === 'admitted' && v.moved && view.state === 'loading' ? { ...v, state: 'ended' } : v;
}

// readPage reads the room's page setting from the status route (public, cached
// a second at the edge). The leader calls it when a reply names a page
// version other than the one shown; an answer older than that version (the
// edge's cache) is shown, and the next reply asks again.
let reading = null;
function readPage() {
  reading = reading || api.status(room).then(pageFrom)
    .catch(() => { /* keep what is shown; the next reply asks again */ }).finally(() => { reading = null; });
  return reading;
}

// pageFrom shows the room's page a status answer carries, when its version is
// not the one shown.
function pageFrom(s) {
  const version = typeof s.pageVersion === 'string' ? s.pageVersion : '';
  if (version !== brand.version) setBrand({ page: s.page && typeof s.page === 'object' ? s.page : null, version });
}

function setBrand(b) {
  brand = b;
  storage.set(PAGE, b);
  if (coord) coord.post({ type: 'page', brand: b });
  render(view);
}

function schedule(ms) {
  clearTimeout(timer);
  nextAt = Date.now() + ms;
  timer = setTimeout(step, ms);
}

function stop() { epoch++; clearTimeout(timer); nextAt = 0; watchOff(); }

// The server decides the pace; the jitter keeps tabs that loaded together apart.
const jitter = ms => ms + Math.random() * Math.min(500, ms * 0.1);

async function step() {
  const my = epoch;
  const saved = storage.get(TICKET);
  const ticket = saved && saved.ticket;
  nextAt = 0; // asking now: nothing is scheduled until the answer says when
  body.dataset.polls = String(++requests);
  const sentAt = Date.now();
  let r;
  try {
    r = join || !ticket ? await enqueue(ticket) : await api.poll(room, ticket);
  } catch (e) {
    if (my === epoch) failed(e);
    return;
  }
  if (my !== epoch) return;
  failures = 0;
  join = false;
  lastAnswer = { r, sentAt };
  if (notices) notices.seen(r, sentAt);
  accepted(r, saved);
}

// enqueue joins; a room that asks a join challenge answers 403 with one, which
// is solved (about a second) and sent with the join once.
async function enqueue(ticket) {
  try {
    return await api.enqueue(room, ticket, null, invitation);
  } catch (e) {
    const c = e.code === 'challenge_required' && e.body && e.body.challenge;
    if (!c || !c.challenge) throw e;
    body.dataset.challenge = 'solving';
    const started = performance.now();
    const solution = await solve(c.challenge, c.bits);
    body.dataset.challenge = String(Math.round(performance.now() - started)); // ms, for tests and curious people
    return api.enqueue(room, ticket, { challenge: c.challenge, solution }, invitation);
  }
}

async function accepted(r, saved) {
  const start = Math.max(saved && saved.start || 0, r.position || 0);
  if (r.ticket) storage.set(TICKET, { ticket: r.ticket, start });
  if (r.state === 'prequeue' && r.ticket) {
    // The lottery this visitor joined: the reference is the ticket's visitor
    // id; the commitment comes with the watch's reads before the opening.
    const ref = ticketRef(r.ticket);
    const lot = storage.get(LOTTERY);
    if (ref && (!lot || lot.visitor !== ref.visitor)) storage.set(LOTTERY, { visitor: ref.visitor, commitment: '' });
  }
  // Place replies name the page's version; a closed room's answer to a
  // visitor without a ticket does not, so then the status is read each time.
  // The new state waits (briefly) for the new page, so a changed message (a
  // closed room's "sold out") shows, and is announced, with it.
  if (typeof r.pageVersion !== 'string' || r.pageVersion !== brand.version) {
    const my = epoch;
    await Promise.race([readPage(), new Promise(done => setTimeout(done, PAGE_WAIT_MS))]);
    if (my !== epoch) return;
  }
  let opensAt = Date.parse(r.opensAt || '') || 0;
  if (r.state === 'prequeue' && !opensAt) {
    // Older APIs give opensAt only on the status route.
    try { opensAt = Date.parse((await api.status(room)).opensAt || '') || 0; } catch { /* no countdown then */ }
  }
  const v = {
    state: r.state, position: r.position || 0, waiting: r.waiting || 0, etaSeconds: r.etaSeconds ?? null,
    ratePerMinute: typeof r.ratePerMinute === 'number' ? r.ratePerMinute : null,
    opensAt, skew: r.clockSkewMs || 0, start, at: Date.now(), repliedAt: Date.now(),
  };
  // While the pace climbs, the place counts down on the climb the status last
  // showed, as it is now, when the reply's pace is the climb's for the place
  // (the server told it that pace on that climb).
  if (r.state === 'waiting' && climbSeen && v.at - climbSeen.at < CLIMB_FRESH_MS && v.ratePerMinute > 0) {
    const c = climbAfter(climbSeen.climb, (v.at - climbSeen.at) / 60000);
    if (watch.samePace(v.ratePerMinute, climbPace(c, v.position))) v.climb = c;
  }
  // From the opening, the draw the room orders the visitor by: the lottery's
  // check compares it with the seed's.
  if (typeof r.draw === 'number') v.roomDraw = r.draw;
  if (r.notices || view.notices) v.notices = r.notices || view.notices; // the offer of notices (enqueue answers carry it)
  if (r.state === 'admitted' || r.state === 'expired') {
    if (notices) notices.forget(); // the server deleted the address with the place
    delete v.notices;
  }
  if (r.state === 'admitted') {
    storage.del(TICKET); // spent: coming back later starts a new visit
    nextAt = 0;          // nothing more to poll: a tab coming back to view must not ask again
    // Sent by a site's OpenID Connect sign-in: post the token to the room's
    // /oidc/<room>/continue, which answers the site with a code (oidc.js). A
    // gated room: post the token to the site's /.vestibule/enter, which sets
    // the gate's cookie (docs/GATE.md). Otherwise the fragment, which never
    // reaches server logs or Referer headers.
    const form = oidc.continueForm(room, r.entryToken) || enterForm(r.enterUrl, r.entryToken);
    target = form ? form.action : safeTarget(r.originUrl, r.entryToken);
    publish({ ...v, moving: !!target });
    if (form) $('go').onclick = e => { e.preventDefault(); submitOnce(form); };
    if (target) {
      yourTurn();
      moveWhenBack(form ? () => submitOnce(form) : () => { moved(); location.replace(target); }, r);
    }
    return;
  }
  if (r.state === 'expired') {
    storage.del(TICKET);
    publish(v);
    return;
  }
  publish(v);
  schedule(jitter(r.pollAfterMs > 0 ? r.pollAfterMs : 5000));
}

// yourTurn tells a visitor who is not looking at the tab: a tone (when an
// interaction of theirs unlocked sound) and a notification (when they allowed
// them); the title has changed already (renderPlace).
function yourTurn() {
  if (document.visibilityState === 'visible' && document.hasFocus()) return;
  const sound = turn.chime();
  const note = turn.notify(document.title, t('notifyBody'), i18n.current(), 'vestibule:' + room);
  body.dataset.alerted = [sound && 'sound', note && 'notification'].filter(Boolean).join(' ') || 'title';
}

// moveWhenBack takes the visitor to the site: after MOVE_DELAY_MS when the tab
// is visible, so "It's your turn" can be read; a hidden tab waits for the
// visitor to come back (so the site's session starts when they are there),
// but moves anyway HOLD_MARGIN_MS (or a quarter of the claim window) before the
// grant expires, because an entry not used in time is lost.
function moveWhenBack(go, r) {
  let done = false;
  let deadline = 0;
  const move = () => {
    if (done) return;
    done = true;
    clearTimeout(deadline);
    document.removeEventListener('visibilitychange', back);
    turn.closeNotification();
    go();
  };
  const back = () => { if (document.visibilityState === 'visible') setTimeout(move, MOVE_DELAY_MS); };
  const expires = (Date.parse(r.grantExpiresAt || '') || 0) - (r.clockSkewMs || 0);
  const left = expires - Date.now();
  const hold = left - Math.max(HOLD_MARGIN_MS, left / 4);
  if (document.visibilityState === 'visible' || !expires || hold <= MOVE_DELAY_MS) {
    setTimeout(move, MOVE_DELAY_MS);
    return;
  }
  body.dataset.holding = '1';
  document.addEventListener('visibilitychange', back);
  deadline = setTimeout(move, hold);
}

function safeTarget(originUrl, token) {
  if (!originUrl || !token) return '';
  try {
    const u = new URL(originUrl, location.href);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return '';
    u.hash = 'token=' + encodeURIComponent(token);
    return u.href;
  } catch { return ''; }
}

// The gate's 302 gives the waiting page ?return=<path on the site>; the same
// rule as gate.SafeReturn (which the server applies again): one leading "/",
// RFC 3986 path and query characters only, at most 1024 bytes; else "/".
function safeReturn() {
  const p = new URLSearchParams(location.search).get('return') || '';
  return p.length <= 1024 && /^\/(?!\/)[A-Za-z0-9\-._~!$&'()*+,;=:@\/?%]*$/.test(p) ? p : '/';
}

// enterForm builds the hidden form that posts the entry token to a gated
// site's /.vestibule/enter (a top-level POST, so the answer can set the
// site's cookie), or returns null when the room is not gated.
function enterForm(enterUrl, token) {
  if (!enterUrl || !token) return null;
  let u;
  try { u = new URL(enterUrl, location.href); } catch { return null; }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
  const form = document.createElement('form');
  form.method = 'post';
  form.action = u.href;
  form.hidden = true;
  for (const [name, value] of [['token', token], ['return', safeReturn()]]) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    input.value = value;
    form.append(input);
  }
  document.body.append(form);
  return form;
}

// An entry token redeems once: a second post would meet "already used".
function submitOnce(form) {
  if (form.dataset.sent) return;
  form.dataset.sent = '1';
  moved();
  form.submit();
}

// ---- the leader watches the room between polls (watch.js decides) ----

let watchTimer = 0;
let watchAt = 0;        // when the planned read comes (local ms)
let watchKey = null;    // what the planned read was planned for (the pre-queue's opening)
let lastRead = 0;       // when the status was last read (local ms); 0: not since the watch began
let statusReading = false;
let opening = { opensAt: 0, at: 0 }; // the read at the pre-queue's opening: opensAt + U(0, 6 s), local ms

// watchOn starts or stops the watch after each view the leader shows: on
// while the visitor holds a place (waiting, paused, pre-queue, closed with a
// ticket), off once the visit is over; a read already planned stays planned
// unless the opening it was planned around moved.
function watchOn() {
  if (!coord || !coord.isLeader() || !watch.watches(view, storage.get(TICKET))) { watchOff(); return; }
  const key = view.state === 'prequeue' ? view.opensAt || 0 : 0;
  if (statusReading) return;
  // A read planned stays planned, unless the opening it was planned around
  // moved, or the view now asks for a sooner one (a place nearer the turn).
  if (watchTimer && key === watchKey && watchAt <= readBy()) return;
  if (!lastRead) lastRead = Date.now(); // the first read comes a regular wait after the reply
  planRead();
}

// remaining is the visitor's remaining wait as the page shows it now (ms, or
// null), which the cadence of the reads follows (watch.js readDelay).
function remaining() {
  const now = Date.now();
  return watch.remainingMs(view, now, estimate(view, now, shown).position);
}

// readBy is the latest a visible tab's next read may come after the last:
// the cadence's longest wait for the remaining wait now.
function readBy() {
  return lastRead + watch.readDelay(document.visibilityState === 'visible', 1, remaining());
}

function watchOff() {
  clearTimeout(watchTimer);
  watchTimer = 0;
  lastRead = 0;
}

function planRead() {
  clearTimeout(watchTimer);
  const now = Date.now();
  let openAt = 0;
  let opensAtLocal = 0;
  if (view.state === 'prequeue' && view.opensAt > 0) {
    opensAtLocal = view.opensAt - (view.skew || 0);
    if (opening.opensAt !== view.opensAt) opening = { opensAt: view.opensAt, at: opensAtLocal + Math.random() * watch.OPEN_SPREAD_MS };
    openAt = opening.at;
  }
  watchKey = view.state === 'prequeue' ? view.opensAt || 0 : 0;
  const at = watch.nextRead(lastRead, watch.readDelay(document.visibilityState === 'visible', Math.random(), remaining()), openAt, opensAtLocal);
  watchAt = at;
  watchTimer = setTimeout(readStatus, Math.max(0, at - now));
}

// watchVisibility: a tab coming back into view reads at once when its last
// read is older than the visible cadence; otherwise (and when it is hidden)
// the next read is planned at the new cadence.
function watchVisibility() {
  if (!watchTimer || statusReading) return;
  if (document.visibilityState === 'visible' && Date.now() - lastRead > watch.readDelay(true, 0, remaining())) readStatus();
  else planRead();
}

async function readStatus() {
  clearTimeout(watchTimer);
  watchTimer = 0;
  const my = epoch;
  const sent = Date.now();
  lastRead = sent;
  statusReading = true;
  let s = null;
  let lost = false;
  try { s = await api.status(room); } catch (e) { lost = !!e.retryable; /* else the next read, or the poll, tells */ }
  statusReading = false;
  if (my !== epoch || !coord.isLeader()) return;
  if (lost && !view.reconnecting) {
    // The room cannot be reached (the poll, minutes away, would say so only
    // then): say so now, and stop the count where it is, as a failed poll does.
    publish({ ...view, reconnecting: true, watchLost: true, heldAt: view.heldAt || Date.now() });
  } else if (s && view.watchLost) {
    // Reached again, and only the watch had lost it: the count goes on.
    const { watchLost, reconnecting, heldAt, ...back } = view;
    publish(back);
  }
  if (s) {
    pageFrom(s);
    climbSeen = isClimb(s.climb) ? { climb: s.climb, at: Date.now() } : null;
  }
  let v = view;
  const lot = lotteryOf();
  const pre = v.state === 'prequeue' || (v.state === 'closed' && v.was === 'prequeue');
  if (s && lot && pre && s.drawCommitment && !s.drawSeed && lot.commitment !== s.drawCommitment) {
    // The commitment before the opening: what the seed revealed must hash to.
    storage.set(LOTTERY, { ...lot, commitment: s.drawCommitment });
  }
  if (s && lot && pre && s.drawSeed) {
    // Opened: the visitor's draw, from the seed and the visitor id, places
    // the page (watch.js) without asking the server.
    try {
      const draw = await drawOf(s.drawSeed, lot.visitor);
      storage.set(LOTTERY, { ...lotteryOf() || lot, draw });
      v = { ...view, draw };
    } catch { /* no Web Crypto: the poll places the visitor */ }
    if (my !== epoch || !coord.isLeader()) return;
  }
  // A reply that came meanwhile is fresher than this answer.
  if (s && !(view.at > sent)) {
    const now = Date.now();
    const d = watch.decide(s, { ...view, draw: v.draw }, { now, shown: estimate(view, now, shown).position, rand: Math.random });
    if (d.view) publish(d.view);
    if (d.replace) pollAt(d.pollAt);
    else if (d.pollAt) pollBy(d.pollAt);
  }
  watchOn();
}

// pollAt moves the next poll to at (local ms), earlier or later: at a
// pre-queue's opening, the poll planned from the draw (watch.js) replaces the
// one the server told before it. A poll under way, or none planned, is left.
function pollAt(at) {
  if (!nextAt) return;
  schedule(Math.max(0, at - Date.now()));
}

// pollBy brings the next poll forward to at (local ms) when it was planned
// later; a poll under way, or none planned (the visit is over, or the page
// waits for an answer), is left as it is.
function pollBy(at) {
  if (!nextAt || at >= nextAt) return;
  schedule(Math.max(0, at - Date.now()));
}

function failed(e) {
  if (e.retryable) {
    failures++;
    const backoff = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (failures - 1));
    // Full jitter over the upper half, never sooner than the server asked.
    const wait = Math.max(e.retryAfterMs || 0, backoff * (0.5 + Math.random() * 0.5));
    // The count down stops where it is: admissions may have stopped too.
    publish({ ...view, state: view.state === 'loading' ? 'loading' : view.state, reconnecting: true, heldAt: view.heldAt || Date.now() });
    schedule(wait);
    return;
  }
  if (uninvited(e)) return;
  if (e.status === 401 || e.status === 403) {
    storage.del(TICKET); // the ticket is no good any more; the place cannot be proven
    publish({ state: 'expired', at: Date.now() });
    return;
  }
  if (e.status === 404) { publish({ state: 'unknown', at: Date.now() }); return; }
  if (/closed/.test(e.code)) {
    publish({ state: 'closed', at: Date.now() });
    join = true;
    schedule(jitter(Math.max(e.retryAfterMs || 0, CLOSED_RETRY_MS)));
    return;
  }
  publish({ state: 'error', at: Date.now() });
}

// uninvited shows an invite-only room's refusal of a join (no invitation, or
// one that cannot be used), in the visitor's language; nothing is retried.
function uninvited(e) {
  if (e.status !== 403 || !/^invitation_/.test(e.code)) return false;
  publish({ state: 'uninvited', reason: e.code, at: Date.now() });
  return true;
}

function rejoin() {
  stop();
  if (notices) notices.forget();
  storage.del(TICKET);
  storage.del(LOTTERY);
  join = true;
  target = '';
  publish({ state: 'loading' });
  step();
}

function leave() {
  const saved = storage.get(TICKET);
  stop();
  if (notices) notices.forget();
  storage.del(TICKET);
  storage.del(LOTTERY);
  const v = { state: 'left', at: Date.now() };
  storage.set(VIEW, v);
  coord.post({ type: 'left', view: v });
  render(v);
  if (saved) api.leave(room, saved.ticket).catch(() => { /* the heartbeat lapses anyway */ });
}

function lead() {
  body.dataset.leader = '1';
  const last = storage.get(VIEW);
  if (!oidc.request && !storage.get(TICKET) && last && ENDED.includes(last.state) && Date.now() - (last.at || 0) < ENDED_KEEP_MS) {
    // A finished visit stays finished until the visitor asks again (a site's
    // sign-in that sends the visitor here again is asking: its session ended).
    const v = ended(last);
    if (v !== last) storage.set(VIEW, v);
    render(v);
    return;
  }
  join = true;
  step();
}

function message(m) {
  switch (m.type) {
    case 'view':
      if (!coord.isLeader()) render(ended(m.view));
      break;
    case 'left':
      if (coord.isLeader()) stop();
      render(m.view);
      break;
    case 'rejoin':
      if (coord.isLeader()) rejoin();
      break;
    case 'hello':
      if (coord.isLeader()) coord.post({ type: 'page', brand });
      if (coord.isLeader() && view.state !== 'loading') coord.post({ type: 'view', view: storage.get(VIEW) || view });
      break;
    case 'page':
      if (!coord.isLeader() && m.brand) { brand = m.brand; render(view); }
      break;
    case 'demoted':
      stop();
      body.dataset.leader = '0';
      break;
  }
}

function boot() {
  langSwitch();
  $('logo').addEventListener('load', e => { e.target.hidden = !e.target.getAttribute('src'); });
  $('logo').addEventListener('error', e => { e.target.hidden = true; });
  applyLanguage();
  if (!ROOM_RE.test(room)) { render({ state: 'noroom' }); return; }
  body.dataset.leader = '0';
  const last = storage.get(VIEW);
  // The last view at once, as it was: not counted on from a reply that may
  // be long past (the place may have gone meanwhile); the join's reply follows.
  if (last && storage.get(TICKET)) render({ ...last, reconnecting: false, heldAt: last.at || 0 });
  $('leave').addEventListener('click', leave);
  $('notify').addEventListener('click', askNotify);
  $('draw-check').addEventListener('click', checkDraw);
  turn.armSound();
  $('rejoin').addEventListener('click', () => (coord.isLeader() ? rejoin() : coord.post({ type: 'rejoin' })));
  coord = coordinate(room, { onLead: lead, onMessage: message });
  coord.post({ type: 'hello' });
  // The link to the site (an ungated room's; a gated one posts its form).
  $('go').addEventListener('click', () => { if (!$('go').onclick) moved(); });
  // A hidden tab's timers run late; catch up as soon as the visitor looks again.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && coord.isLeader() && nextAt && Date.now() > nextAt + 1000) {
      clearTimeout(timer);
      step();
    }
    watchVisibility();
  });
}

// The page starts once the table of its language is here (English needs
// none), so that nothing is shown or read out in another language first.
i18n.load(i18n.wanted()).finally(boot);
