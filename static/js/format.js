// Numbers as people read them: wait ranges in friendly units, countdowns,
// grouped counts, and the announcement buckets that decide when a screen
// reader hears about progress.
import { t, current } from './i18n.js';

// The range shown for an estimate: a point estimate promises too much.
export const ETA_LOW = 0.8;
export const ETA_HIGH = 1.3;

export function etaRange(seconds) {
  if (seconds == null || !Number.isFinite(seconds)) return '–'; // no admission rate known yet
  if (seconds <= 0) return t('etaNow');
  const lo = seconds * ETA_LOW;
  const hi = seconds * ETA_HIGH;
  if (hi < 60) return t('etaUnderMinute');
  if (hi < 90 * 60) {
    // Whole minutes; past ten minutes, steps of five read calmer.
    const step = hi > 10 * 60 ? 5 : 1;
    const l = Math.max(1, Math.floor(lo / 60 / step) * step);
    const h = Math.max(l + step, Math.ceil(hi / 60 / step) * step);
    return t('etaMinutes', { lo: l, hi: h });
  }
  const l = Math.max(1, Math.floor(lo / 3600));
  const h = Math.max(l + 1, Math.ceil(hi / 3600));
  if (h > 24) return t('etaLong', { hi: 24 });
  return t('etaHours', { lo: l, hi: h });
}

export function count(n) {
  return Number.isFinite(n) ? new Intl.NumberFormat(current()).format(n) : '–';
}

export function countdown(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = v => String(v).padStart(2, '0');
  return (h > 0 ? h + ':' + pad(m) : pad(m)) + ':' + pad(s % 60);
}

export function clock(ms) {
  return new Intl.DateTimeFormat(current(), { hour: 'numeric', minute: '2-digit' }).format(new Date(ms));
}

export function dateTime(ms) {
  return new Intl.DateTimeFormat(current(), { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(ms));
}

// bucket names the round-number band a position is in; an announcement is due
// when the band changes (…, 2000s, 1000s, 900s, …, 100s, 90s, …, 10s, then 5 and each of 1–4).
export function bucket(pos) {
  if (!(pos > 0)) return 0;
  if (pos <= 5) return pos;
  if (pos <= 10) return 10;
  const mag = 10 ** Math.floor(Math.log10(pos));
  return Math.floor(pos / mag) * mag;
}

// progress runs from the place at join time (0) to the front (1).
export function progress(start, pos) {
  if (!(start > 0) || !(pos > 0)) return 0;
  return Math.min(1, Math.max(0, (start - pos + 1) / (start + 1)));
}
