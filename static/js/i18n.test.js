// Unit tests of i18n.js (the page's texts and how a language is chosen) and
// of brand.pickText's language fallback, under node's test runner (static's
// TestI18n runs them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as i18n from './i18n.js';
import { texts, LANGUAGES, match, choose, dir, chinese } from './i18n.js';
import { pickText } from './brand.js';

// The tables: English from the module, every other language from its file
// (lang/<tag>.json beside js/, which the page fetches).
const tables = { en: texts.en };
for (const l of Object.keys(LANGUAGES)) {
  if (l !== 'en') tables[l] = JSON.parse(readFileSync(new URL(`../lang/${l}.json`, import.meta.url), 'utf8'));
}

// Texts a language may leave as in English, because they read the same there.
const SAME = {
  es: ['etaMinutes'],
  'pt-BR': ['etaMinutes'],
};

const placeholders = s => [...s.matchAll(/\{(\w+)\}/g)].map(m => m[1]).sort();

test('the page speaks at least eight languages, each named in the switch', () => {
  const langs = Object.keys(tables);
  assert.ok(langs.length >= 8, `${langs.length} languages`);
  for (const l of ['en', 'ko', 'ja', 'zh-Hans', 'es', 'fr', 'de', 'pt-BR']) assert.ok(tables[l], l);
  assert.deepEqual(Object.keys(LANGUAGES).sort(), langs.sort());
  for (const [l, name] of Object.entries(LANGUAGES)) {
    assert.ok(name.trim(), `${l} has no name`);
    assert.doesNotThrow(() => new Intl.Locale(l), `${l} is not a BCP 47 tag`);
  }
});

for (const [l, table] of Object.entries(tables)) {
  if (l === 'en') continue;
  test(`every English text is translated in ${l}, with the same placeholders`, () => {
    for (const [key, en] of Object.entries(texts.en)) {
      const s = table[key];
      assert.equal(typeof s, 'string', `${l}.${key} is missing`);
      assert.ok(s.trim(), `${l}.${key} is empty`);
      if ((SAME[l] || []).includes(key)) assert.equal(s, en, `${l}.${key} is listed as the same as English`);
      else assert.notEqual(s, en, `${l}.${key} is the English text`);
      assert.deepEqual(placeholders(s), placeholders(en), `${l}.${key}: placeholders ${placeholders(s)} ≠ ${placeholders(en)}`);
    }
    for (const key of Object.keys(table)) assert.ok(key in texts.en, `${l}.${key} is not an English key`);
  });
}

test('a tag finds the page language it is written in', () => {
  const cases = {
    en: 'en', 'en-GB': 'en', EN: 'en', ko: 'ko', 'ko-KR': 'ko', ja: 'ja', 'ja-JP': 'ja',
    zh: 'zh-Hans', 'zh-CN': 'zh-Hans', 'zh-SG': 'zh-Hans', 'zh-Hans': 'zh-Hans', 'zh-hans-cn': 'zh-Hans', zh_CN: 'zh-Hans',
    'zh-TW': '', 'zh-HK': '', 'zh-Hant': '', 'zh-Hant-TW': '',
    es: 'es', 'es-419': 'es', 'es-MX': 'es', fr: 'fr', 'fr-CA': 'fr', de: 'de', 'de-AT': 'de',
    pt: 'pt-BR', 'pt-BR': 'pt-BR', 'pt-br': 'pt-BR', 'pt-PT': 'pt-BR',
    it: '', '': '', 'x-klingon': '',
  };
  for (const [tag, want] of Object.entries(cases)) assert.equal(match(tag), want, tag);
  assert.equal(match('zh-TW', true), 'zh-Hans');
});

test('?lang= first, then the remembered choice, then the browser, then English', () => {
  assert.equal(choose({ url: 'ja', saved: 'ko', languages: ['de'] }), 'ja');
  assert.equal(choose({ url: 'xx', saved: 'ko', languages: ['de'] }), 'ko');
  assert.equal(choose({ url: 'fr-CA', languages: ['de'] }), 'fr');
  assert.equal(choose({ languages: ['it-IT', 'pt-PT', 'en'] }), 'pt-BR');
  assert.equal(choose({ languages: ['zh-CN', 'en'] }), 'zh-Hans');
  // A Traditional Chinese reader gets another language they read, else Simplified before English.
  assert.equal(choose({ languages: ['zh-TW', 'ja'] }), 'ja');
  assert.equal(choose({ languages: ['zh-TW', 'it'] }), 'zh-Hans');
  assert.equal(choose({ languages: ['it', 'nl'] }), 'en');
  assert.equal(choose(), 'en');
});

test('the direction follows the language', () => {
  for (const l of Object.keys(tables)) assert.equal(dir(l), 'ltr', l);
  for (const l of ['ar', 'ar-EG', 'he', 'fa-IR', 'ur', 'az-Arab']) assert.equal(dir(l), 'rtl', l);
  for (const l of ['en', 'ku-Latn', 'pa', '']) assert.equal(dir(l), 'ltr', l);
});

test('Chinese tags name a script', () => {
  for (const l of ['zh', 'zh-CN', 'zh-SG', 'zh-Hans', 'zh-Hans-HK']) assert.equal(chinese(l), 'hans', l);
  for (const l of ['zh-TW', 'zh-HK', 'zh-MO', 'zh-Hant', 'zh-Hant-CN']) assert.equal(chinese(l), 'hant', l);
});

test("a room's text in the visitor's language, with the page's fallbacks", () => {
  const msg = { en: 'Sold out', ko: '매진', ja: '完売', 'zh-Hans': '售罄', 'zh-Hant': '售完', es: 'Agotado', 'fr-CA': 'Épuisé', pt: 'Esgotado' };
  const pick = prefs => pickText(msg, prefs)?.lang;
  assert.equal(pick(['ja']), 'ja');
  assert.equal(pick(['zh-cn']), 'zh-Hans');
  assert.equal(pick(['zh']), 'zh-Hans');
  assert.equal(pick(['zh-hans']), 'zh-Hans');
  assert.equal(pick(['zh-tw']), 'zh-Hant');
  assert.equal(pick(['fr']), 'fr-CA');
  assert.equal(pick(['pt-br']), 'pt');
  assert.equal(pick(['de', 'es']), 'es');
  assert.equal(pick(['de']), 'en');
  // Chinese in the other script only when no other preferred language has a text.
  assert.equal(pickText({ en: 'A', 'zh-Hant': 'B' }, ['zh-cn'])?.lang, 'zh-Hant');
  assert.equal(pickText({ ja: 'A', 'zh-Hant': 'B' }, ['zh-cn', 'ja'])?.lang, 'ja');
  assert.equal(pickText({ ko: 'A', 'zh-Hant': 'B' }, ['zh-hans', 'ko'])?.lang, 'ko');
});

test('numbers and times format in every language', () => {
  for (const l of Object.keys(tables)) {
    assert.ok(new Intl.NumberFormat(l).format(12345).length >= 5, l);
    assert.ok(new Intl.DateTimeFormat(l, { hour: 'numeric', minute: '2-digit' }).format(new Date(0)), l);
    assert.equal(new Intl.NumberFormat(l).resolvedOptions().locale.split('-')[0], l.split('-')[0], l);
  }
});

test('the page carries English and fetches the one language it shows', async () => {
  // The module holds English alone; the others come from lang/<tag>.json.
  assert.deepEqual(Object.keys(texts), ['en']);
  const asked = [];
  globalThis.fetch = async url => {
    asked.push(url);
    const l = /\/lang\/([\w-]+)\.json$/.exec(url)?.[1];
    if (l === 'de') throw new TypeError('offline');
    if (!tables[l]) return { ok: false, json: async () => ({}) };
    return { ok: true, json: async () => tables[l] };
  };
  assert.equal(i18n.current(), 'en');
  // Picked before its table is here: still English.
  i18n.set('ko');
  assert.equal(i18n.wanted(), 'ko');
  assert.equal(i18n.current(), 'en');
  assert.equal(i18n.t('loading'), texts.en.loading);
  assert.equal(await i18n.load('ko'), true);
  assert.equal(i18n.current(), 'ko');
  assert.equal(i18n.t('loading'), tables.ko.loading);
  assert.equal(i18n.t('room', { room: 'x' }), tables.ko.room.replace('{room}', 'x'));
  // Once: a second load asks nothing.
  assert.equal(await i18n.load('ko'), true);
  assert.deepEqual(asked, ['/lang/ko.json']);
  // English needs no table; a language the page does not speak is not asked for.
  assert.equal(await i18n.load('en'), true);
  assert.equal(await i18n.load('it'), false);
  assert.deepEqual(asked, ['/lang/ko.json']);
  // A table that cannot be fetched leaves the page in English.
  assert.equal(await i18n.load('de'), false);
  i18n.set('de');
  assert.equal(i18n.current(), 'en');
  assert.equal(i18n.t('loading'), texts.en.loading);
});
