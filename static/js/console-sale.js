// The console's sections of a room's sale (docs/OPERATING.md, "Scheduled
// changes" and "A sale's report"): its schedule (plan, list, cancel) and its
// report (totals, a chart of the minutes, CSV and JSON export). Each takes
// the room's card and the console's api function.
/* global uPlot */

const fmt = new Intl.NumberFormat('en');
const n = (v) => fmt.format(Math.round(v ?? 0));
const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const roomPath = (card) => `/api/admin/rooms/${encodeURIComponent(card.id)}`;

function sayError(el, err) {
  el.textContent = err ? err.message : '';
  el.hidden = !err;
}

// scheduleSection wires the card's Schedule section: the list of planned
// (and refused) changes, each with Cancel, and the form that plans one.
// While the section is open the list is read again at each of the console's
// refreshes (card.refreshSale), so a change the ticks applied leaves it; a
// Cancel of one that applied meanwhile says when it was (change_applied).
export function scheduleSection(card, api) {
  const box = card.el.querySelector('.schedule');
  if (!box) return;
  const list = box.querySelector('[data-field="schedule"]');
  const form = box.querySelector('.schedule-form');
  const alert = box.querySelector('[data-field="schedule-error"]');
  let shown = null; // the list's changes as last drawn (JSON): redrawn when they differ only
  let reading = false;
  const load = async () => {
    let changes;
    reading = true;
    try {
      ({ changes } = await api('GET', `${roomPath(card)}/schedule`));
    } catch (err) { sayError(alert, err); return; } finally { reading = false; }
    card.el.dataset.schedule = String((changes || []).length);
    // A list drawn again under the operator's pointer loses the focus on its
    // buttons: the same list is left as it is.
    const drawn = JSON.stringify(changes || []);
    if (drawn === shown) return;
    shown = drawn;
    list.replaceChildren(...(changes || []).map((c) => {
      const li = document.createElement('li');
      li.dataset.change = c.id;
      const text = document.createElement('span');
      const state = c.refused ? `REFUSED: ${c.refused}` : `planned by ${c.createdBy}`;
      text.textContent = `${when.format(Date.parse(c.at))} · ${JSON.stringify(c.settings)} · ${state}`;
      const cancel = document.createElement('button');
      cancel.type = 'button';
      cancel.className = 'button';
      cancel.textContent = 'Cancel';
      cancel.setAttribute('aria-label', `Cancel the change at ${when.format(Date.parse(c.at))}`);
      cancel.addEventListener('click', async () => {
        try {
          await api('POST', `${roomPath(card)}/schedule/cancel`, { id: c.id });
          sayError(alert, null);
        } catch (err) { sayError(alert, err); }
        load();
      });
      li.append(text, ' ', cancel);
      return li;
    }));
    if (!changes?.length) {
      const li = document.createElement('li');
      li.textContent = 'Nothing scheduled.';
      list.replaceChildren(li);
    }
  };
  box.addEventListener('toggle', () => { if (box.open) load(); });
  card.refreshSale = () => { if (box.open && !reading) load(); };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const at = form.querySelector('[data-schedule="at"]').value;
    let settings;
    try {
      settings = JSON.parse(form.querySelector('[data-schedule="settings"]').value);
    } catch {
      sayError(alert, new Error('Settings must be a JSON object, e.g. {"admitPerMinute": 3000}'));
      return;
    }
    try {
      await api('POST', `${roomPath(card)}/schedule`, { at: at ? new Date(at).toISOString() : null, settings });
      sayError(alert, null);
      form.reset();
    } catch (err) { sayError(alert, err); }
    load();
  });
}

// COLUMNS are every figure of a report's minute, the columns of `vestibule report --csv`.
const COLUMNS = ['minute', 'waiting', 'admitted', 'active', 'admittedPerMinute', 'evictedPerMinute',
  'leftPerMinute', 'abandonedPerMinute', 'lapsedPerMinute', 'joinsPerMinute', 'waitsMeasured', 'waitP50Seconds',
  'waitP95Seconds', 'ordersConfirmed', 'ordersCancelled', 'noticesSent', 'noticesFailed', 'turnsSaved', 'peakWaiting'];

// reportCSV is the report's minutes as CSV, the columns of `vestibule report --csv`.
export function reportCSV(report) {
  const cell = (m, c) => (c.endsWith('Seconds') ? waitSeconds(m[c]) : (m[c] ?? 0));
  const rows = (report.minutes || []).map((m) => COLUMNS.map((c) => cell(m, c)).join(','));
  return [COLUMNS.join(','), ...rows].join('\n') + '\n';
}

function download(name, type, text) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// waitSeconds is the one rounding of a measured wait (docs/OPERATING.md, "A
// sale's report"), room.WaitSeconds's: to the nearest whole second, a half
// up; 0 for none. static's TestWaitText holds the two to the same values.
export function waitSeconds(sec) {
  return sec > 0 && Number.isFinite(sec) ? Math.round(sec) : 0;
}

// waitText says a wait as `vestibule report` does (room.WaitText, Go's
// duration): 0s, 45s, 10m10s, 1h2m3s.
export function waitText(sec) {
  const s = waitSeconds(sec);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h > 0) return `${h}h${m}m${s % 60}s`;
  return m > 0 ? `${m}m${s % 60}s` : `${s}s`;
}

// reportSection wires the card's Report section: read on opening, the
// totals, a chart of the queue, joins, admissions, abandons and orders a minute
// and the measured waits, exports.
export function reportSection(card, api) {
  const box = card.el.querySelector('.report');
  if (!box) return;
  const totals = box.querySelector('[data-field="report-totals"]');
  const plot = box.querySelector('.report-plot');
  const alert = box.querySelector('[data-field="report-error"]');
  let report = null;
  let chart = null;
  const load = async () => {
    try {
      report = await api('GET', `${roomPath(card)}/report`);
      sayError(alert, null);
    } catch (err) { sayError(alert, err); return; }
    const t = report.totals;
    const rows = [
      ['Minutes recorded', n(t.minutes)], ['Visitors', n(t.visitors)], ['Peak joins a minute', n(t.peakJoinsPerMinute)],
      ['Peak waiting', n(t.peakWaiting)], ['Admitted', n(t.admitted)],
      ['Abandoned (left / evicted)', `${n(t.abandoned)} (${n(t.left)} / ${n(t.evicted)})`],
      ['Lapsed (grants never redeemed)', n(t.lapsed)],
      ['Wait p50 / p95 (measured)', `${waitText(t.waitP50Seconds)} / ${waitText(t.waitP95Seconds)} (${n(t.waitsMeasured)} waits)`],
      ['Consumed (entries redeemed)', n(report.now?.consumed)],
      ['Orders confirmed / cancelled', `${n(t.ordersConfirmed)} / ${n(t.ordersCancelled)}`],
      ['Notices sent / failed · turns they saved', `${n(t.noticesSent)} / ${n(t.noticesFailed)} · ${n(t.turnsSaved)}`],
    ];
    totals.replaceChildren(...rows.map(([k, v]) => {
      const d = document.createElement('div');
      const dt = document.createElement('dt');
      const dd = document.createElement('dd');
      dt.textContent = k;
      dd.textContent = v;
      d.append(dt, dd);
      return d;
    }));
    card.el.dataset.report = String(t.minutes);
    const ms = report.minutes || [];
    // A minute without measured waits has no point on the waits' lines (a gap, not 0).
    const wait = (k) => ms.map((m) => (m.waitsMeasured > 0 ? m[k] : null));
    const data = [ms.map((m) => Date.parse(m.minute) / 1000), ms.map((m) => m.waiting), ms.map((m) => m.joinsPerMinute),
      ms.map((m) => m.admittedPerMinute), ms.map((m) => m.abandonedPerMinute), ms.map((m) => m.ordersConfirmed),
      wait('waitP50Seconds'), wait('waitP95Seconds')];
    if (typeof uPlot === 'undefined') return;
    if (chart) { chart.setData(data); return; }
    const series = (label, stroke, scale, dash) => ({ label, stroke, scale, width: 2, dash, points: { show: false } });
    chart = new uPlot({
      width: Math.max(300, plot.clientWidth || 600), height: 200, legend: { live: false },
      series: [{}, series('waiting', '#1d5c8a', 'w'), series('joins/min', '#9b1c1c', 'n'), series('admitted/min', '#1e6b43', 'n', [2, 3]),
        series('abandoned/min', '#b45309', 'n', [6, 3]), series('orders/min', '#6b21a8', 'n'),
        series('wait p50 (s)', '#475569', 's'), series('wait p95 (s)', '#475569', 's', [1, 3])],
      scales: { x: { time: true }, w: { range: (u, lo, hi) => [0, Math.max(1, hi)] }, n: { range: (u, lo, hi) => [0, Math.max(1, hi)] },
        s: { range: (u, lo, hi) => [0, Math.max(1, hi)] } },
      axes: [{}, { scale: 'w', stroke: '#1d5c8a' }, { scale: 'n', side: 1, grid: { show: false } },
        { scale: 's', side: 1, grid: { show: false }, stroke: '#475569' }],
    }, data, plot);
  };
  box.addEventListener('toggle', () => { if (box.open) load(); });
  box.querySelector('[data-export="csv"]').addEventListener('click', () => {
    if (report) download(`${card.id}-report.csv`, 'text/csv', reportCSV(report));
  });
  box.querySelector('[data-export="json"]').addEventListener('click', () => {
    if (report) download(`${card.id}-report.json`, 'application/json', JSON.stringify(report, null, 2));
  });
}
