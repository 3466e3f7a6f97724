// The operator's console: every room's figures, refreshed every few seconds,
// charts of what this page has seen since it opened (started from the room's
// last day as the ticks recorded it), and the actions: pause, resume, close,
// open, drain, delete and every room setting, each confirmed in a dialog that
// shows old → new. The settings' controls and limits come from the API's
// settings table (/console-settings.json). A refused change stays on its card
// with the server's reason until dismissed, and after a refusal or a cancel
// the fields show the room's actual settings.
//
// It calls the admin routes on its own origin. Served by `vestibule console`
// those are a proxy on 127.0.0.1 that signs each call (or adds the admin key),
// so this page never holds AWS credentials; served by the local stack
// (make dev, /console) it asks for the admin key and keeps it in this tab.
/* global uPlot */

import { reportSection, scheduleSection } from './console-sale.js';

const KEY = 'vestibule.console.adminKey';
const params = new URLSearchParams(location.search);
// ?every=SECONDS changes the refresh (tests use a short one).
const every = Math.max(0.2, Number(params.get('every')) || 3) * 1000;
const keep = 1440 + 1200; // points per chart: a day of history, a minute apart, then an hour at 3 s

const $ = (id) => document.getElementById(id);
const statusEl = $('status');
const roomsEl = $('rooms');
const cards = new Map(); // room id → card
// The charts by room id, for a look from the browser's developer tools (and the tests).
const charts = new Map();
window.__consoleCharts = charts;

const fmt = new Intl.NumberFormat('en');
const n = (v) => fmt.format(v ?? 0);

function status(text, error = false) {
  statusEl.textContent = text;
  statusEl.classList.toggle('error', error);
}

class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { 'X-Vestibule-Console': '1', Accept: 'application/json' };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = 'Bearer ' + key;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, {
    method, headers, cache: 'no-store', credentials: 'same-origin', // the console's secret (a cookie)
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let j = null;
  try { j = await r.json(); } catch { /* not JSON */ }
  if (!r.ok) {
    throw new APIError(r.status, j?.error?.code || '', j?.error?.message || j?.message || r.statusText);
  }
  return j;
}

// What each action does: the mode it sets, when it applies, and what the
// confirmation says.
const actions = {
  pause: {
    mode: 'paused', can: (m) => m !== 'paused' && m !== 'closed',
    title: (id) => `Pause room ${id}?`,
    text: () => 'Nobody is admitted until you resume. Waiting visitors keep their places and are told the queue is paused.',
    done: (id) => `Room ${id} paused.`,
  },
  resume: {
    mode: 'queue', can: (m) => m === 'paused',
    title: (id) => `Resume room ${id}?`,
    text: (c) => `The room goes back to queue mode and admits up to ${n(c.admitPerMinute)} a minute, at most ${n(c.maxActive)} at a time.`,
    done: (id) => `Room ${id} resumed (queue mode).`,
  },
  close: {
    mode: 'closed', can: (m) => m !== 'closed',
    title: (id) => `Close room ${id}?`,
    text: () => 'New arrivals are refused and nobody is admitted. Waiting visitors are told the room is closed.',
    done: (id) => `Room ${id} closed.`,
  },
  open: {
    mode: 'queue', can: (m) => m === 'closed',
    title: (id) => `Open room ${id}?`,
    text: (c) => `The room goes back to queue mode: arrivals queue and are admitted up to ${n(c.admitPerMinute)} a minute.`,
    done: (id) => `Room ${id} open (queue mode).`,
  },
};

// The actions that are not a mode: drain (a closed room's queue) and delete.
const roomActions = {
  drain: {
    can: (m) => m === 'closed',
    title: (id) => `Drain room ${id}?`,
    text: (c, s) => `waiting ${n(s.waiting)} → 0\nEvery waiting visitor loses their place for good; admitted and active visitors keep theirs.`,
    run: (id) => api('POST', `/api/admin/rooms/${encodeURIComponent(id)}/drain`, {}),
    done: (id, r) => `Room ${id} drained: ${n(r?.removed)} removed.`,
  },
  delete: {
    can: (m) => m === 'closed',
    title: (id) => `Delete room ${id}?`,
    text: (c) => `room ${c.mode}, max active ${n(c.maxActive)} → deleted\nThe room, its settings, queue, grants and sessions are removed for good: admitted visitors' entry tokens and sessions stop working. Its log of changes stays. The API refuses while visitors wait (drain it first).`,
    run: (id) => api('DELETE', `/api/admin/rooms/${encodeURIComponent(id)}`),
    done: (id) => `Room ${id} deleted.`,
  },
};

// confirm shows the dialog and resolves true when the operator confirms.
function confirmStep(title, text) {
  const dlg = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  return new Promise((resolve) => {
    const ok = $('confirm-ok');
    const cancel = $('confirm-cancel');
    const finish = (v) => {
      ok.removeEventListener('click', onOK);
      cancel.removeEventListener('click', onCancel);
      dlg.removeEventListener('close', onClose);
      if (dlg.open) dlg.close();
      resolve(v);
    };
    const onOK = () => finish(true);
    const onCancel = () => finish(false);
    const onClose = () => finish(false); // Escape
    ok.addEventListener('click', onOK);
    cancel.addEventListener('click', onCancel);
    dlg.addEventListener('close', onClose);
    dlg.showModal();
    cancel.focus();
  });
}

// change sends a PUT of settings to the card's room. Done or refused, the
// fields then show the room's actual settings; a refusal stays on the card,
// with the server's reason, until the operator dismisses it.
async function change(card, settings, done) {
  return act(card, () => api('PUT', `/api/admin/rooms/${encodeURIComponent(card.id)}`, settings), () => done);
}

// act runs a write of the card's room, then refreshes the cards and puts
// the room's actual settings in its fields; only then does it say what it
// did (done) or show why the server refused.
async function act(card, write, done) {
  card.busy = true;
  updateButtons(card);
  let result;
  let refused = null;
  try {
    result = await write();
  } catch (e) {
    refused = e;
  }
  card.busy = false;
  card.dirty = false;
  await refresh();
  const here = cards.get(card.id) === card;
  if (here) {
    fillForms(card);
    if (card.el.querySelector('.audit').open) loadAudit(card);
    updateButtons(card);
  }
  if (refused) {
    const e = refused;
    refuse(card, `Refused: ${e.message}${e.code ? ` (${e.status} ${e.code})` : ''}. Nothing was changed.`);
    status(`Room ${card.id}: the change was refused.`, true);
  } else {
    status(done(result));
  }
  // Writes finished, done or refused (for a look from the tests).
  card.el.dataset.writes = String((Number(card.el.dataset.writes) || 0) + 1);
}

// refuse shows why the server refused a change on the card ('' hides it).
function refuse(card, text) {
  const box = card.el.querySelector('.refusal');
  box.querySelector('[data-field="refusal"]').textContent = text;
  box.hidden = !text;
  card.el.dataset.refused = text ? '1' : '';
}

function updateButtons(card) {
  const mode = card.info?.config?.mode;
  for (const b of card.el.querySelectorAll('[data-action]')) {
    const a = actions[b.dataset.action] || roomActions[b.dataset.action];
    b.disabled = card.busy || !a.can(mode);
  }
  for (const b of card.el.querySelectorAll('form button')) b.disabled = card.busy;
}

function chartWidth(card) {
  return Math.max(260, card.plot.clientWidth || 480);
}

// The time axis: 24-hour local times ("14:05", or "14:05:30" when the ticks
// are under a minute apart) and, under the first label and wherever the day
// changes, the date ("Nov 27"). The ticks are spaced by the widest label the
// range can show, measured in the axis' own font, so labels never run
// together whatever the hour, the date or the font.
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const pad2 = (x) => String(x).padStart(2, '0');
const dayFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const widths = new Map(); // label → width in px, in AXIS_FONT
let measure = null;
// The distances between ticks the axis picks from, in seconds: whole
// seconds at least (a label shows no fraction of one).
const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
  3600, 7200, 10800, 14400, 21600, 43200, 86400, 2 * 86400, 7 * 86400];

function textWidth(text) {
  let w = widths.get(text);
  if (w === undefined) {
    measure ??= document.createElement('canvas').getContext('2d');
    measure.font = AXIS_FONT;
    w = measure.measureText(text).width;
    widths.set(text, w);
  }
  return w;
}

// timeSpace is the axis' least distance between ticks, in px: the widest
// time ("00:00:00" in the widest digit) or date of the range, and 16 px.
function timeSpace(u, axis, min, max) {
  let w = 0;
  for (let d = 0; d <= 9; d++) w = Math.max(w, textWidth(`${d}${d}:${d}${d}:${d}${d}`));
  const day = new Date(min * 1000);
  day.setHours(0, 0, 0, 0);
  for (let i = 0; i < 400 && day.getTime() <= max * 1000; i++) {
    w = Math.max(w, textWidth(dayFmt.format(day)));
    day.setDate(day.getDate() + 1);
  }
  return Math.ceil(w) + 16;
}

// timeValues labels the ticks at splits (seconds), incr apart.
function timeValues(u, splits, axis, space, incr) {
  let last = '';
  return splits.map((s, i) => {
    const d = new Date(s * 1000);
    const time = `${pad2(d.getHours())}:${pad2(d.getMinutes())}` + (incr < 60 ? `:${pad2(d.getSeconds())}` : '');
    const day = d.toDateString();
    const label = i === 0 || day !== last ? `${time}\n${dayFmt.format(d)}` : time;
    last = day;
    return label;
  });
}

function newChart(card) {
  if (typeof uPlot === 'undefined') return null;
  const series = (label, stroke, scale, dash) => ({ label, stroke, scale, width: 2, dash, points: { show: false } });
  return new uPlot({
    width: chartWidth(card), height: 200,
    series: [
      {},
      series('waiting', '#1d5c8a', 'w'),
      series('active', '#9b1c1c', 'n'),
      series('admitted', '#6b4b00', 'n', [6, 3]),
      series('admitted/min', '#1e6b43', 'n', [2, 3]),
    ],
    scales: { x: { time: true, range: (u, lo, hi) => (lo === hi ? [lo - 60, hi + 1] : [lo, hi]) }, w: { range: (u, lo, hi) => [0, Math.max(1, hi)] }, n: { range: (u, lo, hi) => [0, Math.max(1, hi)] } },
    // The legend names the series; their values are the figures above (a
    // live legend shows "--" until the pointer is on the chart).
    legend: { live: false },
    axes: [
      { stroke: '#4f5a67', font: AXIS_FONT, space: timeSpace, values: timeValues, incrs: TIME_INCRS },
      { scale: 'w', stroke: '#1d5c8a' },
      { scale: 'n', side: 1, stroke: '#4f5a67', grid: { show: false } },
    ],
  }, card.data, card.plot);
}

// localInput gives an ISO time as a datetime-local input's value (local
// time, to the minute); '' for none.
function localInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const p = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// settingValue reads a settings control as the API wants it.
function settingValue(input) {
  if (input.dataset.list) return listOf(input.value);
  if (input.type === 'number') return Number(input.value);
  if (input.type === 'checkbox') return input.checked;
  if (input.type === 'datetime-local') return input.value ? new Date(input.value).toISOString() : null;
  return input.value.trim();
}

// sameSetting reports whether a control shows the setting's value v.
function sameSetting(input, v) {
  if (input.dataset.list) return (listOf(input.value) || []).join(' ') === (v || []).join(' ');
  if (input.type === 'checkbox') return input.checked === Boolean(v);
  if (input.type === 'datetime-local') return input.value === localInput(v);
  if (input.type === 'number') return input.value !== '' && Number(input.value) === v;
  return input.value.trim() === String(v ?? '');
}

// listOf reads a list setting's control (oidcRedirectUris): one item a
// line (or separated by spaces or commas); none is null, which clears it.
function listOf(text) {
  const items = text.split(/[\s,]+/).filter(Boolean);
  return items.length ? items : null;
}

// table is the API's settings table (/console-settings.json): each setting
// with its kind and limits, in the table's order.
let table = [];
const tableReady = fetch('/console-settings.json', { cache: 'no-store' })
  .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
  .then((j) => { table = j.settings || []; })
  .catch(() => { status('The console could not read the settings table (/console-settings.json).', true); });
const row = (name) => table.find((s) => s.name === name);
const part = (name) => row('page')?.parts?.find((p) => p.name === name);

// The labels of the settings shown first; the others are under "More
// settings", labelled by their name and described by the table's text.
const LABELS = {
  maxActive: 'Max active (capacity)', admitPerMinute: 'Admit per minute (rate)', mode: 'Mode',
  opensAt: 'Opens at (empty: no pre-queue)', originUrl: 'Origin URL',
};

// limit gives a control the table's limits for its setting (or page part).
function limit(input, s) {
  if (!s) return;
  if (s.kind === 'number') { input.min = s.min; input.max = s.max; input.step = 1; }
  if (s.maxLength) input.maxLength = s.maxLength;
  if (s.pattern) input.pattern = s.pattern;
}

// settingsFields makes the settings form's controls from the table: one per
// setting but the page (its own forms), the first ones in view and the rest
// under "More settings".
function settingsFields(form) {
  const more = form.querySelector('.more-settings');
  for (const s of table) {
    if (s.kind === 'page') continue;
    const div = document.createElement('div');
    div.className = s.kind === 'url' ? 'field wide' : s.kind === 'boolean' ? 'field check' : 'field';
    const label = document.createElement('label');
    label.dataset.for = s.name;
    label.textContent = LABELS[s.name] || s.name;
    let input;
    if (s.kind === 'choice') {
      input = document.createElement('select');
      for (const c of s.choices) input.append(new Option(c, c));
    } else if (s.kind === 'list') {
      input = document.createElement('textarea');
      input.rows = 2;
      input.dataset.list = '1';
      div.className = 'field wide';
    } else {
      input = document.createElement('input');
      input.type = { number: 'number', url: 'url', time: 'datetime-local', boolean: 'checkbox' }[s.kind] || 'text';
      if (s.kind === 'number' || s.kind === 'url') input.required = true;
    }
    input.dataset.setting = s.name;
    input.title = s.doc;
    limit(input, s);
    if (s.kind === 'boolean') div.append(input, label); else div.append(label, input);
    if (LABELS[s.name]) more.before(div); else more.append(div);
  }
}

// fillForms shows the room's actual settings in every field of its card.
function fillForms(card) {
  const c = card.info?.config;
  if (!c) return;
  for (const input of card.el.querySelectorAll('.settings [data-setting]')) {
    const k = input.dataset.setting;
    if (input.type === 'checkbox') input.checked = Boolean(c[k]);
    else if (input.dataset.list) input.value = (c[k] || []).join('\n');
    else input.value = input.type === 'datetime-local' ? localInput(c[k]) : (c[k] ?? '');
  }
  const msg = messageOf(c.page?.message);
  for (const ta of card.el.querySelectorAll('.page-form [data-message]')) ta.value = msg[ta.dataset.message] ?? '';
  const title = messageOf(c.page?.title);
  for (const input of card.el.querySelectorAll('.title-form [data-title]')) input.value = title[input.dataset.title] ?? '';
  for (const input of card.el.querySelectorAll('.brand-form [data-brand]')) input.value = c.page?.[input.dataset.brand] ?? '';
}

// shownSetting says a setting's value for a confirmation: numbers grouped,
// times local, none for null.
function shownSetting(k, v) {
  if (v === null || v === undefined || v === '') return 'none';
  if (typeof v === 'number') return n(v);
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  if (Array.isArray(v)) return v.join(', ');
  if (k === 'opensAt') return clockFmt.format(Date.parse(v));
  return String(v);
}

// LANGS are the waiting page's languages (static/js/i18n.js), each with the
// name the console labels it by: a room's title and message can be given in
// each. The page shows a visitor the text of their language, else a fallback.
const LANGS = [['en', 'English'], ['ko', 'Korean'], ['ja', 'Japanese'], ['zh-Hans', 'Chinese (Simplified)'],
  ['es', 'Spanish'], ['fr', 'French'], ['de', 'German'], ['pt-BR', 'Portuguese (Brazil)']];
const langName = Object.fromEntries(LANGS);

// messageOf gives a page message as {en, ko, …} ('' where none); a plain
// string is every language's.
function messageOf(m) {
  if (typeof m === 'string') return { ...Object.fromEntries(LANGS.map(([l]) => [l, m])), all: true };
  return { ...(m || {}) };
}

// moreLanguages adds to form the fields of the languages after English and
// Korean (which the template has), folded away under "Other languages".
function moreLanguages(form, field, noun, multiline) {
  const more = document.createElement('details');
  more.className = 'more-langs';
  const summary = document.createElement('summary');
  summary.textContent = `${noun[0].toUpperCase() + noun.slice(1)} in other languages`;
  more.append(summary);
  for (const [l, name] of LANGS.slice(2)) {
    const div = document.createElement('div');
    div.className = multiline ? 'field wide' : 'field';
    const label = document.createElement('label');
    label.dataset.for = `${field}-${l}`;
    label.textContent = `${noun[0].toUpperCase() + noun.slice(1)} on the waiting page, ${name}`;
    const input = document.createElement(multiline ? 'textarea' : 'input');
    input.dataset[field] = l;
    input.lang = l;
    limit(input, part(field));
    if (multiline) input.rows = 2;
    div.append(label, input);
    more.append(div);
  }
  form.querySelector('button').before(more);
}

// loadAudit fills the card's list of changes (GET …/log), newest first.
async function loadAudit(card) {
  const list = card.el.querySelector('[data-field="audit"]');
  let entries;
  try {
    ({ entries } = await api('GET', `/api/admin/rooms/${encodeURIComponent(card.id)}/log`));
  } catch { return; }
  list.replaceChildren(...(entries || []).slice().reverse().map((e) => {
    const li = document.createElement('li');
    const what = (e.changes || []).map((c) => `${c.setting} ${JSON.stringify(c.old)} → ${JSON.stringify(c.new)}`).join(', ');
    li.textContent = `${clockFmt.format(Date.parse(e.at))} · ${e.who} · ${e.action === 'change' ? what : e.action + (what ? ': ' + what : '')}`;
    return li;
  }));
  card.el.dataset.audit = String((entries || []).length);
}

function newCard(id) {
  const el = $('room-template').content.firstElementChild.cloneNode(true);
  const slug = id.replace(/[^A-Za-z0-9_-]/g, '');
  el.dataset.room = id;
  el.setAttribute('aria-labelledby', `room-${slug}`);
  const h = el.querySelector('.room-name');
  h.id = `room-${slug}`;
  h.textContent = id;
  el.querySelector('.actions').setAttribute('aria-label', `Actions on room ${id}`);
  settingsFields(el.querySelector('.settings'));
  moreLanguages(el.querySelector('.title-form'), 'title', 'title', false);
  moreLanguages(el.querySelector('.page-form'), 'message', 'message', true);
  for (const i of el.querySelectorAll('[data-title]')) limit(i, part('title'));
  for (const i of el.querySelectorAll('[data-message]')) limit(i, part('message'));
  for (const i of el.querySelectorAll('[data-brand]')) limit(i, part(i.dataset.brand));
  for (const label of el.querySelectorAll('label[data-for]')) {
    const input = label.parentElement.querySelector('input, select, textarea');
    input.id = `${label.dataset.for}-${slug}`;
    label.htmlFor = input.id;
  }
  const card = {
    id, el, plot: el.querySelector('.chart-plot'), data: [[], [], [], [], []],
    chart: null, info: null, busy: false, dirty: false,
  };
  el.querySelector('.chart').setAttribute('aria-label', `Chart of room ${id}`);
  const audit = el.querySelector('.audit');
  audit.addEventListener('toggle', () => { if (audit.open) loadAudit(card); });
  scheduleSection(card, api); // console-sale.js
  reportSection(card, api);
  el.querySelector('[data-dismiss]').addEventListener('click', () => {
    refuse(card, '');
    el.querySelector('.settings button').focus();
  });
  for (const b of el.querySelectorAll('[data-action]')) {
    b.addEventListener('click', async () => {
      const cfg = card.info.config;
      const ra = roomActions[b.dataset.action];
      if (ra) {
        if (await confirmStep(ra.title(id), ra.text(cfg, card.info.stats))) {
          await act(card, () => ra.run(id), (r) => ra.done(id, r));
        }
        if (!cards.has(id)) { $('rooms').focus(); return; }
      } else {
        const a = actions[b.dataset.action];
        if (await confirmStep(a.title(id), `mode ${cfg.mode} → ${a.mode}\n${a.text(cfg)}`)) {
          await change(card, { mode: a.mode }, a.done(id));
        }
      }
      // Back where the operator was, or (the button is now disabled, e.g.
      // Pause once paused) on the action that undoes it.
      (b.disabled ? el.querySelector('[data-action]:not(:disabled)') : b)?.focus();
    });
  }
  const form = el.querySelector('.settings');
  form.addEventListener('input', () => { card.dirty = true; });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    const cfg = card.info.config;
    const want = {};
    const lines = [];
    for (const input of form.querySelectorAll('[data-setting]')) {
      const k = input.dataset.setting;
      if (!sameSetting(input, cfg[k])) {
        const v = settingValue(input);
        want[k] = v;
        lines.push(`${k} ${shownSetting(k, cfg[k])} → ${shownSetting(k, v)}`);
      }
    }
    if (lines.length === 0) {
      status(`Room ${id}: nothing to change.`);
      return;
    }
    if (await confirmStep(`Change room ${id}?`, `${lines.join('\n')}\nIt applies from the next admission tick.`)) {
      await change(card, want, `Room ${id}: ${lines.join(', ')}.`);
    } else {
      cancelled(card);
    }
    form.querySelector('button').focus();
  });
  // The waiting page's title and message (the room's page setting,
  // docs/PAGE.md), one text per language.
  textForm(card, el.querySelector('.title-form'), 'title', 'title');
  textForm(card, el.querySelector('.page-form'), 'message', 'message');
  brandForm(card, el.querySelector('.brand-form'));
  supportForm(card);
  roomsEl.append(el);
  return card;
}

// supportForm is the room's support lookup (docs/OPERATING.md, "Support
// lookup"): the visitor of a reference, and a lost place restored with a reason.
function supportForm(card) {
  const form = card.el.querySelector('.support-form');
  const restore = card.el.querySelector('.restore-form');
  const out = card.el.querySelector('[data-field="support"]');
  const ref = form.querySelector('[data-support="ref"]');
  const base = `/api/admin/rooms/${encodeURIComponent(card.id)}/visitors`;
  const at = (iso) => (iso ? clockFmt.format(Date.parse(iso)) : '–');
  const showVisitor = (v) => {
    const place = v.position ? ` at place ${n(v.position)}` : '';
    out.textContent = `${v.visitor}: ${v.state}${place}${v.bypass ? ' (bypass)' : ''} · joined ${at(v.joinedAt)}` +
      ` · last poll ${at(v.lastPoll)} · admitted ${at(v.admittedAt)} · claim deadline ${at(v.claimDeadline)}` +
      ` · consumed ${v.consumed ? 'yes' : 'no'}` +
      ` · session end ${at(v.sessionEnd)}`;
    card.el.dataset.support = v.state;
    restore.hidden = v.state !== 'lost' && v.state !== 'left';
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    try {
      showVisitor(await api('GET', `${base}?ref=${encodeURIComponent(ref.value)}`));
    } catch (e) {
      out.textContent = e.message;
      card.el.dataset.support = 'error';
      restore.hidden = true;
    }
  });
  restore.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!restore.reportValidity()) return;
    const reason = restore.querySelector('[data-support="reason"]').value;
    if (!await confirmStep(`Restore ${ref.value}'s place in ${card.id}?`, `Reason: ${reason}\nThe place comes back at its sequence.`)) return;
    try {
      showVisitor(await api('POST', `${base}/restore`, { ref: ref.value, reason }));
      status(`Room ${card.id}: ${ref.value}'s place restored.`);
    } catch (e) {
      out.textContent = e.message;
    }
  });
}

// textForm makes form edit the page's text field (title or message), one
// text per language ([data-FIELD="en"], …); other languages the text has are
// kept, and the same text in both is sent as one text for every language.
function textForm(card, form, field, noun) {
  const id = card.id;
  form.addEventListener('input', () => { card.dirty = true; });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const page = { ...(card.info.config.page || {}) };
    const old = messageOf(page[field]);
    const text = old.all ? {} : { ...old };
    delete text.all;
    const lines = [];
    for (const input of form.querySelectorAll(`[data-${field}]`)) {
      const l = input.dataset[field];
      const v = input.value.trim();
      if (v) text[l] = v; else delete text[l];
      if (v || l === 'en' || l === 'ko') lines.push(v ? `${langName[l]}: "${v}"` : `${langName[l]}: no ${noun}`);
    }
    const langs = Object.keys(text);
    let value = text;
    if (langs.length === 0) value = undefined;
    // The same text in every language is sent as one text, for every language.
    else if (langs.length === LANGS.length && LANGS.every(([l]) => text[l] === text.en)) value = text.en;
    if (value === undefined) delete page[field]; else page[field] = value;
    const summary = `The waiting page's ${noun}:\n${lines.join('\n')}`;
    if (await confirmStep(`Change the ${noun} of room ${id}?`, `${summary}\nOpen pages show it at their next poll.`)) {
      await change(card, { page: Object.keys(page).length ? page : null }, `Room ${id}: ${noun} changed.`);
    } else {
      cancelled(card);
    }
    form.querySelector('button').focus();
  });
}

// brandForm makes form edit the page's logo and accent colour; the page's
// title and message are kept.
function brandForm(card, form) {
  const id = card.id;
  form.addEventListener('input', () => { card.dirty = true; });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    const page = { ...(card.info.config.page || {}) };
    const lines = [];
    for (const input of form.querySelectorAll('[data-brand]')) {
      const k = input.dataset.brand;
      const v = input.value.trim();
      if (v === (page[k] ?? '')) continue;
      lines.push(`page.${k} ${shownSetting(k, page[k])} → ${shownSetting(k, v)}`);
      if (v) page[k] = v; else delete page[k];
    }
    if (lines.length === 0) {
      status(`Room ${id}: nothing to change.`);
      return;
    }
    if (await confirmStep(`Change the branding of room ${id}?`, `${lines.join('\n')}\nOpen pages show it at their next poll.`)) {
      await change(card, { page: Object.keys(page).length ? page : null }, `Room ${id}: ${lines.join(', ')}.`);
    } else {
      cancelled(card);
    }
    form.querySelector('button').focus();
  });
}

// cancelled puts the room's actual settings back in the card's fields: a
// cancelled edit is not left there for the next "Change…" to send.
function cancelled(card) {
  card.dirty = false;
  fillForms(card);
  status(`Room ${card.id}: nothing changed.`);
}

function show(card, info, t) {
  card.info = info;
  const { config: c, stats: s } = info;
  const set = (k, v) => { card.el.querySelector(`[data-figure="${k}"]`).textContent = v; };
  set('waiting', n(s.waiting));
  set('admitted', n(s.admitted));
  set('active', n(s.active));
  // The engine holds a place of maxActive for each admitted visitor until
  // their token is redeemed or expires: both count against it.
  const held = s.active + s.admitted;
  set('held', `${n(held)} / ${n(c.maxActive)}` + (c.maxActive > 0 ? ` (${Math.floor(held * 100 / c.maxActive)}%)` : ''));
  set('admittedLastMinute', `${n(s.admittedLastMinute)} / ${n(c.admitPerMinute)}`);
  // Notices of visitors' turns (a room with notifiedClaimTTLSeconds): sent, failed, and the
  // turns claimed after the window a visitor without one would have had.
  set('notices', c.notifiedClaimTTLSeconds > 0 || s.noticesSent > 0
    ? `${n(s.noticesSent)} / ${n(s.noticesFailed)} · ${n(s.turnsSaved)} (${n(s.noticesHeld)} waiting to be told)` : 'off');
  const mode = card.el.querySelector('[data-field="mode"]');
  // A room that could not be read (its stored record unreadable) says why;
  // before its opening a room in queue mode is a pre-queue: say so.
  const prequeue = c.mode === 'queue' && c.opensAt && Date.parse(c.opensAt) > Date.now();
  mode.textContent = info.error ? `error: ${info.error.message}` : prequeue ? 'pre-queue' : c.mode;
  mode.dataset.mode = info.error ? 'error' : c.mode;
  card.el.dataset.mode = c.mode;
  // The fields follow the room while the operator is not editing them.
  if (!card.dirty && !card.el.querySelector('form:focus-within')) fillForms(card);
  showOpening(card);
  showSteering(card);
  updateButtons(card);

  const d = card.data;
  d[0].push(t); d[1].push(s.waiting); d[2].push(s.active); d[3].push(s.admitted); d[4].push(s.admittedLastMinute);
  if (d[0].length > keep) for (const a of d) a.shift();
  card.el.dataset.samples = String(d[0].length);
  if (!card.chart) {
    card.chart = newChart(card);
    charts.set(card.id, card.chart);
  }
  else card.chart.setData(d);
}

// What each why of the room's own steering means (docs/ENGINE.md, "Steering").
const netWhy = {
  arrivals: 'arrivals above queueAbovePerMinute', queue: 'visitors waiting', full: 'every slot taken',
  rate: 'the admission bucket empty', restored: 'restored after a loss of Redis', calm: 'calm for calmSeconds',
};
const paceWhy = {
  backoff: 'backing off: the origin reports a load of 0.9 or more',
  floor: 'at admitPerMinuteMin: the origin reports a load of 0.9 or more',
  hold: 'holding: the origin reports 0.75–0.9', climb: 'climbing: the origin reports below 0.75',
  quiet: 'climbing: no report from the origin for 30 s', top: 'at admitPerMinute',
};

// showSteering says how the room steers itself: an auto room's safety net
// and the pace that follows the origin, each with why; hidden when neither.
function showSteering(card) {
  const el = card.el.querySelector('[data-field="steering"]');
  const { config: c, stats: s } = card.info;
  const parts = [];
  if (s.net) parts.push(`Safety net ${s.net} (${netWhy[s.netWhy] || s.netWhy || 'never switched'})`);
  if (s.paceWhy) {
    // The rate it admits at; the pace the ETAs are told at runs ahead of it
    // while it climbs (docs/ENGINE.md, "Steering"), shown when it differs.
    const rate = n(Math.round(s.ratePerMinute * 10) / 10), told = n(Math.round(s.pacePerMinute * 10) / 10);
    const beside = told === rate ? '' : ` (ETAs told at ${told}/min)`;
    parts.push(`rate ${rate}/min of ${n(c.admitPerMinuteMin)}..${n(c.admitPerMinute)}${beside}, ${paceWhy[s.paceWhy] || s.paceWhy}`);
  }
  el.textContent = parts.join(' · ');
  el.hidden = parts.length === 0;
  card.el.dataset.net = s.net || '';
}

// duration says a number of seconds as 1:02:03, 2:03 or 0:05.
function duration(sec) {
  sec = Math.max(0, Math.floor(sec));
  const h = Math.floor(sec / 3600);
  const m = Math.floor((sec % 3600) / 60);
  const ss = String(sec % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

const clockFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

// showOpening tells where a room with an opening time stands: before it,
// the countdown, the visitors pre-queued and the lottery's commitment; after
// it, the published seed that verify-draw checks tickets against.
function showOpening(card) {
  const el = card.el.querySelector('[data-field="opening"]');
  const c = card.info.config;
  const st = card.status;
  card.el.querySelector('[data-figure="pace"]').textContent = st ? `${n(Math.round(st.ratePerMinute))} / min` : '–';
  card.el.querySelector('[data-figure="eta"]').textContent = st?.etaSeconds == null ? '–' : duration(st.etaSeconds);
  if (!c.opensAt) {
    el.hidden = true;
    delete card.el.dataset.opening;
    return;
  }
  const at = Date.parse(c.opensAt);
  const left = (at - Date.now()) / 1000;
  el.hidden = false;
  if (left > 0) {
    el.dataset.state = 'prequeue';
    card.el.dataset.opening = 'prequeue';
    el.textContent = `Pre-queue: opens ${clockFmt.format(at)} (in ${duration(Math.ceil(left))}) · ${n(card.info.stats.waiting)} pre-queued`
      + (st?.drawCommitment ? ` · draw committed ${st.drawCommitment}` : '');
  } else {
    el.dataset.state = 'open';
    card.el.dataset.opening = 'open';
    el.textContent = `Opened ${clockFmt.format(at)} (${duration(-left)} ago)`
      + (st?.drawSeed ? ` · draw seed published ${st.drawSeed} (vestibule verify-draw checks a ticket)` : '');
  }
}

// readStatus reads the room's public status (pace, wait, commitment, seed).
async function readStatus(card) {
  try {
    card.status = await api('GET', `/api/rooms/${encodeURIComponent(card.id)}/status`);
  } catch {
    card.status = null;
  }
  if (card.info) showOpening(card);
}

// seedHistory starts a new card's chart from the room's last day as the
// admission ticks recorded it (GET …/history, a point a minute), ahead of the
// samples this page takes; a deployment without the route leaves the chart to
// those samples.
async function seedHistory(card) {
  let points;
  try {
    ({ points } = await api('GET', `/api/admin/rooms/${encodeURIComponent(card.id)}/history`));
  } catch { return; }
  const d = card.data;
  const first = d[0].length ? d[0][0] : Infinity;
  const old = (points || []).filter((p) => Date.parse(p.minute) / 1000 < first);
  if (old.length === 0) return;
  d[0].unshift(...old.map((p) => Date.parse(p.minute) / 1000));
  d[1].unshift(...old.map((p) => p.waiting));
  d[2].unshift(...old.map((p) => p.active));
  d[3].unshift(...old.map((p) => p.admitted));
  d[4].unshift(...old.map((p) => p.admittedLastMinute));
  card.el.dataset.history = String(old.length);
  card.chart?.setData(d);
}

let timer = 0;
let needKey = false;
let proxied = false; // served by `vestibule console`

let refreshes = 0; // refreshes started; only the latest one's answer is shown

async function refresh() {
  clearTimeout(timer);
  if (needKey) return;
  const seq = ++refreshes;
  try {
    await tableReady;
    const { rooms } = await api('GET', '/api/admin/rooms');
    // An answer that a later refresh overtook (one a change started) is
    // older than what the page shows: it is dropped.
    if (seq !== refreshes) return;
    const t = Date.now() / 1000;
    const seen = new Set();
    let added = false;
    for (const info of rooms) {
      seen.add(info.room);
      let card = cards.get(info.room);
      if (!card) {
        card = newCard(info.room);
        cards.set(info.room, card);
        seedHistory(card);
        added = true;
      }
      show(card, info, t);
      readStatus(card);
      card.refreshSale?.(); // console-sale.js: an open schedule is read again
    }
    for (const [id, card] of cards) {
      if (!seen.has(id)) { card.el.remove(); cards.delete(id); charts.delete(id); }
    }
    // The busiest rooms first, ordered when rooms come or go only: cards do
    // not move under the operator's pointer at every refresh.
    if (added) {
      const busy = (c) => c.info.stats.waiting + c.info.stats.admitted + c.info.stats.active;
      const order = [...cards.values()].sort((a, b) => busy(b) - busy(a) || a.id.localeCompare(b.id));
      for (const c of order) roomsEl.append(c.el);
    }
    $('empty').hidden = rooms.length > 0;
    document.body.dataset.updated = String(t);
    document.body.dataset.refreshes = String(seq);
    if (statusEl.classList.contains('error')) status('');
  } catch (e) {
    if (seq !== refreshes) return;
    if (e.status === 401) {
      needKey = true;
      sessionStorage.removeItem(KEY);
      $('keyform').hidden = false;
      status('This deployment wants the admin key.', true);
      $('key').focus();
      return;
    }
    if (e.code === 'console_secret') {
      // `vestibule console` wants the secret of its run (a cookie the
      // address it printed sets).
      status('This console wants its secret: open the address `vestibule console` printed.', true);
    } else if (e.status === 403 && !proxied) {
      // Opened on a deployment's own site: the IAM-authorised admin routes
      // refuse unsigned calls.
      status('The admin routes refused this page (403). In AWS, run `vestibule console --stack NAME`: it serves this console on 127.0.0.1 and signs each call.', true);
    } else {
      status(`Refresh failed: ${e.message}`, true);
    }
  }
  timer = setTimeout(refresh, every);
}

// Creating a room: the settings the form gives over the deployment's
// defaults, after a confirmation; a room that exists is refused (changing
// it is its card's job).
$('create-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = $('create-form');
  if (!f.reportValidity()) return;
  const id = f.elements.id.value.trim();
  const want = {
    originUrl: f.elements.originUrl.value.trim(),
    maxActive: Number(f.elements.maxActive.value),
    admitPerMinute: Number(f.elements.admitPerMinute.value),
  };
  if (f.elements.opensAt.value) want.opensAt = new Date(f.elements.opensAt.value).toISOString();
  const path = `/api/admin/rooms/${encodeURIComponent(id)}`;
  try {
    await api('GET', path);
    createRefused(`Room ${id} exists already: change it on its card.`);
    return;
  } catch (e) {
    if (e.code !== 'unknown_room') { createRefused(`Room ${id}: ${e.message}`); return; }
  }
  const lines = Object.entries(want).map(([k, v]) => `${k} ${shownSetting(k, v)}`);
  if (!(await confirmStep(`Create room ${id}?`, `${lines.join('\n')}\nThe other settings take the deployment's defaults.`))) return;
  try {
    await api('PUT', path, want);
    status(`Room ${id} created.`);
    f.reset();
    $('new-room').open = false;
    await refresh();
    cards.get(id)?.el.querySelector('h2')?.scrollIntoView({ block: 'nearest' });
  } catch (e) {
    createRefused(`Refused: ${e.message}${e.code ? ` (${e.status} ${e.code})` : ''}. Room ${id} was not created.`);
  }
});

// createRefused keeps why a room was not created in view until dismissed.
function createRefused(text) {
  const box = $('create-refusal');
  box.querySelector('[data-field="refusal"]').textContent = text;
  box.hidden = !text;
  if (text) status('The new room was refused.', true);
}
$('create-refusal').querySelector('[data-dismiss]').addEventListener('click', () => {
  createRefused('');
  $('new-id').focus();
});

$('keyform').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(KEY, $('key').value.trim());
  $('key').value = '';
  $('keyform').hidden = true;
  needKey = false;
  status('');
  refresh();
});

addEventListener('resize', () => {
  for (const card of cards.values()) card.chart?.setSize({ width: chartWidth(card), height: 200 });
});

async function target() {
  try {
    const r = await fetch('/console-target.json', { cache: 'no-store' });
    if (r.status === 403) { // `vestibule console` without its secret
      proxied = true;
      $('target').textContent = 'vestibule console, without its secret';
      return;
    }
    if (!r.ok) throw new Error(String(r.status));
    const t = await r.json();
    proxied = true;
    $('target').textContent = `${t.endpoint} · ${t.auth === 'AWS SigV4' ? 'calls signed with your AWS credentials' : 'calls carry the admin key'}`;
  } catch {
    $('target').textContent = `${location.host} · the local stack`;
  }
}

// The new room's limits are the API's too.
tableReady.then(() => {
  limit($('new-max'), row('maxActive'));
  limit($('new-rate'), row('admitPerMinute'));
  limit($('new-origin'), row('originUrl'));
});

target();
refresh();
