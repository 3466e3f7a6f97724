// Unit tests of draw.js, under node's test runner (static's TestDraw runs
// them: `go test ./static/`). Not part of the page's bundle. The expected
// values are room.DrawOf's and room.DrawCommitment's (static's TestDraw
// passes them in the environment).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drawOf, commitmentOf, check } from './draw.js';

const seed = process.env.DRAW_SEED;
const visitor = process.env.DRAW_VISITOR;
const want = Number(process.env.DRAW_WANT);
const commitment = process.env.DRAW_COMMITMENT;

test('the page computes the draw and the commitment as the server does', async () => {
  assert.ok(seed && visitor && commitment, 'the Go test passes the expected values');
  assert.equal(await drawOf(seed, visitor), want);
  assert.equal(await commitmentOf(seed), commitment);
});

test('the check passes the fair lottery and names what does not match', async () => {
  const status = { drawSeed: seed, drawCommitment: commitment };
  assert.deepEqual(await check(commitment, status, visitor, want), { ok: true, draw: want, problems: [] });
  assert.deepEqual((await check('', status, visitor, want)).problems, []);
  // The room orders the visitor by another draw.
  assert.deepEqual((await check(commitment, status, visitor, want / 2)).problems, ['draw']);
  // A seed picked after the commitment the page kept.
  assert.deepEqual((await check('00'.repeat(32), status, visitor, want)).problems, ['commitment']);
  // A status whose seed is not its own commitment's.
  assert.deepEqual((await check('', { ...status, drawCommitment: 'ab' }, visitor, want)).problems, ['seed']);
  // Not open yet; no draw said.
  assert.deepEqual((await check(commitment, { drawCommitment: commitment }, visitor, want)).problems, ['notOpen']);
  assert.deepEqual((await check(commitment, status, visitor, null)).problems, ['noDraw']);
});
