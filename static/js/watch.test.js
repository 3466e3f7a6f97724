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

// The server's cadence (internal/cadence, passed in by static's TestWatch):
// the simulator and the quotas count the page's reads by it.
const cadence = JSON.parse(process.env.CADENCE || 'null');

test('the page reads the status at the server\'s cadence', () => {
  assert.ok(cadence, 'the Go test passes the cadence');
  for (const name of ['SHOWN_FLOOR_MS', 'SHOWN_SHARE', 'SHOWN_CAP_MS', 'WAIT_TRUST', 'READ_MARGIN_MS', 'READ_SPREAD_MS']) {
    assert.equal(w[name], cadence[name], name);
  }
  assert.ok(cadence.reads.length > 0);
  for (const { Remaining, U, Want } of cadence.reads) {
    // Within a µs: Go counts durations in whole nanoseconds.
    const got = w.readDelay(true, U, Remaining || null);
    assert.ok(Math.abs(got - Want) < 1e-3, `read at ${Remaining} ms, u ${U}: got ${got}, want ${Want}`);
  }
});

test('the status is read as often as the remaining wait asks, at most every 58 s while visible', () => {
  // Near the turn, or with the wait unknown: 7 s ± 1 s (today's speed).
  for (const r of [null, 0, 30000, 117000]) {
    assert.equal(w.readDelay(true, 0, r), 6000, `at ${r}`);
    assert.equal(w.readDelay(true, 0.5, r), 7000, `at ${r}`);
    assert.ok(w.readDelay(true, 0.999999, r) <= 8000 && w.readDelay(true, 0.999999, r) > 7999);
  }
  // 5 minutes away by the page's estimate, which may err long by 15 %: a
  // change is shown within 10 % of 85 % of it, 25.5 s: read every 22.5 s ± 1 s.
  near(w.readDelay(true, 0.5, 300000), 22500);
  // 12 minutes (10 / 0.85) and more: within 60 s: every 57 s ± 1 s.
  assert.equal(w.readDelay(true, 0.5, 706000), 57000);
  assert.equal(w.readDelay(true, 0.5, 3 * 3600000), 57000);
  // Hidden: a minute, wherever the visitor is.
  assert.equal(w.readDelay(false, 0, 30000), 60000);
  assert.equal(w.readDelay(false, 0.9, 3600000), 60000);
});

test('a change is shown within max(10 s, 10 % of the remaining wait), never more than 60 s late', () => {
  assert.equal(w.shownWithin(null), 10000);
  assert.equal(w.shownWithin(50000), 10000);
  assert.equal(w.shownWithin(300000), 30000);
  assert.equal(w.shownWithin(3600000), 60000);
  // The longest wait between reads, plus the edge's cached second and a
  // timer a second late, is within the rule, everywhere.
  for (let r = 0; r <= 7200000; r += 5000) {
    const worst = w.readDelay(true, 0.999999, r) + w.EDGE_AGE_MS + 1000;
    assert.ok(worst <= w.shownWithin(r), `remaining ${r} ms: a read ${worst} ms late, the rule ${w.shownWithin(r)}`);
  }
  // A change δ after a read is shown at the next one, planned from the wait
  // at the read: its delay is δ shorter, the rule at the change 10 % of δ
  // narrower, so it holds there too.
});

test('a 20-minute wait reads the status about 50 times, not 171', () => {
  // The cadence over a wait counted down from 20 minutes (the mean delay).
  let t = 0;
  let reads = 0;
  while (t < 1200000) { t += w.readDelay(true, 0.5, 1200000 - t); reads++; }
  assert.ok(reads >= 38 && reads <= 55, `${reads} reads`);
});

test('the remaining wait the cadence follows', () => {
  // Waiting: the place shown at the pace counted at.
  assert.equal(w.remainingMs(waiting({ position: 600, ratePerMinute: 60 }), NOW, 300), 300000);
  assert.equal(w.remainingMs(waiting({ position: 600, ratePerMinute: 60 }), NOW, 0), 600000);
  // An older server without the pace: its etaSeconds.
  assert.equal(w.remainingMs(waiting({ position: 600, ratePerMinute: undefined, etaSeconds: 120 }), NOW, 0), 120000);
  // No pace (a full room, the first minute): unknown, read at the floor.
  assert.equal(w.remainingMs(waiting({ ratePerMinute: 0, etaSeconds: null }), NOW, 0), null);
  // Paused or closed at a place: that place at the last pace (a resume is
  // shown within the rule of the wait it resumes).
  assert.equal(w.remainingMs(waiting({ state: 'paused', position: 1200, ratePerMinute: 60 }), NOW, 0), 1200000);
  assert.equal(w.remainingMs(waiting({ state: 'closed', position: 1200, ratePerMinute: 60 }), NOW, 0), 1200000);
  // Placing (the opening's place not known yet): unknown.
  assert.equal(w.remainingMs(waiting({ placing: true, position: 0 }), NOW, 0), null);
  // The pre-queue: the time to the opening, by the server's clock.
  assert.equal(w.remainingMs({ state: 'prequeue', opensAt: NOW + 900000, skew: 5000 }, NOW, 0), 895000);
  assert.equal(w.remainingMs({ state: 'prequeue', opensAt: NOW - 1000, skew: 0 }, NOW, 0), 0);
  assert.equal(w.remainingMs({ state: 'prequeue' }, NOW, 0), null);
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
  const pre = { state: 'prequeue', opensAt: NOW + 60000, skew: 0 };
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

// The room of the opening's tests: 100,000 in the pre-queue, 5,000 a minute,
// a claim window of 120 s.
const opened = (o = {}) => status({ waiting: 100000, opensAt: iso(NOW - 500), ratePerMinute: 5000, admitPerMinute: 5000, claimTTLSeconds: 120, ...o });

test('at the opening the page places itself by its draw and plans its poll from it', () => {
  const pre = { state: 'prequeue', opensAt: NOW - 500, skew: 0, draw: 0.25, waiting: 0, start: 0, at: NOW - 30000, repliedAt: NOW - 30000 };
  const d = w.decide(opened(), pre, ctx(0, 0));
  assert.equal(d.view.state, 'waiting');
  assert.equal(d.view.position, 25001);
  assert.equal(d.view.waiting, 100000);
  assert.equal(d.view.approx, true);
  assert.equal(d.view.ratePerMinute, 5000);
  near(d.view.etaSeconds, 300.012);
  assert.equal(d.view.at, NOW);
  // The nearest place it may have, 3 σ ahead (σ = √(n d (1 − d)) = 136.9):
  // 24,590.2; its wait at 5,000 a minute 295.08 s; the poll 30 % of it after
  // the opening (rand 0), replacing the server's.
  const nearest = 25001 - 3 * Math.sqrt(100000 * 0.25 * 0.75);
  near(d.pollAt, NOW - 500 + 0.3 * nearest * 12);
  assert.equal(d.replace, true);
  // 50 % at most (rand → 1).
  near(w.decide(opened(), pre, ctx(0, 0.999999999)).pollAt, NOW - 500 + 0.5 * nearest * 12, 'the latest share');
  // Within the budget of the last answer (5 min less 10 s): a far place comes
  // at its end.
  const late = w.decide(opened(), { ...pre, repliedAt: NOW - 250000 }, ctx(0, 0));
  near(late.pollAt, NOW + 40000);
  assert.equal(late.replace, true);
  // 50 % of the nearest place's wait is within any claim window after its
  // earliest admission (a full bucket, then twice the rate): 5 s here.
  assert.equal(w.decide(opened({ claimTTLSeconds: 5 }), pre, ctx(0, 0.999999999)).replace, true);
  // But a tab that reads a minute after the opening (hidden) cannot poll
  // before a second from now: past a 5-s claim window of a place 2,001st, so
  // the server's poll stays.
  const slow = w.decide(opened({ claimTTLSeconds: 5, opensAt: iso(NOW - 60000) }), { ...pre, opensAt: NOW - 60000, draw: 0.02 }, ctx(0, 0));
  assert.equal(slow.view.position, 2001);
  assert.equal(slow.replace, false);
  assert.equal(slow.pollAt, 0);
  // An older server, which says no claim window: the server's poll stays.
  assert.equal(w.decide(opened({ claimTTLSeconds: undefined }), pre, ctx(0, 0)).replace, false);
  // Never past the end of the line.
  assert.equal(w.decide(opened(), { ...pre, draw: 0.9999999 }, ctx(0, 0)).view.position, 100000);
  // A pause at the opening leaves the pre-queue as it is; the poll says.
  assert.equal(w.decide(status({ mode: 'paused', waiting: 1000 }), pre, ctx(0)).view, null);
});

test('the last of a small pre-queue is not shown a guess: the poll, soon, gives its place', () => {
  // Seven in the line; this visitor drew 0.45, the highest of the seven. The
  // draw alone says "about 4" (3 ahead of 7): the others' draws decide, and
  // the page does not know them. No place is shown; the poll comes within
  // 1–3 s, brought forward only.
  const pre = { state: 'prequeue', opensAt: NOW - 500, skew: 0, draw: 0.45, at: NOW - 30000, repliedAt: NOW - 30000 };
  for (const r of [0, 0.5, 0.999]) {
    const d = w.decide(opened({ waiting: 7, ratePerMinute: 60, admitPerMinute: 60 }), pre, ctx(0, r));
    assert.equal(d.view.state, 'waiting');
    assert.equal(d.view.placing, true, 'a place the draw cannot tell is not shown');
    assert.equal(d.view.position, 0);
    assert.equal(d.view.etaSeconds, null);
    assert.ok(d.pollAt >= NOW + 1000 && d.pollAt <= NOW + 3000, `poll at +${d.pollAt - NOW} ms`);
    assert.equal(d.replace, false);
  }
  // The front of a large one neither (3 σ is most of the place).
  assert.equal(w.decide(opened(), { ...pre, draw: 0.00001 }, ctx(0, 0)).view.placing, true);
  // Without a draw (no seed, or no Web Crypto): unknown, the server's poll.
  const unknown = w.decide(opened(), { ...pre, draw: undefined }, ctx(0));
  assert.equal(unknown.view.placing, true);
  assert.equal(unknown.pollAt, 0);
  // Nor with a count of nobody; the poll, soon, says where the visitor is.
  const nobody = w.decide(opened({ waiting: 0 }), pre, ctx(0, 0));
  assert.equal(nobody.view.placing, true);
  assert.equal(nobody.pollAt, NOW + 1000);
  // Without a draw, an opening an hour early brings the server's poll forward
  // (a place drawn at random: rand 0.5 → 50,001 of 100,000, then 0; the
  // first is the unused soon's).
  const early = w.decide(opened({ opensAt: iso(NOW - 2000) }), { ...pre, opensAt: NOW + 3600000, draw: undefined }, ctx(0, 0.9, 0.5, 0));
  assert.equal(early.view.placing, true);
  near(early.pollAt, NOW + 0.3 * 50001 * 12);
  assert.equal(early.replace, false);
  // The estimate itself: the place, σ and whether it is sure.
  const e = w.estimatePlace(0.45, 7);
  assert.equal(e.position, 4);
  assert.equal(e.sure, false);
  assert.equal(w.estimatePlace(0.5, 100000).sure, true);
});

test('the opening is the countdown reaching it, or a seed out, not an answer missing the time', () => {
  const pre = { state: 'prequeue', opensAt: NOW + 300, skew: 0 };
  // The status's clock (a Date header) says 0.6 s before; the countdown,
  // with its own correction, reached the opening: opened.
  const early = { ...pre, opensAt: NOW - 100 };
  assert.equal(w.decide(status({ opensAt: iso(NOW - 100), clockSkewMs: -600 }), early, ctx(0)).view.state, 'waiting');
  // Neither clock has reached it: nothing.
  assert.equal(w.decide(status({ opensAt: iso(NOW + 300) }), pre, ctx(0)).view, null);
  // No opening time in the answer: the seed says it opened, else nothing.
  assert.equal(w.decide(status({ drawSeed: 'ab' }), pre, ctx(0)).view.state, 'waiting');
  // The seed out says it, whatever the clocks say: the server reveals it
  // from the opening on by its own clock.
  assert.equal(w.decide(status({ opensAt: iso(NOW + 300), drawSeed: 'ab' }), pre, ctx(0)).view.state, 'waiting');
  assert.equal(w.decide(status(), pre, ctx(0)).view, null);
});

test('an opening moved later updates the countdown; moved earlier, the poll comes by the new one', () => {
  const pre = { state: 'prequeue', opensAt: NOW + 3600000, skew: 0, at: NOW - 1000 };
  const later = w.decide(status({ opensAt: iso(NOW + 7200000) }), pre, ctx(0));
  assert.equal(later.view.state, 'prequeue');
  assert.equal(later.view.opensAt, NOW + 7200000);
  assert.equal(later.pollAt, 0);
  // Earlier, 60 s from now: the draw is secret, so a place drawn among the
  // waiting (rand 0.5 → 501 of 1,000) at 100 a minute is 300.6 s; the poll by
  // the opening plus 30 % of it (rand 0).
  const earlier = w.decide(status({ opensAt: iso(NOW + 60000), waiting: 1000, ratePerMinute: 100 }), pre, ctx(0, 0.5, 0));
  assert.equal(earlier.view.opensAt, NOW + 60000);
  near(earlier.pollAt, NOW + 60000 + 0.3 * 300600);
  // The clock's correction: the opening is server time, the poll local time.
  const skewed = w.decide(status({ opensAt: iso(NOW + 60000), waiting: 1000, ratePerMinute: 100, clockSkewMs: 5000 }), pre, ctx(0, 0.5, 0));
  near(skewed.pollAt, NOW + 55000 + 0.3 * 300600);
});

test('an opening that came before the one the poll was planned from plans the poll from it', () => {
  const pre = { state: 'prequeue', opensAt: NOW + 3600000, skew: 0, draw: 0.1, at: NOW - 1000, repliedAt: NOW - 1000 };
  // Opened 2 s ago, an hour early: about 10,001st; the poll 30 % of the
  // nearest place's wait after the opening (rand 0), placed at once.
  const nearest = 10001 - 3 * Math.sqrt(100000 * 0.1 * 0.9);
  const d = w.decide(opened({ opensAt: iso(NOW - 2000) }), pre, ctx(0, 0));
  assert.equal(d.view.state, 'waiting');
  assert.equal(d.view.position, 10001);
  near(d.pollAt, NOW - 2000 + 0.3 * nearest * 12);
  // The opening removed (the room opens now): from now.
  const removed = w.decide(opened({ opensAt: undefined, drawSeed: 'ab' }), pre, ctx(0, 0));
  near(removed.pollAt, NOW + 0.3 * nearest * 12);
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

test('while the pace climbs, a place is judged by its own pace on the climb, not the back of the line\'s', () => {
  // A climb from 60 a minute by 180 each minute to 600; someone joining now
  // at place 801 is told about 301 a minute, place 60 about 110.
  const climb = { ratePerMinute: 60, slopePerMinute: 180, topPerMinute: 600 };
  const s = status({ ratePerMinute: 301, waiting: 800, climb });
  const own = 60 / ((Math.sqrt(60 * 60 + 2 * 180 * 60) - 60) / 180);
  // Told its own pace by its poll: no poll brought forward, the count goes on
  // on the climb from the place shown.
  const d = w.decide(s, waiting({ position: 60, etaSeconds: 60 * 60 / own, ratePerMinute: own }), ctx(60, 0.5));
  assert.equal(d.pollAt, 0, 'a place told its own pace on the climb is not polled sooner');
  assert.deepEqual(d.view.climb, climb);
  near(d.view.ratePerMinute, own, 'its own pace');
  near(d.view.etaSeconds, 60 * 60 / own, 'its wait on the climb');
  // Already on it: nothing changes.
  assert.deepEqual(w.decide(s, d.view, ctx(60)), { view: null, pollAt: 0 });
  // Told a pace the climb does not give it (the pace before it climbed):
  // the count restarts on the climb and the poll comes sooner.
  const slow = w.decide(s, waiting({ position: 60, etaSeconds: 120, ratePerMinute: 30 }), ctx(60, 0.5));
  near(slow.view.ratePerMinute, own);
  near(slow.pollAt, NOW + 0.45 * slow.view.etaSeconds * 1000);
  // The climb reaches its top: off the climb, at the top's pace, the poll stays.
  const top = w.decide(status({ ratePerMinute: 600 }), { ...d.view, ratePerMinute: 600 }, ctx(60));
  assert.equal(top.view.climb, undefined);
  assert.equal(top.pollAt, 0);
});
