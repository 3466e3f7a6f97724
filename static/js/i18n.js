// The page's texts. English is here, in the page's bundle; each other
// language's table is its own file, lang/<tag>.json, which the page fetches
// (load) only for the language it shows, so a visitor downloads one language.
// The language comes from the page's address (?lang=ja), then a choice made
// with the page's switch, then the browser's languages, then English
// (choose()); {n}-style placeholders are filled by t(). docs/PAGE.md says how
// to add a language.
export const texts = {
  en: {
    skip: 'Skip to content',
    loading: 'Joining the line…',
    room: 'Waiting room: {room}',
    noRoom: 'No waiting room named',
    noRoomLead: 'The address should name a room, for example ?room=demo.',
    unknownRoom: 'This waiting room does not exist',
    unknownRoomLead: 'Check the link you followed.',
    waitingTitle: "You're in line",
    waitingLead: "When it's your turn we'll take you to the site automatically. Keep this page open; refreshing it keeps your place.",
    prequeueTitle: 'The line opens soon',
    prequeueLead: "You're registered. When the line opens, everyone here gets a place in random order, so there's no need to hurry or refresh.",
    pausedTitle: 'The line is paused',
    pausedLead: "Nobody is being let in right now. You keep your place; we'll continue automatically.",
    closedTitle: 'This line is closed',
    closedLead: 'The waiting room is not letting anyone in. This page checks again by itself.',
    expiredTitle: 'Your place has expired',
    expiredLead: 'Your turn passed or the page was away too long. You can join the line again.',
    leftTitle: 'You left the line',
    leftLead: 'Your place was given up. You can join again at the end of the line.',
    admittedTitle: "It's your turn",
    admittedLead: 'Taking you to the site now…',
    admittedOther: 'Your turn is being used in another tab or window of this browser.',
    endedTitle: 'Your visit has ended',
    endedLead: 'Your turn was used. To come back, join the line again.',
    errorTitle: 'Something went wrong',
    errorLead: 'The waiting room could not understand the request.',
    uninvitedTitle: 'Invitation only',
    uninvitedLead: 'This waiting room admits invited visitors only. If you have an invitation link, open it.',
    inviteRefusedLead: 'This invitation cannot be used: it has expired, was withdrawn, or every place it gives has been taken.',
    position: 'Your place in line',
    ahead: 'Ahead of you',
    waiting: 'Waiting in total',
    eta: 'Estimated wait',
    opensIn: 'Opens in',
    opensAt: 'Opens at {time}',
    openingNow: 'Opening now…',
    findingPlace: 'Finding your place…',
    goNow: 'Continue now',
    rejoin: 'Join the line again',
    leave: 'Leave the line',
    leaveConfirm: 'Leave the line? You will lose your place.',
    reconnecting: 'Reconnecting… your place is kept.',
    updated: 'Updated {time}',
    updatedCounting: 'Checked at {time}. Until the next check the numbers count down at the pace people are let in: about {rate} a minute.',
    updatedCountingSlow: 'Checked at {time}. Until the next check the numbers count down at the pace people are let in.',
    about: 'about',
    notifyMe: "Notify me when it's my turn",
    notifyOn: "You'll get a notification when it's your turn, even with this tab in the background.",
    notifyBlocked: 'Notifications are blocked for this site. Keep this tab where you can see it.',
    notifyBody: 'Come back to the waiting room to go to the site.',
    etaNow: 'Any moment',
    etaUnderMinute: 'Under 1 min',
    etaMinutes: '{lo}–{hi} min',
    etaHours: '{lo}–{hi} hours',
    etaLong: 'Over {hi} hours',
    sayPosition: 'You are number {n} in line. Estimated wait: {eta}.',
    sayPositionAbout: 'You are about number {n} in line. Estimated wait: {eta}.',
    sayPrequeue: 'The line opens in {eta}.',
    supportRef: 'Your reference, if you write to support: {visitor}',
    drawRefBefore: 'Your lottery reference: {visitor}. Your draw stays secret until the line opens; then you can check it here.',
    drawRef: 'Your lottery reference: {visitor}, draw {draw}. Anyone can check that the draw was fair, in this page or with: {command}',
    drawCheck: 'Check the draw',
    drawOk: 'Checked in this page: the seed published at the opening matches the commitment published before it, and the room orders you by the draw it gives.',
    drawBad: "The check failed ({what}): the lottery's published data do not match. Keep your reference and tell the organiser.",
    drawWait: 'The room has not confirmed your draw yet. Try again in a moment.',
    logo: 'Event logo',
    language: 'Language',
  },
};

// LANGUAGES are the page's languages, each named in itself for the switch;
// every one but English has its table in lang/<tag>.json.
export const LANGUAGES = {
  en: 'English', ko: '한국어', ja: '日本語', 'zh-Hans': '简体中文',
  es: 'Español', fr: 'Français', de: 'Deutsch', 'pt-BR': 'Português (Brasil)',
};

// Primary languages written right to left; a page in one is laid out with
// dir="rtl" (the stylesheet uses logical properties).
const RTL = new Set(['ar', 'ckb', 'dv', 'fa', 'he', 'ps', 'sd', 'ug', 'ur', 'yi']);

// dir is the direction of a language's script: "rtl" or "ltr".
export function dir(tag) {
  const l = String(tag || '').toLowerCase().split(/[-_]/);
  if (l.includes('arab') || l.includes('hebr')) return 'rtl';
  if (l.includes('latn') || l.includes('cyrl')) return 'ltr';
  return RTL.has(l[0]) ? 'rtl' : 'ltr';
}

// chinese tells the script a Chinese tag is read in: "hant" for Traditional
// (zh-Hant, zh-TW, zh-HK, zh-MO), "hans" for the rest (zh, zh-CN, zh-SG, zh-Hans).
export function chinese(tag) {
  const sub = String(tag || '').toLowerCase().split(/[-_]/).slice(1);
  if (sub.includes('hans')) return 'hans';
  return sub.includes('hant') || ['tw', 'hk', 'mo'].some(r => sub.includes(r)) ? 'hant' : 'hans';
}

// match is the page's language for a BCP 47 tag, '' when it has none: the same
// tag in any case, else the same primary language (fr-CA finds fr, pt and pt-PT
// find pt-BR, zh, zh-CN and zh-SG find zh-Hans). Traditional Chinese finds
// zh-Hans only when loose (after every other language the visitor reads).
export function match(tag, loose = false) {
  const l = String(tag || '').trim().toLowerCase().replace(/_/g, '-');
  if (!l) return '';
  const codes = Object.keys(LANGUAGES);
  const same = codes.find(c => c.toLowerCase() === l);
  if (same) return same;
  const base = l.split('-')[0];
  if (base === 'zh' && chinese(l) === 'hant' && !loose) return '';
  return codes.find(c => c.toLowerCase().split('-')[0] === base) || '';
}

// choose picks the page's language: the address's ?lang=, then the switch's
// remembered choice, then the browser's languages in order, then English.
export function choose({ url = '', saved = '', languages = [] } = {}) {
  const asked = [url, saved, ...languages].filter(Boolean);
  for (const loose of [false, true]) {
    for (const l of asked) {
      const m = match(l, loose);
      if (m) return m;
    }
  }
  return 'en';
}

const KEY = 'vestibule:lang';

function urlLang() {
  try { return String(new URLSearchParams(location.search).get('lang') || ''); } catch { return ''; /* no address */ }
}
function savedLang() {
  try { return localStorage.getItem(KEY) || ''; } catch { return ''; /* storage off: the browser's language */ }
}
function browserLangs() {
  if (typeof navigator === 'undefined') return [];
  return navigator.languages && navigator.languages.length ? [...navigator.languages] : [navigator.language || 'en'];
}

let lang = choose({ url: urlLang(), saved: savedLang(), languages: browserLangs() });
let picked = '';   // the language picked with the switch on this page

// current is the language the page shows: the one chosen, once its table
// is loaded (load); English until then, or when it could not be.
export function current() { return texts[lang] ? lang : 'en'; }

// wanted is the language chosen, whose table may not be loaded yet.
export function wanted() { return lang; }

// tableURL is where a language's table is: lang/<tag>.json at the page's root.
export const tableURL = l => `/lang/${l}.json`;

// load fetches the table of language l (a key of LANGUAGES) once, and says
// whether the page has it. A failure leaves the page in English.
export async function load(l) {
  if (texts[l]) return true;
  if (!LANGUAGES[l]) return false;
  try {
    const r = await fetch(tableURL(l));
    if (!r.ok) return false;
    const table = await r.json();
    if (table && typeof table === 'object') texts[l] = table;
  } catch { /* offline, or the table broken: English */ }
  return !!texts[l];
}

// preferred lists the visitor's languages, best first, for texts that come in
// more languages than the page's own (the room's page setting): the language
// picked with the switch, the address's, the remembered choice, the browser's,
// then the page's current one. brand.pickText matches them with the same
// fallbacks as match().
export function preferred() {
  return [...new Set([picked, urlLang(), savedLang(), ...browserLangs(), lang]
    .filter(Boolean).map(l => String(l).toLowerCase()))];
}

export function set(l) {
  if (!LANGUAGES[l]) return;
  lang = picked = l;
  try { localStorage.setItem(KEY, l); } catch { /* the choice lasts this page only */ }
}

export function t(key, vars = {}) {
  const s = (texts[lang] || texts.en)[key] ?? texts.en[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (_, k) => (k in vars ? String(vars[k]) : ''));
}
