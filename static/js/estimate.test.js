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
