// The place and the wait between two polls. The server may ask a visitor far
// back to come back only after minutes; in between, the page counts the
// position and the estimate down at the admission rate the last reply implied
// (ratePerMinute, the admissions the server measured in the last minute; from
// an older server without it, position ÷ etaSeconds, never above the rate the
// ETA was made from), and the next
// reply sets them right. People ahead who leave make the real position fall
// faster than admissions alone, so the count errs on the slow side.

// rateOf is the admission rate, in visitors a second, that a view's reply
// implies, or 0 when there is nothing to count: not waiting, no rate known
// (etaSeconds null), nobody admitted in the last minute (ratePerMinute 0: a
// full room; its ETA is made from the room's configured rate, which is not
// happening now), or already at the front.
// A climb is a steered pace on its way up, as the status route carries it
// (climb: {ratePerMinute, slopePerMinute, topPerMinute}, in places): the line
// moves ratePerMinute places a minute now, slopePerMinute more each minute,
// until topPerMinute. Each waiting place is told its own pace on it (its
// places over the minutes the climb takes to pass them), and the page counts
// a place down on it (docs/ENGINE.md, "Steering"). These mirror room.Climb.

// isClimb says whether c is a climb the page can count on.
export function isClimb(c) {
  return !!c && c.topPerMinute > 0 && c.ratePerMinute > 0 && c.slopePerMinute >= 0;
}

// climbMinutes is how long the climb c takes to pass places:
// places = rate·t + slope·t²/2 until the top, then the top a minute.
export function climbMinutes(c, places) {
  if (!(places > 0)) return 0;
  const { ratePerMinute: r, slopePerMinute: k, topPerMinute: top } = c;
  if (!(k > 0) || r >= top) return places / top;
  const t = (top - r) / k;
  const at = r * t + k * t * t / 2;
  if (places <= at) return (Math.sqrt(r * r + 2 * k * places) - r) / k;
  return t + (places - at) / top;
}

// climbPassed is how many places the climb c passes in minutes.
export function climbPassed(c, minutes) {
  if (!(minutes > 0)) return 0;
  const { ratePerMinute: r, slopePerMinute: k, topPerMinute: top } = c;
  if (!(k > 0) || r >= top) return top * minutes;
  const t = Math.min(minutes, (top - r) / k);
  return r * t + k * t * t / 2 + top * (minutes - t);
}

// climbAfter is the climb c minutes later: its rate that much higher, never
// past the top.
export function climbAfter(c, minutes) {
  return { ...c, ratePerMinute: Math.min(c.topPerMinute, c.ratePerMinute + c.slopePerMinute * Math.max(0, minutes)) };
}

// climbPace is the own pace of the place at position on the climb c: its
// places over the minutes the climb takes to pass them.
export function climbPace(c, position) {
  const m = climbMinutes(c, position);
  return m > 0 ? position / m : 0;
}

export function rateOf(v) {
  if (!v || v.state !== 'waiting') return 0;
  if (!(v.position > 1) || !(v.etaSeconds > 0) || !(v.at > 0)) return 0;
  if (typeof v.ratePerMinute === 'number') return Math.max(0, v.ratePerMinute) / 60;
  return v.position / v.etaSeconds;
}

// estimate is what to show at time now (ms since the epoch) for the view v,
// the last reply as the page keeps it ({state, position, etaSeconds, at}, the
// climb it was told on while the pace climbs, and heldAt while the page cannot reach the server: the count stops there, since
// admissions may have stopped too, and goes on from the next reply).
// prev is the last estimate shown (or null): between two replies the shown
// position never rises, even when the device's clock steps back. It returns
// {position, waiting, etaSeconds, counting, ratePerSecond, key}:
//   - position: whole places, from the reply's down to 1, never below 1 (only
//     the server says "admitted") and never above the reply's;
//   - waiting: the line's count as it follows: those the count lets in ahead
//     leave it, those behind stay (the shown position plus the reply's count
//     behind), so the last in line is counted last, never "place 4 of 7";
//   - etaSeconds: the shown position over the rate, never above the reply's;
//   - counting: whether the numbers are counted down (an estimate), so the
//     page says "about".
export function estimate(v, now, prev) {
  const r = rateOf(v);
  const key = v ? v.at + ':' + v.position + ':' + v.etaSeconds : '';
  if (!r) return { position: v ? v.position : 0, waiting: v ? v.waiting : 0, etaSeconds: v ? v.etaSeconds : null, counting: false, ratePerSecond: 0, key };
  const until = v.heldAt > 0 ? Math.min(now, v.heldAt) : now;
  const elapsed = Math.max(0, (until - v.at) / 1000);
  // On a climb (v.climb, as it was at the reply) the line speeds up: the
  // place falls by what the climb passes, its wait is the climb's from where
  // the climb has got to, and the pace shown is the place's own on it.
  const climb = isClimb(v.climb) ? v.climb : null;
  const passed = climb ? climbPassed(climb, elapsed / 60) : r * elapsed;
  let position = Math.min(v.position, Math.max(1, Math.ceil(v.position - passed)));
  if (prev && prev.key === key && prev.position > 0) position = Math.min(position, prev.position);
  const behind = Math.max(0, (v.waiting || 0) - v.position);
  if (climb) {
    const now = climbAfter(climb, elapsed / 60);
    const etaSeconds = Math.min(v.etaSeconds, climbMinutes(now, position) * 60);
    return { position, waiting: position + behind, etaSeconds, counting: true, ratePerSecond: climbPace(now, position) / 60, key };
  }
  const etaSeconds = Math.min(v.etaSeconds, position / r);
  return { position, waiting: position + behind, etaSeconds, counting: true, ratePerSecond: r, key };
}
