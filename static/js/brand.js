// The room's page setting (title, message, logo, accent colour), made safe to
// show: texts are picked for the visitor's language and only ever set as
// text, the logo only loads from https (or loopback http, for make dev), and
// the accent gets black or white text, whichever contrasts more (WCAG 2).

import { chinese } from './i18n.js';

const COLOR_RE = /^#[0-9a-f]{6}$/i;

// pickText chooses a text for the visitor: a string is for every language;
// an object is keyed by language tag: for each preferred language in turn,
// the same tag, else the same language (ko-KR finds ko, ko finds ko-KR, zh-CN
// finds zh-Hans, zh-TW finds zh-Hant, pt finds pt-BR: Chinese in one script
// never finds the other); then, for a Chinese reader, Chinese in either script;
// then English; then the first.
// It returns {text, lang} (lang '' when unknown), or null for nothing to show.
export function pickText(value, preferred) {
  if (typeof value === 'string') return value.trim() ? { text: value, lang: '' } : null;
  if (!value || typeof value !== 'object') return null;
  const entries = Object.entries(value).filter(([, v]) => typeof v === 'string' && v.trim());
  if (!entries.length) return null;
  const found = match => {
    const e = entries.find(([k]) => match(k.toLowerCase()));
    return e ? { text: e[1], lang: e[0] } : null;
  };
  const base = l => l.split(/[-_]/)[0];
  const language = l => (base(l) === 'zh' ? 'zh-' + chinese(l) : base(l));
  for (const p of preferred) {
    const r = found(k => k === p) || found(k => language(k) === language(p));
    if (r) return r;
  }
  for (const p of preferred) {
    const r = found(k => base(k) === base(p));
    if (r) return r;
  }
  return found(k => k === 'en') || found(k => base(k) === 'en') || { text: entries[0][1], lang: entries[0][0] };
}

// accent returns the colour and the text colour to put on it, or null when
// the value is not #rrggbb.
export function accent(value) {
  if (typeof value !== 'string' || !COLOR_RE.test(value)) return null;
  return { color: value.toLowerCase(), text: textOn(value) };
}

// luminance is WCAG 2's relative luminance of #rrggbb.
export function luminance(hex) {
  const c = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16) / 255)
    .map(v => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}

// contrast is WCAG 2's contrast ratio of two #rrggbb colours.
export function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

// textOn picks black or white for text on the colour: whichever contrasts
// more, which is always at least 4.58:1.
export function textOn(hex) {
  return contrast(hex, '#000000') >= contrast(hex, '#ffffff') ? '#000000' : '#ffffff';
}

// safeLogo returns the logo's URL when it may load: https, or http on a
// loopback host (make dev); '' otherwise.
export function safeLogo(value) {
  if (typeof value !== 'string' || !value) return '';
  try {
    const u = new URL(value);
    if (u.username || u.password) return '';
    if (u.protocol === 'https:') return u.href;
    if (u.protocol === 'http:' && /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(u.hostname)) return u.href;
  } catch { /* not a URL */ }
  return '';
}
