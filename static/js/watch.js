// Watching the room between polls. The leading tab reads the room's status
// (public, cached a second at the edge, so a read costs no API call) as often
// as the visitor's remaining wait asks: a change (a pause, a resume, a
// closing, a new pace, a moved opening, the opening itself) is shown within
// max(10 s, 10 % of the remaining wait), and never more than 60 s late; every
// minute while the tab is hidden. These functions say when to read and what an
// answer changes on the page. They are pure (the time and the random numbers
// are passed in), so they are tested without a browser (watch.test.js, run
// under node by static's TestWatch).

import { isClimb, climbMinutes, climbPace } from './estimate.js';

// The rule and the reads' timing are internal/cadence's, which the simulator
// and the quotas count by; static's TestWatch fails when they differ.
export const SHOWN_FLOOR_MS = 10000;   // a change is shown within this…
export const SHOWN_SHARE = 0.1;        // …or this share of the remaining wait, when longer…
export const SHOWN_CAP_MS = 60000;     // …but never later than this
export const EDGE_AGE_MS = 1000;       // an answer the edge serves may be this old (max-age=1)
// The page plans its reads by this share of the remaining wait it estimates:
// the estimate errs long by up to about 15 % (people ahead who leave, a pace
// measured over the last minute), and the rule is the real wait's.
export const WAIT_TRUST = 0.85;
export const READ_MARGIN_MS = 2000;    // a read comes this much before the rule's bound (the edge's second, a late timer)…
export const READ_SPREAD_MS = 2000;    // …and up to this much sooner still, drawn afresh for each read
export const READ_EVERY_MS = SHOWN_FLOOR_MS - READ_MARGIN_MS - READ_SPREAD_MS / 2; // the floor's mean: 7 s
export const READ_HIDDEN_MS = 60000;   // a hidden tab reads it this often
export const OPEN_SPREAD_MS = 6000;    // the opening's read comes this long after it, at most
export const POLL_SOONEST_MS = 1000;   // a poll brought forward comes no sooner than this
export const POLL_SPREAD = [0.3, 0.6]; // …and within this share of the new wait, at random
// A pace within this share of the one counted at is the same pace: a measured
// rate moves a little from one second to the next, and each change costs a
// crowd's polls (brought forward) and a count started over.
export const PACE_TOLERANCE = 0.1;

// The states in which the room is watched; all of them with a ticket held.
const WATCHED = ['waiting', 'paused', 'prequeue', 'closed'];

// watches says whether the leader reads the status for the view v: while the
// visitor holds a place (a ticket) that is waiting, paused, in the pre-queue
// or in a closed room; not once the visit is over.
export function watches(v, ticket) {
  return !!ticket && !!v && WATCHED.includes(v.state);
}

// shownWithin is how soon (ms) a change must be shown to a visitor whose
// remaining wait is remaining ms (null: unknown, the floor): max(10 s, 10 %
// of it), at most 60 s.
export function shownWithin(remaining) {
  if (!(remaining > 0)) return SHOWN_FLOOR_MS;
  return Math.max(SHOWN_FLOOR_MS, Math.min(SHOWN_CAP_MS, SHOWN_SHARE * remaining));
}

// readDelay is the wait before the next read while the tab is visible: the
// rule's bound for WAIT_TRUST of the remaining wait (ms, or null) less
// READ_MARGIN_MS and a random share of READ_SPREAD_MS (rand in [0, 1)): 7 s ±
// 1 s near the turn or when the wait is unknown (the page's speed before the
// rule), 57 s ± 1 s twelve minutes and more from it. A minute while the tab
// is hidden.
export function readDelay(visible, rand, remaining) {
  if (!visible) return READ_HIDDEN_MS;
  return shownWithin(remaining * WAIT_TRUST) - READ_MARGIN_MS - (1 - rand) * READ_SPREAD_MS;
}

// remainingMs is the visitor's remaining wait as the page knows it at now
// (local ms), for the cadence: the place shown (shown, the count's estimate;
// else the view's) at the pace counted at (paused or closed: the pace before,
// so that a resume is shown within the rule of the wait it resumes); an older
// server's etaSeconds; in the pre-queue the time to the opening by the
// server's clock. null when unknown (no pace, a place not known yet).
export function remainingMs(v, now, shown) {
  if (!v) return null;
  if (v.state === 'prequeue') {
    return v.opensAt > 0 ? Math.max(0, v.opensAt - (now + (v.skew || 0))) : null;
  }
  if (v.placing || !(v.position > 0)) return null;
  const position = shown > 0 ? Math.min(shown, v.position) : v.position;
  if (typeof v.ratePerMinute === 'number') return v.ratePerMinute > 0 ? position * 60000 / v.ratePerMinute : null;
  return v.etaSeconds > 0 ? v.etaSeconds * 1000 * position / v.position : null;
}

// nextRead is when (local ms) to read next: delay after the last read, except
// that in the pre-queue the read at the opening (opening: the opening plus its
// spread, local ms, or 0) replaces the next regular one when the opening comes
// before it, and has not been read yet.
export function nextRead(last, delay, opening, opensAtLocal) {
  const regular = last + delay;
  if (opening > 0 && opening > last && opensAtLocal < regular) return opening;
  return regular;
}

// spreadPoll is how long after now (ms) to poll when the wait becomes
// etaSeconds: between 30 % and 60 % of it, at random, so that a crowd that
// sees the same change at once does not poll in the same second, and before
// the visitor's turn comes; never sooner than a second.
export function spreadPoll(etaSeconds, rand) {
  const share = POLL_SPREAD[0] + (POLL_SPREAD[1] - POLL_SPREAD[0]) * rand;
  return Math.max(POLL_SOONEST_MS, share * etaSeconds * 1000);
}

// paceOf is the pace, in admissions a minute, that a view counts its place
// down at: the reply's ratePerMinute, or from an older server without it,
// position ÷ etaSeconds (estimate.js); 0 when it counts at none.
export function paceOf(v) {
  if (!v) return 0;
  if (typeof v.ratePerMinute === 'number') return Math.max(0, v.ratePerMinute);
  return v.position > 0 && v.etaSeconds > 0 ? v.position / v.etaSeconds * 60 : 0;
}

// samePace: two paces within PACE_TOLERANCE of the larger.
export function samePace(a, b) {
  return Math.abs(a - b) <= PACE_TOLERANCE * Math.max(a, b);
}

const statusPace = s => (s.ratePerMinute > 0 ? s.ratePerMinute : 0);
const openingPace = s => statusPace(s) || (s.admitPerMinute > 0 ? s.admitPerMinute : 0);
const drawOf = v => (typeof v.draw === 'number' && v.draw > 0 && v.draw < 1 ? v.draw : null);
const count = n => (n >= 1 ? Math.floor(n) : 0);

export const MAX_POLL_MS = 300000;     // the budget of a pre-queue place (room.MaxPollAfter): a poll within it keeps the place
export const BUDGET_MARGIN_MS = 10000; // …less this, for a late timer
export const OPEN_POLL_SPREAD = [0.3, 0.5]; // the opening's poll: this share of the wait of the nearest place the visitor may have
export const PLACE_SURE = 0.1;         // the place is shown when 3 σ of the estimate is within this share of it
export const SOON_SPREAD_MS = 2000;    // a place not estimated is polled for within this after POLL_SOONEST_MS

// estimatePlace is the place a pre-queue visitor's draw d (uniform in (0, 1),
// the lowest first) gives in a line of n: ⌊d × n⌋ + 1 (never past the end),
// its standard deviation (the others' draws are unknown: binomial), and
// whether it is sure enough to show (3 σ within PLACE_SURE of it): a small
// pre-queue's, or the front's, is not, and the poll says it.
export function estimatePlace(d, n) {
  const position = Math.min(n, Math.floor(d * n) + 1);
  const sigma = Math.sqrt(n * d * (1 - d));
  return { position, sigma, sure: 3 * sigma <= PLACE_SURE * position };
}

// placeAtOpening is what a pre-queue visitor's page does once the room has
// opened, before the server gives the exact place: with the visitor's draw
// (v.draw, computed by the page from the seed the status reveals and the
// visitor id) and the line's count, the place the draw gives, "about",
// counting down at the room's pace, and the poll planned from it: at the
// opening (local ms) plus 30–50 % of the wait of the nearest place the
// visitor may have (3 σ ahead), within the budget of the last answer
// (repliedAt + MAX_POLL_MS − BUDGET_MARGIN_MS, which keeps the place), never
// sooner than a second from now, and checked against the claim window. It
// replaces the poll the server told before the opening, which could not
// depend on the draw (a crowd told the claim window after the opening comes
// in it at once). A place not sure enough to show ("finding your place"):
// a poll within POLL_SOONEST_MS + SOON_SPREAD_MS, brought forward only (so
// too when nobody is left waiting). Without a draw (an older server), the
// server's poll stays. It returns
// {view, pollAt, replace}: replace says the poll replaces the server's
// (else it only brings it forward).
export function placeAtOpening(v, s, now, openingLocal, rand) {
  const waiting = count(s.waiting);
  const base = { ...v, state: 'waiting', waiting, at: now, skew: skewOf(s, v), was: undefined };
  const placing = { ...base, position: 0, placing: true, etaSeconds: null, ratePerMinute: null };
  const d = drawOf(v);
  const soon = now + POLL_SOONEST_MS + rand() * SOON_SPREAD_MS;
  if (!waiting) return { view: placing, pollAt: soon, replace: false }; // nobody else waits: the poll says
  if (d === null) return { view: placing, pollAt: 0 };
  const e = estimatePlace(d, waiting);
  const pace = openingPace(s);
  if (!e.sure || !pace) return { view: placing, pollAt: soon, replace: false };
  const nearest = Math.max(1, e.position - 3 * e.sigma);
  const share = OPEN_POLL_SPREAD[0] + (OPEN_POLL_SPREAD[1] - OPEN_POLL_SPREAD[0]) * rand();
  // Within the budget of the last answer (a far place's poll comes at its
  // end, which the crowd's last answers spread).
  const budgetEnd = v.repliedAt > 0 ? v.repliedAt + MAX_POLL_MS - BUDGET_MARGIN_MS : Infinity;
  const pollAt = Math.max(now + POLL_SOONEST_MS, Math.min(budgetEnd, openingLocal + share * nearest * 60000 / pace));
  // And within the claim window after the nearest place's earliest admission
  // (a full bucket at once, then twice the configured rate), less a tenth of
  // it: otherwise (and from an older server, which does not say the claim
  // window) the server's poll stays, which is within that of the opening.
  let replace = false;
  const rate = s.admitPerMinute > 0 ? s.admitPerMinute : pace;
  if (s.claimTTLSeconds > 0) {
    const claim = s.claimTTLSeconds * 1000;
    const earliest = Math.max(0, (nearest - rate / 30) / (2 * rate)) * 60000;
    replace = pollAt <= openingLocal + earliest + claim - Math.min(claim / 2, Math.max(2000, Math.min(10000, claim / 10)));
  }
  return {
    view: {
      ...base, position: e.position, approx: true, placing: false, start: Math.max(v.start || 0, e.position),
      etaSeconds: e.position * 60 / pace, ratePerMinute: pace,
    },
    pollAt: replace ? pollAt : 0,
    replace,
  };
}

function skewOf(s, v) {
  return typeof s.clockSkewMs === 'number' ? s.clockSkewMs : (v.skew || 0);
}

// decide compares a status answer s with the view v shown and says what
// changes: {view} the view to show instead (or null), {pollAt} the time (local
// ms) to poll by (0: the poll stays as the server scheduled it; a later time
// than the one scheduled changes nothing either, but with {replace}: at a
// pre-queue's opening, the poll planned from the draw replaces the server's). ctx: {now} local ms,
// {shown} the place shown now (the count-down's estimate), {rand} a function
// returning a number in [0, 1).
export function decide(s, v, ctx) {
  const none = { view: null, pollAt: 0 };
  // The place is unknown while the page cannot reach the server; the next
  // reply decides.
  if (!s || !v || v.reconnecting) return none;
  const now = ctx.now;
  const serverNow = now + skewOf(s, v);
  const opensAt = Date.parse(s.opensAt || '') || 0;
  const mode = s.mode;

  if (mode === 'closed') {
    if (v.state === 'closed' || !WATCHED.includes(v.state)) return none;
    return { view: held(v, 'closed', ctx), pollAt: 0 };
  }
  if (mode === 'paused') {
    if (v.state !== 'waiting') return none;
    return { view: held(v, 'paused', ctx), pollAt: 0 };
  }
  if (mode !== 'queue' && mode !== 'auto') return none;

  // A pre-queue (or a closing that held one) whose room is open again.
  if (v.state === 'prequeue' || (v.state === 'closed' && v.was === 'prequeue')) {
    const p = v.state === 'prequeue' ? v : { ...v, state: 'prequeue', was: undefined };
    // Opened: the lottery's seed is out (the server reveals it from the
    // opening on, by its own clock); or the status's opening has passed by
    // the server's clock as the Date header tells it; or it is the one the
    // page counts down to, and the count reached it (that clock can lag by up
    // to a second); or, without an opening time in the answer, the count
    // reached the page's.
    const counted = p.opensAt > 0 && p.opensAt <= now + (p.skew || 0);
    const opened = !!s.drawSeed || (opensAt ? opensAt <= serverNow || (opensAt === p.opensAt && counted) : counted);
    if (opened) {
      // The opening's instant, local: the status's (an opening moved earlier
      // or removed: now at the latest).
      const openingLocal = Math.min(opensAt || serverNow, serverNow) - skewOf(s, p);
      const o = placeAtOpening(p, s, now, openingLocal, ctx.rand);
      // Without a draw, an opening before the one the server planned the poll
      // from (moved earlier, or removed) brings that poll forward as for a
      // moved opening, from now: it may come after the turn.
      const early = p.opensAt > 0 && (opensAt || serverNow) < p.opensAt - 1000;
      if (!o.pollAt && early) return { view: o.view, pollAt: now + spreadPoll(placeEta(s, ctx), ctx.rand()), replace: false };
      return { view: o.view, pollAt: o.pollAt, replace: !!o.replace };
    }
    if (opensAt && opensAt !== p.opensAt) return moved(p, s, opensAt, ctx);
    return p === v ? none : { view: p, pollAt: 0 };
  }

  if (opensAt && opensAt > serverNow) return none; // not open: the server's poll says what this is
  const resume = v.state === 'paused' || (v.state === 'closed' && (v.was === 'waiting' || v.was === 'paused'));
  if (v.state !== 'waiting' && !resume) return none;
  if (v.placing) {
    return resume ? { view: { ...v, state: 'waiting', was: undefined, at: now }, pollAt: 0 } : none;
  }
  const pace = statusPace(s);
  if (!pace || !(v.position > 0)) return none; // an older server gives no pace; the poll will say
  // The place shown now: the count-down's estimate, never above the view's.
  const position = Math.max(1, ctx.shown > 0 ? Math.min(ctx.shown, v.position) : v.position);
  // While the pace climbs, the place's own pace is the climb's for it (the
  // status's ratePerMinute is the pace of a place joining now, at the back).
  const climb = isClimb(s.climb) ? s.climb : undefined;
  const own = climb ? climbPace(climb, position) : pace;
  const same = !resume && samePace(paceOf(v), own);
  // The same pace on the same footing: the count goes on as it is.
  if (same && !climb === !isClimb(v.climb)) return none;
  const etaSeconds = climb ? climbMinutes(climb, position) * 60 : position * 60 / pace;
  return {
    view: {
      ...v, state: 'waiting', position, etaSeconds, ratePerMinute: own, climb, at: now, heldAt: undefined,
      approx: !!v.approx || position !== v.position, was: undefined,
    },
    // A climb that starts or ends under the pace told only changes how the
    // place is counted: the poll stays.
    pollAt: same ? 0 : now + spreadPoll(etaSeconds, ctx.rand()),
  };
}

// held is the view v stopped in state (paused, closed) at the place shown
// now, remembering what it was so that a reopening resumes it.
function held(v, state, ctx) {
  const position = v.state === 'waiting' && !v.placing && ctx.shown > 0 ? Math.min(ctx.shown, v.position) : v.position;
  return {
    ...v, state, position, at: ctx.now, was: v.was || v.state,
    approx: !!v.approx || position !== v.position,
  };
}

// moved is the pre-queue view for an opening moved to opensAt (server ms).
// Moved earlier, the poll the server planned may come after it: it is brought
// to the opening plus 30–60 % of the wait of a place drawn at random among
// the waiting (the draw is secret until the opening), spread the same way.
function moved(v, s, opensAt, ctx) {
  const view = { ...v, opensAt, skew: skewOf(s, v), at: ctx.now };
  if (!(v.opensAt > 0) || opensAt >= v.opensAt) return { view, pollAt: 0 };
  if (!openingPace(s)) return { view, pollAt: 0 };
  const local = opensAt - view.skew;
  return { view, pollAt: local + spreadPoll(placeEta(s, ctx), ctx.rand()) };
}

// placeEta is the wait (s) of a place drawn at random among the waiting, at
// the room's pace; 0 (poll soon) without a pace.
function placeEta(s, ctx) {
  const pace = openingPace(s);
  if (!pace) return 0;
  const waiting = Math.max(1, count(s.waiting));
  return (1 + Math.floor(ctx.rand() * waiting)) * 60 / pace;
}
