// The admin page: reads and writes a room's settings through the admin API.
// The key is kept in sessionStorage, so it is gone when the tab closes.
const $ = id => document.getElementById(id);
const NUM = ['maxActive', 'admitPerMinute', 'sessionTTLSeconds', 'claimTTLSeconds', 'heartbeatTTLSeconds'];

$('key').value = sessionStorage.getItem('vestibule:admin-key') || '';
$('room').value = new URLSearchParams(location.search).get('room') || 'demo';

async function call(method, path, body) {
  sessionStorage.setItem('vestibule:admin-key', $('key').value);
  $('msg').textContent = '…';
  const res = await fetch(path, {
    method, cache: 'no-store', credentials: 'omit',
    headers: { Authorization: 'Bearer ' + $('key').value, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  }).catch(e => ({ ok: false, status: 0, json: async () => ({ error: { message: String(e) } }) }));
  const data = await res.json().catch(() => ({}));
  $('msg').textContent = res.ok ? 'OK' : 'Error ' + res.status + ': ' + (data.error && data.error.message || '');
  $('out').textContent = JSON.stringify(data, null, 2);
  return res.ok ? data : null;
}

const path = () => '/api/admin/rooms/' + encodeURIComponent($('room').value);

function fill(cfg) {
  for (const k of NUM) $(k).value = cfg[k] ?? '';
  $('mode').value = cfg.mode || 'queue';
  $('originUrl').value = cfg.originUrl || '';
  const d = cfg.opensAt ? new Date(cfg.opensAt) : null;
  $('opensAt').value = d ? new Date(d - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19) : '';
}

$('load').addEventListener('click', async () => {
  const d = await call('GET', path());
  if (d && d.config) fill(d.config);
});
$('list').addEventListener('click', () => call('GET', '/api/admin/rooms'));
$('form').addEventListener('submit', async e => {
  e.preventDefault();
  const cfg = { mode: $('mode').value, originUrl: $('originUrl').value };
  for (const k of NUM) if ($(k).value !== '') cfg[k] = Number($(k).value);
  cfg.opensAt = $('opensAt').value ? new Date($('opensAt').value).toISOString() : null; // null clears it
  const d = await call('PUT', path(), cfg);
  if (d && d.config) fill(d.config);
});
