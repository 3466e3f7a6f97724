// Unit tests of console-sale.js's waits, under node's test runner (static's
// TestWaitText runs them: `go test ./static/`). Not part of the page's
// bundle. The expected values are room.WaitSeconds's and room.WaitText's,
// which the Go test passes in the environment (WAITS: [[seconds, rounded,
// text], …]), so the console and `vestibule report` say a wait the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitSeconds, waitText, reportCSV } from './console-sale.js';

const waits = JSON.parse(process.env.WAITS || '[]');

test('the console rounds and says a wait as the command does', () => {
  assert.ok(waits.length > 0, 'the Go test passes the expected values');
  for (const [sec, rounded, text] of waits) {
    assert.equal(waitSeconds(sec), rounded, `waitSeconds(${sec})`);
    assert.equal(waitText(sec), text, `waitText(${sec})`);
  }
});

test('the CSV carries the waits rounded', () => {
  const csv = reportCSV({ minutes: [{ minute: 'm', waitP50Seconds: 4.98, waitP95Seconds: 10.5 }] });
  const [head, row] = csv.trim().split('\n');
  const cells = Object.fromEntries(head.split(',').map((c, i) => [c, row.split(',')[i]]));
  assert.equal(cells.waitP50Seconds, String(waitSeconds(4.98)));
  assert.equal(cells.waitP95Seconds, String(waitSeconds(10.5)));
});
