// Unit tests of estimate.js, under node's test runner (static's TestEstimate
// runs them: `go test ./static/`). Not part of the page's bundle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { estimate } from './estimate.js';

const NOW = Date.parse('2026-05-01T10:00:00Z');

test('counting down, the last in line stays last: the count falls with the place', () => {
  // The last of 7, counted at 60 a minute: 3 s later three went in ahead.
  const last = { state: 'waiting', position: 7, waiting: 7, etaSeconds: 7, ratePerMinute: 60, at: NOW };
  const e = estimate(last, NOW + 3000, null);
  assert.equal(e.position, 4);
  assert.equal(e.waiting, 4, 'place 4 of 7 waiting in total is not the last in line');
  // Three behind when the reply came: they are still behind.
  const mid = estimate({ ...last, waiting: 10 }, NOW + 3000, null);
  assert.equal(mid.position, 4);
  assert.equal(mid.waiting, 7);
  // Not counting: the reply's numbers.
  const held = estimate({ ...last, state: 'paused' }, NOW + 3000, null);
  assert.equal(held.position, 7);
  assert.equal(held.waiting, 7);
  // Never fewer in total than the place shown, even from a reply whose count
  // is below its position (a count read a moment apart).
  const odd = estimate({ ...last, waiting: 5 }, NOW + 1000, null);
  assert.ok(odd.waiting >= odd.position, `${odd.position} of ${odd.waiting}`);
});

test('on a climb the place counts down faster and faster, as the server tells each place', () => {
  // From 60 a minute by 180 each minute: after a minute the line has moved
  // 60 + 90 = 150 places, after two 120 + 360 = 480.
  const climb = { ratePerMinute: 60, slopePerMinute: 180, topPerMinute: 600 };
  const v = { state: 'waiting', position: 800, waiting: 900, etaSeconds: 160, ratePerMinute: 300, at: NOW, climb };
  assert.equal(estimate(v, NOW + 60000, null).position, 650);
  const e = estimate(v, NOW + 120000, null);
  assert.equal(e.position, 320);
  // Its wait from there is the climb's as it is then (from 420 a minute):
  // 320 = 420 t + 90 t².
  const t = (Math.sqrt(420 * 420 + 4 * 90 * 320) - 420) / 180;
  assert.ok(Math.abs(e.etaSeconds - t * 60) < 1e-6, `${e.etaSeconds} s, want ${t * 60}`);
  assert.ok(e.ratePerSecond * 60 > 420 && e.ratePerSecond * 60 < 600, `${e.ratePerSecond * 60} a minute`);
  // Past the top, the top a minute: 990 places in 3 minutes, then 600 a minute.
  assert.equal(estimate({ ...v, position: 2000 }, NOW + 240000, null).position, 2000 - 990 - 600);
  // Without the climb, the reply's pace.
  assert.equal(estimate({ ...v, climb: undefined }, NOW + 60000, null).position, 500);
});
