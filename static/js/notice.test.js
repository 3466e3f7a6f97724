// Unit tests of notice.js under node's test runner (static's TestNoticeTexts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as notice from './notice.js';

const languages = Object.keys((() => {
  const src = readFileSync(new URL('./i18n.js', import.meta.url), 'utf8');
  const block = src.match(/export const LANGUAGES = \{([\s\S]*?)\};/)[1];
  return Object.fromEntries([...block.matchAll(/'?([A-Za-z-]+)'?:/g)].map(m => [m[1], true]));
})());
const table = l => JSON.parse(readFileSync(new URL(`../lang/notice/${l}.json`, import.meta.url), 'utf8'));
const holes = s => (s.match(/\{[a-z]+\}/g) || []).sort().join();

test('every language has every text of the notices, translated, with the placeholders of English', () => {
  assert.ok(languages.length >= 8);
  for (const l of languages.filter(l => l !== 'en')) {
    const t = table(l);
    assert.deepEqual(Object.keys(t).sort(), Object.keys(notice.texts).sort(), l);
    for (const [k, en] of Object.entries(notice.texts)) {
      assert.ok(t[k].trim() && t[k] !== en, `${l}: ${k} untranslated`);
      assert.equal(holes(t[k]), holes(en), `${l}: ${k}`);
    }
  }
});

// A page of fake elements, enough for render.
function page() {
  const el = () => ({ hidden: true, textContent: '', dataset: {}, value: '', focused: 0,
    focus() { this.focused++; }, querySelectorAll: () => [], checkValidity() { return /^[^@\s]+@[^@\s]+\.[a-z]+$/.test(this.value); } });
  const els = { notify: el(), 'notice-form': el(), 'notice-stop': el(), 'notify-note': el(), 'notice-email': el() };
  const store = new Map();
  const calls = [];
  let fail = null;
  const hooks = {
    api: { notify: async b => { calls.push(['notify', b]); if (fail) throw fail; }, withdraw: async () => { calls.push(['withdraw']); } },
    room: 'r', lang: () => 'ko', visitor: () => 'visitor-1',
    storage: { get: k => store.get(k) ?? null, set: (k, v) => store.set(k, v), del: k => store.delete(k) },
    $: id => els[id], body: { dataset: {} }, render: () => notice.render(hooks.state), on: () => {}, state: 'waiting',
    fetch: async () => ({ ok: true, json: async () => table('ko') }),
  };
  return { els, store, calls, hooks, failWith: e => { fail = e; } };
}

test('the email form: a sign-up in the page language, what is kept, a refusal, a stop', async () => {
  const p = page();
  await notice.start(p.hooks);
  notice.setOffer({ email: true, keepSeconds: 600 });
  notice.render('waiting');
  assert.equal(p.els.notify.hidden, false, 'the button');
  await notice.ask(); // no push in node: the form
  assert.equal(p.hooks.body.dataset.notice, 'form');
  assert.equal(p.els['notice-form'].hidden, false);
  assert.equal(p.els['notify-note'].textContent, table('ko').noticeEmailAsk);
  p.failWith(Object.assign(new Error('bad'), { status: 400 }));
  p.els['notice-email'].value = 'ana@example.com';
  // A refusal keeps the form, and says why.
  await submit(p);
  assert.equal(p.els['notify-note'].textContent, table('ko').noticeBadEmail);
  assert.equal(p.store.size, 0);
  p.failWith(null);
  await submit(p);
  assert.deepEqual(p.calls.at(-1), ['notify', { email: 'ana@example.com', lang: 'ko' }]);
  assert.deepEqual(p.store.get('vestibule:notice:r'), { visitor: 'visitor-1', kind: 'email', to: 'ana@example.com' });
  assert.equal(p.hooks.body.dataset.notice, 'email');
  assert.ok(p.els['notify-note'].textContent.includes('ana@example.com') && p.els['notify-note'].textContent.includes('10'));
  assert.equal(p.els['notice-stop'].hidden, false);
  assert.equal(p.els.notify.hidden, true);
  // Admitted: nothing of it shows.
  notice.render('admitted');
  assert.equal(p.els['notice-stop'].hidden, true);
  assert.equal(p.els['notify-note'].hidden, true);
});

test('a place restored without its notice (a loss of Redis): asked again, after the sign-up only', async () => {
  const p = page();
  await notice.start(p.hooks);
  notice.setOffer({ email: true, keepSeconds: 600 });
  p.els['notice-email'].value = 'ana@example.com';
  await notice.ask();
  await submit(p);
  const signedUp = Date.now();
  notice.seen({ state: 'waiting', notify: false }, signedUp - 1000); // asked before the sign-up
  assert.equal(p.hooks.body.dataset.notice, 'email');
  notice.seen({ state: 'waiting', notify: true }, signedUp + 1);
  assert.equal(p.hooks.body.dataset.notice, 'email');
  notice.seen({ state: 'waiting' }, signedUp + 1); // an arrival shard does not know: nothing
  assert.equal(p.hooks.body.dataset.notice, 'email');
  notice.seen({ state: 'waiting', notify: false }, signedUp + 1);
  assert.equal(p.store.size, 0);
  assert.equal(p.hooks.body.dataset.notice, 'form');
  assert.equal(p.els['notify-note'].textContent, table('ko').noticeLost);
});

test('another visitor of the same browser (a new ticket) holds no notice', async () => {
  const p = page();
  await notice.start(p.hooks);
  notice.setOffer({ email: true });
  notice.forget(); // a page of its own (the module's state is the page's)
  p.store.set('vestibule:notice:r', { visitor: 'someone-else', kind: 'email', to: 'x@example.com' });
  notice.render('waiting');
  assert.equal(p.els['notice-stop'].hidden, true);
  assert.equal(p.els.notify.hidden, false);
});

async function submit(p) {
  // The form's submit handler is email(): reach it through ask's form.
  const { hooks } = p;
  let handler;
  hooks.on = (el, ev, f) => { if (ev === 'submit') handler = f; };
  await notice.start(hooks);
  await handler({ preventDefault() {} });
}
