// The pre-queue lottery, checked in the page. The draw is secret until the
// opening: then the status reveals the seed, and the page computes its own
// draw from it and the visitor id in its ticket (the same formula as the
// server's, room.DrawOf), places itself by it, and lets the visitor check
// the lottery without any tool: the seed's SHA-256 must be the commitment
// the page kept from before the opening, and the draw the room orders the
// visitor by (the answer's `draw`) must be the seed's. Web Crypto only: the
// page is served over HTTPS (or from localhost).

const hex = buf => Array.from(new Uint8Array(buf), b => b.toString(16).padStart(2, '0')).join('');
const digest = async (alg, text) => hex(await crypto.subtle.digest(alg, new TextEncoder().encode(text)));

// drawOf is the visitor's draw in [0, 1): the first 13 hex digits of
// SHA-1(seed ‖ visitor) over 2^52 (exact: 52 bits).
export async function drawOf(seed, visitor) {
  return parseInt((await digest('SHA-1', seed + visitor)).slice(0, 13), 16) / 2 ** 52;
}

// commitmentOf is the hex SHA-256 of the seed, as the status publishes it
// before the opening.
export function commitmentOf(seed) {
  return digest('SHA-256', seed);
}

// check runs the visitor's check after the opening: kept is the commitment
// the page saw before the opening ('' when it saw none: then the status's
// own), status the status answer (drawCommitment, drawSeed), visitor the
// visitor id, roomDraw the draw the room's answer says it orders the visitor
// by (null when it has not said). It returns {ok, draw, problems}: problems
// name what does not match ('seed', 'commitment', 'draw'), or say what is
// missing ('notOpen', 'noDraw').
export async function check(kept, status, visitor, roomDraw) {
  const seed = status && typeof status.drawSeed === 'string' ? status.drawSeed : '';
  if (!seed) return { ok: false, draw: null, problems: ['notOpen'] };
  const problems = [];
  const sum = await commitmentOf(seed);
  if (sum !== status.drawCommitment) problems.push('seed');
  if (kept && kept !== sum) problems.push('commitment');
  const draw = await drawOf(seed, visitor);
  if (typeof roomDraw !== 'number') problems.push('noDraw');
  else if (roomDraw !== draw) problems.push('draw');
  return { ok: problems.length === 0, draw, problems };
}
