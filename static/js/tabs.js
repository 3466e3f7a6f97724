// One tab per room talks to the server; the others follow it. The leader is
// chosen with navigator.locks when the browser has it (the lock is released
// the moment the tab closes, and the next tab in line takes it), otherwise with
// a lease in localStorage renewed by a heartbeat. Messages go through a
// BroadcastChannel, or through storage events where there is none.

const LEASE_MS = 3000;
const BEAT_MS = 1000;

export function coordinate(room, { onLead, onMessage }) {
  const id = Math.random().toString(36).slice(2) + Date.now().toString(36);
  const msgKey = 'vestibule:msg:' + room;
  let leader = false;
  let channel = null;

  const deliver = m => { if (m && m.from !== id) onMessage(m); };
  if (typeof BroadcastChannel === 'function') {
    channel = new BroadcastChannel('vestibule:' + room);
    channel.onmessage = e => deliver(e.data);
  } else {
    addEventListener('storage', e => {
      if (e.key === msgKey && e.newValue) { try { deliver(JSON.parse(e.newValue)); } catch { /* torn write */ } }
    });
  }

  const lead = () => { if (!leader) { leader = true; onLead(); } };

  if (navigator.locks && navigator.locks.request) {
    // Held until the page goes away; the promise never settles on purpose.
    navigator.locks.request('vestibule:lead:' + room, () => { lead(); return new Promise(() => {}); });
  } else {
    const leaseKey = 'vestibule:lease:' + room;
    const read = () => { try { return JSON.parse(localStorage.getItem(leaseKey)) || {}; } catch { return {}; } };
    const beat = () => {
      const l = read();
      const now = Date.now();
      if (!l.id || l.id === id || l.until < now) {
        localStorage.setItem(leaseKey, JSON.stringify({ id, until: now + LEASE_MS }));
        // Two tabs can write at once; the one whose write stuck leads.
        setTimeout(() => { if (read().id === id) lead(); }, 50);
      } else if (leader) {
        leader = false; // another tab took over while this one was frozen
        onMessage({ type: 'demoted' });
      }
    };
    beat();
    setInterval(beat, BEAT_MS);
    addEventListener('pagehide', () => { if (read().id === id) localStorage.removeItem(leaseKey); });
  }

  return {
    isLeader: () => leader,
    post(m) {
      const msg = { ...m, from: id };
      if (channel) { channel.postMessage(msg); return; }
      try {
        localStorage.setItem(msgKey, JSON.stringify({ ...msg, nonce: Math.random() }));
        localStorage.removeItem(msgKey);
      } catch { /* followers catch up from the stored view */ }
    },
  };
}
