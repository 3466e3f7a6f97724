// Unit tests of watch.js, under node's test runner (static's TestWatch runs
// them: `go test ./static/`). Not part of the page's bundle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as w from './watch.js';

const NOW = Date.parse('2026-05-01T10:00:00Z');
const iso = ms => new Date(ms).toISOString();
// near: equal but for floating point's last digits.
const near = (got, want, what) => assert.ok(Math.abs(got - want) < 1e-6, `${what || 'value'}: got ${got}, want ${want}`);
// rand returns the given numbers in turn (the last one after that).
const rand = (...xs) => { let i = 0; return () => xs[Math.min(i++, xs.length - 1)]; };
const ctx = (shown, ...xs) => ({ now: NOW, shown, rand: rand(...(xs.length ? xs : [0.5])) });
const waiting = (o = {}) => ({ state: 'waiting', position: 7, waiting: 100, etaSeconds: 7, ratePerMinute: 60, at: NOW - 2000, skew: 0, start: 7, ...o });
const status = (o = {}) => ({ mode: 'queue', waiting: 100, admitPerMinute: 600, ratePerMinute: 60, clockSkewMs: 0, pageVersion: 'v', ...o });

test('the status is read every 7 s ± 1 s while visible, every minute while hidden', () => {
  assert.equal(w.readDelay(true, 0), 6000);
  assert.equal(w.readDelay(true, 0.5), 7000);
  assert.ok(w.readDelay(true, 0.999999) < 8000 && w.readDelay(true, 0.999999) > 7999);
  assert.equal(w.readDelay(false, 0), 60000);
  assert.equal(w.readDelay(false, 0.9), 60000);
});

test('the watch runs while a place is held, not once the visit is over', () => {
  for (const state of ['waiting', 'paused', 'prequeue', 'closed']) assert.ok(w.watches({ state }, 't'), state);
  for (const state of ['admitted', 'expired', 'left', 'ended', 'loading', 'error', 'unknown']) assert.ok(!w.watches({ state }, 't'), state);
  assert.ok(!w.watches({ state: 'closed' }, ''), 'a closed room without a ticket');
  assert.ok(!w.watches({ state: 'waiting' }, null));
});

test('the read at the opening replaces the regular one after it, once', () => {
  // Regular: the last read plus the delay.
  assert.equal(w.nextRead(1000, 7000, 0, 0), 8000);
  // The opening (at 5000) comes before the next regular read (8000): the read
  // is at the opening plus its spread (9000 here), not at 8000.
  assert.equal(w.nextRead(1000, 7000, 9000, 5000), 9000);
  assert.equal(w.nextRead(1000, 7000, 5500, 5000), 5500);
  // The opening after the next regular read: the regular one first.
  assert.equal(w.nextRead(1000, 7000, 13000, 10000), 8000);
  // Read at the opening already: back to the regular cadence, no loop on a past time.
  assert.equal(w.nextRead(9000, 7000, 9000, 5000), 16000);
});

test('a poll brought forward comes within 30–60 % of the new wait, never sooner than 1 s', () => {
  near(w.spreadPoll(0.7, 0.5), 1000);
  near(w.spreadPoll(100, 0), 30000);
  near(w.spreadPoll(100, 1), 60000);
  near(w.spreadPoll(100, 0.5), 45000);
});

test('a pause stops the count where it is shown; the poll stays as scheduled', () => {
  const d = w.decide(status({ mode: 'paused' }), waiting({ position: 5560 }), ctx(5500));
  assert.equal(d.view.state, 'paused');
  assert.equal(d.view.position, 5500);
  assert.equal(d.view.approx, true);
  assert.equal(d.view.at, NOW);
  assert.equal(d.pollAt, 0);
  // Paused already, or a pre-queue: nothing to change.
  assert.deepEqual(w.decide(status({ mode: 'paused' }), { ...waiting(), state: 'paused' }, ctx(7)), { view: null, pollAt: 0 });
  assert.deepEqual(w.decide(status({ mode: 'paused' }), { state: 'prequeue', opensAt: NOW + 60000 }, ctx(0)), { view: null, pollAt: 0 });
});

test('a closing shows closed and keeps what it held, which a reopening resumes', () => {
  const closed = w.decide(status({ mode: 'closed' }), waiting(), ctx(6));
  assert.equal(closed.view.state, 'closed');
  assert.equal(closed.view.was, 'waiting');
  assert.equal(closed.view.position, 6);
  assert.equal(closed.pollAt, 0);
  assert.equal(w.decide(status({ mode: 'closed' }), closed.view, ctx(6)).view, null);
  const open = w.decide(status({ ratePerMinute: 30 }), closed.view, ctx(6, 0));
  assert.equal(open.view.state, 'waiting');
  assert.equal(open.view.position, 6);
  near(open.view.etaSeconds, 12);
  near(open.pollAt, NOW + 3600);
  // A pre-queue closed and reopened before its opening is a pre-queue again.
  const pre = { state: 'prequeue', opensAt: NOW + 60000, skew: 0, aheadShare: 0.5 };
  const c = w.decide(status({ mode: 'closed', opensAt: iso(NOW + 60000) }), pre, ctx(0)).view;
  assert.equal(c.state, 'closed');
  const back = w.decide(status({ opensAt: iso(NOW + 60000) }), c, ctx(0)).view;
  assert.equal(back.state, 'prequeue');
  assert.equal(back.opensAt, NOW + 60000);
  // A closed answer of the server's own (no place held by the page) waits for the poll.
  assert.equal(w.decide(status(), { state: 'closed', position: 0, at: NOW }, ctx(0)).view, null);
});

test('a resume counts again from the paused place at the status pace and brings the poll forward', () => {
  const paused = { state: 'paused', position: 40, waiting: 100, etaSeconds: 40, at: NOW - 60000, skew: 0, start: 40 };
  const d = w.decide(status({ ratePerMinute: 120 }), paused, ctx(40, 0.5));
  assert.equal(d.view.state, 'waiting');
  assert.equal(d.view.position, 40);
  assert.equal(d.view.ratePerMinute, 120);
  near(d.view.etaSeconds, 20);
  assert.equal(d.view.at, NOW);
  near(d.pollAt, NOW + 0.45 * 20000);
  // Without a pace in the answer (an older server), the poll says.
  assert.equal(w.decide(status({ ratePerMinute: undefined }), paused, ctx(40)).view, null);
});

test('a change of pace restarts the count from the place shown, at the new pace', () => {
  // 60 → 1 a minute at place 7: about 7 minutes, not "under 1 min"; the poll
  // would be later than planned, so it stays (main.js keeps the earlier one).
  const slow = w.decide(status({ ratePerMinute: 1 }), waiting(), ctx(7, 0));
  assert.equal(slow.view.state, 'waiting');
  assert.equal(slow.view.position, 7);
  near(slow.view.etaSeconds, 420);
  assert.equal(slow.view.ratePerMinute, 1);
  near(slow.pollAt, NOW + 0.3 * 420000);
  // 1 → 600 at place 7: 0.7 s; the poll comes in a second.
  const fast = w.decide(status({ ratePerMinute: 600 }), slow.view, ctx(7, 0.9));
  near(fast.view.etaSeconds, 0.7);
  near(fast.pollAt, NOW + 1000);
  // Counted down already: the count restarts where it is shown.
  const counted = w.decide(status({ ratePerMinute: 6 }), waiting({ position: 500, etaSeconds: 500 }), ctx(420, 0.5));
  assert.equal(counted.view.position, 420);
  near(counted.view.etaSeconds, 4200);
  assert.equal(counted.view.approx, true);
  // Within 10 %: the same pace, nothing changes.
  assert.deepEqual(w.decide(status({ ratePerMinute: 63 }), waiting(), ctx(7)), { view: null, pollAt: 0 });
  assert.deepEqual(w.decide(status({ ratePerMinute: 60 }), waiting(), ctx(7)), { view: null, pollAt: 0 });
  // An older reply without ratePerMinute counts at position ÷ etaSeconds.
  assert.equal(w.decide(status({ ratePerMinute: 60 }), waiting({ ratePerMinute: null, etaSeconds: 7 }), ctx(7)).view, null);
  // A full room of an older server (ratePerMinute 0) starts counting at the new pace.
  assert.equal(w.decide(status({ ratePerMinute: 60 }), waiting({ ratePerMinute: 0 }), ctx(7)).view.ratePerMinute, 60);
  // While reconnecting, nothing: the place is held where it was.
  assert.equal(w.decide(status({ mode: 'paused' }), waiting({ reconnecting: true }), ctx(7)).view, null);
  // Not open (an opening ahead by the server's clock): the poll says what this is.
  assert.equal(w.decide(status({ ratePerMinute: 1, opensAt: iso(NOW + 60000) }), waiting(), ctx(7)).view, null);
});

test('a crowd that sees the same change polls spread over time', () => {
  // 100,000 visitors in line when the pace goes from 60 to 600 a minute:
  // sent all at once they would be 100,000 polls in a second; spread, the
  // busiest second has a few dozen: the second after the change, which the
  // first few dozen places (due within two seconds) share; later, about
  // ln 2 ÷ 0.03 ≈ 23 a second.
  // The random numbers from a seeded generator (mulberry32), so the test
  // gives the same answer every run.
  let seed = 42;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const perSecond = new Map();
  for (let pos = 1; pos <= 100000; pos++) {
    const d = w.decide(status({ ratePerMinute: 600 }), waiting({ position: pos, etaSeconds: pos }), { now: 0, shown: pos, rand: random });
    const s = Math.floor(d.pollAt / 1000);
    perSecond.set(s, (perSecond.get(s) || 0) + 1);
  }
  const busiest = Math.max(...perSecond.values());
  console.log(`the busiest second after a change of pace: ${busiest} polls of 100,000`);
  assert.ok(busiest <= 60, `the busiest second has ${busiest} polls`);
});

test('at the opening the page places itself from its share of the pre-queue', () => {
  const pre = { state: 'prequeue', opensAt: NOW - 500, skew: 0, aheadShare: 0.25, waiting: 0, start: 0, at: NOW - 30000 };
  const d = w.decide(status({ waiting: 1000, opensAt: iso(NOW - 500), ratePerMinute: 100 }), pre, ctx(0));
  assert.equal(d.view.state, 'waiting');
  assert.equal(d.view.position, 251);
  assert.equal(d.view.waiting, 1000);
  assert.equal(d.view.approx, true);
  assert.equal(d.view.ratePerMinute, 100);
  near(d.view.etaSeconds, 150.6);
  assert.equal(d.view.at, NOW);
  assert.equal(d.pollAt, 0, 'the poll the server planned from the exact place stays');
  // Never past the end of the line; the admission rate when no pace is known.
  const last = w.decide(status({ waiting: 3, opensAt: iso(NOW - 500), ratePerMinute: undefined }), { ...pre, aheadShare: 0.999 }, ctx(0)).view;
  assert.equal(last.position, 3);
  near(last.etaSeconds, 0.3);
  // Without a share: the place is unknown until the poll.
  const unknown = w.decide(status({ waiting: 1000, opensAt: iso(NOW - 500) }), { ...pre, aheadShare: undefined }, ctx(0)).view;
  assert.equal(unknown.state, 'waiting');
  assert.equal(unknown.placing, true);
  assert.equal(unknown.position, 0);
  assert.equal(unknown.etaSeconds, null);
  // Nor with a count of nobody.
  assert.equal(w.decide(status({ waiting: 0, opensAt: iso(NOW - 500) }), pre, ctx(0)).view.placing, true);
  // A pause at the opening leaves the pre-queue as it is; the poll says.
  assert.equal(w.decide(status({ mode: 'paused', waiting: 1000 }), pre, ctx(0)).view, null);
});

test('the opening is the countdown reaching it, or a seed out, not an answer missing the time', () => {
  const pre = { state: 'prequeue', opensAt: NOW + 300, skew: 0, aheadShare: 0.5 };
  // The status's clock (a Date header) says 0.6 s before; the countdown,
  // with its own correction, reached the opening: opened.
  const early = { ...pre, opensAt: NOW - 100 };
  assert.equal(w.decide(status({ opensAt: iso(NOW - 100), clockSkewMs: -600 }), early, ctx(0)).view.state, 'waiting');
  // Neither clock has reached it: nothing.
  assert.equal(w.decide(status({ opensAt: iso(NOW + 300) }), pre, ctx(0)).view, null);
  // No opening time in the answer: the seed says it opened, else nothing.
  assert.equal(w.decide(status({ drawSeed: 'ab' }), pre, ctx(0)).view.state, 'waiting');
  assert.equal(w.decide(status(), pre, ctx(0)).view, null);
});

test('an opening moved later updates the countdown; moved earlier, the poll comes by the new one', () => {
  const pre = { state: 'prequeue', opensAt: NOW + 3600000, skew: 0, aheadShare: 0.1, at: NOW - 1000 };
  const later = w.decide(status({ opensAt: iso(NOW + 7200000) }), pre, ctx(0));
  assert.equal(later.view.state, 'prequeue');
  assert.equal(later.view.opensAt, NOW + 7200000);
  assert.equal(later.pollAt, 0);
  // Earlier, 60 s from now: the place about 0.1 × 1000 + 1 = 101 at 100 a
  // minute is 60.6 s; the poll by the opening plus 30 % of it (rand 0).
  const earlier = w.decide(status({ opensAt: iso(NOW + 60000), waiting: 1000, ratePerMinute: 100 }), pre, ctx(0, 0));
  assert.equal(earlier.view.opensAt, NOW + 60000);
  near(earlier.pollAt, NOW + 60000 + 0.3 * 60600);
  // The clock's correction: the opening is server time, the poll local time.
  const skewed = w.decide(status({ opensAt: iso(NOW + 60000), waiting: 1000, ratePerMinute: 100, clockSkewMs: 5000 }), pre, ctx(0, 0));
  near(skewed.pollAt, NOW + 55000 + 0.3 * 60600);
  // Without a share, a place drawn among the waiting (rand 0.5 → 501, then 0 for the spread).
  const drawn = w.decide(status({ opensAt: iso(NOW + 60000), waiting: 1000, ratePerMinute: 100 }), { ...pre, aheadShare: undefined }, ctx(0, 0.5, 0));
  near(drawn.pollAt, NOW + 60000 + 0.3 * 501 * 600);
});

test('an opening that came before the one the poll was planned from brings the poll forward', () => {
  const pre = { state: 'prequeue', opensAt: NOW + 3600000, skew: 0, aheadShare: 0.1, at: NOW - 1000 };
  // Opened 2 s ago, an hour early: about 101st at 100 a minute, 60.6 s; the
  // poll 30 % of that from now (rand 0), placed at once.
  const d = w.decide(status({ opensAt: iso(NOW - 2000), waiting: 1000, ratePerMinute: 100 }), pre, ctx(0, 0));
  assert.equal(d.view.state, 'waiting');
  assert.equal(d.view.position, 101);
  near(d.pollAt, NOW + 0.3 * 60600);
  // The opening removed (the room opens now): the same.
  const removed = w.decide(status({ waiting: 1000, ratePerMinute: 100, drawSeed: 'ab' }), pre, ctx(0, 0));
  near(removed.pollAt, NOW + 0.3 * 60600);
  // Opened as planned: the server's poll stays.
  const onTime = { ...pre, opensAt: NOW - 2000 };
  assert.equal(w.decide(status({ opensAt: iso(NOW - 2000), waiting: 1000, ratePerMinute: 100 }), onTime, ctx(0, 0)).pollAt, 0);
});

test('a placing view resumes as placing; its place is not counted', () => {
  const placing = { state: 'waiting', position: 0, placing: true, waiting: 1000, etaSeconds: null, ratePerMinute: null, at: NOW - 1000 };
  const paused = w.decide(status({ mode: 'paused' }), placing, ctx(0)).view;
  assert.equal(paused.state, 'paused');
  assert.equal(paused.placing, true);
  const back = w.decide(status({ ratePerMinute: 120 }), paused, ctx(0)).view;
  assert.equal(back.state, 'waiting');
  assert.equal(back.placing, true);
  assert.equal(w.decide(status({ ratePerMinute: 1 }), placing, ctx(0)).view, null);
});
