// The waiting page's service worker (docs/PAGE.md, "Notices"): it shows the
// push the notify function sends when a visitor's turn comes, even with the
// page closed, and a click on it brings the visitor back to their place:
// the room's waiting page, where this browser holds the ticket and claims
// the turn. It has no fetch handler: it never stands between the page and
// the network. The push carries no ticket and no token.

// The payload (notice.Message): {title, body, url, tag, lang}.
self.addEventListener('push', event => {
  let m = {};
  try { m = event.data ? event.data.json() : {}; } catch { m = {}; }
  const url = placeURL(m.url);
  event.waitUntil(self.registration.showNotification(m.title || 'Waiting room', {
    body: m.body || '', tag: m.tag || 'vestibule', lang: m.lang || '', renotify: true, requireInteraction: true,
    data: { url },
  }));
});

self.addEventListener('notificationclick', event => {
  event.notification.close();
  event.waitUntil(openPlace(placeURL(event.notification.data && event.notification.data.url)));
});

// placeURL keeps a link on this site's waiting page, whatever a payload says.
function placeURL(u) {
  try {
    const url = new URL(u, self.location.origin);
    if (url.origin === self.location.origin) return url.href;
  } catch { /* the page itself */ }
  return new URL('/', self.location.origin).href;
}

// openPlace focuses a tab of the room's page when one is open, else opens it.
async function openPlace(url) {
  const room = new URL(url).searchParams.get('room');
  const open = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const c of open) {
    const at = new URL(c.url);
    if (at.origin === self.location.origin && (at.searchParams.get('room') === room || at.pathname.endsWith('/' + room))) {
      return c.focus();
    }
  }
  return self.clients.openWindow(url);
}

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', event => event.waitUntil(self.clients.claim()));
